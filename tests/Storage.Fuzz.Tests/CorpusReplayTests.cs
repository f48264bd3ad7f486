namespace Storage.Fuzz.Tests;

/// <summary>
/// Every seed of the corpus and every saved finding that is fixed, through the same target code afl-fuzz runs:
/// each must be read or refused with a typed error, within the watchdog's time.
/// </summary>
public sealed class CorpusReplayTests
{
    public static TheoryData<string, string> Inputs()
    {
        var data = new TheoryData<string, string>();
        foreach (var target in FuzzTargets.All)
        {
            foreach (var file in Corpus.Replayable(target.Name))
            {
                data.Add(target.Name, Path.GetRelativePath(Corpus.ProjectDirectory, file));
            }
        }
        return data;
    }

    [Theory]
    [MemberData(nameof(Inputs))]
    public void Input_keeps_the_contract(string target, string file)
    {
        var result = FuzzRunner.RunOne(FuzzTargets.Get(target), File.ReadAllBytes(Path.Combine(Corpus.ProjectDirectory, file)));

        Assert.True(result.KeepsContract, $"{target} {file}: {result.Describe()}\n{result.Violation}");
    }

    [Fact]
    public void Every_target_has_seeds_beyond_the_empty_input()
    {
        foreach (var target in FuzzTargets.All)
        {
            var seeds = Corpus.Seeds(target.Name);
            Assert.True(seeds.Count(f => new FileInfo(f).Length > 0) >= 3, $"{target.Name} has {seeds.Count} seeds; run: dotnet run --project tests/Storage.Fuzz -c Release -- generate-corpus");
        }
    }

    [Theory]
    [InlineData("healthy.env")]
    [InlineData("unsynced.env")]
    [InlineData("overflow.env")]
    [InlineData("many-trees.env")]
    public void A_sound_environment_seed_is_read_by_every_step(string seed)
    {
        // A seed that some step refuses would mean the harness, not the input, is broken: the corpus would not reach
        // the code behind that step.
        var result = FuzzRunner.RunOne(FuzzTargets.Get("environment"), File.ReadAllBytes(Path.Combine(Corpus.CorpusDirectory("environment"), seed)));

        Assert.True(result.KeepsContract, result.Describe());
        Assert.Equal(FuzzOutcome.Accepted, result.Outcome);
        Assert.Empty(result.Refusals);
    }
}
