using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Storage.Platform;

namespace Storage.Tests.Support;

/// <summary>What a test needs of the machine it runs on.</summary>
internal enum Need
{
    /// <summary>Linux: link counts, page residency and read-ahead advice, an atomic exchange of two directories, SEEK_HOLE.</summary>
    Linux,

    /// <summary>Linux on x64, where the native layer's io_uring backend is built.</summary>
    LinuxX64,

    /// <summary>POSIX file modes (not Windows).</summary>
    Posix,

    /// <summary>The native layer (storagepal) loaded: its fault seams.</summary>
    NativeLayer,

    /// <summary>A small tmpfs mounted for the test: Linux, as root.</summary>
    SmallFileSystem,
}

internal static class Needs
{
    /// <summary>Why this machine lacks <paramref name="need"/>, or null when it has it.</summary>
    public static string? Missing(Need need) => need switch
    {
        Need.Linux => OperatingSystem.IsLinux() ? null : "needs Linux",
        Need.LinuxX64 => OperatingSystem.IsLinux() && RuntimeInformation.ProcessArchitecture == Architecture.X64 ? null : "needs Linux on x64",
        Need.Posix => OperatingSystem.IsWindows() ? "needs POSIX file modes" : null,
        Need.NativeLayer => Pal.IsAvailable ? null : "needs the native layer (storagepal), which is not loaded",
        Need.SmallFileSystem => !OperatingSystem.IsLinux() ? "mounting a small file system needs Linux"
            : Environment.UserName != "root" ? "mounting a small file system needs root"
            : null,
        _ => throw new ArgumentOutOfRangeException(nameof(need)),
    };
}

/// <summary>A fact that runs only where the machine has what it needs; elsewhere it is reported skipped with the reason, never passed.</summary>
/// <remarks>
/// What a test finds out only while it runs (a device setting, say) it reports with <see cref="Assert.Skip(string)"/>,
/// which ends the test as skipped with its reason, not passed.
/// </remarks>
internal sealed class FactNeedingAttribute : FactAttribute
{
    /// <param name="need">What the test needs of the machine.</param>
    /// <param name="what">What the test does, the start of the reason given when it is skipped.</param>
    /// <param name="sourceFilePath">Given by the compiler: where the test is, for the runner.</param>
    /// <param name="sourceLineNumber">Given by the compiler: where the test is, for the runner.</param>
    public FactNeedingAttribute(Need need, string what, [CallerFilePath] string? sourceFilePath = null, [CallerLineNumber] int sourceLineNumber = -1)
        : base(sourceFilePath, sourceLineNumber)
    {
        if (Needs.Missing(need) is { } missing) Skip = $"{what} {missing}.";
    }
}

/// <summary>A theory that runs only where the machine has what it needs; elsewhere it is reported skipped with the reason.</summary>
internal sealed class TheoryNeedingAttribute : TheoryAttribute
{
    /// <inheritdoc cref="FactNeedingAttribute(Need, string, string?, int)"/>
    public TheoryNeedingAttribute(Need need, string what, [CallerFilePath] string? sourceFilePath = null, [CallerLineNumber] int sourceLineNumber = -1)
        : base(sourceFilePath, sourceLineNumber)
    {
        if (Needs.Missing(need) is { } missing) Skip = $"{what} {missing}.";
    }
}
