using Storage.CrashHost;
using Storage;

// Modes:
//   <dir> <seed>       commit KillWorkload transactions forever, printing "READY <next>" then "ACK <i>" after each commit,
//                      while KillWorkload.Workers concurrent committers (sync and async) print "CACK <worker> <i>",
//                      and, for half the seeds, compaction runs in a loop beside them
//   group <dir> <seed> open an environment group (root <dir>/root, branches <dir>/branch-<b>) and commit KillWorkload
//                      transactions forever in every member, one thread each, printing "READY <next of each member>" then
//                      "GACK <member> <i>" after each commit, while in every member GroupWorkers concurrent committers
//                      (sync and async) print "GCACK <member> <worker> <i>"
//   replace <dir> <step> <exchange|intent>
//                      open a group (root <dir>/root), fill branch <dir>/index with the "old" version and <dir>/index.new
//                      with the "new" one, then replace the first by the second (by an atomic exchange, or through an
//                      intent file); at <step> of the replacement print "AT <step>" and wait to be killed
//   load <dir>         commit random puts and deletes into tree "load" until stdin closes (1 MiB journal files, a flush
//                      every 50 ms, a sync every 200 ms), printing "READY" and then "COMMITS <n>" every 500 commits
//   archive <dir> <archive-dir> <backup-dir>
//                      commit forever with a continuous archive shipping every 5 ms, while another thread takes full
//                      backups into <backup-dir> and incremental ones after them, printing "READY <next>" then "ACK <i>"
//                      after each commit
//   hold <dir>         open the environment, print "OPEN", wait for a line on stdin, dispose, print "CLOSED"
//   try-open <dir>     try to open the environment; print "LOCKED", "OPENED" or "ERROR <code> <message>"
//   backend <dir> <io> open with IoBackend <io> (Auto, Native, Managed), commit and read back values, one and batched;
//                      print "BACKEND <name>" or "ERROR <code> <message>"
// The children check their diffs against whole pages, as the tests do.
Storage.Commit.JournalEntryBuilder.CheckWrittenLines = true;
try
{
    return args switch
    {
        ["hold", var dir] => Hold(dir),
        ["load", var dir] => Load(dir),
        ["archive", var dir, var archive, var backups] => ArchiveLoop(dir, archive, backups),
        ["replace", var dir, var step, var how] => Replace(dir, step, how == "intent"),
        ["group", var dir, var seed] => GroupLoop(dir, int.Parse(seed, System.Globalization.CultureInfo.InvariantCulture)),
        ["try-open", var dir] => TryOpen(dir),
        ["backend", var dir, var io] => Backend(dir, Enum.Parse<IoBackend>(io)),
        [var dir, var seed] => Loop(dir, int.Parse(seed, System.Globalization.CultureInfo.InvariantCulture)),
        _ => Usage(),
    };
}
catch (Exception e)
{
    Console.Error.WriteLine($"FAILED {e}");
    return 3;
}

static int Usage()
{
    Console.Error.WriteLine("usage: Storage.CrashHost <dir> <seed> | hold <dir> | try-open <dir>");
    return 2;
}

static int Loop(string dir, int seed)
{
    using var env = StorageEnvironment.Open(dir, KillWorkload.Options(seed));
    long next;
    var nextOfWorker = new long[KillWorkload.Workers];
    using (var read = env.BeginRead())
    {
        next = read.TryOpenTree(KillWorkload.TreeName, out var tree) && tree.TryGet(KillWorkload.LastKey, out var last)
            ? KillWorkload.ParseLast(last) + 1
            : 1;
        var hasConcurrent = read.TryOpenTree(KillWorkload.ConcurrentTreeName, out var concurrent);
        for (var w = 0; w < KillWorkload.Workers; w++)
        {
            nextOfWorker[w] = hasConcurrent && concurrent.TryGet(KillWorkload.ConcurrentLastKey(w), out var lastOfWorker)
                ? KillWorkload.ParseLast(lastOfWorker) + 1
                : 1;
        }
    }
    var stdout = Console.Out; // synchronized: one line at a time
    stdout.WriteLine($"READY {next}");
    stdout.Flush();
    // Concurrent committers beside the sequential loop, each acknowledging "CACK <worker> <i>" once its commit returned.
    for (var w = 0; w < KillWorkload.Workers; w++)
    {
        var worker = w;
        if (worker % 2 == 0)
        {
            new Thread(() => GuardThread(() =>
            {
                for (var i = nextOfWorker[worker]; ; i++)
                {
                    using (var tx = env.BeginWrite(TimeSpan.FromMinutes(5)))
                    {
                        KillWorkload.WriteConcurrent(tx, worker, i);
                        tx.Commit();
                    }
                    Acknowledge(stdout, worker, i);
                }
            })) { IsBackground = true }.Start();
        }
        else
        {
            _ = Task.Run(() => GuardAsync(async () =>
            {
                for (var i = nextOfWorker[worker]; ; i++)
                {
                    using (var tx = await env.BeginWriteAsync())
                    {
                        KillWorkload.WriteConcurrent(tx, worker, i);
                        await tx.CommitAsync();
                    }
                    Acknowledge(stdout, worker, i);
                }
            }));
        }
    }
    // On half the seeds, compaction runs all along beside the committers: pages move and the file is cut and punched
    // while the process may be killed.
    if (KillWorkload.Compacts(seed))
    {
        new Thread(() => GuardThread(() =>
        {
            while (true)
            {
                env.Compact();
                Thread.Sleep(1 + seed % 10);
            }
        })) { IsBackground = true }.Start();
    }
    if (KillWorkload.Pipelines(seed))
    {
        // One writer, pipelined: each transaction begins as soon as the one before is handed to the journal, up to
        // KillWorkload.PipelineDepth commits not yet durable; each is acknowledged, in order, once durable.
        var inFlight = new Queue<(long Transaction, Task Durable)>();
        for (var i = next; ; i++)
        {
            if (inFlight.Count == KillWorkload.PipelineDepth) AcknowledgeDurable(stdout, inFlight.Dequeue());
            using var tx = env.BeginWrite(TimeSpan.FromMinutes(5));
            KillWorkload.Write(tx, i);
            inFlight.Enqueue((i, tx.CommitAsync().AsTask()));
        }
    }
    for (var i = next; ; i++)
    {
        using (var tx = env.BeginWrite(TimeSpan.FromMinutes(5)))
        {
            KillWorkload.Write(tx, i);
            tx.Commit();
        }
        stdout.WriteLine($"ACK {i}");
        stdout.Flush();
    }
}

static void AcknowledgeDurable(TextWriter stdout, (long Transaction, Task Durable) commit)
{
    commit.Durable.GetAwaiter().GetResult();
    stdout.WriteLine($"ACK {commit.Transaction}");
    stdout.Flush();
}

static int GroupLoop(string dir, int seed)
{
    var options = KillWorkload.Options(seed);
    var group = EnvironmentGroup.Open(KillWorkload.GroupMember(dir, 0), options);
    var members = new List<StorageEnvironment> { group.Root };
    for (var m = 1; m < KillWorkload.GroupMembers; m++) members.Add(group.OpenBranch(KillWorkload.GroupMember(dir, m), options));
    var next = new long[members.Count];
    var nextOfWorker = new long[members.Count, KillWorkload.GroupWorkers];
    for (var m = 0; m < members.Count; m++)
    {
        using var read = members[m].BeginRead();
        next[m] = read.TryOpenTree(KillWorkload.TreeName, out var tree) && tree.TryGet(KillWorkload.LastKey, out var last) ? KillWorkload.ParseLast(last) + 1 : 1;
        var hasConcurrent = read.TryOpenTree(KillWorkload.ConcurrentTreeName, out var concurrent);
        for (var w = 0; w < KillWorkload.GroupWorkers; w++)
        {
            nextOfWorker[m, w] = hasConcurrent && concurrent.TryGet(KillWorkload.ConcurrentLastKey(w), out var lastOfWorker) ? KillWorkload.ParseLast(lastOfWorker) + 1 : 1;
        }
    }
    var stdout = Console.Out;
    stdout.WriteLine($"READY {string.Join(' ', next)}");
    stdout.Flush();
    // Concurrent committers in every member: entries of one member wait for the group's writes beside each other's.
    for (var m = 0; m < members.Count; m++)
    {
        for (var w = 0; w < KillWorkload.GroupWorkers; w++)
        {
            var (member, worker) = (m, w);
            if (worker % 2 == 0)
            {
                new Thread(() => GuardThread(() =>
                {
                    for (var i = nextOfWorker[member, worker]; ; i++)
                    {
                        using (var tx = members[member].BeginWrite(TimeSpan.FromMinutes(5)))
                        {
                            KillWorkload.WriteConcurrent(tx, worker, i);
                            tx.Commit();
                        }
                        stdout.WriteLine($"GCACK {member} {worker} {i}");
                        stdout.Flush();
                    }
                })) { IsBackground = true }.Start();
            }
            else
            {
                _ = Task.Run(() => GuardAsync(async () =>
                {
                    for (var i = nextOfWorker[member, worker]; ; i++)
                    {
                        using (var tx = await members[member].BeginWriteAsync())
                        {
                            KillWorkload.WriteConcurrent(tx, worker, i);
                            await tx.CommitAsync();
                        }
                        stdout.WriteLine($"GCACK {member} {worker} {i}");
                        stdout.Flush();
                    }
                }));
            }
        }
    }
    var threads = new List<Thread>();
    for (var m = 0; m < members.Count; m++)
    {
        var member = m;
        var thread = new Thread(() => GuardThread(() =>
        {
            for (var i = next[member]; ; i++)
            {
                using (var tx = members[member].BeginWrite(TimeSpan.FromMinutes(5)))
                {
                    KillWorkload.Write(tx, i);
                    tx.Commit();
                }
                stdout.WriteLine($"GACK {member} {i}");
                stdout.Flush();
            }
        })) { IsBackground = true };
        threads.Add(thread);
        thread.Start();
    }
    foreach (var thread in threads) thread.Join();
    return 0;
}

static void Acknowledge(TextWriter stdout, int worker, long transaction)
{
    stdout.WriteLine($"CACK {worker} {transaction}");
    stdout.Flush();
}

static void GuardThread(Action body)
{
    try
    {
        body();
    }
    catch (Exception e)
    {
        Console.Error.WriteLine($"FAILED {e}");
        Environment.Exit(3);
    }
}

static async Task GuardAsync(Func<Task> body)
{
    try
    {
        await body();
    }
    catch (Exception e)
    {
        Console.Error.WriteLine($"FAILED {e}");
        Environment.Exit(3);
    }
}

static int Replace(string dir, string step, bool throughIntent)
{
    var group = EnvironmentGroup.Open(Path.Combine(dir, "root"));
    group.AtomicExchangeRefused = throughIntent;
    var live = group.OpenBranch(Path.Combine(dir, "index"));
    KillWorkload.WriteVersion(live, "old");
    var rebuilt = group.OpenBranch(Path.Combine(dir, "index.new"));
    KillWorkload.WriteVersion(rebuilt, "new");
    group.ReplaceStep = at =>
    {
        if (at != step) return;
        Console.Out.WriteLine($"AT {at}");
        Console.Out.Flush();
        Console.In.ReadLine(); // killed here
    };
    group.ReplaceBranch(live, rebuilt);
    Console.Out.WriteLine("REPLACED");
    Console.Out.Flush();
    Console.In.ReadLine();
    return 0;
}

static int Hold(string dir)
{
    using (var env = StorageEnvironment.Open(dir))
    {
        Console.Out.WriteLine("OPEN");
        Console.Out.Flush();
        Console.In.ReadLine();
    }
    Console.Out.WriteLine("CLOSED");
    Console.Out.Flush();
    return 0;
}

static int ArchiveLoop(string dir, string archive, string backups)
{
    using var env = StorageEnvironment.Open(dir, ArchiveWorkload.Options(archive));
    long next;
    using (var read = env.BeginRead())
    {
        next = read.TryOpenTree("t", out var tree) && tree.TryGet("last"u8, out var last) ? Keys.ReadInt64(last) + 1 : 1;
    }
    new Thread(() => GuardThread(() =>
    {
        // Backups beside the commits: a full one, then incremental ones after it, again and again.
        while (true)
        {
            var full = env.BackupAsync(backups).GetAwaiter().GetResult();
            var through = full.TransactionId;
            for (var i = 0; i < 5; i++)
            {
                through = env.BackupIncrementalAsync(backups, through).GetAwaiter().GetResult().TransactionId;
            }
        }
    })) { IsBackground = true }.Start();
    Console.Out.WriteLine($"READY {next}");
    Console.Out.Flush();
    for (var i = next; ; i++)
    {
        ArchiveWorkload.Commit(env, i);
        Console.Out.WriteLine($"ACK {i}");
        Console.Out.Flush();
    }
}

static int Load(string dir)
{
    var options = new StorageOptions
    {
        MinJournalFileSizeBytes = 1 << 20,
        MaxJournalFileSizeBytes = 1 << 20,
        FlushInterval = TimeSpan.FromMilliseconds(50),
        SyncInterval = TimeSpan.FromMilliseconds(200),
    };
    using var env = StorageEnvironment.Open(dir, options);
    using var stop = new CancellationTokenSource();
    var writer = new Thread(() => GuardThread(() =>
    {
        var random = new Random(11);
        var key = new byte[8];
        var value = new byte[12_000];
        random.NextBytes(value);
        for (long n = 1; !stop.IsCancellationRequested; n++)
        {
            using (var tx = env.BeginWrite())
            {
                var tree = tx.OpenOrCreateTree("load");
                for (var i = 20 + random.Next(40); i > 0; i--)
                {
                    System.Buffers.Binary.BinaryPrimitives.WriteInt64BigEndian(key, random.Next(20_000));
                    if (random.Next(4) == 0) tree.Delete(key);
                    else tree.Put(key, value.AsSpan(0, random.Next(50) == 0 ? 3_000 + random.Next(9_000) : 16 + random.Next(400)));
                }
                tx.Commit();
            }
            if (n % 500 == 0)
            {
                Console.Out.WriteLine($"COMMITS {n}");
                Console.Out.Flush();
            }
        }
    }));
    writer.Start();
    Console.Out.WriteLine("READY");
    Console.Out.Flush();
    Console.In.ReadLine();
    stop.Cancel();
    writer.Join();
    return 0;
}

static int Backend(string dir, IoBackend io)
{
    try
    {
        using var env = StorageEnvironment.Open(dir, new StorageOptions { IoBackend = io });
        using (var tx = env.BeginWrite())
        {
            var t = tx.OpenOrCreateTree("t");
            t.Put("key"u8, "value"u8);
            t.Put("big"u8, new byte[10_000]);
            tx.Commit();
        }
        env.Checkpoint();
        using var read = env.BeginRead();
        if (!read.OpenTree("t").TryGet("key"u8, out var value) || !value.SequenceEqual("value"u8)) throw new InvalidOperationException("value not read back");
        // A batched read of an overflow value reads its run ahead (madvise, through the native layer or libc).
        var values = read.OpenTree("t").GetMany([(ReadOnlyMemory<byte>)"big"u8.ToArray(), "key"u8.ToArray()]);
        if (values[0]?.Length != 10_000 || !values[1].AsSpan().SequenceEqual("value"u8)) throw new InvalidOperationException("batch not read back");
        Console.Out.WriteLine($"BACKEND {env.GetStats().IoBackend}");
    }
    catch (StorageException e)
    {
        Console.Out.WriteLine($"ERROR {e.ErrorCode} {e.Message}");
    }
    Console.Out.Flush();
    return 0;
}

static int TryOpen(string dir)
{
    try
    {
        using var env = StorageEnvironment.Open(dir);
        Console.Out.WriteLine("OPENED");
    }
    catch (StorageException e) when (e.ErrorCode == StorageErrorCode.EnvironmentLocked)
    {
        Console.Out.WriteLine("LOCKED");
    }
    catch (StorageException e)
    {
        Console.Out.WriteLine($"ERROR {e.ErrorCode} {e.Message}");
    }
    Console.Out.Flush();
    return 0;
}
