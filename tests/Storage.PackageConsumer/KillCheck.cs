using System.Diagnostics;
using System.Text;
using Storage;

/// <summary>
/// Process kills through the package: a child process (this program again) commits durable transactions of ten puts
/// and prints each one's number once <c>Commit</c> has returned, with a checkpoint (flush and sync of the data file)
/// every 200; the parent kills it after a number of acknowledgements, opens the environment (recovery) and checks that
/// every acknowledged transaction is there whole and that no transaction is there in part. Three rounds on one
/// environment, each child going on from what the last recovery found. Runs wherever the package runs (Linux, and the
/// Windows build under Wine).
/// </summary>
internal static class KillCheck
{
    private const string TreeName = "kills";
    private const int PutsPerTransaction = 10;
    private static readonly int[] KillAfterAcks = [40, 350, 1200];

    /// <summary>Small journal files, so that the children switch and retire files between kills.</summary>
    private static readonly StorageOptions Options = new() { MinJournalFileSizeBytes = 1L << 20, MaxJournalFileSizeBytes = 1L << 20 };

    public static void Run(Action<bool, string> check)
    {
        var directory = Path.Combine(Path.GetTempPath(), "storage-package-kill-" + Guid.NewGuid().ToString("N"));
        try
        {
            long next = 1;
            foreach (var acks in KillAfterAcks)
            {
                var lastAcked = RunChildUntil(directory, next, acks, check);
                if (lastAcked < 0) return;
                next = Verify(directory, lastAcked, check) + 1;
            }
        }
        finally
        {
            if (Directory.Exists(directory)) Directory.Delete(directory, recursive: true);
        }
    }

    /// <summary>Starts the child at transaction <paramref name="first"/>, kills it after <paramref name="acks"/> acknowledgements; returns the last acknowledged, or -1.</summary>
    private static long RunChildUntil(string directory, long first, int acks, Action<bool, string> check)
    {
        var start = new ProcessStartInfo(Environment.ProcessPath!)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        // Run as a program of its own (the apphost), or through dotnet when this was started as a .dll.
        if (!Environment.ProcessPath!.EndsWith("Storage.PackageConsumer", StringComparison.Ordinal) &&
            !Environment.ProcessPath!.EndsWith("Storage.PackageConsumer.exe", StringComparison.OrdinalIgnoreCase))
        {
            start.ArgumentList.Add(typeof(KillCheck).Assembly.Location);
        }
        foreach (var argument in new[] { "--kill-child", directory, first.ToString(System.Globalization.CultureInfo.InvariantCulture) }) start.ArgumentList.Add(argument);

        using var child = Process.Start(start)!;
        var errors = new StringBuilder();
        child.ErrorDataReceived += (_, e) => { if (e.Data is not null) lock (errors) errors.AppendLine(e.Data); };
        child.BeginErrorReadLine();
        // A child that stops making progress is killed after two minutes, which ends the loop below with a failure.
        using var watchdog = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        using var registration = watchdog.Token.Register(() =>
        {
            try { child.Kill(); } catch (InvalidOperationException) { }
        });
        long lastAcked = -1;
        var seen = 0;
        while (child.StandardOutput.ReadLine() is { } line)
        {
            if (!line.StartsWith("acked ", StringComparison.Ordinal)) continue;
            lastAcked = long.Parse(line.AsSpan(6), System.Globalization.CultureInfo.InvariantCulture);
            if (++seen == acks)
            {
                child.Kill();
                break;
            }
        }
        child.WaitForExit();
        string stderr;
        lock (errors) stderr = errors.ToString();
        check(seen == acks, $"the killed child acknowledged {acks} transactions first (it acknowledged {seen}{(watchdog.IsCancellationRequested ? " in two minutes" : "")}, exit code {child.ExitCode}: {stderr.Trim()})");
        return seen == acks ? lastAcked : -1;
    }

    /// <summary>Opens the environment (recovering it) and checks it; returns the last transaction found whole.</summary>
    private static long Verify(string directory, long lastAcked, Action<bool, string> check)
    {
        using var env = StorageEnvironment.Open(directory, Options);
        using var read = env.BeginRead();
        var tree = read.OpenTree(TreeName);
        var found = 0L;
        for (var t = 1L; ; t++)
        {
            var present = 0;
            for (var i = 0; i < PutsPerTransaction; i++)
            {
                if (tree.Get(Key(t, i)) is { } value)
                {
                    present++;
                    check(value.AsSpan().SequenceEqual(Value(t, i)), $"transaction {t}, put {i} reads back what was written");
                }
            }
            if (present == 0 && t > lastAcked) break;
            check(present == PutsPerTransaction, $"transaction {t} is whole after the kill ({present} of {PutsPerTransaction} puts)");
            found = t;
        }
        check(found >= lastAcked, $"every acknowledged transaction survives the kill (acknowledged up to {lastAcked}, found up to {found})");
        check(tree.Count == found * PutsPerTransaction, $"nothing else is in the tree ({tree.Count} entries for {found} transactions)");
        return found;
    }

    /// <summary>The child: commits from transaction <paramref name="first"/> on until it is killed.</summary>
    public static int Child(string directory, long first)
    {
        using var env = StorageEnvironment.Open(directory, Options);
        var output = Console.Out;
        for (var t = first; ; t++)
        {
            using (var tx = env.BeginWrite())
            {
                var tree = tx.OpenOrCreateTree(TreeName);
                for (var i = 0; i < PutsPerTransaction; i++) tree.Put(Key(t, i), Value(t, i));
                tx.Commit();
            }
            output.WriteLine($"acked {t}");
            output.Flush();
            if (t % 200 == 0) env.Checkpoint();
        }
    }

    private static byte[] Key(long transaction, int put) => Encoding.UTF8.GetBytes($"t{transaction:D8}-{put}");

    private static byte[] Value(long transaction, int put)
    {
        var value = new byte[64 + (int)(transaction % 200)];
        new Random((int)(transaction * PutsPerTransaction + put)).NextBytes(value);
        return value;
    }
}
