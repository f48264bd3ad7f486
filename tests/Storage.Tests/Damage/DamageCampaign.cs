using System.Text;
using Storage.Inspection;
using Storage.Tests.Support;

namespace Storage.Tests.Damage;

/// <summary>
/// Copies of healthy and killed environments, each damaged once at random (bit flips, random bytes, zeroed blocks,
/// cut or deleted files) in the file headers, bitmaps, tree pages, overflow runs, free pages and journals. Every
/// outcome is classified against the known history: the exact last state, a typed error (at open or when the damaged
/// part is read), or the state one transaction older because the last journal entry was damaged (a torn tail, which
/// the open must report when it can see it). Silent wrong data, an older state beyond that, any other exception, a
/// crash or a hang fail the campaign; so does a case whose data differs while <c>check</c> found nothing.
/// </summary>
/// <remarks>
/// CI runs <see cref="DefaultCases"/> cases; set <c>STORAGE_DAMAGE_CASES</c> (and optionally <c>STORAGE_DAMAGE_SEED</c>)
/// for a longer campaign, e.g. <c>STORAGE_DAMAGE_CASES=10000 dotnet test tests/Storage.Tests -c Release --filter DamageCampaign</c>.
/// </remarks>
public sealed class DamageCampaign(DamageBases bases, ITestOutputHelper output) : IClassFixture<DamageBases>
{
    private const int DefaultCases = 300;

    private enum Outcome
    {
        Exact,
        TypedErrorAtOpen,
        TypedErrorAtRead,
        OlderByOneReported,
        OlderByOneUnreported,
    }

    [Fact]
    public async Task Damaged_environments_give_exact_data_or_a_typed_error_never_silently_wrong_data()
    {
        var cases = int.TryParse(Environment.GetEnvironmentVariable("STORAGE_DAMAGE_CASES"), out var n) && n > 0 ? n : DefaultCases;
        var seed = int.TryParse(Environment.GetEnvironmentVariable("STORAGE_DAMAGE_SEED"), out var s) ? s : 20261123;
        var counts = new Dictionary<Outcome, int>();
        var byTarget = new Dictionary<string, Dictionary<Outcome, int>>();
        var failures = new List<string>();
        using var scratch = new TempDirectory("damage");
        for (var i = 0; i < cases; i++)
        {
            var random = new Random(seed + i * 7_368_787);
            var baseEnv = bases.Bases[i % bases.Bases.Count];
            var copy = scratch.Combine($"case-{i}");
            TempDirectory.CopyDirectory(baseEnv.Directory, copy);
            var damage = DamageAt.Random(baseEnv, copy, random);
            var what = $"case {i} (seed {seed}), base {baseEnv.Name}: {damage.Description}";
            try
            {
                var outcome = await Within.Run(() => Evaluate(baseEnv, copy, damage), TimeSpan.FromSeconds(60));
                counts[outcome] = counts.GetValueOrDefault(outcome) + 1;
                if (!byTarget.TryGetValue(damage.Target, out var row)) byTarget[damage.Target] = row = [];
                row[outcome] = row.GetValueOrDefault(outcome) + 1;
            }
            catch (TimeoutException)
            {
                failures.Add($"{what}: HANG (no result in 60 s)");
            }
            catch (Exception e)
            {
                failures.Add($"{what}: {e.GetType().Name}: {e.Message}");
            }
            TempDirectory.DeleteDirectory(copy);
            if (failures.Count >= 20) break;
        }

        var summary = new StringBuilder();
        summary.AppendLine($"{cases} cases: " + string.Join(", ", counts.OrderBy(c => c.Key).Select(c => $"{c.Key} {c.Value}")));
        foreach (var (target, row) in byTarget.OrderBy(t => t.Key))
        {
            summary.AppendLine($"  {target}: " + string.Join(", ", row.OrderBy(c => c.Key).Select(c => $"{c.Key} {c.Value}")));
        }
        output.WriteLine(summary.ToString());
        Assert.True(failures.Count == 0, $"{failures.Count} failing case(s):\n" + string.Join("\n", failures) + "\n" + summary);
    }

    private static Outcome Evaluate(DamageBase baseEnv, string copy, DamageAt damage)
    {
        var check = EnvironmentSnapshot.Check(copy);
        var checkFound = check.Problems.Count > 0;
        StorageEnvironment env;
        try
        {
            env = StorageEnvironment.Open(copy, baseEnv.Options);
        }
        catch (StorageException)
        {
            Require(checkFound, "the open failed with a typed error but check reported nothing");
            return Outcome.TypedErrorAtOpen;
        }
        long last;
        RecoveryStats recovery;
        try
        {
            last = env.GetStats().LastTransactionId;
            recovery = env.GetStats().Recovery;
            if (last > baseEnv.LastAcknowledged || last < baseEnv.LastAcknowledged - 1)
            {
                throw new Xunit.Sdk.XunitException($"SILENT: opened at transaction {last}; {baseEnv.LastAcknowledged} was acknowledged (torn tail reported: {recovery.TornTailDropped})");
            }
            var model = DamageWorkload.ModelAt(last);
            try
            {
                CompareAll(env, model, "after open");
            }
            catch (StorageException)
            {
                Require(checkFound, "a read failed with a typed error but check reported nothing");
                return Outcome.TypedErrorAtRead;
            }
            // The damage must not make later writes overwrite live data (a bitmap that hands out a page in use).
            var written = WriteMore(env, model, last);
            if (written)
            {
                CompareAll(env, model, "after writing on top of the damaged environment");
            }
        }
        finally
        {
            env.Dispose();
        }
        if (last == baseEnv.LastAcknowledged) return Outcome.Exact;
        Require(damage.TouchesLastEntry, $"opened at transaction {last}, one before the acknowledged {baseEnv.LastAcknowledged}, but the damage did not touch the last entry");
        if (recovery.TornTailDropped)
        {
            Require(checkFound, "the open dropped a torn tail but check reported nothing");
            return Outcome.OlderByOneReported;
        }
        return Outcome.OlderByOneUnreported;
    }

    /// <summary>A few transactions of the same shape on top of what opened; typed errors (a damaged page met on the way) are acceptable.</summary>
    private static bool WriteMore(StorageEnvironment env, Dictionary<string, SortedDictionary<byte[], byte[]>> model, long last)
    {
        for (var t = 1; t <= 4; t++)
        {
            var operations = DamageWorkload.Operations((int)last + 10_000 + t).ToList();
            try
            {
                using var tx = env.BeginWrite();
                foreach (var (name, key, value) in operations)
                {
                    var tree = tx.OpenOrCreateTree(name);
                    if (value is null) tree.Delete(key);
                    else tree.Put(key, value);
                }
                tx.Commit();
            }
            catch (StorageException)
            {
                return false;
            }
            foreach (var (tree, key, value) in operations)
            {
                if (value is null) model[tree].Remove(key);
                else model[tree][key] = value;
            }
        }
        return true;
    }

    private static void CompareAll(StorageEnvironment env, Dictionary<string, SortedDictionary<byte[], byte[]>> model, string when)
    {
        using var tx = env.BeginRead();
        foreach (var (name, expected) in model)
        {
            if (!tx.TryOpenTree(name, out var tree))
            {
                if (expected.Count == 0) continue;
                throw new Xunit.Sdk.XunitException($"SILENT ({when}): tree '{name}' is missing");
            }
            try
            {
                TreeAssert.Equal(expected, tree, $"SILENT ({when}), tree '{name}'");
            }
            catch (Xunit.Sdk.XunitException)
            {
                throw;
            }
        }
        var names = tx.ListTrees();
        foreach (var name in names)
        {
            if (!model.ContainsKey(name)) throw new Xunit.Sdk.XunitException($"SILENT ({when}): unexpected tree '{name}'");
        }
    }

    private static void Require(bool condition, string message)
    {
        if (!condition) throw new Xunit.Sdk.XunitException(message);
    }
}

/// <summary>One random piece of damage applied to a copy, and what it hit.</summary>
internal sealed record DamageAt(string Target, string Description, bool TouchesLastEntry)
{
    public static DamageAt Random(DamageBase baseEnv, string copy, Random random)
    {
        var dataPath = DataFileInspector.PathOf(copy);
        var roll = random.Next(100);
        if (roll < 3 && JournalInspector.Files(copy).Count > 0)
        {
            var files = JournalInspector.Files(copy);
            var (_, victim) = files[random.Next(files.Count)];
            File.Delete(victim);
            return new DamageAt("journal-file-deleted", $"deleted {Path.GetFileName(victim)}", TouchesLastEntry: baseEnv.LastEntry?.File is { } f && Path.GetFileName(f) == Path.GetFileName(victim));
        }
        if (roll < 7)
        {
            var journal = roll < 5 && JournalInspector.Files(copy).Count > 0;
            var path = journal ? JournalInspector.Files(copy)[random.Next(JournalInspector.Files(copy).Count)].Path : dataPath;
            var length = new FileInfo(path).Length;
            var cut = random.Next(2) == 0 ? random.NextInt64(length) : random.NextInt64(length / 4096 + 1) * 4096;
            JournalInspector.Truncate(path, cut);
            var touches = journal && baseEnv.LastEntry is { } e && Path.GetFileName(e.File) == Path.GetFileName(path) && cut < e.Offset + e.Length;
            return new DamageAt(journal ? "journal-file-cut" : "data-file-cut", $"cut {Path.GetFileName(path)} from {length} to {cut} bytes", touches);
        }
        // A region: the last acknowledged entry, data-file pages by kind, or a journal region.
        var journalRegion = roll < 45 && baseEnv.JournalRegions.Count > 0;
        string file;
        long regionStart, regionLength;
        string target;
        if (roll >= 90 && baseEnv.LastEntry is { } lastEntry)
        {
            file = Path.Combine(JournalInspector.Directory(copy), Path.GetFileName(lastEntry.File));
            regionStart = lastEntry.Offset;
            regionLength = lastEntry.Length;
            target = "journal-last-entry";
        }
        else if (journalRegion)
        {
            var region = baseEnv.JournalRegions[random.Next(baseEnv.JournalRegions.Count)];
            file = Path.Combine(JournalInspector.Directory(copy), Path.GetFileName(region.File));
            if (!File.Exists(file)) return new DamageAt("none", "no damage (journal file gone)", false);
            regionStart = region.Offset;
            regionLength = region.Length;
            target = region.Label;
        }
        else
        {
            var kinds = baseEnv.PagesByKind.Keys.OrderBy(k => k, StringComparer.Ordinal).ToList();
            target = "page-" + kinds[random.Next(kinds.Count)];
            var pages = baseEnv.PagesByKind[target[5..]];
            // The first bitmap page is the one in use (the others cover pages past the end of these small files).
            var page = target == "page-FreeSpaceBitmap" && random.Next(2) == 0 ? pages[0] : pages[random.Next(pages.Count)];
            file = dataPath;
            regionStart = page * DataFileInspector.PageBytes;
            regionLength = DataFileInspector.PageBytes;
        }
        var fileLength = new FileInfo(file).Length;
        if (regionStart >= fileLength) return new DamageAt("none", "no damage (region past the end)", false);
        regionLength = Math.Min(regionLength, fileLength - regionStart);
        var kind = random.Next(100);
        long at, size;
        using (var handle = File.OpenHandle(file, FileMode.Open, FileAccess.ReadWrite))
        {
            if (kind < 50)
            {
                // One to three bit flips near each other.
                at = regionStart + random.NextInt64(regionLength);
                size = 1;
                var flips = 1 + random.Next(3);
                var buffer = new byte[Math.Min(16, fileLength - at)];
                RandomAccess.Read(handle, buffer, at);
                for (var f = 0; f < flips; f++) buffer[random.Next(buffer.Length)] ^= (byte)(1 << random.Next(8));
                RandomAccess.Write(handle, buffer, at);
                size = buffer.Length;
            }
            else if (kind < 75)
            {
                at = regionStart + random.NextInt64(regionLength);
                size = Math.Min(1 + random.Next(64), fileLength - at);
                var buffer = new byte[size];
                random.NextBytes(buffer);
                RandomAccess.Write(handle, buffer, at);
            }
            else
            {
                // A block that never reached the disk: 512 bytes or 4 KiB, aligned, zeroed.
                var block = random.Next(2) == 0 ? 512 : 4096;
                at = (regionStart + random.NextInt64(regionLength)) / block * block;
                size = Math.Min(block, fileLength - at);
                RandomAccess.Write(handle, new byte[size], at);
            }
        }
        var touchesLast = baseEnv.LastEntry is { } last && Path.GetFileName(last.File) == Path.GetFileName(file) && file != dataPath
            && at < last.Offset + last.Length && at + size > last.Offset;
        var description = $"{(kind < 50 ? "bit flips" : kind < 75 ? "random bytes" : "zeroed block")} in {target} of {Path.GetFileName(file)} at {at} (+{size})";
        return new DamageAt(target, description, touchesLast);
    }
}
