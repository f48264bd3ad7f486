using System.Runtime.CompilerServices;

namespace Storage.Inspect.Tests;

/// <summary>
/// A fact that needs Linux: on any other platform it reports itself skipped, with what it needs, rather than passing
/// without having tested anything.
/// </summary>
public sealed class LinuxOnlyFactAttribute : FactAttribute
{
    /// <param name="needs">What the test needs that only Linux has.</param>
    /// <param name="sourceFilePath">Given by the compiler: where the test is, for the runner.</param>
    /// <param name="sourceLineNumber">Given by the compiler: where the test is, for the runner.</param>
    public LinuxOnlyFactAttribute(string needs, [CallerFilePath] string? sourceFilePath = null, [CallerLineNumber] int sourceLineNumber = -1)
        : base(sourceFilePath, sourceLineNumber)
    {
        Needs = needs;
        if (!OperatingSystem.IsLinux()) Skip = $"needs Linux: {needs}";
    }

    /// <summary>What the test needs that only Linux has.</summary>
    public string Needs { get; }
}
