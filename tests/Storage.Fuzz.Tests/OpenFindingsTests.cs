namespace Storage.Fuzz.Tests;

/// <summary>
/// The reproducers of findings the library has not fixed yet (<c>tests/Storage.Fuzz/findings/open/</c>). Each must end
/// as the known issue its name starts with, or keep the contract once the library is fixed (then it belongs in
/// <c>findings/&lt;target&gt;/</c> and its entry in <see cref="KnownIssues"/> goes). Any other ending is a new problem.
/// </summary>
public sealed class OpenFindingsTests
{
    public static TheoryData<string, string> Inputs()
    {
        var data = new TheoryData<string, string>();
        foreach (var target in FuzzTargets.All)
        {
            foreach (var file in Corpus.OpenFindings(target.Name))
            {
                data.Add(target.Name, Path.GetRelativePath(Corpus.ProjectDirectory, file));
            }
        }
        return data;
    }

    [Theory]
    [MemberData(nameof(Inputs))]
    public void Reproducer_ends_as_its_known_issue_or_keeps_the_contract(string target, string file)
    {
        var result = FuzzRunner.RunOne(FuzzTargets.Get(target), File.ReadAllBytes(Path.Combine(Corpus.ProjectDirectory, file)));

        Assert.True(result.KeepsContract, $"{target} {file}: {result.Describe()}\n{result.Violation}");
        if (result.Outcome == FuzzOutcome.KnownIssue)
        {
            var issue = KnownIssues.All.Single(i => result.Refusals.Any(r => r.StartsWith($"known issue {i.Id}:", StringComparison.Ordinal)));
            Assert.StartsWith(issue.Id, Path.GetFileName(file), StringComparison.Ordinal);
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
