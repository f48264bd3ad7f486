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
        var big = FivePageValue(3);
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            FillFarApart(env, big, "near");
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
        var report = EnvironmentSnapshot.Check(temp.Path, collectPages: true);
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
        var big = FivePageValue(4);
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            FillFarApart(env, big, "far");
            Put(env, "tail", 2, big);
            // Five pages free near the start (too few to make a section dense), a hundred in a section far on.
            Delete(env, "low", 1);
            Delete(env, "far", 20);
            using var tx = env.BeginWrite();
            tx.CreateTree("new");
            tx.Commit();
        }
        var report = EnvironmentSnapshot.Check(temp.Path);
        Assert.Empty(report.Problems);
        var names = report.Trees.Single(t => t.Name is null).RootPage;
        var root = report.Trees.Single(t => t.Name == "new").RootPage;
        Assert.Equal(names / FreeSpaceLayout.PagesPerSection, root / FreeSpaceLayout.PagesPerSection);
    }

    /// <summary>A value that takes an overflow run of 5 pages.</summary>
    private static byte[] FivePageValue(int seed)
    {
        var value = new byte[36_000];
        new Random(seed).NextBytes(value);
        return value;
    }

    /// <summary>
    /// 20 runs in tree "low" at the start of the file, then 900 runs (more than two sections of 16 MiB), then 20 runs
    /// in tree <paramref name="far"/>.
    /// </summary>
    private static void FillFarApart(StorageEnvironment env, byte[] value, string far)
    {
        Put(env, "low", 20, value);
        Put(env, "filler", 900, value);
        Put(env, far, 20, value);
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
