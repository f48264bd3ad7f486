using Storage.Inspection;
using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.Integrity;

/// <summary>
/// A free-space bitmap that says a page in use is free, with a valid checksum (so not damage the checksums can see:
/// what a bug would leave). The engine must refuse or fail with a typed error, never overwrite the page silently.
/// </summary>
public sealed class A_bitmap_that_marks_a_page_in_use_as_free
{
    private static string Build(TempDirectory temp)
    {
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        for (var t = 0; t < 40; t++)
        {
            using var tx = env.BeginWrite();
            var a = tx.OpenOrCreateTree("a");
            var b = tx.OpenOrCreateTree("b");
            for (var k = 0; k < 20; k++)
            {
                a.Put(TestData.Key($"a-{t:D3}-{k:D2}"), TestData.Value(t * 100 + k, 120));
                b.Put(TestData.Key($"b-{t:D3}-{k:D2}"), TestData.Value(t * 100 + k + 1, 120));
            }
            tx.Commit();
        }
        return temp.Path;
    }

    [Fact]
    public void For_a_tree_root_fails_the_open_naming_the_bitmap()
    {
        using var temp = new TempDirectory();
        var dir = Build(temp);
        var root = EnvironmentSnapshot.Check(dir).Trees.Single(t => t.Name == "a").RootPage;
        DataFileInspector.MarkFree(dir, root);

        var error = Assert.Throws<StorageCorruptedException>(() => StorageEnvironment.Open(dir, TestOptions.Small));

        Assert.Contains($"page {root}", error.Message, StringComparison.Ordinal);
        Assert.Contains("tree 'a'", error.Message, StringComparison.Ordinal);
        Assert.Equal(2, error.PageNumber); // the bitmap page
        var report = EnvironmentSnapshot.Check(dir);
        Assert.Contains(report.Problems, p => p.Kind == "free-space" && p.Message.Contains("marked free in the bitmap but in use", StringComparison.Ordinal));
    }

    [Fact]
    public void Is_reported_by_check_on_a_crashed_environment_whose_journal_still_holds_transactions()
    {
        using var temp = new TempDirectory();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        for (var t = 0; t < 30; t++) PutAndCommit(env, "a", ($"a-{t:D3}", new string('x', 300)));
        env.Checkpoint();
        for (var t = 0; t < 5; t++) PutAndCommit(env, "a", ($"a-{t:D3}", "changed"));
        env.SimulateCrash();
        var report = EnvironmentSnapshot.Check(temp.Path, collectPages: true);
        Assert.True(report.IsConsistent, string.Join("; ", report.Problems));
        var leaf = Enumerable.Range(0, report.Pages!.Length).First(p => report.Pages[p].Kind == PageKind.Leaf && p != report.Trees.Single(t => t.Name == "a").RootPage);
        DataFileInspector.MarkFree(temp.Path, leaf);

        var problems = EnvironmentSnapshot.Check(temp.Path).Problems;

        Assert.Contains(problems, p => p.Kind == "free-space" && p.Message.Contains($"page {leaf} is marked free in the bitmap but in use", StringComparison.Ordinal));
    }

    [Fact]
    public void For_a_leaf_of_another_tree_ends_in_a_typed_error_when_it_is_handed_out_never_in_wrong_data()
    {
        using var temp = new TempDirectory();
        var dir = Build(temp);
        var report = EnvironmentSnapshot.Check(dir, collectPages: true);
        var treeA = report.Trees.Single(t => t.Name == "a").TreeId;
        var leafOfA = Enumerable.Range(0, report.Pages!.Length).First(p => report.Pages[p].Kind == PageKind.Leaf && report.Pages[p].TreeId == treeA);
        DataFileInspector.MarkFree(dir, leafOfA);
        Assert.Contains(EnvironmentSnapshot.Check(dir).Problems, p => p.Kind == "free-space");

        using var env = StorageEnvironment.Open(dir, TestOptions.Small);
        // Grow b until the allocator has handed the page out (the only free page: every split wants one).
        var handedOut = false;
        for (var t = 0; t < 200 && !handedOut; t++)
        {
            try
            {
                using var tx = env.BeginWrite();
                var b = tx.OpenTree("b");
                for (var k = 0; k < 30; k++) b.Put(TestData.Key($"b-more-{t:D3}-{k:D2}"), TestData.Value(t, 200));
                tx.Commit();
            }
            catch (StorageException)
            {
                handedOut = true; // refused before it overwrote anything
                break;
            }
            handedOut = env.GetStats().Space.FreePages == 0;
        }
        Assert.True(handedOut, "the free page was never allocated");

        // Reading a now either shows every original value or fails with a typed error: never a different value.
        using var read = env.BeginRead();
        var a = read.OpenTree("a");
        var error = Record.Exception(() =>
        {
            for (var t = 0; t < 40; t++)
            {
                for (var k = 0; k < 20; k++)
                {
                    var value = a.Get(TestData.Key($"a-{t:D3}-{k:D2}"));
                    Assert.Equal(TestData.Value(t * 100 + k, 120), value);
                }
            }
        });
        if (error is not null) Assert.IsType<StorageCorruptedException>(error);
    }
}
