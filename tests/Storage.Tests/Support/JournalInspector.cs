using System.Buffers.Binary;

namespace Storage.Tests.Support;

/// <summary>One journal entry as found on disk.</summary>
internal sealed record JournalEntryInfo(string Path, long FileNumber, long OffsetBytes, long TransactionId, long PayloadBytes)
{
    /// <summary>Header and payload, padded to 4 KiB.</summary>
    public long SizeBytes => (JournalInspector.HeaderBytes + PayloadBytes + JournalInspector.Alignment - 1) / JournalInspector.Alignment * JournalInspector.Alignment;

    public long EndOffsetBytes => OffsetBytes + SizeBytes;
}

/// <summary>
/// Reads journal files the way the on-disk format is documented: entries 4 KiB aligned, each starting with a
/// 128-byte header (marker at 0, transaction id at 16, stored payload size at 24). Checksums are not checked.
/// </summary>
internal static class JournalInspector
{
    public const int HeaderBytes = 128;
    public const int Alignment = 4096;
    public const ulong Marker = 0x4C4E524A_47524F54; // "TORGJRNL"

    public static string Directory(string environment) => System.IO.Path.Combine(environment, "Journals");

    public static IReadOnlyList<(long Number, string Path)> Files(string environment)
    {
        var directory = Directory(environment);
        if (!System.IO.Directory.Exists(directory)) return [];
        return System.IO.Directory.GetFiles(directory, "*.journal")
            .Select(path => (Number: long.Parse(System.IO.Path.GetFileNameWithoutExtension(path), System.Globalization.CultureInfo.InvariantCulture), Path: path))
            .OrderBy(f => f.Number)
            .ToList();
    }

    /// <summary>Every entry header found in every file, in file then offset order (recycled files may hold stale, older entries).</summary>
    public static List<JournalEntryInfo> Entries(string environment)
    {
        var entries = new List<JournalEntryInfo>();
        var header = new byte[HeaderBytes];
        foreach (var (number, path) in Files(environment))
        {
            using var handle = File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
            var length = RandomAccess.GetLength(handle);
            for (long offset = 0; offset + HeaderBytes <= length;)
            {
                RandomAccess.Read(handle, header, offset);
                var payload = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(24));
                if (BinaryPrimitives.ReadUInt64LittleEndian(header) != Marker || payload < 0 || payload > length)
                {
                    offset += Alignment;
                    continue;
                }
                var entry = new JournalEntryInfo(path, number, offset, BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(16)), payload);
                entries.Add(entry);
                offset = entry.EndOffsetBytes;
            }
        }
        return entries;
    }

    /// <summary>The entries of transactions after <paramref name="afterTransactionId"/>, one per transaction id, in id order; fails if one is missing.</summary>
    public static List<JournalEntryInfo> Chain(string environment, long afterTransactionId, long lastTransactionId)
    {
        var byId = Entries(environment).Where(e => e.TransactionId > afterTransactionId && e.TransactionId <= lastTransactionId)
            .GroupBy(e => e.TransactionId)
            .ToDictionary(g => g.Key, g => g.Last());
        var chain = new List<JournalEntryInfo>();
        for (var id = afterTransactionId + 1; id <= lastTransactionId; id++)
        {
            if (!byId.TryGetValue(id, out var entry)) throw new Xunit.Sdk.XunitException($"No journal entry for transaction {id} in {Directory(environment)}.");
            chain.Add(entry);
        }
        return chain;
    }

    public static void FlipBit(string path, long offsetBytes, int bit = 0)
    {
        using var handle = File.OpenHandle(path, FileMode.Open, FileAccess.ReadWrite);
        var one = new byte[1];
        RandomAccess.Read(handle, one, offsetBytes);
        one[0] ^= (byte)(1 << bit);
        RandomAccess.Write(handle, one, offsetBytes);
    }

    public static void Zero(string path, long offsetBytes, long lengthBytes)
    {
        using var handle = File.OpenHandle(path, FileMode.Open, FileAccess.ReadWrite);
        RandomAccess.Write(handle, new byte[lengthBytes], offsetBytes);
    }

    public static void Truncate(string path, long lengthBytes)
    {
        using var handle = File.OpenHandle(path, FileMode.Open, FileAccess.ReadWrite);
        RandomAccess.SetLength(handle, lengthBytes);
    }
}
