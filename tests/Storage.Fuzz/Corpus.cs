namespace Storage.Fuzz;

/// <summary>Where the seed corpus and the saved findings live: <c>tests/Storage.Fuzz/corpus/&lt;target&gt;/</c> and <c>findings/&lt;target&gt;/</c>.</summary>
internal static class Corpus
{
    /// <summary><c>tests/Storage.Fuzz</c> of the repository this program was built from or is run in.</summary>
    public static string ProjectDirectory { get; } = FindProjectDirectory();

    public static string CorpusDirectory(string target) => Path.Combine(ProjectDirectory, "corpus", target);

    /// <summary>Reproducers of findings that are fixed: they must keep the contract, like any corpus file.</summary>
    public static string FindingsDirectory(string target) => Path.Combine(ProjectDirectory, "findings", target);

    /// <summary>Reproducers of findings the library has not fixed yet; see findings/README.md.</summary>
    public static string OpenFindingsDirectory(string target) => Path.Combine(ProjectDirectory, "findings", "open", target);

    public static IReadOnlyList<string> Files(string directory) =>
        Directory.Exists(directory)
            ? Directory.EnumerateFiles(directory).Where(f => !Path.GetFileName(f).StartsWith('.') && !f.EndsWith(".md", StringComparison.Ordinal)).Order(StringComparer.Ordinal).ToList()
            : [];

    public static IReadOnlyList<string> Seeds(string target) => Files(CorpusDirectory(target));

    /// <summary>
    /// Reproducers of open findings that end quickly (as a known issue); those named <c>*.hang.*</c> run for long or
    /// take gigabytes before they end and are replayed only by name.
    /// </summary>
    public static IReadOnlyList<string> OpenFindings(string target) =>
        Files(OpenFindingsDirectory(target)).Where(f => !Path.GetFileName(f).Contains(".hang.", StringComparison.Ordinal)).ToList();

    /// <summary>Every file that must keep the contract: seeds and fixed findings.</summary>
    public static IReadOnlyList<string> Replayable(string target) => [.. Seeds(target), .. Files(FindingsDirectory(target))];

    private static string FindProjectDirectory()
    {
        foreach (var start in new[] { Environment.CurrentDirectory, AppContext.BaseDirectory })
        {
            for (var directory = new DirectoryInfo(start); directory is not null; directory = directory.Parent)
            {
                if (File.Exists(Path.Combine(directory.FullName, "Storage.sln")))
                {
                    return Path.Combine(directory.FullName, "tests", "Storage.Fuzz");
                }
            }
        }
        throw new InvalidOperationException("cannot find the repository (Storage.sln) above the working directory or the program");
    }
}
