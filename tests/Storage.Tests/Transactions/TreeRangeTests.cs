using Storage.Tests.Support;

namespace Storage.Tests.Transactions;

/// <summary>Edge cases of <see cref="Tree.Range"/> and <see cref="Tree.Prefix"/> the random model rarely reaches.</summary>
public sealed class Ranges_and_prefixes
{
    private static readonly byte[][] Keys =
    [
        [0x00], [0x01], [0x01, 0x00], [0x01, 0xFF], [0x01, 0xFF, 0xFF], [0x02],
        [0xFE, 0xFF], [0xFF], [0xFF, 0x00], [0xFF, 0xFF], [0xFF, 0xFF, 0x01],
    ];

    [Fact]
    public void A_prefix_ending_in_0xFF_bytes_finds_its_keys_in_both_directions()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using var tx = Fill(env);
        var tree = tx.OpenTree("r");

        Assert.Equal(Hex([0x01, 0xFF], [0x01, 0xFF, 0xFF]), Hex(Read(tree.Prefix([0x01, 0xFF]))));
        Assert.Equal(Hex([0x01, 0xFF, 0xFF], [0x01, 0xFF]), Hex(Read(tree.Prefix([0x01, 0xFF], reverse: true))));
        Assert.Equal(Hex([0xFF], [0xFF, 0x00], [0xFF, 0xFF], [0xFF, 0xFF, 0x01]), Hex(Read(tree.Prefix([0xFF]))));
        Assert.Equal(Hex([0xFF, 0xFF, 0x01], [0xFF, 0xFF], [0xFF, 0x00], [0xFF]), Hex(Read(tree.Prefix([0xFF], reverse: true))));
        Assert.Empty(Read(tree.Prefix([0x03], reverse: true)));
    }

    [Fact]
    public void A_range_includes_its_start_and_excludes_its_end_in_both_directions()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using var tx = Fill(env);
        var tree = tx.OpenTree("r");

        Assert.Equal(Hex([0x01], [0x01, 0x00], [0x01, 0xFF], [0x01, 0xFF, 0xFF]), Hex(Read(tree.Range([0x01], [0x02]))));
        Assert.Equal(Hex([0x01, 0xFF, 0xFF], [0x01, 0xFF], [0x01, 0x00], [0x01]), Hex(Read(tree.Range([0x01], [0x02], reverse: true))));
        Assert.Equal(Hex([0xFF, 0xFF, 0x01]), Hex(Read(tree.Range([0xFF, 0xFF, 0x00], default))));
        Assert.Equal(Hex([0x00]), Hex(Read(tree.Range(default, [0x01], reverse: true))));
        Assert.Empty(Read(tree.Range([0x01, 0x00, 0x00], [0x01, 0x01])));
    }

    private static WriteTransaction Fill(StorageEnvironment env)
    {
        var tx = env.BeginWrite();
        var tree = tx.CreateTree("r");
        foreach (var key in Keys) tree.Put(key, key);
        return tx;
    }

    private static List<byte[]> Read(TreeRange range)
    {
        var keys = new List<byte[]>();
        foreach (var entry in range)
        {
            Assert.True(entry.Key.SequenceEqual(entry.Value));
            keys.Add(entry.Key.ToArray());
        }
        return keys;
    }

    private static string Hex(params byte[][] keys) => Hex(keys.ToList());

    private static string Hex(List<byte[]> keys) => string.Join(" ", keys.Select(Convert.ToHexString));
}
