using Storage.Faults;
using Storage.Inspection;
using Storage.Platform;
using Storage.Tests.Support;
using Model = Storage.Tests.Support.CampaignWorkload.Model;

namespace Storage.Tests.FaultTests;

/// <summary>
/// One trial of the fault campaign, on the backend the process runs on. With one fault armed (the nth call of one
/// kind fails in one way) it runs two phases of <see cref="CampaignWorkload"/>: phase A creates an environment,
/// commits, checkpoints, commits and is abandoned as a crash would leave it; phase B opens it again (recovery),
/// commits, checkpoints, commits and disposes it. Then it disarms, reopens and checks:
/// <list type="bullet">
/// <item>the state is exactly the model after every acknowledged commit, or (only where the failing commit's
/// journal write may have reached the disk) after that commit too; so nothing acknowledged is lost and nothing
/// is partial. The same check runs when phase B opens;</item>
/// <item>after a failed journal write, or a failed write, resize, header write or fsync of the data file, the
/// environment was poisoned: it took no more writes, however a retried call would have gone. A failure while
/// preparing a journal file (its zero fill, its sync, the directory syncs of creating and renaming it) fails
/// only the commit that needed the file, by design, since nothing acknowledged depends on that file yet; there
/// the state checks above are what count;</item>
/// <item>a fault that never fired, or a short write the layer continued, left no trace at all;</item>
/// <item>the reopened environment takes a commit, and the library checker finds nothing wrong.</item>
/// </list>
/// </summary>
internal sealed class FaultCampaign
{
    private static readonly TimeSpan PoisonWait = TimeSpan.FromSeconds(10);

    private readonly string _root;

    public FaultCampaign(string root)
    {
        _root = root;
        NativeBackend = PlatformIo.Resolve(IoBackend.Auto, lowPriority: true).IsNative;
    }

    /// <summary>Whether the process runs on the native backend (STORAGE_IO_BACKEND, or the library being there).</summary>
    public bool NativeBackend { get; }

    private IEnumerable<CampaignCall> ManagedCalls => CampaignCalls.All.Where(c => !NativeBackend || !CampaignCalls.IsNative(c));

    /// <summary>
    /// Journal entries go out as O_DIRECT|O_DSYNC writes only: the campaign counts a journal write where the native layer
    /// does, which does not see the buffered method's writes. The buffered method has its own fault and power-loss tests
    /// (<c>JournalWriteMethodTests</c>, <c>A_power_cut_at_any_sync_point</c>).
    /// </summary>
    private static StorageOptions Options(IFaultInjector faults) => (TestOptions.Busy with { JournalWriteMethod = JournalWriteMethod.DirectSync }).WithFaults(faults);

    /// <summary>Runs the trial with nothing failing and returns how many calls of each kind it made.</summary>
    public Dictionary<CampaignCall, long> Count()
    {
        var injector = new CampaignInjector(ManagedCalls);
        if (NativeBackend) PalFaults.Arm();
        TrialResult result;
        PalFaultCounts? native = null;
        try
        {
            result = Run(injector, null, () => injector.Fired > 0);
        }
        finally
        {
            if (NativeBackend)
            {
                native = PalFaults.Read();
                PalFaults.Disarm();
            }
        }
        if (result.Problems.Count > 0) throw new Xunit.Sdk.XunitException($"The workload fails without any fault: {string.Join("; ", result.Problems)}");
        return CampaignCalls.All.ToDictionary(c => c, c => NativeBackend && CampaignCalls.IsNative(c) ? native!.Calls(CampaignCalls.NativeKind(c)) : injector.Calls(c));
    }

    /// <summary>Fails call number <paramref name="nth"/> of <paramref name="call"/> and checks what the engine did about it.</summary>
    public TrialResult Run(CampaignCall call, CampaignFailure failure, long nth)
    {
        var plan = new Plan(call, failure, nth);
        if (NativeBackend && CampaignCalls.IsNative(call))
        {
            var injector = new CampaignInjector([]);
            PalFaults.Arm(CampaignCalls.NativeRule(call, failure, nth));
            try
            {
                return Run(injector, plan, () => PalFaults.Read().TotalFired > 0);
            }
            finally
            {
                PalFaults.Disarm();
            }
        }
        var managed = new CampaignInjector(ManagedCalls, call, nth, failure);
        return Run(managed, plan, () => managed.Fired > 0);
    }

    private TrialResult Run(CampaignInjector injector, Plan? plan, Func<bool> fired)
    {
        var directory = Path.Combine(_root, $"trial-{Guid.NewGuid():N}", "env");
        var result = new TrialResult(plan);
        try
        {
            var options = Options(injector);
            List<Model> b;
            try
            {
                var a = RunPhase(directory, options, 0, [Model.Empty], fired, injector, result, "A", crashAtEnd: true);
                b = RunPhase(directory, options, CampaignWorkload.AttemptsPerPhase, a, fired, injector, result, "B", crashAtEnd: false);
            }
            finally
            {
                result.Fired = fired();
                injector.Disarm();
                if (NativeBackend) PalFaults.Disarm();
            }
            Verify(directory, b, result);
        }
        catch (Exception e) when (e is not Xunit.Sdk.XunitException)
        {
            result.Problems.Add($"unexpected {e.GetType().Name} ({string.Join("; ", result.Failures.DefaultIfEmpty("nothing failed before"))}): {e.Message}");
        }
        finally
        {
            TempDirectory.DeleteDirectory(Path.GetDirectoryName(directory)!);
        }
        if (!result.Fired || plan?.Failure == CampaignFailure.Short)
        {
            // Nothing failed as far as the engine could tell: the trial must look like a run without faults.
            if (result.Failures.Count > 0) result.Problems.Add($"{(result.Fired ? "a short write" : "no fault fired, yet")}: {string.Join("; ", result.Failures)}");
        }
        return result;
    }

    /// <summary>
    /// Opens, runs one phase's attempts and ends it (a simulated crash, or Dispose). Returns the models the
    /// environment may hold afterwards; <paramref name="before"/> are those it may hold when the phase opens it.
    /// </summary>
    private List<Model> RunPhase(string directory, StorageOptions options, int firstAttempt, List<Model> before, Func<bool> fired, CampaignInjector injector,
        TrialResult result, string phase, bool crashAtEnd)
    {
        var firedBefore = fired();
        StorageEnvironment env;
        try
        {
            env = StorageEnvironment.Open(directory, options);
        }
        catch (StorageException e) when (e.ErrorCode is StorageErrorCode.IoFailure or StorageErrorCode.DiskFull)
        {
            result.Failures.Add($"{phase}: open failed ({e.ErrorCode})");
            return before;
        }

        var acknowledged = new List<int>();
        int? failedCommit = null;
        var ended = false;
        Model? start;
        try
        {
            start = before.FirstOrDefault(m => CampaignWorkload.Difference(env, m) is null);
            if (start is null)
            {
                result.Problems.Add($"{phase}: on open, the state matches none of the {before.Count} possible ones: {CampaignWorkload.Difference(env, before[0])}");
                return before;
            }
            var poisoned = false;
            for (var i = 0; i < CampaignWorkload.AttemptsPerPhase && !poisoned; i++)
            {
                var attempt = firstAttempt + i;
                try
                {
                    using (var tx = env.BeginWrite())
                    {
                        CampaignWorkload.Apply(tx, attempt);
                        tx.Commit();
                    }
                    acknowledged.Add(attempt);
                    failedCommit = null;
                }
                catch (StorageException e) when (e.ErrorCode == StorageErrorCode.EnvironmentPoisoned)
                {
                    poisoned = true;
                    result.Failures.Add($"{phase}: attempt {attempt} refused, poisoned");
                }
                catch (StorageException e) when (e.ErrorCode is StorageErrorCode.IoFailure or StorageErrorCode.DiskFull)
                {
                    failedCommit = attempt;
                    result.Failures.Add($"{phase}: commit {attempt} failed ({e.ErrorCode})");
                }
                if (i != CampaignWorkload.CheckpointAfter || poisoned) continue;
                try
                {
                    env.Checkpoint();
                }
                catch (StorageException e) when (e.ErrorCode is StorageErrorCode.IoFailure or StorageErrorCode.DiskFull or StorageErrorCode.EnvironmentPoisoned)
                {
                    result.Failures.Add($"{phase}: checkpoint failed ({e.ErrorCode})");
                }
            }

            if (fired() && !firedBefore && result.Plan is { } plan && CampaignCalls.MustPoison(plan.Call, plan.Failure) && plan.Failure != CampaignFailure.Short
                && !IsSpareHeader(injector, plan))
            {
                // The fault hit while this phase's environment was open: it must be refusing writes by now, or
                // soon if the flusher was the one that failed.
                if (!SpinWait.SpinUntil(() => IsPoisoned(env), PoisonWait))
                {
                    result.Problems.Add($"{phase}: the environment still takes writes after a failed {plan.Call} ({plan.Failure})");
                }
            }
            ended = true;
            if (crashAtEnd) env.SimulateCrash();
            else env.Dispose();
        }
        finally
        {
            // Whatever went wrong, no flusher of this trial may live on into the next one.
            if (!ended) env.SimulateCrash();
        }

        var model = CampaignWorkload.Build(start, acknowledged);
        var possible = new List<Model>();
        var journalWriteFailed = result.Plan is { Call: CampaignCall.JournalWrite } && failedCommit is not null;
        // Only a failed journal write can leave its commit on disk, and only if bytes reached the disk; when they
        // all did, recovery must replay it.
        // The journal write that failed may also have been the end marker written ahead of the entry, or the header of the
        // file the entry was to go to (only the native layer counts those as journal writes): then the entry never was.
        var landedAnEntry = journalWriteFailed ? injector.JournalWrite(result.Plan!.Value.Nth, NativeBackend)?.LandedAnEntry() : false;
        if (!journalWriteFailed || result.Plan!.Value.Failure != CampaignFailure.LandedThenEio || landedAnEntry != true) possible.Add(model);
        if (journalWriteFailed && landedAnEntry != false && result.Plan!.Value.Failure is CampaignFailure.PartialThenEio or CampaignFailure.LandedThenEio)
        {
            possible.Add(CampaignWorkload.Build(model, [failedCommit!.Value]));
        }
        return possible;
    }

    /// <summary>
    /// A failed header write to a spare journal file fails the commit that needed the file, and nothing acknowledged
    /// depends on it: the environment may go on (the native layer counts such writes as journal writes).
    /// </summary>
    private bool IsSpareHeader(CampaignInjector injector, Plan plan) =>
        plan.Call == CampaignCall.JournalWrite && injector.JournalWrite(plan.Nth, NativeBackend) is { IsSpareHeader: true };

    private static bool IsPoisoned(StorageEnvironment env)
    {
        try
        {
            using var tx = env.BeginWrite(TimeSpan.FromSeconds(5));
            return false;
        }
        catch (StorageException e) when (e.ErrorCode == StorageErrorCode.EnvironmentPoisoned)
        {
            return true;
        }
    }

    private static void Verify(string directory, List<Model> possible, TrialResult result)
    {
        using (var env = StorageEnvironment.Open(directory, TestOptions.Small))
        {
            var match = possible.FirstOrDefault(m => CampaignWorkload.Difference(env, m) is null);
            if (match is null)
            {
                result.Problems.Add($"after reopening, the state matches none of the {possible.Count} possible ones: {CampaignWorkload.Difference(env, possible[0])}");
                return;
            }
            using var tx = env.BeginWrite();
            tx.OpenOrCreateTree("after").Put("reopened"u8, "yes"u8);
            tx.Commit();
        }
        var report = EnvironmentSnapshot.Check(directory);
        if (report.ErrorCount > 0) result.Problems.Add($"the checker finds {report.ErrorCount} errors: {string.Join("; ", report.Problems.Take(3).Select(p => p.ToString()))}");
    }

    internal readonly record struct Plan(CampaignCall Call, CampaignFailure Failure, long Nth)
    {
        public override string ToString() => $"{Call} #{Nth} {Failure}";
    }

    internal sealed class TrialResult(Plan? plan)
    {
        public Plan? Plan { get; } = plan;

        public bool Fired { get; set; }

        /// <summary>What failed, as the engine reported it to the workload (expected while a fault fires).</summary>
        public List<string> Failures { get; } = [];

        /// <summary>What the engine did wrong.</summary>
        public List<string> Problems { get; } = [];

    }
}
