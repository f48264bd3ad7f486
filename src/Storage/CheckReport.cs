namespace Storage;

/// <summary>
/// What a consistency check found: every problem with where it is, each tree as walked, free space by section, and
/// page totals. Made by <see cref="StorageEnvironment.Check"/> (the newest committed snapshot of an open environment) and
/// by <see cref="Inspection.EnvironmentSnapshot.Check(bool, IProgress{CheckProgress})"/> (a directory on disk, without
/// its lock).
/// </summary>
/// <remarks>
/// Unlike the engine's reads, which stop at the first broken invariant, a check reports every problem it finds (up to
/// <see cref="MaxProblems"/>; the rest are counted) and goes on with the rest of the file. Every page below the next page
/// number is accounted for exactly once: a header or bitmap page, a page reachable from the tree of tree names or a named
/// tree, or a page marked free, never two of those; so <see cref="PagesInUseOrFree"/> is <see cref="ReservedPages"/> +
/// <see cref="ReachablePages"/> + <see cref="FreePages"/> + <see cref="LeakedPages"/> when nothing is wrong twice.
/// </remarks>
public sealed class CheckReport
{
    /// <summary>At most this many problems are listed in <see cref="Problems"/>; the rest are counted in <see cref="ProblemsOmitted"/>.</summary>
    public const int MaxProblems = 1000;

    /// <summary>Bytes in a page: every page count of the report times this is bytes of the data file.</summary>
    public const int PageSizeBytes = Paging.PageLayout.PageSizeBytes;

    private readonly List<CheckProblem> _problems = [];
    private readonly List<CheckedTree> _trees = [];
    private readonly List<CheckedSection> _sections = [];

    internal CheckReport()
    {
    }

    /// <summary>What was found, in the order it was found (problems of reading the state first).</summary>
    public IReadOnlyList<CheckProblem> Problems => _problems;

    /// <summary>The tree of tree names first (<see cref="CheckedTree.Name"/> null), then the named trees in the order of their UTF-8 names.</summary>
    public IReadOnlyList<CheckedTree> Trees => _trees;

    /// <summary>Free space of every section below the next page number, in order.</summary>
    public IReadOnlyList<CheckedSection> Sections => _sections;

    /// <summary>The last transaction of the state checked.</summary>
    public long TransactionId { get; internal set; }

    /// <summary>Pages below the next page number: the ones the check accounts for.</summary>
    public long PagesInUseOrFree { get; internal set; }

    /// <summary>Whole pages in the data file (it may be longer than the pages in use: growth reserves room ahead).</summary>
    public long FilePages { get; internal set; }

    /// <summary>Pages reachable from a tree: branch, leaf and overflow pages.</summary>
    public long ReachablePages { get; internal set; }

    /// <summary>Header and free-space bitmap pages (and the reserved pages of regions after the first).</summary>
    public long ReservedPages { get; internal set; }

    /// <summary>Pages marked free and not reachable.</summary>
    public long FreePages { get; internal set; }

    /// <summary>Pages neither reachable nor marked free: space lost until something frees it.</summary>
    public long LeakedPages { get; internal set; }

    /// <summary>Bytes of the data file whose blocks were given back to the file system (holes; Linux only, else 0).</summary>
    public long HoleBytes { get; internal set; }

    /// <summary>Problems left out of <see cref="Problems"/> once <see cref="MaxProblems"/> were listed.</summary>
    public long ProblemsOmitted { get; internal set; }

    /// <summary>One entry per page below the next page number, indexed by page number, when the check was asked to collect them; else null.</summary>
    public CheckedPage[]? Pages { get; internal set; }

    /// <summary>Problems of severity <see cref="ProblemSeverity.Error"/>, the omitted ones included.</summary>
    public int ErrorCount => _problems.Count(p => p.Severity == ProblemSeverity.Error) + (int)Math.Min(ProblemsOmitted, int.MaxValue);

    /// <summary>Whether the check found no error (warnings allowed).</summary>
    public bool IsConsistent => ErrorCount == 0;

    /// <summary>
    /// Whether another process had the directory open while it was checked (<see cref="Inspection.EnvironmentSnapshot.Check(string, bool, IProgress{CheckProgress})"/>):
    /// its writes may have been in flight, so a finding counts only once it was seen again, in the same place, by later
    /// checks (see <see cref="Attempts"/>).
    /// </summary>
    public bool WhileOpenElsewhere { get; internal set; }

    /// <summary>
    /// How many times the state was read and checked for this report: 1, except for a directory another process has
    /// open, where findings are checked again from a new snapshot until they are confirmed or gone.
    /// </summary>
    public int Attempts { get; internal set; } = 1;

    /// <summary>Lists a problem, or counts it once <see cref="MaxProblems"/> are listed.</summary>
    internal void Add(CheckProblem problem)
    {
        if (_problems.Count < MaxProblems) _problems.Add(problem);
        else ProblemsOmitted++;
    }

    internal void Add(CheckedTree tree) => _trees.Add(tree);

    /// <summary>
    /// Keeps the errors that <paramref name="isConfirmed"/> accepts and turns the others into <see cref="ProblemSeverity.Info"/>
    /// notes of writes in flight (kind <c>in-flight</c>): the first <see cref="MaxInFlightNotes"/> with their place and
    /// the first sentence of what was seen, then one line counting the rest. Errors left out of the list could not be
    /// compared, so they are dropped from the count.
    /// </summary>
    internal void KeepConfirmedErrors(Func<CheckProblem, bool> isConfirmed)
    {
        var kept = new List<CheckProblem>(_problems.Count);
        var notes = 0;
        foreach (var problem in _problems)
        {
            if (problem.Severity != ProblemSeverity.Error || isConfirmed(problem))
            {
                kept.Add(problem);
                continue;
            }
            if (notes++ >= MaxInFlightNotes) continue;
            kept.Add(problem with
            {
                Severity = ProblemSeverity.Info,
                Kind = "in-flight",
                Message = $"changed when the directory was read again, so a write in flight, not damage: [{problem.Kind}] {FirstSentence(problem.Message)}",
            });
        }
        if (notes > MaxInFlightNotes)
        {
            kept.Add(new CheckProblem(ProblemSeverity.Info, "in-flight", $"{notes - MaxInFlightNotes} more findings changed when the directory was read again (writes in flight)"));
        }
        _problems.Clear();
        _problems.AddRange(kept);
        ProblemsOmitted = 0;
    }

    /// <summary>At most this many writes in flight are listed one by one (see <see cref="KeepConfirmedErrors"/>).</summary>
    internal const int MaxInFlightNotes = 5;

    private static string FirstSentence(string message)
    {
        var end = message.IndexOf(". ", StringComparison.Ordinal);
        return end < 0 ? message : message[..(end + 1)];
    }

    internal void Add(CheckedSection section) => _sections.Add(section);

    /// <summary>The report of a check that could not start: one <c>open</c> error.</summary>
    internal static CheckReport NotOpened(string message)
    {
        var report = new CheckReport();
        report.Add(new CheckProblem(ProblemSeverity.Error, "open", message));
        return report;
    }
}
