using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Storage.Transactions;

/// <summary>Where a transaction was begun (<see cref="StorageOptions.TrackTransactionStacks"/>), and how messages say so.</summary>
internal static class TransactionOrigin
{
    /// <summary>The stack of the caller of the Begin method that calls this, when stacks are tracked; otherwise null.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static StackTrace? Capture(StorageOptions options) => options.TrackTransactionStacks ? new StackTrace(2, fNeedFileInfo: true) : null;

    /// <summary>A sentence to end an error message with: the stack, or how to get one.</summary>
    public static string Describe(StackTrace? beganAt) => beganAt is not null
        ? $" It was begun at:{Environment.NewLine}{beganAt}"
        : $" Set StorageOptions.{nameof(StorageOptions.TrackTransactionStacks)} to see where it was begun.";
}
