namespace Storage.Tests.Support;

/// <summary>
/// The fault campaign's workload: numbered transactions ("attempts") whose operations depend only on their
/// number, so that the state after any set of acknowledged attempts can be rebuilt as a model. Three trees and a
/// short-lived fourth; small values, overflow values (2.3 to 8.3 KiB, over a quarter page) and two 700 KB
/// values that grow the data file and outgrow a journal file; deletes of earlier keys, of overflow values and of
/// a whole tree.
/// </summary>
internal static class CampaignWorkload
{
    /// <summary>Attempts per phase; the campaign runs two phases, with a crash and a recovery between them.</summary>
    public const int AttemptsPerPhase = 6;

    /// <summary>Index within its phase of the attempt after which the phase checkpoints.</summary>
    public const int CheckpointAfter = 2;

    private const string ShortLivedTree = "scratch";

    public static IReadOnlyList<Op> Attempt(int i)
    {
        var ops = new List<Op>();
        var tree = TreeOf(i);
        for (var j = 0; j < 6; j++) ops.Add(Op.Put(tree, $"k{i:D2}-{j}", TestData.Value(i * 16 + j, 60 + 37 * j)));
        ops.Add(Op.Put(tree, $"big{i:D2}", TestData.Value(i * 16 + 7, 2300 + i * 1931 % 6000)));
        if (i % 6 == 2) ops.Add(Op.Put(tree, $"huge{i:D2}", TestData.Value(i * 16 + 8, 700_000)));
        if (i >= 2)
        {
            ops.Add(Op.Delete(TreeOf(i - 2), $"k{i - 2:D2}-0"));
            ops.Add(Op.Delete(TreeOf(i - 2), $"k{i - 2:D2}-3"));
        }
        if (i % 4 == 3) ops.Add(Op.Delete(TreeOf(i - 3), $"big{i - 3:D2}"));
        if (i == 1)
        {
            for (var j = 0; j < 3; j++) ops.Add(Op.Put(ShortLivedTree, $"s{j}", TestData.Value(900 + j, 100)));
        }
        if (i == 4) ops.Add(Op.DeleteTree(ShortLivedTree));
        if (i == 10) ops.Add(Op.Delete(TreeOf(2), "huge02"));
        return ops;
    }

    private static string TreeOf(int i) => $"t{i % 3}";

    /// <summary>Runs an attempt's operations in a write transaction (the caller commits).</summary>
    public static void Apply(WriteTransaction tx, int attempt)
    {
        foreach (var op in Attempt(attempt))
        {
            switch (op.Kind)
            {
                case OpKind.Put:
                    tx.OpenOrCreateTree(op.Tree).Put(op.Key, op.Value);
                    break;
                case OpKind.Delete:
                    if (tx.TryOpenTree(op.Tree, out var tree)) tree.Delete(op.Key);
                    break;
                case OpKind.DeleteTree:
                    tx.DeleteTree(op.Tree);
                    break;
            }
        }
    }

    /// <summary>The state after <paramref name="attempts"/>, applied in order on top of <paramref name="start"/>.</summary>
    public static Model Build(Model start, IEnumerable<int> attempts)
    {
        var model = start.Copy();
        foreach (var attempt in attempts)
        {
            foreach (var op in Attempt(attempt))
            {
                switch (op.Kind)
                {
                    case OpKind.Put:
                        if (!model.Trees.TryGetValue(op.Tree, out var tree)) model.Trees[op.Tree] = tree = OrdinalBytes.NewModel();
                        tree[op.Key] = op.Value;
                        break;
                    case OpKind.Delete:
                        if (model.Trees.TryGetValue(op.Tree, out var existing)) existing.Remove(op.Key);
                        break;
                    case OpKind.DeleteTree:
                        model.Trees.Remove(op.Tree);
                        break;
                }
            }
        }
        return model;
    }

    /// <summary>Null when the environment holds exactly the model (trees and entries); otherwise the first difference.</summary>
    public static string? Difference(StorageEnvironment env, Model model)
    {
        using var tx = env.BeginRead();
        var names = tx.ListTrees();
        var expectedNames = model.Trees.Keys.OrderBy(n => n, StringComparer.Ordinal).ToList();
        if (!names.SequenceEqual(expectedNames)) return $"trees [{string.Join(", ", names)}], expected [{string.Join(", ", expectedNames)}]";
        foreach (var name in names)
        {
            try
            {
                TreeAssert.Equal(model.Trees[name], tx.OpenTree(name), $"tree {name}");
            }
            catch (Xunit.Sdk.XunitException e)
            {
                return e.Message;
            }
        }
        return null;
    }

    internal enum OpKind
    {
        Put,
        Delete,
        DeleteTree,
    }

    internal sealed record Op(OpKind Kind, string Tree, byte[] Key, byte[] Value)
    {
        public static Op Put(string tree, string key, byte[] value) => new(OpKind.Put, tree, TestData.Key(key), value);

        public static Op Delete(string tree, string key) => new(OpKind.Delete, tree, TestData.Key(key), []);

        public static Op DeleteTree(string tree) => new(OpKind.DeleteTree, tree, [], []);
    }

    /// <summary>Trees by name, each a key-to-value model.</summary>
    internal sealed class Model
    {
        public static Model Empty => new();

        public Dictionary<string, SortedDictionary<byte[], byte[]>> Trees { get; } = new(StringComparer.Ordinal);

        public Model Copy()
        {
            var copy = new Model();
            foreach (var (name, tree) in Trees) copy.Trees[name] = OrdinalBytes.Copy(tree);
            return copy;
        }
    }
}
