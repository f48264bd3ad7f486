using Storage.Allocation;
using Storage.Inspection;
using Storage.Tests.Support;

namespace Storage.Tests.SpaceTests;

/// <summary>Where new pages go: near the pages they belong with, so that a flush writes them in the same runs.</summary>
public sealed class Allocation
{
    [Fact]
    public void An_overflow_value_takes_a_free_run_in_its_leafs_section_before_one_lower_in_the_file()
    {
        using var temp = new TempDirectory("alloc-near");
        var big = new byte[36_000]; // a run of 5 pages
        new Random(3).NextBytes(big);
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            Put(env, "low", 20, big);
            // 900 runs of 5 pages: the rest of the file lies more than two sections (16 MiB each) past "low".
            Put(env, "filler", 900, big);
            Put(env, "near", 20, big);
            using (var tx = env.BeginWrite())
            {
                var tree = tx.OpenOrCreateTree("t");
                for (var i = 0; i < 20; i++) tree.Put(TestData.Key($"small{i:D3}"), TestData.Value(i, 50));
                tx.Commit();
            }
            Delete(env, "low", 20);
            Delete(env, "near", 20);
            using (var tx = env.BeginWrite())
            {
                tx.OpenTree("t").Put(TestData.Key("value"), big);
                tx.Commit();
            }
        }
        var report = EnvironmentChecker.Check(temp.Path, collectPages: true);
        Assert.Empty(report.Problems);
        var treeId = report.Trees.Single(t => t.Name == "t").TreeId;
        var leaf = Array.FindIndex(report.Pages!, p => p.TreeId == treeId && p.Kind == PageKind.Leaf);
        var run = Array.FindIndex(report.Pages!, p => p.TreeId == treeId && p.Kind == PageKind.Overflow);
        var lowFreeSection = 0;
        Assert.True(leaf / FreeSpaceLayout.PagesPerSection > lowFreeSection + 1, $"leaf {leaf}");
        Assert.Equal(leaf / FreeSpaceLayout.PagesPerSection, run / FreeSpaceLayout.PagesPerSection);
    }

    [Fact]
    public void A_new_tree_takes_a_free_page_near_the_tree_of_names_before_a_denser_section_further_on()
    {
        using var temp = new TempDirectory("alloc-new-tree");
        var big = new byte[36_000]; // a run of 5 pages
        new Random(4).NextBytes(big);
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            Put(env, "low", 20, big);
            Put(env, "filler", 900, big);
            Put(env, "far", 20, big);
            Put(env, "tail", 2, big);
            // Five pages free near the start (too few to make a section dense), a hundred in a section far on.
            Delete(env, "low", 1);
            Delete(env, "far", 20);
            using var tx = env.BeginWrite();
            tx.CreateTree("new");
            tx.Commit();
        }
        var report = EnvironmentChecker.Check(temp.Path);
        Assert.Empty(report.Problems);
        var names = report.Trees.Single(t => t.Name is null).RootPage;
        var root = report.Trees.Single(t => t.Name == "new").RootPage;
        Assert.Equal(names / FreeSpaceLayout.PagesPerSection, root / FreeSpaceLayout.PagesPerSection);
    }

    private static void Put(StorageEnvironment env, string name, int count, byte[] value)
    {
        for (var start = 0; start < count; start += 100)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenOrCreateTree(name);
            for (var i = start; i < Math.Min(start + 100, count); i++) tree.Put(TestData.Key($"{name}{i:D5}"), value);
            tx.Commit();
        }
    }

    private static void Delete(StorageEnvironment env, string name, int count)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenTree(name);
        for (var i = 0; i < count; i++) Assert.True(tree.Delete(TestData.Key($"{name}{i:D5}")));
        tx.Commit();
    }
}
