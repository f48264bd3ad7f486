namespace Storage.Tests.Support;

/// <summary>Runs an operation that might hang (opening a damaged environment) so that a hang fails the test instead of blocking the run.</summary>
internal static class Within
{
    public static readonly TimeSpan Default = TimeSpan.FromSeconds(30);

    public static Task<T> Run<T>(Func<T> operation, TimeSpan? limit = null) =>
        Task.Run(operation).WaitAsync(limit ?? Default);

    public static Task Run(Action operation, TimeSpan? limit = null) =>
        Task.Run(operation).WaitAsync(limit ?? Default);

    /// <summary>The operation's exception, or null when it completed; fails with TimeoutException when it hangs.</summary>
    public static async Task<Exception?> Catch(Action operation, TimeSpan? limit = null)
    {
        try
        {
            await Run(operation, limit);
            return null;
        }
        catch (TimeoutException)
        {
            throw;
        }
        catch (Exception e)
        {
            return e;
        }
    }
}

/// <summary>Type checks on caught exceptions that show the whole unexpected exception (with its stack) on failure.</summary>
internal static class Expect
{
    public static T Exception<T>(Exception? error) where T : Exception =>
        error as T ?? throw new Xunit.Sdk.XunitException($"Expected {typeof(T).Name}, got {(error is null ? "no exception" : error.ToString())}");
}
