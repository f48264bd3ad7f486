using System.Diagnostics;
using Storage.Paging;
using Storage.Platform;
using Storage.Recovery;

namespace Storage.Backup;

/// <summary>
/// Restores a <see cref="BackupFormat"/> stream into a new directory: into a temporary directory beside the target,
/// checked by the library's checker, then renamed into place. A stream that is damaged, cut short, out of order or not
/// a backup is a <see cref="StorageCorruptedException"/> naming where in the stream, and leaves nothing behind.
/// </summary>
internal static class EnvironmentRestore
{
    public static Task<RestoreResult> RestoreAsync(Stream source, string sourceName, string targetDirectory, IProgress<RestoreProgress>? progress,
        CancellationToken cancellationToken) =>
        RestoreChainAsync([(() => source, sourceName)], targetDirectory, upToTransactionId: null, progress, cancellationToken, ownsStreams: false);

    /// <summary>
    /// Restores a chain: a full backup, then incremental ones, each starting where the one before it ended; with
    /// <paramref name="upToTransactionId"/>, only the transactions up to it. The entries of the incremental links go
    /// into the restored environment's first journal file, and its own recovery replays them on the open that checks it.
    /// </summary>
    /// <remarks>With <c>compact</c>, the restored environment is compacted before it is put in place (<see cref="StorageEnvironment.Compact"/>):
    /// the pages in use move to the front and the file is cut, as in a copy of only the live pages. Compaction commits
    /// transactions of its own (its moves), so the restored environment's last transaction id is then past the state's.</remarks>
    public static async Task<RestoreResult> RestoreChainAsync(IReadOnlyList<(Func<Stream> Open, string Name)> links, string targetDirectory, long? upToTransactionId,
        IProgress<RestoreProgress>? progress, CancellationToken cancellationToken, bool ownsStreams = true, bool compact = false)
    {
        ArgumentNullException.ThrowIfNull(links);
        if (links.Count == 0) throw new ArgumentException("A chain starts with a full backup.", nameof(links));
        ArgumentException.ThrowIfNullOrWhiteSpace(targetDirectory);
        var started = Stopwatch.GetTimestamp();
        var target = Path.GetFullPath(targetDirectory.TrimEnd(Path.DirectorySeparatorChar, Path.AltDirectorySeparatorChar));
        if (File.Exists(target) || (Directory.Exists(target) && Directory.EnumerateFileSystemEntries(target).Any()))
        {
            throw new StorageException(StorageErrorCode.NotAnEnvironment, $"The restore target '{target}' exists and is not an empty directory; a backup is restored into a new one. Nothing was changed.", target, 0);
        }
        var parent = Path.GetDirectoryName(target)!;
        Directory.CreateDirectory(parent);
        // Made by this call under a name nothing else uses: on any failure it is deleted, since it is provably ours.
        var temporary = Path.Combine(parent, $".{Path.GetFileName(target)}.restoring-{Guid.NewGuid():N}");
        FileIo.CreateDirectory(temporary, faults: null);
        try
        {
            BackupFormat.Header full;
            long pages, bytes;
            var dataPath = Path.Combine(temporary, DataFile.FileName);
            var (fullOpen, fullName) = links[0];
            var fullStream = fullOpen();
            try
            {
                var reader = new StreamReader(fullStream, fullName);
                full = await reader.ReadHeaderAsync(cancellationToken).ConfigureAwait(false);
                if (full.Kind != BackupFormat.KindFull) throw new StorageCorruptedException($"{fullName} is an incremental backup: a chain starts with a full one", fullName, offsetBytes: 0);
                if (upToTransactionId < full.TransactionId)
                {
                    throw new ArgumentOutOfRangeException(nameof(upToTransactionId), upToTransactionId, $"The chain starts at transaction {full.TransactionId} ({fullName}).");
                }
                using (var handle = FileIo.OpenReadWrite(dataPath, create: true))
                {
                    var fileBytes = AlignedBuffer.AlignUp(Math.Max(full.NextPageNumber * PageLayout.PageSizeBytes, 1L << 20));
                    FileIo.SetLength(handle, dataPath, fileBytes);
                    pages = await reader.CopyBlocksAsync(full, (first, data) => FileIo.Write(handle, dataPath, data.Span, first * PageLayout.PageSizeBytes, faults: null),
                        progress, cancellationToken).ConfigureAwait(false);
                    FileIo.SyncData(handle, dataPath, faults: null);
                }
                bytes = reader.Position;
            }
            finally
            {
                if (ownsStreams) await fullStream.DisposeAsync().ConfigureAwait(false);
            }

            var last = full.TransactionId;
            var io = PlatformIo.Resolve(IoBackend.Auto, lowPriority: false);
            if (links.Count > 1)
            {
                using var journal = new RestoredJournal(temporary, full.EnvironmentId, full.TransactionId + 1);
                for (var i = 1; i < links.Count && !(last >= upToTransactionId); i++)
                {
                    var (open, name) = links[i];
                    var stream = open();
                    try
                    {
                        var reader = new StreamReader(stream, name);
                        var header = await reader.ReadHeaderAsync(cancellationToken).ConfigureAwait(false);
                        if (header.Kind != BackupFormat.KindIncremental || header.EnvironmentId != full.EnvironmentId || header.BaseTransactionId != last)
                        {
                            throw new StorageCorruptedException(
                                $"{name} does not continue the chain: it is {(header.Kind == BackupFormat.KindFull ? "a full backup" : $"an incremental backup after transaction {header.BaseTransactionId}")} " +
                                $"of environment {header.EnvironmentId:x16}, where one after transaction {last} of {full.EnvironmentId:x16} was expected (a link is missing, repeated or out of order)",
                                name, offsetBytes: 0);
                        }
                        last = await reader.CopyEntriesAsync(header, upToTransactionId, journal.Append, cancellationToken).ConfigureAwait(false);
                        bytes += reader.Position;
                    }
                    finally
                    {
                        await stream.DisposeAsync().ConfigureAwait(false);
                    }
                }
                if (upToTransactionId is { } wanted && last < wanted)
                {
                    throw new ArgumentOutOfRangeException(nameof(upToTransactionId), upToTransactionId, $"The chain ends at transaction {last}.");
                }
                journal.Finish();
            }
            EnvironmentCreator.FinishRestored(temporary, dataPath, io, full.EnvironmentId, full.TransactionId, full.NextPageNumber, full.RootTree,
                StorageOptions.Default.MinJournalFileSizeBytes, createJournal: links.Count == 1);
            // The library opens (replaying the chain's entries) and checks what was written before anyone else sees it.
            using (var restored = StorageEnvironment.Open(temporary, new StorageOptions { CreateIfMissing = false }))
            {
                if (compact) restored.Compact(cancellationToken: cancellationToken);
                var report = restored.Check();
                // Compaction commits transactions of its own (moves), after the state restored.
                if (!report.IsConsistent || (compact ? report.TransactionId < last : report.TransactionId != last))
                {
                    throw new StorageCorruptedException(
                        $"The environment restored from {fullName}{(links.Count > 1 ? $" and {links.Count - 1} incremental backups" : "")} (transaction {last}) does not pass the consistency check " +
                        $"(at transaction {report.TransactionId}): " + string.Join("; ", report.Problems.Where(p => p.Severity == ProblemSeverity.Error).Take(3)), fullName);
                }
            }
            // An empty target directory (checked above) gives way to the restored one.
            if (Directory.Exists(target)) Directory.Delete(target, recursive: false);
            FileIo.Rename(temporary, target, faults: null, isDirectory: true);
            FileIo.SyncParent(target, faults: null);
            return new RestoreResult(target, last, pages, bytes, Stopwatch.GetElapsedTime(started));
        }
        catch
        {
            try
            {
                Directory.Delete(temporary, recursive: true);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                // Left for the caller to see; its name says what it is.
            }
            throw;
        }
    }

    /// <summary>Reads a whole backup stream and checks every part of it (header, each block's CRC and place, the trailer) without restoring it.</summary>
    public static async Task<BackupDescription> VerifyAsync(Stream source, string sourceName, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(source);
        var reader = new StreamReader(source, sourceName);
        var header = await reader.ReadHeaderAsync(cancellationToken).ConfigureAwait(false);
        var pages = header.Kind == BackupFormat.KindFull
            ? await reader.CopyBlocksAsync(header, static (_, _) => { }, progress: null, cancellationToken).ConfigureAwait(false)
            : await reader.CopyEntriesAsync(header, upTo: null, static (_, _) => { }, cancellationToken).ConfigureAwait(false) - header.BaseTransactionId;
        return new BackupDescription(header.EnvironmentId, header.TransactionId, header.TakenAtUtc, header.NextPageNumber, pages, reader.Position, header.DataFormatVersion)
        {
            IsIncremental = header.Kind == BackupFormat.KindIncremental,
            BaseTransactionId = header.Kind == BackupFormat.KindIncremental ? header.BaseTransactionId : null,
        };
    }

    /// <summary>Reads a backup stream part by part, knowing its position for every error.</summary>
    private sealed class StreamReader(Stream stream, string name)
    {
        private readonly byte[] _block = new byte[BackupFormat.BlockHeaderBytes + BackupFormat.MaxPagesPerBlock * PageLayout.PageSizeBytes];

        public long Position { get; private set; }

        public async Task<BackupFormat.Header> ReadHeaderAsync(CancellationToken cancellationToken)
        {
            var read = await FillAsync(_block.AsMemory(0, BackupFormat.HeaderBytes), cancellationToken).ConfigureAwait(false);
            if (!BackupFormat.TryReadHeader(_block.AsSpan(0, read), out var header, out var problem)) throw Corrupt($"{name} is not a backup that can be restored: {problem}", 0);
            Position = BackupFormat.HeaderBytes;
            return header;
        }

        /// <summary>Reads every block, checks it, and hands its pages to <paramref name="write"/>; then the trailer. Returns the pages.</summary>
        public async Task<long> CopyBlocksAsync(BackupFormat.Header header, Action<long, ReadOnlyMemory<byte>> write, IProgress<RestoreProgress>? progress,
            CancellationToken cancellationToken)
        {
            long blocks = 0, pages = 0, nextFree = 2;
            var blockCrcs = Crc32C.Start(0);
            while (true)
            {
                cancellationToken.ThrowIfCancellationRequested();
                var (trailer, at) = await ReadPartStartAsync("block", blocks, cancellationToken).ConfigureAwait(false);
                if (trailer is { } t)
                {
                    if (t.Blocks != blocks || t.Pages != pages || t.BlockCrcs != Crc32C.Finish(blockCrcs))
                    {
                        throw Corrupt($"the trailer of {name} says {t.Blocks} blocks of {t.Pages} pages, but {blocks} blocks of {pages} pages were read, or their checksums differ: blocks are missing or out of place", at);
                    }
                    await EndAsync(cancellationToken).ConfigureAwait(false);
                    return pages;
                }
                var block = BackupFormat.ReadBlockHeader(_block);
                if (!block.MagicOk) throw Corrupt($"{name} has no block or trailer where block {blocks} should start: damaged, or not a backup stream from here on", at);
                if (block.PageCount is < 1 or > BackupFormat.MaxPagesPerBlock || block.Sequence != blocks
                    || block.FirstPage < nextFree || block.FirstPage + block.PageCount > header.NextPageNumber)
                {
                    throw Corrupt($"block {blocks} of {name} is out of place: it says it is block {block.Sequence} with {block.PageCount} pages from page {block.FirstPage}, " +
                        $"where pages from {nextFree} below {header.NextPageNumber} were expected", at);
                }
                var length = block.PageCount * PageLayout.PageSizeBytes;
                var read = await FillAsync(_block.AsMemory(BackupFormat.BlockHeaderBytes, length), cancellationToken).ConfigureAwait(false);
                if (read < length) throw Corrupt($"{name} ends inside block {blocks} (page {block.FirstPage + read / PageLayout.PageSizeBytes})", at + BackupFormat.BlockHeaderBytes + read);
                var data = _block.AsMemory(BackupFormat.BlockHeaderBytes, length);
                if (BackupFormat.BlockCrc(_block, data.Span) != block.Crc) throw Corrupt($"block {blocks} of {name} (pages {block.FirstPage}-{block.FirstPage + block.PageCount - 1}) is damaged: its checksum does not match", at);
                foreach (var reserved in Enumerable.Range(0, block.PageCount).Select(i => block.FirstPage + i).Where(p => p < 2))
                {
                    throw Corrupt($"block {blocks} of {name} holds page {reserved}, a file header", at);
                }
                write(block.FirstPage, data);
                blockCrcs = BackupFormat.FoldBlockCrc(blockCrcs, block.Crc);
                blocks++;
                pages += block.PageCount;
                nextFree = block.FirstPage + block.PageCount;
                Position = at + BackupFormat.BlockHeaderBytes + length;
                progress?.Report(new RestoreProgress(pages, Position));
            }
        }

        /// <summary>
        /// Reads every entry block of an incremental backup, checks it (CRC, place, consecutive transactions, the entry's
        /// own checksum is checked again by recovery), and hands the entries up to <paramref name="upTo"/> to
        /// <paramref name="append"/>; then the trailer. Returns the last transaction handed on.
        /// </summary>
        public async Task<long> CopyEntriesAsync(BackupFormat.Header header, long? upTo, Action<long, ReadOnlyMemory<byte>> append, CancellationToken cancellationToken)
        {
            long blocks = 0;
            var last = header.BaseTransactionId;
            var blockCrcs = Crc32C.Start(0);
            var entry = new byte[1 << 16];
            while (true)
            {
                cancellationToken.ThrowIfCancellationRequested();
                var (trailer, at) = await ReadPartStartAsync("entry", blocks, cancellationToken).ConfigureAwait(false);
                if (trailer is { } t)
                {
                    if (t.Blocks != blocks || t.BlockCrcs != Crc32C.Finish(blockCrcs) || header.BaseTransactionId + blocks != header.TransactionId)
                    {
                        throw Corrupt($"the trailer of {name} says {t.Blocks} entries, but {blocks} were read (transactions {header.BaseTransactionId + 1}-{header.TransactionId} expected), or their checksums differ: entries are missing or out of place", at);
                    }
                    await EndAsync(cancellationToken).ConfigureAwait(false);
                    return last;
                }
                var block = BackupFormat.ReadBlockHeader(_block, BackupFormat.EntryMagic);
                var transaction = block.FirstPage;
                if (!block.MagicOk) throw Corrupt($"{name} has no entry or trailer where entry {blocks} should start: damaged, or not an incremental backup from here on", at);
                if (block.PageCount < Journal.JournalEntryHeader.SizeBytes || block.PageCount > MaxEntryBytes || block.Sequence != blocks
                    || transaction != header.BaseTransactionId + blocks + 1 || transaction > header.TransactionId)
                {
                    throw Corrupt($"entry {blocks} of {name} is out of place: it says it is entry {block.Sequence}, transaction {transaction}, {block.PageCount} bytes, " +
                        $"where transaction {header.BaseTransactionId + blocks + 1} was expected", at);
                }
                if (entry.Length < block.PageCount) entry = new byte[Math.Max(block.PageCount, entry.Length * 2)];
                var read = await FillAsync(entry.AsMemory(0, block.PageCount), cancellationToken).ConfigureAwait(false);
                if (read < block.PageCount) throw Corrupt($"{name} ends inside entry {blocks} (transaction {transaction})", at + BackupFormat.BlockHeaderBytes + read);
                var data = entry.AsMemory(0, block.PageCount);
                if (BackupFormat.BlockCrc(_block, data.Span) != block.Crc) throw Corrupt($"entry {blocks} of {name} (transaction {transaction}) is damaged: its checksum does not match", at);
                if (!(transaction > upTo))
                {
                    append(transaction, data);
                    last = transaction;
                }
                blockCrcs = BackupFormat.FoldBlockCrc(blockCrcs, block.Crc);
                blocks++;
                Position = at + BackupFormat.BlockHeaderBytes + block.PageCount;
            }
        }

        /// <summary>
        /// Reads the start of the next part: a trailer (read whole and checked on its own: returned) or a block's header
        /// (left in the buffer: null). Returns where the part starts too.
        /// </summary>
        private async Task<((bool Ok, long Blocks, long Pages, uint BlockCrcs)? Trailer, long At)> ReadPartStartAsync(string part, long index, CancellationToken cancellationToken)
        {
            var at = Position;
            var read = await FillAsync(_block.AsMemory(0, 8), cancellationToken).ConfigureAwait(false);
            if (read < 8) throw Corrupt($"{name} ends at byte {at + read} without its trailer: the backup is incomplete (cancelled or cut short)", at + read);
            if (BackupFormat.IsTrailer(_block))
            {
                read = await FillAsync(_block.AsMemory(8, BackupFormat.TrailerBytes - 8), cancellationToken).ConfigureAwait(false);
                if (read < BackupFormat.TrailerBytes - 8) throw Corrupt($"{name} ends inside its trailer", at + 8 + read);
                var trailer = BackupFormat.ReadTrailer(_block);
                if (!trailer.Ok) throw Corrupt($"the trailer of {name} is damaged (its checksum does not match)", at);
                return (trailer, at);
            }
            read = await FillAsync(_block.AsMemory(8, BackupFormat.BlockHeaderBytes - 8), cancellationToken).ConfigureAwait(false);
            if (read < BackupFormat.BlockHeaderBytes - 8) throw Corrupt($"{name} ends inside the header of {part} {index}", at + 8 + read);
            return (null, at);
        }

        /// <summary>After the trailer: the stream must end.</summary>
        private async Task EndAsync(CancellationToken cancellationToken)
        {
            if (await FillAsync(_block.AsMemory(0, 1), cancellationToken).ConfigureAwait(false) != 0) throw Corrupt($"{name} goes on after its trailer", Position - 1);
        }

        /// <summary>The largest entry a backup may carry (the journal's own limit is far below it).</summary>
        private const int MaxEntryBytes = 1 << 30;

        private async Task<int> FillAsync(Memory<byte> destination, CancellationToken cancellationToken)
        {
            var total = 0;
            while (total < destination.Length)
            {
                var read = await stream.ReadAsync(destination[total..], cancellationToken).ConfigureAwait(false);
                if (read == 0) break;
                total += read;
            }
            Position += total;
            return total;
        }

        private StorageCorruptedException Corrupt(string message, long offset) => new(message, name, offsetBytes: offset);
    }
}
