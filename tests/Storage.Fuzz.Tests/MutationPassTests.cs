namespace Storage.Fuzz.Tests;

/// <summary>
/// A few thousand deterministic mutations of the seeds per target, in this process, bounded to a few seconds: the
/// contract is exercised on every test run, also where AFL++ is not installed. A violation names the input, saved
/// where the message says, for <c>Storage.Fuzz replay</c>.
/// </summary>
public sealed class MutationPassTests
{
    [Theory]
    [InlineData("file-header", 3000, 1.5)]
    [InlineData("tree-page", 3000, 1.5)]
    [InlineData("page-diff", 3000, 1.5)]
    [InlineData("journal-entry", 3000, 2.0)]
    [InlineData("environment", 3000, 2.5)]
    public void Mutated_seeds_keep_the_contract(string name, int executions, double seconds)
    {
        var target = FuzzTargets.Get(name);
        var seeds = Corpus.Seeds(name).Select(File.ReadAllBytes).ToList();

        var summary = MutationPass.Run(target, seeds, seed: 12345, executions, TimeSpan.FromSeconds(seconds));

        var saved = new List<string>();
        foreach (var (input, result) in summary.Violations)
        {
            var path = Path.Combine(Path.GetTempPath(), $"storage-fuzz-{name}-{Guid.NewGuid():N}");
            File.WriteAllBytes(path, input);
            saved.Add($"{path}: {result.Describe()}\n{result.Violation}");
        }
        Assert.True(summary.Violations.Count == 0, string.Join("\n", saved));
        // On a busy machine the slow targets get few executions in the budget; at least one shows the pass ran.
        Assert.True(summary.Executions > 0, $"no executions in {summary.Elapsed.TotalSeconds:F1} s");
    }
}
