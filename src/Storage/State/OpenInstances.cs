using System.Collections.Concurrent;

namespace Storage.State;

/// <summary>
/// The environments this process holds, by directory, so that an open refused by the directory's lock can say when the
/// holder is this process and what it waits for (<see cref="StorageEnvironment.DescribeLockHolder"/>).
/// </summary>
internal static class OpenInstances
{
    private static readonly ConcurrentDictionary<string, StorageEnvironment> ByDirectory =
        new(OperatingSystem.IsWindows() || OperatingSystem.IsMacOS() ? StringComparer.OrdinalIgnoreCase : StringComparer.Ordinal);

    /// <summary>The environment holds its directory's lock from now on.</summary>
    public static void Add(StorageEnvironment environment) => ByDirectory[environment.DirectoryPath] = environment;

    /// <summary>The environment released its directory's lock.</summary>
    public static void Remove(StorageEnvironment environment) => ByDirectory.TryRemove(KeyValuePair.Create(environment.DirectoryPath, environment));

    /// <summary>Why <paramref name="directory"/> is locked, when an instance of this process holds it (the end of a sentence that starts with the directory); else null.</summary>
    public static string? DescribeHolder(string directory) => ByDirectory.TryGetValue(directory, out var holder) ? holder.DescribeLockHolder() : null;
}
