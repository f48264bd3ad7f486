using System.Diagnostics;

namespace Storage.Fuzz;

/// <summary>
/// A cheap stand-in for AFL++ where it is not installed: deterministic mutations of the seeds, run in this process,
/// bounded by a count and a time budget. It finds the shallow breaks; coverage-guided fuzzing finds the deep ones.
/// </summary>
internal static class MutationPass
{
    public static MutationSummary Run(FuzzTarget target, IReadOnlyList<byte[]> seeds, int seed, int maxExecutions, TimeSpan budget, TimeSpan? timeout = null)
    {
        var mutator = new Mutator(seed);
        var violations = new List<(byte[], FuzzResult)>();
        int accepted = 0, rejected = 0, executions = 0;
        var watch = Stopwatch.StartNew();
        var pool = seeds.Count > 0 ? seeds : [[]];
        while (executions < maxExecutions && watch.Elapsed < budget)
        {
            var input = mutator.Mutate(pool[executions % pool.Count], pool);
            var result = FuzzRunner.RunOne(target, input, timeout);
            executions++;
            if (!result.KeepsContract)
            {
                violations.Add((input, result));
                // A timed-out execution still runs on its abandoned thread; stop before piling more on top.
                if (result.TimedOut) break;
                continue;
            }
            if (result.Outcome == FuzzOutcome.Accepted) accepted++;
            else rejected++;
        }
        return new MutationSummary(target.Name, executions, accepted, rejected, violations, watch.Elapsed);
    }
}
