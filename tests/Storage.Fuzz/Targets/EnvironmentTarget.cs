using Storage.Inspect.Commands;
using Storage.Inspect;
using Storage.Inspection;
using Storage.Paging;

namespace Storage.Fuzz.Targets;

/// <summary>
/// <c>environment</c>: the input is unframed (<see cref="EnvironmentFraming"/>) into <c>data.storage</c> and journal
/// files in a fresh directory. First the read-only readers, which must not change it: the library's checker, then
/// the inspection tool's commands (info, journals, trees, dump) and the page decoder over every page. Then
/// <see cref="StorageEnvironment.Open"/> (recovery replays the journal into the data file), a full read of every tree
/// forwards and backwards with lookups of the keys seen, one small write, and dispose. Flag bits of the framing skip
/// either half, so that a problem of one does not hide what the other does with the same files.
/// </summary>
internal static class EnvironmentTarget
{
    /// <summary>More cursor steps than a 4 MiB file (plus its journal) can hold entries: the cursor is going round in circles.</summary>
    private const long MaxCursorSteps = 2_000_000;

    private const int MaxDecodedPages = 600;
    private const int SampledKeys = 64;

    private static readonly StorageOptions s_options = new()
    {
        CreateIfMissing = false,
        // Nothing in the background: what the target does is the same on every run.
        FlushInterval = TimeSpan.FromMilliseconds(600_000),
        SyncInterval = TimeSpan.FromMilliseconds(600_000),
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 1 << 20,
    };

    public static void Run(byte[] input)
    {
        using var directory = new ScratchDirectory("environment");
        var framing = EnvironmentFraming.Decode(input);
        framing.WriteTo(directory.Path);

        if (!framing.SkipReaders)
        {
            FuzzContract.Step(() => EnvironmentSnapshot.Check(directory.Path, collectPages: true));
            FuzzContract.Step(() => RunCommand("info", "--json", directory.Path));
            FuzzContract.Step(() => RunCommand("journals", directory.Path));
            FuzzContract.Step(() => RunCommand("trees", directory.Path));
            FuzzContract.Step(() => RunCommand("dump", directory.Path));
            FuzzContract.Step(() => DecodeEveryPage(directory.Path));
        }
        if (!framing.SkipOpen)
        {
            FuzzContract.Step(() => OpenAndReadEverything(directory.Path));
        }
    }

    /// <summary>One command of the tool, through its parser, with its exceptions let through for <see cref="FuzzContract"/> to judge.</summary>
    private static void RunCommand(params string[] args)
    {
        var code = Cli.Execute(args, TextWriter.Null, TextWriter.Null);
        if (code is not (Cli.Ok or Cli.Problems)) throw new FuzzInvariantException($"a command exited with {code}");
    }

    private static void DecodeEveryPage(string directory)
    {
        using var snapshot = EnvironmentSnapshot.Open(directory);
        var pages = Math.Min(Math.Max(snapshot.FilePageCount, snapshot.NextPageNumber), MaxDecodedPages);
        var page = new byte[PageLayout.PageSizeBytes];
        for (var number = 0L; number < pages; number++)
        {
            if (!snapshot.TryReadPage(number, page, out _)) continue;
            PageCommand.Decode(snapshot.DescribePage(number));
        }
    }

    private static void OpenAndReadEverything(string directory)
    {
        using var env = StorageEnvironment.Open(directory, s_options);
        using (var tx = env.BeginRead())
        {
            foreach (var name in tx.ListTrees())
            {
                FuzzContract.Step(() => ReadTree(tx, name));
            }
        }
        using (var tx = env.BeginWrite())
        {
            var tree = tx.OpenOrCreateTree("fuzz");
            tree.Put("written after recovery"u8, "value"u8);
            tx.Commit();
        }
        env.GetStats();
    }

    private static void ReadTree(ReadTransaction tx, string name)
    {
        var tree = tx.OpenTree(name);
        _ = tree.Count;
        FuzzContract.Step(() => tree.GetStats());
        var sampled = new List<ReadOnlyMemory<byte>>();
        var steps = 0L;
        var cursor = tree.CreateCursor();
        for (var ok = cursor.SeekFirst(); ok; ok = cursor.MoveNext())
        {
            Touch(cursor.Key, cursor.Value);
            if (sampled.Count < SampledKeys && steps % 7 == 0) sampled.Add(cursor.Key.ToArray());
            if (++steps > MaxCursorSteps) throw new FuzzInvariantException($"tree '{name}': the cursor went {steps} steps forward without reaching the end");
        }
        steps = 0;
        for (var ok = cursor.SeekLast(); ok; ok = cursor.MovePrevious())
        {
            Touch(cursor.Key, cursor.Value);
            if (++steps > MaxCursorSteps) throw new FuzzInvariantException($"tree '{name}': the cursor went {steps} steps back without reaching the start");
        }
        foreach (var key in sampled)
        {
            if (tree.TryGet(key.Span, out var value)) Touch(key.Span, value);
            FuzzContract.Step(() => cursor.Seek(key.Span));
        }
        FuzzContract.Step(() => tree.GetMany(sampled.ToArray()));
    }

    private static long Touch(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        long sum = 0;
        foreach (var b in key) sum += b;
        foreach (var b in value) sum += b;
        return sum;
    }
}
