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
internal sealed class FactNeedingAttribute : FactAttribute
{
    public FactNeedingAttribute(Need need, string what)
    {
        if (Needs.Missing(need) is { } missing) Skip = $"{what} {missing}.";
    }
}

/// <summary>A theory that runs only where the machine has what it needs; elsewhere it is reported skipped with the reason.</summary>
internal sealed class TheoryNeedingAttribute : TheoryAttribute
{
    public TheoryNeedingAttribute(Need need, string what)
    {
        if (Needs.Missing(need) is { } missing) Skip = $"{what} {missing}.";
    }
}
