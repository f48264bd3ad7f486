namespace Storage.Platform;

/// <summary>
/// The I/O backend one environment uses, chosen when it opens: the native layer (the process-wide data
/// writer for flushes and syncs, native journal handles for commits) or the managed fallback.
/// </summary>
internal sealed class PlatformIo
{
    /// <summary>Overrides <see cref="IoBackend.Auto"/> for the whole process: "native" or "managed".</summary>
    public const string EnvironmentVariable = "STORAGE_IO_BACKEND";

    public const string ManagedName = "managed";

    /// <summary>The managed backend, chosen on purpose.</summary>
    public static PlatformIo Managed { get; } = new(null, ManagedName, null);

    private PlatformIo(PalWriterHandle? writer, string name, string? fallbackReason)
    {
        Writer = writer;
        Name = name;
        FallbackReason = fallbackReason;
    }

    /// <summary>"io_uring", "win32-overlapped" or "managed".</summary>
    public string Name { get; }

    /// <summary>The shared native data writer, or null on the managed backend.</summary>
    public PalWriterHandle? Writer { get; }

    public bool IsNative => Writer is not null;

    /// <summary>Why <see cref="IoBackend.Auto"/> fell back to the managed backend, or null.</summary>
    public string? FallbackReason { get; }

    public static PlatformIo Resolve(IoBackend preference, bool lowPriority)
    {
        if (preference == IoBackend.Auto) preference = FromEnvironment();
        if (preference == IoBackend.Managed) return Managed;
        var writer = Pal.SharedWriter(lowPriority, out var problem);
        if (writer is not null) return new PlatformIo(writer, Pal.BackendName, null);
        if (preference == IoBackend.Native)
        {
            throw new StorageException(StorageErrorCode.PlatformUnavailable, $"The native I/O backend was asked for, but {problem}.");
        }
        return new PlatformIo(null, ManagedName, problem);
    }

    private static IoBackend FromEnvironment()
    {
        var value = Environment.GetEnvironmentVariable(EnvironmentVariable);
        if (string.IsNullOrEmpty(value)) return IoBackend.Auto;
        if (value.Equals("managed", StringComparison.OrdinalIgnoreCase)) return IoBackend.Managed;
        if (value.Equals("native", StringComparison.OrdinalIgnoreCase)) return IoBackend.Native;
        throw new StorageException(StorageErrorCode.PlatformUnavailable, $"{EnvironmentVariable} is '{value}'; use 'native' or 'managed' (or leave it unset).");
    }

    /// <summary>A writer for one data file (it keeps reusable buffers, so one per file); its first failure is final.</summary>
    public IDataFileWriter CreateDataWriter() =>
        new FailStopDataFileWriter(Writer is { } writer ? new RingDataFileWriter(writer) : new ManagedDataFileWriter());
}
