namespace Storage.Tests.PowerLoss;

/// <summary>
/// Replays a <see cref="PowerLossRecorder"/> log and, at any point of it, writes out what a power cut there could
/// leave on disk. A file's content is what its last fsync made durable (plus writes on O_DSYNC handles, durable when
/// they returned), then each later write is dropped, kept, or torn at 512-byte or 4 KiB boundaries, each length change
/// kept or dropped, in the order they were made. A file's length is only what a length change set: the engine writes
/// inside the length it set, and a lost size update hides what was written past the old size. A directory's creates, renames and deletes are durable once the
/// directory was synced; of those made since, a prefix survives (metadata journals keep their order).
/// </summary>
internal sealed class CrashStates
{
    private readonly Dictionary<string, Dictionary<string, Node>> _durableDirectories = new(StringComparer.Ordinal) { ["."] = new(StringComparer.Ordinal) };
    private readonly Dictionary<string, List<NamespaceOp>> _pendingNamespace = new(StringComparer.Ordinal);
    private readonly Dictionary<string, Node> _liveFiles = new(StringComparer.Ordinal);
    private readonly HashSet<string> _liveDirectories = new(StringComparer.Ordinal) { "." };

    /// <summary>The last transaction whose commit the test saw return, up to the events applied so far.</summary>
    public long Acknowledged { get; private set; }

    public void Apply(IoEvent e)
    {
        switch (e.Kind)
        {
            case IoKind.Acknowledged:
                Acknowledged = Math.Max(Acknowledged, e.Value);
                break;
            case IoKind.Write:
                FileAt(e.Path).Pending.Add(new Pending(e.Offset, e.Data, -1, e.Durable));
                break;
            case IoKind.SetLength:
                FileAt(e.Path).Pending.Add(new Pending(0, null, e.Value, Durable: false));
                break;
            case IoKind.Sync when _liveDirectories.Contains(e.Path):
                SyncDirectory(e.Path);
                break;
            case IoKind.Sync:
                if (_liveFiles.TryGetValue(e.Path, out var node)) node.Sync();
                break;
            case IoKind.Rename:
                var (fromDirectory, fromName) = Split(e.Path);
                var (toDirectory, toName) = Split(e.ToPath!);
                if (fromDirectory != toDirectory) throw new InvalidOperationException($"rename across directories: {e.Path} -> {e.ToPath}");
                var moved = _liveFiles[e.Path];
                _liveFiles.Remove(e.Path);
                _liveFiles[e.ToPath!] = moved;
                PendingIn(fromDirectory).Add(new NamespaceOp(NamespaceKind.Rename, fromName, toName, moved));
                break;
            case IoKind.Delete:
                var (directory, name) = Split(e.Path);
                _liveFiles.Remove(e.Path);
                PendingIn(directory).Add(new NamespaceOp(NamespaceKind.Delete, name, null, null));
                break;
            case IoKind.CreateDirectory:
                var (parent, child) = Split(e.Path);
                _liveDirectories.Add(e.Path);
                PendingIn(parent).Add(new NamespaceOp(NamespaceKind.CreateDirectory, child, null, null));
                break;
        }
    }

    /// <summary>Whether the event can be a sync point: something became durable with it.</summary>
    public static bool IsDurable(IoEvent e) => e.Kind == IoKind.Sync || (e.Kind == IoKind.Write && e.Durable);

    /// <summary>Writes one possible crash state of the events applied so far into <paramref name="target"/> (an empty directory).</summary>
    public void Materialize(string target, Random random)
    {
        // 0: everything not synced is lost; 1: all of it reached the disk; 2: each piece decided on its own.
        var mode = random.Next(4) switch { 0 => 0, 1 => 1, _ => 2 };
        var directories = _durableDirectories.ToDictionary(d => d.Key, d => new Dictionary<string, Node>(d.Value, StringComparer.Ordinal), StringComparer.Ordinal);
        foreach (var (directory, ops) in _pendingNamespace)
        {
            var keep = mode switch { 0 => 0, 1 => ops.Count, _ => random.Next(ops.Count + 1) };
            for (var i = 0; i < keep; i++) ApplyNamespace(directories, directory, ops[i]);
        }
        foreach (var (directory, files) in directories)
        {
            if (!Reachable(directories, directory)) continue;
            var path = Path.Combine(target, directory);
            Directory.CreateDirectory(path);
            foreach (var (name, node) in files) File.WriteAllBytes(Path.Combine(path, name), node.Content(mode, random));
        }
    }

    private static bool Reachable(Dictionary<string, Dictionary<string, Node>> directories, string directory)
    {
        for (var d = directory; d != "."; d = Split(d).Directory)
        {
            if (!directories.ContainsKey(d)) return false;
        }
        return true;
    }

    private Node FileAt(string path)
    {
        if (_liveFiles.TryGetValue(path, out var node)) return node;
        node = new Node();
        _liveFiles[path] = node;
        var (directory, name) = Split(path);
        PendingIn(directory).Add(new NamespaceOp(NamespaceKind.Create, name, null, node));
        return node;
    }

    private List<NamespaceOp> PendingIn(string directory)
    {
        if (!_pendingNamespace.TryGetValue(directory, out var list)) _pendingNamespace[directory] = list = [];
        return list;
    }

    private void SyncDirectory(string directory)
    {
        if (!_pendingNamespace.TryGetValue(directory, out var ops)) return;
        foreach (var op in ops) ApplyNamespace(_durableDirectories, directory, op);
        ops.Clear();
    }

    private static void ApplyNamespace(Dictionary<string, Dictionary<string, Node>> directories, string directory, NamespaceOp op)
    {
        if (!directories.TryGetValue(directory, out var files)) return; // the directory itself did not survive
        switch (op.Kind)
        {
            case NamespaceKind.Create:
                files[op.Name] = op.Node!;
                break;
            case NamespaceKind.Rename:
                if (files.Remove(op.Name, out var node)) files[op.NewName!] = node;
                break;
            case NamespaceKind.Delete:
                files.Remove(op.Name);
                break;
            case NamespaceKind.CreateDirectory:
                var path = directory == "." ? op.Name : Path.Combine(directory, op.Name);
                directories.TryAdd(path, new Dictionary<string, Node>(StringComparer.Ordinal));
                break;
        }
    }

    private static (string Directory, string Name) Split(string path)
    {
        var directory = Path.GetDirectoryName(path);
        return (string.IsNullOrEmpty(directory) ? "." : directory, Path.GetFileName(path));
    }

    private enum NamespaceKind
    {
        Create,
        Rename,
        Delete,
        CreateDirectory,
    }

    private sealed record NamespaceOp(NamespaceKind Kind, string Name, string? NewName, Node? Node);

    /// <summary>A write (Data set) or a length change (Length >= 0) not yet made durable by an fsync.</summary>
    private sealed record Pending(long Offset, byte[]? Data, long Length, bool Durable);

    private sealed class Node
    {
        private byte[] _durable = [];
        private long _durableLength;

        public List<Pending> Pending { get; } = [];

        public void Sync()
        {
            (_durable, _durableLength) = Build(_durable, _durableLength, Pending, mode: 1, random: null);
            Pending.Clear();
        }

        public byte[] Content(int mode, Random random)
        {
            var (bytes, length) = Build(_durable, _durableLength, Pending, mode, random);
            return bytes.AsSpan(0, (int)length).ToArray();
        }

        private static (byte[] Bytes, long Length) Build(byte[] durable, long durableLength, List<Pending> pending, int mode, Random? random)
        {
            var length = durableLength;
            var capacity = durableLength;
            foreach (var p in pending) capacity = Math.Max(capacity, p.Data is null ? p.Length : p.Offset + p.Data.Length);
            var bytes = new byte[capacity];
            durable.AsSpan(0, (int)durableLength).CopyTo(bytes);
            foreach (var p in pending)
            {
                var choice = p.Durable || mode == 1 ? 1 : mode == 0 ? 0 : random!.Next(3);
                if (p.Data is null)
                {
                    if (choice != 0)
                    {
                        if (p.Length < length) bytes.AsSpan((int)p.Length, (int)(length - p.Length)).Clear();
                        length = p.Length;
                    }
                    continue;
                }
                if (choice == 0) continue;
                // Writes stay inside the length the engine set first; what lies past the final length is not in the file.
                if (choice == 1)
                {
                    p.Data.CopyTo(bytes.AsSpan((int)p.Offset));
                    continue;
                }
                // Torn: each aligned sector of the write reached the disk or not.
                var sector = random!.Next(2) == 0 ? 512 : 4096;
                for (var start = p.Offset; start < p.Offset + p.Data.Length;)
                {
                    var end = Math.Min(p.Offset + p.Data.Length, (start / sector + 1) * sector);
                    if (random.Next(2) == 0) p.Data.AsSpan((int)(start - p.Offset), (int)(end - start)).CopyTo(bytes.AsSpan((int)start));
                    start = end;
                }
            }
            return (bytes, length);
        }
    }
}
