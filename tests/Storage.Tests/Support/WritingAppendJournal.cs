using Storage.Journal;
using Storage.Recovery;

namespace Storage.Tests.Support;

/// <summary>
/// An environment's own journal, with a seam: when armed, the next <see cref="Append"/> writes the entries waiting,
/// durably, before it returns, as a writer on another thread could between the append and what the commit does next.
/// </summary>
internal sealed unsafe class WritingAppendJournal(IEnvironmentJournal inner) : IEnvironmentJournal
{
    private int _armed;

    /// <summary>A journal factory for <see cref="EnvironmentOpener.Open"/>.</summary>
    public static WritingAppendJournal Create(JournalContext context)
    {
        var options = context.Options;
        return new WritingAppendJournal(new JournalWriter(context.JournalDirectory, context.EnvironmentId, context.FirstFreeFileNumber,
            options.MinJournalFileSizeBytes, options.MaxJournalFileSizeBytes, context.Io, options.Hooks.FaultInjector, options.JournalWriteMethod));
    }

    public void WriteOnNextAppend() => Volatile.Write(ref _armed, 1);

    public (long FileNumber, long OffsetBytes) Append(byte* entry, long lengthBytes, long transactionId)
    {
        var position = inner.Append(entry, lengthBytes, transactionId);
        if (Interlocked.Exchange(ref _armed, 0) == 1) inner.WritePending();
        return position;
    }

    public DurableWaiters Waiters => inner.Waiters;
    public void Attach(IJournalListener listener) => inner.Attach(listener);
    public bool IsShared => inner.IsShared;
    public long HeldBytesBeforeFlush(int filesBeforeSync) => inner.HeldBytesBeforeFlush(filesBeforeSync);
    public long DurableWrites => inner.DurableWrites;
    public long BytesWritten => inner.BytesWritten;
    public bool IsDirect => inner.IsDirect;
    public DurableWritePolicy WritePolicy => inner.WritePolicy;
    public long TotalBytes => inner.TotalBytes;
    public int FileCount => inner.FileCount;
    public (long FileNumber, long OffsetBytes) Position => inner.Position;
    public bool IsFailedOrClosed => inner.IsFailedOrClosed;
    public long DurableTransactionId => inner.DurableTransactionId;
    public bool HasPendingEntries => inner.HasPendingEntries;
    public int WritesUnderWay => inner.WritesUnderWay;
    public int EntryStamp => inner.EntryStamp;
    public long PendingSinceTimestamp => inner.PendingSinceTimestamp;

    public long PendingBytes => inner.PendingBytes;
    public void Continue(long number, string path, long positionBytes, long lastTransactionId) => inner.Continue(number, path, positionBytes, lastTransactionId);
    public void StartFile(long firstTransactionId) => inner.StartFile(firstTransactionId);
    public void Reserve(long lengthBytes, long transactionId) => inner.Reserve(lengthBytes, transactionId);
    public void ThrowIfFailedOrClosed(long transactionId) => inner.ThrowIfFailedOrClosed(transactionId);
    public bool WritePending() => inner.WritePending();
    public bool IsInWriteUnderWay(long transactionId) => inner.IsInWriteUnderWay(transactionId);
    public int Retire(long firstNeededFileNumber) => inner.Retire(firstNeededFileNumber);
    public (long FileNumber, long OffsetBytes) StartSmallFile(long firstTransactionId) => inner.StartSmallFile(firstTransactionId);
    public void TrimSpares(long keepBytes) => inner.TrimSpares(keepBytes);
    public void Dispose() => inner.Dispose();
}
