using Storage.Tests.Support;

namespace Storage.Tests.FaultTests;

/// <summary>
/// The fault campaign (<see cref="FaultCampaign"/>) on the backend this run uses (the suite runs once per
/// backend): for each kind of call, each way of failing it and each n up to the number of such calls the workload
/// makes, fail the nth call and check that no acknowledged commit is lost, nothing partial appears, the
/// environment is poisoned where it must be, and a reopen recovers. The fast variant samples n; the slow one
/// tries every n.
/// </summary>
[Collection(ProcessWideFaultSeam.Name)]
public sealed class A_fault_at_any_write_or_sync(A_fault_at_any_write_or_sync.WorkloadCounts counts, ITestOutputHelper output)
    : IClassFixture<A_fault_at_any_write_or_sync.WorkloadCounts>
{
    /// <summary>
    /// Values of n tried per way of failing a call in the fast variant: more for syncs, which fail one way only,
    /// fewer for writes, which fail in four or five. Either way about 6 to 15 trials per kind of call.
    /// </summary>
    private static int SampledCallsPerFailure(CampaignCall call) => CampaignCalls.IsSync(call) ? 6 : 3;

    public static TheoryData<CampaignCall> Calls => new(CampaignCalls.All);

    [Theory]
    [MemberData(nameof(Calls))]
    public async Task Loses_no_acknowledged_commit_and_poisons_where_it_must_at_sampled_calls(CampaignCall call) =>
        await Within.Run(() => Campaign(call, exhaustive: false), TimeSpan.FromMinutes(5));

    [Theory]
    [MemberData(nameof(Calls))]
    [Trait("Category", "Slow")]
    public async Task Loses_no_acknowledged_commit_and_poisons_where_it_must_at_every_call(CampaignCall call) =>
        await Within.Run(() => Campaign(call, exhaustive: true), TimeSpan.FromMinutes(60));

    private void Campaign(CampaignCall call, bool exhaustive)
    {
        var campaign = counts.Campaign;
        var (least, most) = counts.Of(call);
        output.WriteLine($"{(campaign.NativeBackend ? "native" : "managed")} backend; {call}: {least}..{most} calls per workload run ({counts.Summary})");
        Assert.True(most > 0, $"The workload makes no {call} call, so the campaign would test nothing.");

        var problems = new List<string>();
        foreach (var failure in CampaignCalls.FailuresOf(call, campaign.NativeBackend))
        {
            var trials = 0;
            var fired = 0;
            var firstFired = false;
            var failures = new SortedDictionary<string, int>(StringComparer.Ordinal);
            foreach (var nth in Sample(most, exhaustive ? most : SampledCallsPerFailure(call)))
            {
                var result = campaign.Run(call, failure, nth);
                trials++;
                if (result.Fired) fired++;
                if (nth == 1) firstFired = result.Fired;
                foreach (var line in result.Failures) failures[Shape(line)] = failures.GetValueOrDefault(Shape(line)) + 1;
                problems.AddRange(result.Problems.Select(p => $"{call} #{nth} {failure}: {p}"));
            }
            output.WriteLine($"  {failure}: {trials} trials, {fired} fired; seen: {(failures.Count == 0 ? "no failure" : string.Join(", ", failures.Select(f => $"{f.Key} x{f.Value}")))}");
            if (!firstFired) problems.Add($"{call} #1 {failure}: the fault never fired, so this failure was not tested");
        }
        foreach (var problem in problems.Take(40)) output.WriteLine(problem);
        Assert.True(problems.Count == 0, $"{problems.Count} problems; first: {string.Join(" | ", problems.Take(5))}");
    }

    /// <summary>n from 1 to <paramref name="count"/>: all of them, or <paramref name="samples"/> spread evenly, first and last included.</summary>
    private static IEnumerable<long> Sample(long count, long samples)
    {
        if (count <= samples) return Enumerable.Range(1, (int)count).Select(n => (long)n);
        return Enumerable.Range(0, (int)samples).Select(k => 1 + k * (count - 1) / (samples - 1)).Distinct();
    }

    /// <summary>A failure line without its attempt number, so that the summary groups alike ones.</summary>
    private static string Shape(string line) => System.Text.RegularExpressions.Regex.Replace(line, @"\b(attempt|commit) \d+", "$1");

    /// <summary>How many calls of each kind the workload makes, from a few runs without faults (timing varies them).</summary>
    public sealed class WorkloadCounts : IDisposable
    {
        private const int CountingRuns = 2;

        private readonly TempDirectory _temp = new("campaign");
        private readonly Dictionary<CampaignCall, (long Least, long Most)> _range = [];

        public WorkloadCounts()
        {
            Campaign = new FaultCampaign(_temp.Path);
            for (var run = 0; run < CountingRuns; run++)
            {
                foreach (var (call, calls) in Campaign.Count())
                {
                    _range[call] = _range.TryGetValue(call, out var r) ? (Math.Min(r.Least, calls), Math.Max(r.Most, calls)) : (calls, calls);
                }
            }
            Summary = string.Join(", ", _range.Select(p => $"{p.Key} {(p.Value.Least == p.Value.Most ? $"{p.Value.Most}" : $"{p.Value.Least}-{p.Value.Most}")}"));
        }

        internal FaultCampaign Campaign { get; }

        /// <summary>Calls per kind, as "Kind least-most".</summary>
        public string Summary { get; }

        public (long Least, long Most) Of(CampaignCall call) => _range[call];

        public void Dispose() => _temp.Dispose();
    }
}
