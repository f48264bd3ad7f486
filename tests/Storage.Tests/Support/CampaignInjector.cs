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

    public void BeforeWrite(string path, long offsetBytes, long lengthBytes)
    {
        var name = Path.GetFileName(path);
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
