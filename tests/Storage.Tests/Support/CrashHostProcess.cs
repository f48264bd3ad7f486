using System.Diagnostics;

namespace Storage.Tests.Support;

/// <summary>Runs tests/Storage.CrashHost as a child process (dotnet Storage.CrashHost.dll ...), reading its stdout line by line.</summary>
internal sealed class CrashHostProcess : IDisposable
{
    private readonly Process _process;
    private readonly System.Text.StringBuilder _stderr = new();

    private CrashHostProcess(Process process)
    {
        _process = process;
        _process.ErrorDataReceived += (_, e) =>
        {
            if (e.Data is null) return;
            lock (_stderr) _stderr.AppendLine(e.Data);
        };
        _process.BeginErrorReadLine();
    }

    public int Id => _process.Id;

    public bool HasExited => _process.HasExited;

    public string StandardError
    {
        get
        {
            lock (_stderr) return _stderr.ToString();
        }
    }

    /// <summary>The host's dll: built by the test project's ProjectReference into its own bin folder (same configuration and framework).</summary>
    public static string HostDll { get; } = Locate();

    public static string DotnetExecutable =>
        Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } host && File.Exists(host) ? host : "dotnet";

    private static string Locate()
    {
        const string name = "Storage.CrashHost.dll";
        var baseDirectory = AppContext.BaseDirectory.TrimEnd(Path.DirectorySeparatorChar, Path.AltDirectorySeparatorChar);
        var framework = Path.GetFileName(baseDirectory);                                       // net10.0
        var configuration = Path.GetFileName(Path.GetDirectoryName(baseDirectory)!);           // Debug / Release
        var candidates = new[]
        {
            Path.Combine(baseDirectory, name),
            Path.GetFullPath(Path.Combine(baseDirectory, "..", "..", "..", "..", "Storage.CrashHost", "bin", configuration, framework, name)),
            Path.GetFullPath(Path.Combine(baseDirectory, "..", "..", "..", "Storage.CrashHost", configuration, framework, name)),
        };
        foreach (var candidate in candidates)
        {
            if (File.Exists(candidate) && File.Exists(Path.ChangeExtension(candidate, ".runtimeconfig.json"))) return candidate;
        }
        throw new FileNotFoundException($"Storage.CrashHost is not built; looked in: {string.Join(", ", candidates)}. Build tests/Storage.CrashHost (the test project references it).");
    }

    public static CrashHostProcess Start(params string[] arguments) => StartFrom(HostDll, null, arguments);

    /// <summary>Runs a copy of the host (for example one without the native library next to it).</summary>
    public static CrashHostProcess StartFrom(string hostDll, IReadOnlyDictionary<string, string?>? environment, params string[] arguments)
    {
        var info = new ProcessStartInfo(DotnetExecutable)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
            UseShellExecute = false,
        };
        if (environment is not null)
        {
            foreach (var (name, value) in environment) info.Environment[name] = value;
        }
        info.ArgumentList.Add(hostDll);
        foreach (var argument in arguments) info.ArgumentList.Add(argument);
        var process = Process.Start(info) ?? throw new InvalidOperationException("Could not start the crash host.");
        return new CrashHostProcess(process);
    }

    /// <summary>The next stdout line, or null at the end of the stream; fails after <paramref name="timeout"/>.</summary>
    public async Task<string?> ReadLineAsync(TimeSpan timeout)
    {
        using var cancel = new CancellationTokenSource(timeout);
        try
        {
            return await _process.StandardOutput.ReadLineAsync(cancel.Token);
        }
        catch (OperationCanceledException)
        {
            throw new TimeoutException($"The crash host (pid {Id}) printed nothing for {timeout.TotalSeconds:0} s. Its stderr: {StandardError}");
        }
    }

    /// <summary>Everything the host printed that was not read yet (call after it exited).</summary>
    public async Task<List<string>> ReadRemainingLinesAsync(TimeSpan timeout)
    {
        var lines = new List<string>();
        while (await ReadLineAsync(timeout) is { } line) lines.Add(line);
        return lines;
    }

    public Task WriteLineAsync(string line) => _process.StandardInput.WriteLineAsync(line);

    /// <summary>SIGKILL, then wait for the exit.</summary>
    public async Task KillAsync(TimeSpan timeout)
    {
        try
        {
            _process.Kill(entireProcessTree: false);
        }
        catch (InvalidOperationException)
        {
            // It exited already.
        }
        await WaitForExitAsync(timeout);
    }

    public async Task WaitForExitAsync(TimeSpan timeout)
    {
        using var cancel = new CancellationTokenSource(timeout);
        try
        {
            await _process.WaitForExitAsync(cancel.Token);
        }
        catch (OperationCanceledException)
        {
            throw new TimeoutException($"The crash host (pid {Id}) did not exit within {timeout.TotalSeconds:0} s.");
        }
    }

    public int ExitCode => _process.ExitCode;

    public void Dispose()
    {
        try
        {
            if (!_process.HasExited) _process.Kill();
        }
        catch (InvalidOperationException)
        {
        }
        _process.Dispose();
    }
}
