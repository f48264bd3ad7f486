using Storage.Groups;
using Storage.Journal;
using Storage.Recovery;
using Storage.State;

namespace Storage;

/// <summary>
/// A root environment and branch environments (for example a database and its indexes) opened together, each in its own
/// directory, each with its own single writer, flush and sync. With shared journals (the default), a branch's commits do not
/// make durable writes of their own: their entries go into the root's journal, where the entries of every member waiting
/// for the disk go out in one durable write. Each directory still holds a complete journal of its own (the shared files are
/// hard-linked into it), so any member can be opened alone, copied or moved, and recovers every transaction it committed.
/// </summary>
/// <remarks>
/// A branch whose directory cannot take a hard link to the root's files (another file system, no hard links) keeps a
/// journal of its own; <see cref="EnvironmentGroupStats.Members"/> says which members share and why one does not.
/// Disposing the group, or its root, closes the branches first and then the root.
/// </remarks>
public sealed class EnvironmentGroup : IDisposable
{
    private readonly object _lock = new();
    private readonly SharedJournal? _shared;
    private readonly List<(StorageEnvironment Environment, string? NotSharedReason)> _branches = [];

    /// <summary>Branches replaced through an intent file: their old versions are deleted at the close if they could not be then.</summary>
    private readonly List<string> _replaced = [];
    private bool _disposed;

    private EnvironmentGroup(StorageEnvironment root, SharedJournal? shared)
    {
        Root = root;
        _shared = shared;
    }

    /// <summary>The root environment: the group's shared journal files are written in its journal folder.</summary>
    public StorageEnvironment Root { get; }

    /// <summary>Whether branches' entries go into the root's journal (when their directories can take hard links).</summary>
    public bool SharedJournals => _shared is not null;

    /// <summary>
    /// Opens (or creates) the root environment of a group. Its options (journal file sizes, I/O backend, write method) are
    /// the shared journal's.
    /// </summary>
    /// <param name="rootDirectory">The root environment's directory.</param>
    /// <param name="options">The root's options.</param>
    /// <param name="sharedJournals">False: the members sit side by side, each with a journal of its own.</param>
    public static EnvironmentGroup Open(string rootDirectory, StorageOptions? options = null, bool sharedJournals = true)
    {
        if (!sharedJournals)
        {
            var sideBySide = new EnvironmentGroup(StorageEnvironment.Open(rootDirectory, options), shared: null);
            sideBySide.Root.BeforeClose = sideBySide.CloseBranches;
            return sideBySide;
        }
        SharedJournal? shared = null;
        StorageEnvironment root;
        try
        {
            root = EnvironmentOpener.Open(rootDirectory, options, context =>
            {
                shared = new SharedJournal(context.JournalDirectory, context.EnvironmentId, context.FirstFreeFileNumber,
                    context.Options.MinJournalFileSizeBytes, context.Options.MaxJournalFileSizeBytes, context.Io, context.Options.Hooks.FaultInjector, context.Options.JournalWriteMethod);
                return new MemberJournal(shared, context.JournalDirectory, context.EnvironmentId, context.FirstFreeFileNumber, context.Options.Hooks.FaultInjector);
            });
        }
        catch
        {
            shared?.Dispose();
            throw;
        }
        var group = new EnvironmentGroup(root, shared);
        root.BeforeClose = group.CloseBranches;
        root.ClosedHook = () => shared?.Dispose();
        return group;
    }

    /// <summary>
    /// Opens (or creates) a branch environment in <paramref name="directory"/> as a member of this group. After a crash it
    /// recovers from its own journal folder, as it would alone.
    /// </summary>
    /// <exception cref="ObjectDisposedException">The group was disposed.</exception>
    public StorageEnvironment OpenBranch(string directory, StorageOptions? options = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        directory = Path.GetFullPath(directory);
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (string.Equals(directory, Root.DirectoryPath, StringComparison.Ordinal))
            {
                throw new ArgumentException("A branch has a directory of its own, not the root's.", nameof(directory));
            }
            string? notShared = _shared is null ? "the group was opened without shared journals" : null;
            if (_shared is not null && _shared.MemberCount >= JournalGroupEndMarker.MaxRecords)
            {
                notShared = $"a shared journal holds at most {JournalGroupEndMarker.MaxRecords} members";
            }
            var replacementCompleted = false;
            if (notShared is null && _shared is not null)
            {
                // Before the probe makes the directory: a replacement a crash interrupted may have moved it aside.
                BranchReplacement.CompleteInterrupted(directory, options?.Hooks.FaultInjector);
                replacementCompleted = true;
                Platform.FileIo.CreateDirectory(directory);
                notShared = JournalLinks.Probe(Path.Combine(Root.DirectoryPath, StorageEnvironmentNames.JournalDirectory), directory);
            }
            var shared = notShared is null ? _shared : null;
            var branch = EnvironmentOpener.Open(directory, options, shared is null ? null : context =>
                new MemberJournal(shared, context.JournalDirectory, context.EnvironmentId, context.FirstFreeFileNumber, context.Options.Hooks.FaultInjector),
                replacementCompleted);
            _branches.Add((branch, notShared));
            return branch;
        }
    }

    /// <summary>
    /// Puts a new version of a branch in the place of the live one (for example an index rebuilt beside the one in use):
    /// <paramref name="replacement"/>, built in a directory of its own beside the live one (as a branch of this group, or
    /// alone), is closed (everything synced), the live branch is closed (its readers keep their snapshots until they end;
    /// its writers must have finished), and the replacement's directory takes the live one's name; the new version is then
    /// opened there and returned, and the old version's directory is deleted. A crash at any point leaves the live
    /// directory's name opening either the old version or the new one, whole.
    /// </summary>
    /// <remarks>
    /// On Linux the two directories exchange names in one atomic step (renameat2 with RENAME_EXCHANGE). Where that is
    /// not available (Windows, or a file system that refuses it), an intent file beside them (the live directory's name
    /// with <c>.replacing</c> after it) is made durable first, then the live directory is moved aside and the replacement
    /// moved in; opening either directory after a crash completes the replacement before anything else. Windows does not
    /// move a folder while a file in it is open: there the live branch's readers must have ended, or the move is refused
    /// and nothing is replaced.
    /// </remarks>
    /// <exception cref="StorageException">The file system refused a step (then nothing was replaced: both versions are
    /// closed, each whole in its own directory, unless the intent file stays, which the next open completes), or an I/O
    /// call failed.</exception>
    public StorageEnvironment ReplaceBranch(StorageEnvironment live, StorageEnvironment replacement, StorageOptions? options = null)
    {
        ArgumentNullException.ThrowIfNull(live);
        ArgumentNullException.ThrowIfNull(replacement);
        var liveDirectory = live.DirectoryPath;
        var replacementDirectory = replacement.DirectoryPath;
        string? oldVersion = null;
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (!_branches.Any(b => ReferenceEquals(b.Environment, live))) throw new ArgumentException("The environment is not an open branch of this group.", nameof(live));
            if (ReferenceEquals(replacement, Root)) throw new ArgumentException("The group's root cannot replace a branch.", nameof(replacement));
            if (ReferenceEquals(live, replacement) || string.Equals(liveDirectory, replacementDirectory, StringComparison.Ordinal))
            {
                throw new ArgumentException("The replacement is an environment of its own, in another directory.", nameof(replacement));
            }
            var parent = Path.GetDirectoryName(liveDirectory);
            if (!string.Equals(parent, Path.GetDirectoryName(replacementDirectory), StringComparison.Ordinal))
            {
                throw new ArgumentException("The replacement's directory must be beside the live branch's (in the same parent), so that its name can take the live one's.", nameof(replacement));
            }
            BranchReplacement.CheckNames(liveDirectory, replacementDirectory);
            var faults = live.Options.Hooks.FaultInjector;
            // The branch's open completed any replacement a crash had interrupted: an intent now is another replacement under way.
            if (File.Exists(BranchReplacement.IntentPath(liveDirectory)))
            {
                throw new StorageException(StorageErrorCode.EnvironmentLocked,
                    $"Another replacement of '{liveDirectory}' is under way ({BranchReplacement.IntentPath(liveDirectory)}); nothing was closed or replaced.",
                    BranchReplacement.IntentPath(liveDirectory), osError: 0);
            }
            // Both closed, everything of each synced to its own data file: from here each directory is whole on its own.
            replacement.Dispose();
            ReplaceStep?.Invoke("replacement closed");
            live.Dispose();
            ReplaceStep?.Invoke("live closed");
            _branches.RemoveAll(b => ReferenceEquals(b.Environment, live) || ReferenceEquals(b.Environment, replacement));
            var error = Storage.Platform.Posix.IsSupported && !AtomicExchangeRefused ? Storage.Platform.Posix.Exchange(liveDirectory, replacementDirectory) : ExchangeNotSupported;
            if (error == 0)
            {
                Storage.Platform.FileIo.SyncDirectory(parent!, faults);
                oldVersion = replacementDirectory;
            }
            else if (error is ExchangeNotSupported or ExchangeInvalid or ExchangeNotSupportedByFileSystem)
            {
                // Deletes the old version itself, or marks it for deletion at the close.
                BranchReplacement.Replace(liveDirectory, replacementDirectory, faults, ReplaceStep, ReplaceAsideName);
                _replaced.Add(liveDirectory);
            }
            else
            {
                throw new StorageException(StorageErrorCode.IoFailure,
                    $"Cannot exchange '{liveDirectory}' and '{replacementDirectory}' (errno {error}); nothing was swapped.", liveDirectory, error);
            }
            ReplaceStep?.Invoke("exchanged");
        }
        var opened = OpenBranch(liveDirectory, options ?? replacement.Options);
        ReplaceStep?.Invoke("opened");
        // After the exchange the old version is in the replacement's directory.
        if (oldVersion is not null) BranchReplacement.TryDelete(oldVersion);
        return opened;
    }

    /// <summary>What <see cref="ReplaceBranch"/> takes for "no atomic exchange here": ENOSYS, EINVAL, EOPNOTSUPP.</summary>
    private const int ExchangeNotSupported = 38, ExchangeInvalid = 22, ExchangeNotSupportedByFileSystem = 95;

    /// <summary>Test seam: called after each step of <see cref="ReplaceBranch"/>; throwing stops it there, as a crash would.</summary>
    internal Action<string>? ReplaceStep { get; set; }

    /// <summary>Test seam: the name the live directory is moved aside to (a random one otherwise).</summary>
    internal string? ReplaceAsideName { get; set; }

    /// <summary>Test seam: the file system refuses the atomic exchange (as one without RENAME_EXCHANGE does), so the intent file is used.</summary>
    internal bool AtomicExchangeRefused { get; set; }

    /// <summary>
    /// At the close, every file closed: deletes the old versions of replaced branches that something still held open then
    /// (each marked obsolete). One that still cannot go is deleted at the branch's next open.
    /// </summary>
    private void FinishReplacements()
    {
        string[] replaced;
        lock (_lock) replaced = [.. _replaced];
        foreach (var directory in replaced) BranchReplacement.DeleteObsoleteVersions(directory);
    }

    /// <summary>The group's members and its shared journal's writes.</summary>
    public EnvironmentGroupStats GetStats()
    {
        lock (_lock)
        {
            var members = new List<EnvironmentGroupMember> { new(Root.DirectoryPath, IsRoot: true, JournalShared: _shared is not null, NotSharedReason: _shared is null ? "the group was opened without shared journals" : null) };
            foreach (var (branch, reason) in _branches)
            {
                if (!branch.IsDisposed) members.Add(new(branch.DirectoryPath, IsRoot: false, JournalShared: reason is null, NotSharedReason: reason));
            }
            return new EnvironmentGroupStats
            {
                Members = members,
                SharedJournalWrites = _shared?.DurableWrites ?? 0,
                SharedJournalBytes = _shared?.BytesWritten ?? 0,
                SharedJournalLinks = _shared?.LinksMade ?? 0,
                SharedJournalFilesCreated = _shared?.FilesCreated ?? 0,
                SharedJournalFilesReused = _shared?.FilesReused ?? 0,
            };
        }
    }

    /// <summary>Ends the group's taking of branches and hands over those open.</summary>
    private List<StorageEnvironment> TakeBranches()
    {
        lock (_lock)
        {
            _disposed = true;
            List<StorageEnvironment> open = [.. _branches.Select(b => b.Environment)];
            _branches.Clear();
            return open;
        }
    }

    private void CloseBranches()
    {
        List<Exception>? failures = null;
        foreach (var branch in TakeBranches())
        {
            try
            {
                branch.Dispose();
            }
            catch (Exception e)
            {
                (failures ??= []).Add(e);
            }
        }
        if (failures is not null) throw new AggregateException("Closing the group's branches failed.", failures);
    }

    /// <summary>Closes every branch, then the root (whose close ends the shared journal).</summary>
    public void Dispose()
    {
        Root.Dispose();
        FinishReplacements();
    }

    /// <summary>Test seam: every member stops as in a killed process (branches first), and the shared journal with them.</summary>
    internal void SimulateCrash()
    {
        foreach (var branch in TakeBranches()) branch.SimulateCrash();
        Root.SimulateCrash();
    }
}

/// <summary>One member of an <see cref="EnvironmentGroup"/>.</summary>
/// <param name="Directory">The member's directory.</param>
/// <param name="IsRoot">Whether it is the group's root.</param>
/// <param name="JournalShared">Whether its entries go into the group's shared journal.</param>
/// <param name="NotSharedReason">Why not, when they do not (for example the hard link the member's folder refused).</param>
public readonly record struct EnvironmentGroupMember(string Directory, bool IsRoot, bool JournalShared, string? NotSharedReason);

/// <summary>An environment group's members and its shared journal's work since it opened.</summary>
public readonly record struct EnvironmentGroupStats
{
    /// <summary>The root first, then the open branches.</summary>
    public IReadOnlyList<EnvironmentGroupMember> Members { get; init; }

    /// <summary>Durable writes of the shared journal (each may carry entries of several members).</summary>
    public long SharedJournalWrites { get; init; }

    /// <summary>Bytes of entries the shared journal wrote.</summary>
    public long SharedJournalBytes { get; init; }

    /// <summary>Hard links made into the members' journal folders.</summary>
    public long SharedJournalLinks { get; init; }

    /// <summary>New shared files made (sized and written with zeros before use).</summary>
    public long SharedJournalFilesCreated { get; init; }

    /// <summary>
    /// Shared files put into use again instead of new ones: files every member was done with (each had synced its entries
    /// there and removed its name), including such files found in the root's folder at open. Not on platforms that cannot
    /// count a file's names.
    /// </summary>
    public long SharedJournalFilesReused { get; init; }
}
