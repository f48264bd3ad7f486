using Storage.Fuzz.Targets;

namespace Storage.Fuzz;

/// <summary>The targets by name; the names are also the corpus and findings folder names.</summary>
internal static class FuzzTargets
{
    public static IReadOnlyList<FuzzTarget> All { get; } =
    [
        new("file-header", "FileHeaderIo.TryParse of a page (as given and with its checksums repaired), and the inspection tool's slot reader", FileHeaderTarget.Run),
        new("tree-page", "TreePage.Open on an 8 KiB page, then every key, value, child and overflow reference through its accessors", TreePageTarget.Run),
        new("page-diff", "PageDiff.Apply of the input onto a zero page and a patterned page, and an encode/apply round trip", PageDiffTarget.Run),
        new("journal-entry", "the input as a journal file: JournalEntryReader walks it, replays it, and the tool summarizes it", JournalEntryTarget.Run),
        new("environment", "the input unframed into data.storage and journal files: the checker, the tool's readers, then StorageEnvironment.Open and a full read", EnvironmentTarget.Run),
    ];

    public static FuzzTarget Get(string name) =>
        All.FirstOrDefault(t => t.Name == name) ?? throw new ArgumentException($"unknown target '{name}' (targets: {string.Join(", ", All.Select(t => t.Name))})", nameof(name));
}
