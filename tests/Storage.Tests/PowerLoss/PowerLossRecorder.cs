using Storage.Faults;
using Storage.Platform;

namespace Storage.Tests.PowerLoss;

internal enum IoKind
{
    Write,
    SetLength,
    Sync,
    Rename,
    Delete,
    CreateDirectory,
    Acknowledged,
}

/// <summary>One change the engine made to its files (or a commit the test saw return), in the order they happened.</summary>
internal sealed record IoEvent(IoKind Kind, string Path, string? ToPath = null, long Offset = 0, byte[]? Data = null, bool Durable = false, long Value = 0);

/// <summary>
/// Records, through the engine's I/O seam, every write (with its bytes), length change, sync, rename, delete and
/// directory creation under one environment directory, and the commits the test saw acknowledged. The log is what
/// <see cref="CrashStates"/> rebuilds power cuts from. Nothing is changed or failed.
/// </summary>
internal sealed class PowerLossRecorder(string root) : IFaultInjector
{
    private readonly object _lock = new();
    private readonly List<IoEvent> _events = [];
    private readonly string _root = System.IO.Path.GetFullPath(root);

    public string Root => _root;

    public IReadOnlyList<IoEvent> Events
    {
        get
        {
            lock (_lock) return _events.ToList();
        }
    }

    public void Acknowledged(long transactionId) => Add(new IoEvent(IoKind.Acknowledged, "", Value: transactionId));

    public void BeforeWrite(string path, long offsetBytes, long lengthBytes)
    {
    }

    public void BeforeSync(string path)
    {
        if (Inside(path)) Add(new IoEvent(IoKind.Sync, Relative(path)));
    }

    public void AfterWrite(string path, long offsetBytes, ReadOnlySpan<byte> data, bool durable)
    {
        if (Inside(path)) Add(new IoEvent(IoKind.Write, Relative(path), Offset: offsetBytes, Data: data.ToArray(), Durable: durable));
    }

    public void AfterSetLength(string path, long lengthBytes)
    {
        if (Inside(path)) Add(new IoEvent(IoKind.SetLength, Relative(path), Value: lengthBytes));
    }

    public void AfterRename(string fromPath, string toPath)
    {
        if (Inside(fromPath)) Add(new IoEvent(IoKind.Rename, Relative(fromPath), Relative(toPath)));
    }

    public void AfterDelete(string path)
    {
        if (Inside(path)) Add(new IoEvent(IoKind.Delete, Relative(path)));
    }

    public void AfterCreateDirectory(string path)
    {
        if (Inside(path)) Add(new IoEvent(IoKind.CreateDirectory, Relative(path)));
    }

    private void Add(IoEvent e)
    {
        lock (_lock) _events.Add(e);
    }

    private bool Inside(string path)
    {
        var full = System.IO.Path.GetFullPath(path);
        return full == _root || full.StartsWith(_root + System.IO.Path.DirectorySeparatorChar, StringComparison.Ordinal);
    }

    private string Relative(string path) => System.IO.Path.GetRelativePath(_root, System.IO.Path.GetFullPath(path));
}
