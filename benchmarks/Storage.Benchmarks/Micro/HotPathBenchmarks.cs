using System.IO.Compression;
using System.Runtime.InteropServices;
using BenchmarkDotNet.Attributes;
using Storage.Benchmarks.Generators;
using Storage.Commit;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.Trees;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// The commit and read hot paths one at a time: the descent with a binary search per page, a cursor step,
/// a page diff, a page checksum, journal compression, and building a W1-sized journal entry.
/// Run with: dotnet run -c Release --project benchmarks/Storage.Benchmarks -- --bdn --filter '*HotPath*'
/// </summary>
[MemoryDiagnoser]
public unsafe class HotPathBenchmarks
{
    private const int FilledKeys = 100_000;
    private const int OperationsPerInvoke = 1_000;
    private const int PagesPerEntry = 100; // W1 modifies about 100 pages per transaction

    private readonly byte[] _key = new byte[KeyFormat.KeySizeBytes];
    private FilledEnvironment? _filled;
    private Tree? _tree;
    private TreeCursor? _cursor;
    private RandomKeySource _keys = new(FilledKeys);
    private byte* _pages;
    private byte* _baselines;
    private byte[] _payload = [];
    private byte[] _compressed = [];
    private JournalEntryBuilder? _builder;

    [GlobalSetup]
    public void Setup()
    {
        _filled = new FilledEnvironment("bdn-hot", FilledKeys);
        _tree = _filled.Tree;
        _cursor = _tree.CreateCursor();
        _cursor.SeekFirst();
        _keys = new RandomKeySource(FilledKeys);

        // Pages as a W1 commit sees them: a leaf that gained one 100-byte value (about 130 changed bytes).
        var random = new Random(42);
        _pages = (byte*)NativeMemory.AlignedAlloc((nuint)(PagesPerEntry * PageLayout.PageSizeBytes), 4096);
        _baselines = (byte*)NativeMemory.AlignedAlloc((nuint)(PagesPerEntry * PageLayout.PageSizeBytes), 4096);
        var all = new Span<byte>(_baselines, PagesPerEntry * PageLayout.PageSizeBytes);
        random.NextBytes(all);
        all.CopyTo(new Span<byte>(_pages, PagesPerEntry * PageLayout.PageSizeBytes));
        for (var p = 0; p < PagesPerEntry; p++)
        {
            var page = new Span<byte>(_pages + (long)p * PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
            random.NextBytes(page.Slice(random.Next(64, 7900), 120));
            page[40 + random.Next(0, 200)] ^= 0xFF; // a slot entry
        }
        _builder = new JournalEntryBuilder(compressionThresholdBytes: 0);
        // A W1-sized payload of diffs (incompressible values) for the compressor.
        _payload = new byte[41_000];
        random.NextBytes(_payload);
        _compressed = new byte[BrotliEncoder.GetMaxCompressedLength(_payload.Length)];
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _builder?.Dispose();
        NativeMemory.AlignedFree(_pages);
        NativeMemory.AlignedFree(_baselines);
        _filled?.Dispose();
    }

    /// <summary>Root-to-leaf descent of a random existing key: a binary search in each page on the way.</summary>
    [Benchmark(OperationsPerInvoke = OperationsPerInvoke)]
    public int PageSearch()
    {
        var found = 0;
        for (var i = 0; i < OperationsPerInvoke; i++)
        {
            _keys.Next(_key);
            if (_tree!.Contains(_key)) found++;
        }
        return found;
    }

    /// <summary>One cursor step and its value, as a scan does (W4).</summary>
    [Benchmark(OperationsPerInvoke = OperationsPerInvoke)]
    public int CursorStep()
    {
        var bytes = 0;
        for (var i = 0; i < OperationsPerInvoke; i++)
        {
            if (!_cursor!.MoveNext()) _cursor.SeekFirst();
            bytes += _cursor.Value.Length;
        }
        return bytes;
    }

    /// <summary>The diff of one changed 8 KiB page against its previous version.</summary>
    [Benchmark]
    public int Diff()
    {
        Span<byte> output = stackalloc byte[PageLayout.PageSizeBytes];
        return PageDiff.Encode(_pages, _baselines, output, PageLayout.PageSizeBytes);
    }

    /// <summary>CRC32C of one 8 KiB page (stamped at flush, verified at first read).</summary>
    [Benchmark]
    public uint Checksum() => Crc32C.ComputePage(_pages, PageLayout.PageSizeBytes);

    /// <summary>Brotli at the engine's settings over a W1-sized payload (41 KB), when the policy asks for it.</summary>
    [Benchmark]
    public int Compression()
    {
        BrotliEncoder.TryCompress(_payload, _compressed, out var written, quality: 1, window: 22);
        return written;
    }

    /// <summary>A whole W1-sized journal entry: 100 page diffs, header and checksum.</summary>
    [Benchmark]
    public long JournalEntryBuild()
    {
        _builder!.Begin();
        for (var p = 0; p < PagesPerEntry; p++)
        {
            var offset = (long)p * PageLayout.PageSizeBytes;
            _builder.AddPage(100 + p, _pages + offset, _baselines + offset, isNew: false);
        }
        return _builder.Finish(environmentId: 1, transactionId: 2, nextPageNumber: 1000, rootTree: default).LengthBytes;
    }
}
