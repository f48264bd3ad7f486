namespace Storage.Inspect.Tests;

/// <summary>
/// A fact that needs Linux: on any other platform it reports itself skipped, with what it needs, rather than passing
/// without having tested anything.
/// </summary>
public sealed class LinuxOnlyFactAttribute : FactAttribute
{
    /// <param name="needs">What the test needs that only Linux has.</param>
    public LinuxOnlyFactAttribute(string needs)
    {
        Needs = needs;
        if (!OperatingSystem.IsLinux()) Skip = $"needs Linux: {needs}";
    }

    /// <summary>What the test needs that only Linux has.</summary>
    public string Needs { get; }
}
