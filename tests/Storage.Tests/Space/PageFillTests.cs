using Storage.Inspection;
using Storage.Tests.Support;

namespace Storage.Tests.SpaceTests;

/// <summary>
/// <see cref="StorageOptions.FillSiblingsBeforeSplit"/>: random inserts into an environment leave leaves fuller, and the
/// closed data file shorter, than splitting at once does; everything reads back and checks clean either way.
/// </summary>
public sealed class Page_fill
{
    [Fact]
    public void Random_inserts_take_a_sixth_fewer_leaves_when_full_leaves_fill_their_siblings_first()
    {
        var (leavesFilled, lengthFilled) = FillRandomly(fillSiblings: true);
        var (leavesSplit, lengthSplit) = FillRandomly(fillSiblings: false);
        // Splitting at once leaves leaves ~69% full, filling siblings first ~84%: 0.69 / 0.84 = 0.82.
        Assert.True(leavesFilled < leavesSplit * 0.87, $"{leavesFilled:N0} leaves against {leavesSplit:N0}");
        Assert.True(lengthFilled < lengthSplit, $"{lengthFilled:N0} bytes against {lengthSplit:N0}");
    }

    private static (long Leaves, long Length) FillRandomly(bool fillSiblings)
    {
        using var temp = new TempDirectory("page-fill");
        var options = TestOptions.Small with { FillSiblingsBeforeSplit = fillSiblings };
        var random = new Random(5);
        var keys = new List<byte[]>();
        long leaves;
        using (var env = StorageEnvironment.Open(temp.Path, options))
        {
            for (var t = 0; t < 150; t++)
            {
                using var tx = env.BeginWrite();
                var tree = tx.OpenOrCreateTree("t");
                for (var i = 0; i < 1_000; i++)
                {
                    var key = new byte[16];
                    random.NextBytes(key);
                    tree.Put(key, key.AsSpan(0, 8));
                    keys.Add(key);
                }
                tx.Commit();
            }
            using var read = env.BeginRead();
            var readTree = read.OpenTree("t");
            leaves = readTree.GetStats().LeafPages;
            foreach (var key in keys) Assert.True(readTree.TryGet(key, out _));
        }
        Assert.Empty(EnvironmentSnapshot.Check(temp.Path).Problems);
        return (leaves, new FileInfo(Path.Combine(temp.Path, "data.storage")).Length);
    }
}
