namespace Storage.Fuzz.Tests;

/// <summary>
/// The reproducers of findings the library has not fixed yet (<c>tests/Storage.Fuzz/findings/open/</c>). Each must end
/// as the known issue its name starts with, or keep the contract once the library is fixed (then it belongs in
/// <c>findings/&lt;target&gt;/</c> and its entry in <see cref="KnownIssues"/> goes). Any other ending is a new problem.
/// </summary>
public sealed class OpenFindingsTests
{
    /// <summary>A fact, not a theory: with no open finding there is nothing to list, and that is the good case.</summary>
    [Fact]
    public void Every_reproducer_ends_as_its_known_issue_or_keeps_the_contract()
    {
        foreach (var target in FuzzTargets.All)
        {
            foreach (var file in Corpus.OpenFindings(target.Name))
            {
                var result = FuzzRunner.RunOne(target, File.ReadAllBytes(file));
                Assert.True(result.KeepsContract, $"{target.Name} {file}: {result.Describe()}\n{result.Violation}");
                if (result.Outcome != FuzzOutcome.KnownIssue) continue;
                var issue = KnownIssues.All.Single(i => result.Refusals.Any(r => r.StartsWith($"known issue {i.Id}:", StringComparison.Ordinal)));
                Assert.StartsWith(issue.Id, Path.GetFileName(file), StringComparison.Ordinal);
            }
        }
    }

    [Fact]
    public void Every_known_issue_has_a_reproducer()
    {
        var names = FuzzTargets.All.SelectMany(t => Corpus.Files(Corpus.OpenFindingsDirectory(t.Name))).Select(Path.GetFileName).ToList();

        foreach (var issue in KnownIssues.All)
        {
            Assert.Contains(names, n => n!.StartsWith(issue.Id, StringComparison.Ordinal));
        }
    }
}
