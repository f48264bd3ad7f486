namespace Storage.Tests.Docs;

/// <summary>
/// The README's getting-started program is the file samples/GettingStarted/Program.cs, which scripts/test.sh builds
/// against the packed package and runs: the code a new user copies compiles and runs as written.
/// </summary>
public sealed class The_readme
{
    private const string Marker = "<!-- getting-started: samples/GettingStarted/Program.cs -->";

    [Fact]
    public void Shows_the_getting_started_sample_exactly_as_the_file_that_is_built_and_run()
    {
        var root = RepositoryRoot();
        var readme = File.ReadAllText(Path.Combine(root, "README.md")).ReplaceLineEndings("\n");
        var at = readme.IndexOf(Marker, StringComparison.Ordinal);
        Assert.True(at >= 0, $"README.md has the marker {Marker}");
        var open = readme.IndexOf("```csharp\n", at, StringComparison.Ordinal);
        Assert.True(open >= 0 && readme[(at + Marker.Length)..open].Trim().Length == 0, "a ```csharp block follows the marker at once");
        var start = open + "```csharp\n".Length;
        var end = readme.IndexOf("\n```", start, StringComparison.Ordinal);
        var block = readme[start..end] + "\n";
        var sample = File.ReadAllText(Path.Combine(root, "samples", "GettingStarted", "Program.cs")).ReplaceLineEndings("\n");
        Assert.Equal(sample, block);
    }

    [Fact]
    public void States_the_format_version_the_code_writes()
    {
        var root = RepositoryRoot();
        var format = Storage.State.FileHeader.CurrentFormatVersion;
        var onDisk = File.ReadAllText(Path.Combine(root, "docs", "on-disk-format.md"));
        Assert.Contains($"format {format}", onDisk, StringComparison.OrdinalIgnoreCase);
        var tool = File.ReadAllText(Path.Combine(root, "tools", "Storage.Inspect", "README.md"));
        Assert.Contains($"format          {format},", tool, StringComparison.Ordinal);
    }

    private static string RepositoryRoot()
    {
        for (var dir = new DirectoryInfo(AppContext.BaseDirectory); dir is not null; dir = dir.Parent)
        {
            if (File.Exists(Path.Combine(dir.FullName, "Storage.sln"))) return dir.FullName;
        }
        throw new DirectoryNotFoundException($"No Storage.sln above {AppContext.BaseDirectory}.");
    }
}
