using Storage.Faults;
using Storage.Paging;
using Storage.Platform;
using Storage.Scratch;
using Storage.Tests.Support;

namespace Storage.Tests.NativeLayer;

/// <summary>
/// The native fault seam through its managed bindings (<see cref="PalFaults"/>): counting calls per kind, failing
/// the nth, partial and short writes of journal entries and ring runs, and a ring fsync that fails once. Linux x64.
/// </summary>
[Collection(ProcessWideFaultSeam.Name)]
public sealed unsafe class FaultSeamBindingTests : IDisposable
{
    private const int Eio = 5;
    private const int Enospc = 28;

    private readonly TempDirectory _temp = new("seam");

    public void Dispose()
    {
        if (Needs.Missing(Need.LinuxX64) is null) PalFaults.Disarm();
        _temp.Dispose();
    }

    [FactNeeding(Need.LinuxX64, "Testing the native fault seam")]
    public void Counting_only_sees_calls_made_while_armed_and_restarts_from_zero()
    {
        using var aligned = Filled(3 * 4096, 1);
        var path = _temp.Combine("0001.journal");
        using var journal = Pal.OpenJournal(path, create: true, out _);
        Pal.JournalPresize(journal, path, 64 << 10);

        PalFaults.Arm();
        for (var i = 0; i < 4; i++) Pal.JournalWrite(journal, path, aligned.Pointer, 4096, i * 4096L);
        Pal.FsyncDirectory(_temp.Path);
        var counts = PalFaults.Read();
        PalFaults.Disarm();
        Pal.JournalWrite(journal, path, aligned.Pointer, 4096, 0);

        Assert.True(counts.Armed);
        Assert.Equal(4, counts.Calls(PalFaultKind.JournalWrite));
        Assert.Equal(1, counts.Calls(PalFaultKind.DirectorySync));
        Assert.Equal(0, counts.Calls(PalFaultKind.JournalPresize));
        Assert.Equal(0, counts.TotalFired);
        var after = PalFaults.Read();
        Assert.False(after.Armed);
        Assert.Equal(4, after.Calls(PalFaultKind.JournalWrite));
        PalFaults.Arm();
        Assert.Equal(0, PalFaults.Read().Calls(PalFaultKind.JournalWrite));
    }

    [FactNeeding(Need.LinuxX64, "Testing the native fault seam")]
    public void The_nth_journal_write_fails_with_the_errno_asked_for_as_a_typed_exception()
    {
        using var aligned = Filled(4096, 2);
        var path = _temp.Combine("0002.journal");
        using var journal = Pal.OpenJournal(path, create: true, out _);
        Pal.JournalPresize(journal, path, 64 << 10);

        PalFaults.Arm(PalFaultRule.Fail(PalFaultKind.JournalWrite, nth: 2, Enospc), PalFaultRule.Fail(PalFaultKind.JournalWrite, nth: 3, Eio));
        Pal.JournalWrite(journal, path, aligned.Pointer, 4096, 0);
        var full = Assert.Throws<StorageFullException>(() => Pal.JournalWrite(journal, path, aligned.Pointer, 4096, 4096));
        var failed = Assert.Throws<StorageException>(() => Pal.JournalWrite(journal, path, aligned.Pointer, 4096, 8192));
        Pal.JournalWrite(journal, path, aligned.Pointer, 4096, 12288);

        Assert.Equal((StorageErrorCode.DiskFull, Enospc, path), (full.ErrorCode, full.OsError, full.Path));
        Assert.Equal((StorageErrorCode.IoFailure, Eio), (failed.ErrorCode, failed.OsError));
        Assert.Equal(2, PalFaults.Read().Fired(PalFaultKind.JournalWrite));
        var file = File.ReadAllBytes(path);
        Assert.True(file.AsSpan(0, 4096).SequenceEqual(aligned.Span[..4096]));
        Assert.True(file.AsSpan(4096, 8192).IndexOfAnyExcept((byte)0) < 0, "the failed writes wrote nothing");
        Assert.True(file.AsSpan(12288, 4096).SequenceEqual(aligned.Span[..4096]));
    }

    [FactNeeding(Need.LinuxX64, "Testing the native fault seam")]
    public void A_partial_journal_write_lands_its_first_blocks_and_a_short_one_lands_whole()
    {
        using var aligned = Filled(4 * 4096, 3);
        var path = _temp.Combine("0003.journal");
        using var journal = Pal.OpenJournal(path, create: true, out _);
        Pal.JournalPresize(journal, path, 64 << 10);

        PalFaults.Arm(PalFaultRule.Partial(PalFaultKind.JournalWrite, nth: 1, bytes: 2 * 4096, Eio), PalFaultRule.Short(PalFaultKind.JournalWrite, nth: 2, bytes: 4096));
        Assert.Equal(Eio, Assert.Throws<StorageException>(() => Pal.JournalWrite(journal, path, aligned.Pointer, 4 * 4096, 0)).OsError);
        Pal.JournalWrite(journal, path, aligned.Pointer, 4 * 4096, 8 * 4096);

        var file = File.ReadAllBytes(path);
        Assert.True(file.AsSpan(0, 2 * 4096).SequenceEqual(aligned.Span[..(2 * 4096)]));
        Assert.True(file.AsSpan(2 * 4096, 2 * 4096).IndexOfAnyExcept((byte)0) < 0);
        Assert.True(file.AsSpan(8 * 4096, 4 * 4096).SequenceEqual(aligned.Span));
    }

    [FactNeeding(Need.LinuxX64, "Testing the native fault seam")]
    public void Short_ring_writes_are_continued_byte_exact_and_a_partial_one_fails_the_flush()
    {
        var ring = Pal.SharedWriter(lowPriority: true, out var problem) ?? throw new InvalidOperationException(problem);
        var path = _temp.Combine("data");
        // Runs: pages 1-3 (a three-page buffer), 6, 8-9.
        var layout = new (long Page, int Count)[] { (1, 3), (6, 1), (8, 1), (9, 1) };
        var buffers = layout.Select(p => Fill(new ScratchBuffer(p.Count), p.Page)).ToArray();
        try
        {
            using var handle = File.OpenHandle(path, FileMode.CreateNew, FileAccess.ReadWrite);
            using var writer = new RingDataFileWriter(ring);
            var pages = layout.Select((p, i) => (p.Page, buffers[i])).ToList();
            var before = Pal.WriterStats(ring);

            PalFaults.Arm(
                PalFaultRule.Short(PalFaultKind.DataWrite, nth: 1, bytes: PageLayout.PageSizeBytes + 1000),
                PalFaultRule.Short(PalFaultKind.DataWrite, nth: 3, bytes: 1));
            Assert.Equal(3, writer.Write(handle, path, pages, faults: null));
            Assert.Equal(2, PalFaults.Read().Fired(PalFaultKind.DataWrite));
            Assert.Equal(2UL, Pal.WriterStats(ring).ShortWrites - before.ShortWrites);
            var file = File.ReadAllBytes(path);
            for (var page = 0; page < 10; page++)
            {
                var written = page is 1 or 2 or 3 or 6 or 8 or 9;
                var content = file.AsSpan(page * PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
                for (var b = 0; b < content.Length; b++) Assert.Equal(written ? Pattern(page, b) : (byte)0, content[b]);
            }

            RandomAccess.Write(handle, new byte[10 * PageLayout.PageSizeBytes], 0);
            PalFaults.Arm(PalFaultRule.Partial(PalFaultKind.DataWrite, nth: 1, bytes: 5000, Eio));
            var error = Assert.Throws<StorageException>(() => writer.Write(handle, path, pages, faults: null));
            Assert.Equal((StorageErrorCode.IoFailure, Eio, path), (error.ErrorCode, error.OsError, error.Path));
            file = File.ReadAllBytes(path);
            Assert.Equal(Pattern(1, 4999), file[PageLayout.PageSizeBytes + 4999]);
            Assert.Equal(0, file[PageLayout.PageSizeBytes + 5000]);
            Assert.Equal(Pattern(6, 0), file[6 * PageLayout.PageSizeBytes]); // the other runs were written
        }
        finally
        {
            foreach (var buffer in buffers) buffer.Release();
        }
    }

    [FactNeeding(Need.LinuxX64, "Testing the native fault seam")]
    public void After_a_ring_fdatasync_fails_once_the_data_file_writer_refuses_every_later_sync()
    {
        var path = _temp.Combine("data");
        var buffer = Fill(new ScratchBuffer(1), 0);
        try
        {
            using var handle = File.OpenHandle(path, FileMode.CreateNew, FileAccess.ReadWrite);
            var io = PlatformIo.Resolve(IoBackend.Native, lowPriority: true);
            using var writer = io.CreateDataWriter();
            writer.Write(handle, path, [(0L, buffer)], faults: null);

            PalFaults.Arm(PalFaultRule.Fail(PalFaultKind.DataSync, nth: 1, Eio));
            var first = Assert.Throws<StorageException>(() => writer.Sync(handle, path, faults: null));
            // The ring would succeed now; the writer must not believe it.
            var second = Assert.Throws<StorageException>(() => writer.Sync(handle, path, faults: null));
            var write = Assert.Throws<StorageException>(() => writer.Write(handle, path, [(0L, buffer)], faults: null));

            Assert.Equal(Eio, first.OsError);
            Assert.Equal((StorageErrorCode.IoFailure, Eio), (second.ErrorCode, second.OsError));
            Assert.Same(first, second.InnerException);
            Assert.Contains("Reopen", second.Message, StringComparison.Ordinal);
            Assert.Same(first, write.InnerException);
            Assert.Equal(1, PalFaults.Read().Calls(PalFaultKind.DataSync)); // neither reached the ring
            Assert.Equal(0, PalFaults.Read().Calls(PalFaultKind.DataWrite));
        }
        finally
        {
            buffer.Release();
        }
    }

    [FactNeeding(Need.LinuxX64, "Testing the native fault seam")]
    public void Invalid_rules_are_refused()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => PalFaults.Arm(PalFaultRule.Fail(PalFaultKind.DataSync, nth: 0, Eio)));
        var partialSync = Assert.Throws<StorageException>(() => PalFaults.Arm(PalFaultRule.Partial(PalFaultKind.DataSync, nth: 1, 10, Eio)));
        Assert.Equal(22, partialSync.OsError); // EINVAL
        Assert.Throws<StorageException>(() => PalFaults.Arm(PalFaultRule.Fail(PalFaultKind.HardLink, nth: 1, error: 0)));
        Assert.Throws<ArgumentOutOfRangeException>(() => PalFaults.Arm(Enumerable.Repeat(PalFaultRule.Fail(PalFaultKind.DataSync, 1, Eio), PalNative.FaultMaxRules + 1).ToArray()));
        Assert.False(PalFaults.Read().Armed);
    }

    private static byte Pattern(long page, int offset) => (byte)(page * 29 + offset * 11 + 3);

    private static ScratchBuffer Fill(ScratchBuffer buffer, long firstPage)
    {
        for (var p = 0; p < buffer.PageCount; p++)
        {
            var page = new Span<byte>(buffer.Pointer + (long)p * PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
            for (var b = 0; b < page.Length; b++) page[b] = Pattern(firstPage + p, b);
        }
        return buffer;
    }

    private static AlignedBlock Filled(int length, int seed)
    {
        var block = new AlignedBlock(length);
        for (var i = 0; i < length; i++) block.Span[i] = (byte)(seed * 41 + i * 7 + (i >> 12) + 1);
        return block;
    }

    /// <summary>O_DIRECT needs aligned memory.</summary>
    private sealed class AlignedBlock : IDisposable
    {
        private readonly AlignedBuffer _buffer;

        public AlignedBlock(int length)
        {
            _buffer = new AlignedBuffer(length);
            Length = length;
        }

        public int Length { get; }

        public byte* Pointer => _buffer.Pointer;

        public Span<byte> Span => new(_buffer.Pointer, Length);

        public void Dispose() => _buffer.Dispose();
    }
}
