namespace Storage.Benchmarks;

/// <summary>Where the repository is (the folder holding Storage.sln) and where results go inside it.</summary>
internal static class RepositoryPaths
{
    private const string SolutionFileName = "Storage.sln";

    /// <summary>Walks up from the current directory, then from the program's own folder.</summary>
    public static string FindRoot()
    {
        foreach (var start in new[] { Directory.GetCurrentDirectory(), AppContext.BaseDirectory })
        {
            for (var directory = new DirectoryInfo(start); directory is not null; directory = directory.Parent)
            {
                if (File.Exists(Path.Combine(directory.FullName, SolutionFileName))) return directory.FullName;
            }
        }
        throw new DirectoryNotFoundException($"No {SolutionFileName} above '{Directory.GetCurrentDirectory()}' or '{AppContext.BaseDirectory}'.");
    }

    /// <summary>results/ (the latest report is kept there).</summary>
    public static string Results(string root) => Path.Combine(root, "results");

    /// <summary>results/tmp/ (ignored by git): fresh engine directories, on the working tree's disk.</summary>
    public static string Scratch(string root) => Path.Combine(root, "results", "tmp");
}
