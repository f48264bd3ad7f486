using System.Buffers.Binary;
using System.Text;
using Storage.Trees;

namespace Storage.Tests.Trees;

/// <summary>A tree on an <see cref="InMemoryPageStore"/>, with key and value makers shared by the tree tests.</summary>
internal sealed class TreeFixture : IDisposable
{
    public TreeFixture(int treeId = 7)
    {
        Store = new InMemoryPageStore();
        State = BTree.Create(Store, treeId);
        Tree = new BTree(Store, State);
        Store.Commit();
    }

    public InMemoryPageStore Store { get; }

    public TreeState State { get; }

    public BTree Tree { get; }

    /// <summary>8-byte big-endian keys sort like the numbers.</summary>
    public static byte[] Key(long number)
    {
        var key = new byte[8];
        BinaryPrimitives.WriteInt64BigEndian(key, number);
        return key;
    }

    public static byte[] TextKey(string text) => Encoding.UTF8.GetBytes(text);

    /// <summary>A value whose bytes depend on the seed and the position, so that misplaced bytes show.</summary>
    public static byte[] Value(long seed, int sizeBytes)
    {
        var value = new byte[sizeBytes];
        for (int i = 0; i < sizeBytes; i++)
        {
            value[i] = (byte)(seed * 31 + i * 7 + (i >> 8));
        }
        return value;
    }

    public byte[] Get(byte[] key) => Tree.TryGet(key, out var value) ? value.ToArray() : throw new KeyNotFoundException(Convert.ToHexString(key));

    /// <summary>Validates the tree and ends the store's transaction (which checks the copy-on-write discipline).</summary>
    public void Check()
    {
        Tree.Validate();
        Store.Commit();
    }

    public void Dispose() => Store.Dispose();
}
