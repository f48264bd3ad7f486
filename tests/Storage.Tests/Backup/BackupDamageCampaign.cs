using System.Buffers.Binary;
using Storage.Tests.Support;

namespace Storage.Tests.Backup;

/// <summary>
/// Damage to a backup stream, case by case (STORAGE_BACKUP_DAMAGE_CASES, default 300): flipped bytes anywhere, zeroed
/// 4 KiB runs, cuts, dropped, repeated and swapped blocks, garbage after the end. Every restore either fails with a
/// <see cref="StorageCorruptedException"/> and leaves nothing behind, or restores exactly the source: never a silently
/// different environment, never a crash or a hang.
/// </summary>
public sealed class A_damaged_backup(ITestOutputHelper output)
{
    private static int Cases => int.TryParse(Environment.GetEnvironmentVariable("STORAGE_BACKUP_DAMAGE_CASES"), out var n) && n > 0 ? n : 300;

    [Fact]
    public async Task Is_refused_or_restored_exactly_never_silently_wrong()
    {
        using var dir = new TempDirectory();
        byte[] backup;
        List<KeyValuePair<byte[], byte[]>> expected;
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), TestOptions.Small))
        {
            var random = new Random(17);
            for (var t = 0; t < 300; t++)
            {
                using var tx = env.BeginWrite();
                var tree = tx.OpenOrCreateTree(t % 3 == 0 ? "b" : "a");
                for (var i = 0; i < 20; i++)
                {
                    var value = new byte[random.Next(20) == 0 ? 9_000 : 30 + random.Next(200)];
                    random.NextBytes(value);
                    tree.Put(Keys.Int64(random.Next(4000)), value);
                }
                tx.Commit();
            }
            using var stream = new MemoryStream();
            await env.BackupAsync(stream, cancellationToken: TestContext.Current.CancellationToken);
            backup = stream.ToArray();
            expected = Entries(env);
        }
        var blocks = BlockOffsets(backup);
        Assert.True(blocks.Count >= 3, $"the backup has {blocks.Count} blocks");

        var random2 = new Random(2024);
        var (refused, exact) = (0, 0);
        var kinds = new Dictionary<string, int>();
        var restoredKinds = new Dictionary<string, int>();
        for (var c = 0; c < Cases; c++)
        {
            var (kind, damaged) = Damage(backup, blocks, random2);
            kinds[kind] = kinds.GetValueOrDefault(kind) + 1;
            var target = dir.Combine($"restored-{c}");
            var restore = StorageEnvironment.RestoreAsync(new MemoryStream(damaged), target, cancellationToken: TestContext.Current.CancellationToken);
            try
            {
                await restore.WaitAsync(TimeSpan.FromSeconds(60), TestContext.Current.CancellationToken);
            }
            catch (StorageCorruptedException)
            {
                refused++;
                Assert.False(Directory.Exists(target), $"case {c} ({kind}): the target was left behind");
                Assert.Empty(Directory.GetDirectories(dir.Path, $".restored-{c}.restoring-*"));
                continue;
            }
            // Restored: it must be exactly the source.
            await using (var env = StorageEnvironment.Open(target, TestOptions.Small))
            {
                var actual = Entries(env);
                Assert.True(actual.Count == expected.Count && actual.Zip(expected).All(p => p.First.Key.AsSpan().SequenceEqual(p.Second.Key) && p.First.Value.AsSpan().SequenceEqual(p.Second.Value)),
                    $"case {c} ({kind}) restored an environment that differs from the source");
            }
            exact++;
            restoredKinds[kind] = restoredKinds.GetValueOrDefault(kind) + 1;
        }
        output.WriteLine($"{Cases} damaged backups: {refused} refused with a typed error, {exact} restored exactly, 0 silently wrong; cases: " +
            string.Join(", ", kinds.OrderBy(k => k.Key, StringComparer.Ordinal).Select(k => $"{k.Key} {k.Value}")) +
            $"; restored exactly: {string.Join(", ", restoredKinds.Select(k => $"{k.Key} {k.Value}"))}");
        Assert.Equal(Cases, refused + exact);
    }

    private static List<KeyValuePair<byte[], byte[]>> Entries(StorageEnvironment env)
    {
        using var read = env.BeginRead();
        var all = new List<KeyValuePair<byte[], byte[]>>();
        foreach (var name in read.ListTrees())
        {
            all.Add(new(System.Text.Encoding.UTF8.GetBytes(name), []));
            all.AddRange(read.OpenTree(name).Prefix([]).ToList());
        }
        return all;
    }

    /// <summary>Where each block starts, and where the trailer does (last).</summary>
    private static List<int> BlockOffsets(byte[] backup)
    {
        var offsets = new List<int>();
        var at = 160;
        while (BinaryPrimitives.ReadUInt32LittleEndian(backup.AsSpan(at)) == 0x4547_4150)
        {
            offsets.Add(at);
            at += 28 + BinaryPrimitives.ReadInt32LittleEndian(backup.AsSpan(at + 4)) * 8192;
        }
        offsets.Add(at);
        return offsets;
    }

    private static (string Kind, byte[] Bytes) Damage(byte[] backup, List<int> blocks, Random random)
    {
        var copy = (byte[])backup.Clone();
        var blockCount = blocks.Count - 1;
        int Block() => random.Next(blockCount);
        int Length(int b) => blocks[b + 1] - blocks[b];
        switch (random.Next(9))
        {
            case 0:
                copy[random.Next(copy.Length)] ^= (byte)(1 << random.Next(8));
                return ("flip", copy);
            case 1:
                copy[random.Next(160)] ^= (byte)(1 << random.Next(8));
                return ("flip-header", copy);
            case 2:
            {
                var at = random.Next(copy.Length - 4096);
                Array.Clear(copy, at, 4096);
                return ("zeroed-4k", copy);
            }
            case 3:
                return ("cut", backup[..random.Next(backup.Length)]);
            case 4:
            {
                var b = Block();
                return ("dropped-block", [.. backup[..blocks[b]], .. backup[blocks[b + 1]..]]);
            }
            case 5:
            {
                var b = Block();
                return ("repeated-block", [.. backup[..blocks[b + 1]], .. backup[blocks[b]..blocks[b + 1]], .. backup[blocks[b + 1]..]]);
            }
            case 6:
            {
                var b = random.Next(blockCount - 1);
                return ("swapped-blocks", [.. backup[..blocks[b]], .. backup[blocks[b + 1]..blocks[b + 2]], .. backup[blocks[b]..blocks[b + 1]], .. backup[blocks[b + 2]..]]);
            }
            case 7:
            {
                var garbage = new byte[1 + random.Next(5000)];
                random.NextBytes(garbage);
                return ("garbage-after", [.. backup, .. garbage]);
            }
            default:
            {
                // A page's bytes changed and the block's checksum recomputed: only the restored environment's own check can tell.
                var b = Block();
                var page = random.Next((Length(b) - 28) / 8192);
                var at = blocks[b] + 28 + page * 8192 + 64 + random.Next(8192 - 64);
                copy[at] ^= 0x5a;
                var pages = copy.AsSpan(blocks[b] + 28, Length(b) - 28);
                var state = Storage.Platform.Crc32C.Append(Storage.Platform.Crc32C.Start(0), copy.AsSpan(blocks[b], 24));
                var crc = Storage.Platform.Crc32C.Finish(Storage.Platform.Crc32C.Append(state, pages));
                BinaryPrimitives.WriteUInt32LittleEndian(copy.AsSpan(blocks[b] + 24), crc);
                return ("page-changed-crc-fixed", copy);
            }
        }
    }

    /// <summary>
    /// The same over a chain (STORAGE_BACKUP_DAMAGE_CASES / 2 cases): a full backup and three incremental links, one link
    /// damaged (flipped, cut, zeroed, an entry dropped or repeated) or a link missing, repeated or out of order. Each
    /// restore is refused with a typed error or restores exactly the chain's end: never silently wrong.
    /// </summary>
    [Fact]
    public async Task Chain_is_refused_or_restored_exactly_never_silently_wrong()
    {
        using var dir = new TempDirectory();
        var backups = dir.Combine("backups");
        var files = new List<string>();
        // The state at the end of each link: a chain without its last links restores, and says it restored, an earlier end.
        var expectedAt = new Dictionary<long, List<KeyValuePair<byte[], byte[]>>>();
        var options = TestOptions.Small with { RetainedJournalBytes = 1L << 30 };
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), options))
        {
            var random = new Random(23);
            void Commits(int count)
            {
                for (var t = 0; t < count; t++)
                {
                    using var tx = env.BeginWrite();
                    var tree = tx.OpenOrCreateTree("a");
                    for (var i = 0; i < 10; i++)
                    {
                        var value = new byte[random.Next(30) == 0 ? 9_000 : 20 + random.Next(150)];
                        random.NextBytes(value);
                        tree.Put(Keys.Int64(random.Next(2000)), value);
                    }
                    tx.Commit();
                }
            }
            Commits(100);
            var last = await env.BackupAsync(backups, cancellationToken: TestContext.Current.CancellationToken);
            files.Add(last.Path!);
            expectedAt[last.TransactionId] = Entries(env);
            for (var link = 0; link < 3; link++)
            {
                Commits(40);
                last = await env.BackupIncrementalAsync(backups, last.TransactionId, cancellationToken: TestContext.Current.CancellationToken);
                files.Add(last.Path!);
                expectedAt[last.TransactionId] = Entries(env);
            }
        }
        var links = files.Select(File.ReadAllBytes).ToList();
        var random2 = new Random(77);
        var (refused, exact) = (0, 0);
        var cases = Math.Max(1, Cases / 2);
        for (var c = 0; c < cases; c++)
        {
            var chain = links.Select(l => (byte[])l.Clone()).ToList();
            string kind;
            var target = random2.Next(1, chain.Count);
            switch (random2.Next(6))
            {
                case 0:
                    chain[target][random2.Next(chain[target].Length)] ^= (byte)(1 << random2.Next(8));
                    kind = "flip";
                    break;
                case 1:
                    chain[target] = chain[target][..random2.Next(chain[target].Length)];
                    kind = "cut";
                    break;
                case 2:
                {
                    var at = random2.Next(Math.Max(1, chain[target].Length - 512));
                    Array.Clear(chain[target], at, Math.Min(512, chain[target].Length - at));
                    kind = "zeroed";
                    break;
                }
                case 3:
                    chain.RemoveAt(target);
                    kind = "missing-link";
                    break;
                case 4:
                    chain.Insert(target, chain[target]);
                    kind = "repeated-link";
                    break;
                default:
                {
                    var other = target == chain.Count - 1 ? target - 1 : target + 1;
                    if (other < 1) other = target;
                    (chain[target], chain[other]) = (chain[other], chain[target]);
                    kind = other == target ? "unchanged" : "swapped-links";
                    break;
                }
            }
            var paths = new List<string>();
            for (var i = 0; i < chain.Count; i++)
            {
                var path = dir.Combine($"case-{c}-link-{i}{StorageEnvironment.BackupFileExtension}");
                File.WriteAllBytes(path, chain[i]);
                paths.Add(path);
            }
            var restoredDirectory = dir.Combine($"restored-{c}");
            RestoreResult restored;
            try
            {
                restored = await StorageEnvironment.RestoreAsync(paths, restoredDirectory, cancellationToken: TestContext.Current.CancellationToken)
                    .WaitAsync(TimeSpan.FromSeconds(60), TestContext.Current.CancellationToken);
            }
            catch (StorageCorruptedException)
            {
                refused++;
                Assert.False(Directory.Exists(restoredDirectory), $"case {c} ({kind}): the target was left behind");
                continue;
            }
            finally
            {
                foreach (var path in paths) File.Delete(path);
            }
            Assert.True(expectedAt.ContainsKey(restored.TransactionId), $"case {c} ({kind}) restored transaction {restored.TransactionId}, the end of no link");
            var expected = expectedAt[restored.TransactionId];
            await using (var env = StorageEnvironment.Open(restoredDirectory, TestOptions.Small))
            {
                Assert.Equal(restored.TransactionId, env.GetStats().LastTransactionId);
                var actual = Entries(env);
                Assert.True(actual.Count == expected.Count && actual.Zip(expected).All(p => p.First.Key.AsSpan().SequenceEqual(p.Second.Key) && p.First.Value.AsSpan().SequenceEqual(p.Second.Value)),
                    $"case {c} ({kind}) restored an environment that differs from the source at transaction {restored.TransactionId}");
            }
            exact++;
        }
        output.WriteLine($"{cases} damaged chains: {refused} refused with a typed error, {exact} restored exactly, 0 silently wrong");
        Assert.Equal(cases, refused + exact);
    }
}
