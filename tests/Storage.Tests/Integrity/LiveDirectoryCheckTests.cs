using System.Buffers.Binary;
using Storage.Inspection;
using Storage.Paging;
using Storage.Tests.Support;

namespace Storage.Tests.Integrity;

/// <summary>
/// <see cref="EnvironmentSnapshot.Check(string, bool, IProgress{CheckProgress})"/> of a directory another process is
/// writing: a write in flight (a half-written journal entry, a file switched, pages flushed past the snapshot) is never
/// reported as damage, and damage is still found.
/// </summary>
[Trait("Category", "Crash")]
public sealed class Checking_a_directory_another_process_is_writing(ITestOutputHelper output)
{
    private static readonly TimeSpan HostTimeout = TimeSpan.FromSeconds(60);

    /// <summary>Checks in the loop (STORAGE_LIVE_CHECKS, default 200).</summary>
    private static int Checks => int.TryParse(Environment.GetEnvironmentVariable("STORAGE_LIVE_CHECKS"), out var n) && n > 0 ? n : 200;

    [Fact]
    public async Task Reports_no_damage_while_it_commits_and_finds_a_damaged_page()
    {
        using var temp = new TempDirectory();
        // A tree the writing process never touches, in the data file before it starts.
        using (var env = StorageEnvironment.Open(temp.Path))
        {
            using var tx = env.BeginWrite();
            var archive = tx.CreateTree("archive");
            var key = new byte[8];
            for (var i = 0; i < 4000; i++)
            {
                BinaryPrimitives.WriteInt64BigEndian(key, i);
                archive.Put(key, new byte[40 + i % 60]);
            }
            tx.Commit();
            env.Checkpoint();
        }

        using var host = CrashHostProcess.Start("load", temp.Path);
        try
        {
            Assert.Equal("READY", await host.ReadLineAsync(HostTimeout));
            Assert.StartsWith("COMMITS", await host.ReadLineAsync(HostTimeout));

            // One snapshot, checked once, reads the writer's files mid-write now and then: that is what the check confirms away.
            var unconfirmedSingleChecks = 0;
            for (var i = 0; i < 20; i++)
            {
                using var snapshot = EnvironmentSnapshot.Open(temp.Path);
                if (!snapshot.Check().IsConsistent) unconfirmedSingleChecks++;
            }

            var checkedAgain = 0;
            var unsettled = 0;
            var lastTransaction = 0L;
            for (var i = 0; i < Checks; i++)
            {
                var report = EnvironmentSnapshot.Check(temp.Path, collectPages: i % 10 == 0);
                Assert.True(report.WhileOpenElsewhere, "the writing process holds the directory");
                // Never damage, never "a strict open fails": only notes of writes in flight, or, when the directory changed
                // under every attempt, one warning that nothing could be confirmed.
                var reported = report.Problems.Where(p => p.Severity == ProblemSeverity.Error || p.Kind is not ("in-flight" or "unsettled")
                    || p.Message.Contains("strict open", StringComparison.Ordinal)).ToList();
                Assert.True(report.IsConsistent && reported.Count == 0,
                    $"check {i + 1} of {Checks} (after {report.Attempts} attempts, transaction {report.TransactionId}):\n{string.Join("\n", report.Problems)}");
                if (report.Problems.Any(p => p.Kind == "unsettled")) unsettled++;
                if (report.Attempts > 1) checkedAgain++;
                lastTransaction = Math.Max(lastTransaction, report.TransactionId);
                Assert.False(host.HasExited, host.StandardError);
            }
            output.WriteLine($"{Checks} checks up to transaction {lastTransaction}: none reported damage; {checkedAgain} needed more than one attempt, " +
                $"{unsettled} found the directory changing under all {EnvironmentSnapshot.MaxLiveAttempts}. Single unconfirmed checks: {unconfirmedSingleChecks} of 20 saw problems.");
            // The confirmation settles almost always: a check that cannot confirm anything is rare, not the rule.
            Assert.True(unsettled * 50 <= Checks, $"{unsettled} of {Checks} checks never settled");

            // Damage one leaf of the tree the writer never touches: found, confirmed, and named, while the writer goes on.
            var before = EnvironmentSnapshot.Check(temp.Path, collectPages: true);
            var archiveId = before.Trees.Single(t => t.Name == "archive").TreeId;
            var leaf = Enumerable.Range(0, before.Pages!.Length)
                .First(p => before.Pages[p].Kind == PageKind.Leaf && before.Pages[p].TreeId == archiveId && before.Pages[p].UsedBytes < PageLayout.PageSizeBytes - 64);
            using (var file = new FileStream(Path.Combine(temp.Path, DataFile.FileName), FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite))
            {
                var header = new byte[PageLayout.HeaderSizeBytes];
                file.Position = (long)leaf * PageLayout.PageSizeBytes;
                file.ReadExactly(header);
                var lower = BitConverter.ToUInt16(header, 10); // the end of the slots: the gap before the nodes
                file.Position = (long)leaf * PageLayout.PageSizeBytes + lower;
                file.Write(Enumerable.Range(0, 64).Select(i => (byte)(i * 37 + 11)).ToArray());
                file.Flush(flushToDisk: true);
            }

            var damaged = EnvironmentSnapshot.Check(temp.Path);
            Assert.False(damaged.IsConsistent);
            Assert.True(damaged.WhileOpenElsewhere);
            Assert.True(damaged.Attempts >= EnvironmentSnapshot.LiveConfirmations, $"confirmed after {damaged.Attempts} attempts");
            var error = Assert.Single(damaged.Problems, p => p.Severity == ProblemSeverity.Error);
            Assert.Equal("checksum", error.Kind);
            Assert.Equal(leaf, error.PageNumber);
            Assert.Equal("archive", error.Tree);
            Assert.False(host.HasExited, host.StandardError);
        }
        finally
        {
            if (!host.HasExited) await host.KillAsync(HostTimeout);
        }
    }
}
