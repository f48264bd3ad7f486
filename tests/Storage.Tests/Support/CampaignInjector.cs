using Storage.Faults;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Tests.Support;

/// <summary>
/// The fault campaign's managed seam: classifies each call the engine reports by file and offset, counts the
/// calls of the kinds it is given, and fails the nth call of one kind. Thread-safe: the flusher and the journal's
/// background preparation report calls too.
/// </summary>
internal sealed class CampaignInjector : IFaultInjector
{
    private readonly bool[] _handled = new bool[CampaignCalls.All.Length];
    private readonly long[] _calls = new long[CampaignCalls.All.Length];
    private readonly CampaignCall? _target;
    private readonly long _nth;
    private readonly CampaignFailure _failure;
    private volatile bool _armed = true;
    private int _fired;
    private readonly List<JournalWriteCall> _journalWrites = [];

    /// <param name="handled">The kinds this seam counts and fails (on the native backend, the native layer's are not).</param>
    /// <param name="target">The kind to fail, or null to count only.</param>
    public CampaignInjector(IEnumerable<CampaignCall> handled, CampaignCall? target = null, long nth = 0, CampaignFailure failure = CampaignFailure.Eio)
    {
        foreach (var call in handled) _handled[(int)call] = true;
        _target = target;
        _nth = nth;
        _failure = failure;
    }

    public int Fired => Volatile.Read(ref _fired);

    public long Calls(CampaignCall call) => Interlocked.Read(ref _calls[(int)call]);

    /// <summary>Stops counting and failing.</summary>
    public void Disarm() => _armed = false;

    /// <summary>
    /// The <paramref name="nth"/> journal write while armed (1-based), as the kind <see cref="CampaignCall.JournalWrite"/>
    /// counts it: entries and end markers in journal files and, on the native backend (whose layer counts every write
    /// to a journal handle), the header blocks written to spare files before they are put into use.
    /// </summary>
    public JournalWriteCall? JournalWrite(long nth, bool nativeBackend)
    {
        lock (_journalWrites)
        {
            var n = 0L;
            foreach (var call in _journalWrites)
            {
                if (call.IsSpareHeader && !nativeBackend) continue;
                if (++n == nth) return call;
            }
        }
        return null;
    }

    public void BeforeWrite(string path, long offsetBytes, long lengthBytes)
    {
        var name = Path.GetFileName(path);
        if (_armed && (name.EndsWith(".journal", StringComparison.Ordinal)
            || (name.EndsWith(Journal.JournalFile.SpareExtension, StringComparison.Ordinal) && offsetBytes == 0 && lengthBytes == Journal.JournalFileHeader.BlockBytes)))
        {
            lock (_journalWrites) _journalWrites.Add(new JournalWriteCall(path, offsetBytes, !name.EndsWith(".journal", StringComparison.Ordinal)));
        }
        var header = offsetBytes < 2L * PageLayout.PageSizeBytes;
        Hit(name switch
        {
            _ when name.EndsWith(".journal", StringComparison.Ordinal) => CampaignCall.JournalWrite,
            _ when name.EndsWith(".spare", StringComparison.Ordinal) => CampaignCall.JournalPresize,
            DataFile.FileName => header ? CampaignCall.HeaderWrite : CampaignCall.DataWrite,
            DataFile.FileName + ".new" => header ? CampaignCall.HeaderWrite : CampaignCall.CreateWrite,
            _ => null,
        });
    }

    public void BeforeSync(string path)
    {
        var name = Path.GetFileName(path);
        Hit(name switch
        {
            _ when name.EndsWith(".spare", StringComparison.Ordinal) => CampaignCall.JournalSync,
            DataFile.FileName => CampaignCall.DataSync,
            DataFile.FileName + ".new" => CampaignCall.CreateSync,
            _ when Directory.Exists(path) => CampaignCall.DirectorySync,
            _ => null,
        });
    }

    public void BeforeResize(string path, long lengthBytes)
    {
        if (Path.GetFileName(path) == DataFile.FileName) Hit(CampaignCall.Resize);
    }

    private void Hit(CampaignCall? call)
    {
        if (call is not { } kind || !_armed || !_handled[(int)kind]) return;
        var n = Interlocked.Increment(ref _calls[(int)kind]);
        if (kind != _target || n != _nth) return;
        Interlocked.Increment(ref _fired);
        throw CampaignCalls.ManagedError(_failure);
    }
}

/// <summary>A write to a journal file (or a spare's header block) as the engine announced it.</summary>
internal readonly record struct JournalWriteCall(string Path, long OffsetBytes, bool IsSpareHeader)
{
    /// <summary>Whether the bytes now at the call's place start a journal entry (rather than an end marker); null when the file is gone.</summary>
    public bool? LandedAnEntry()
    {
        if (IsSpareHeader || !File.Exists(Path)) return IsSpareHeader ? false : null;
        Span<byte> start = stackalloc byte[8];
        using var handle = File.OpenHandle(Path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        return RandomAccess.Read(handle, start, OffsetBytes) == 8
            && System.Buffers.Binary.BinaryPrimitives.ReadUInt64LittleEndian(start) == Journal.JournalEntryHeader.ExpectedMarker;
    }
}
