using Storage;
using Storage.CrashHost;

// Modes:
//   <dir> <seed>       commit KillWorkload transactions forever, printing "READY <next>" then "ACK <i>" after each commit
//   hold <dir>         open the environment, print "OPEN", wait for a line on stdin, dispose, print "CLOSED"
//   try-open <dir>     try to open the environment; print "LOCKED", "OPENED" or "ERROR <code> <message>"
//   backend <dir> <io> open with IoBackend <io> (Auto, Native, Managed), commit and read back values, one and batched;
//                      print "BACKEND <name>" or "ERROR <code> <message>"
try
{
    return args switch
    {
        ["hold", var dir] => Hold(dir),
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
    using (var read = env.BeginRead())
    {
        next = read.TryOpenTree(KillWorkload.TreeName, out var tree) && tree.TryGet(KillWorkload.LastKey, out var last)
            ? KillWorkload.ParseLast(last) + 1
            : 1;
    }
    var stdout = Console.Out;
    stdout.WriteLine($"READY {next}");
    stdout.Flush();
    for (var i = next; ; i++)
    {
        using (var tx = env.BeginWrite())
        {
            KillWorkload.Write(tx, i);
            tx.Commit();
        }
        stdout.WriteLine($"ACK {i}");
        stdout.Flush();
    }
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
