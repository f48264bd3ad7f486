using Storage.Flush;
using Storage.Journal;
using Storage.State;

namespace Storage.Commit;

/// <summary>
/// The commits appended whose journal entries may not be durable yet, in order: each is made visible to readers (a lazy one
/// at once) and handed to the flusher once its entry is durable. The flusher may write a transaction's pages to the data
/// file only then, or a crash could leave the data file ahead of the journal.
/// </summary>
internal sealed class CommitPublisher(EnvironmentStates states, IEnvironmentJournal journal, VersionRetention versions, Flusher flusher)
{
    private readonly Queue<(CommitRecord Record, EnvironmentState State)> _waiting = new();

    /// <summary>A commit was appended (by the writer); a lazy one is visible at once, and with it any commit appended before it.</summary>
    public void Appended(in CommitRecord record, EnvironmentState state, bool lazy)
    {
        lock (_waiting)
        {
            _waiting.Enqueue((record, state));
            if (lazy) states.Publish(state);
        }
    }

    /// <summary>Makes the commits whose entries are durable visible to readers (lazy ones are already) and hands them to the flusher, in order.</summary>
    public void PublishDurable()
    {
        var durable = journal.DurableTransactionId;
        lock (_waiting)
        {
            EnvironmentState? last = null;
            while (_waiting.TryPeek(out var next) && next.Record.TransactionId <= durable)
            {
                _waiting.Dequeue();
                flusher.RecordCommit(next.Record);
                last = next.State;
            }
            if (last is null) return;
            // Once for the whole batch, after the flusher has every record of it: a flush aims no further than this, so
            // never inside a batch (see VersionRetention.PrunePoint).
            versions.HandedOver(last.TransactionId);
            if (last.TransactionId > states.Readable.TransactionId) states.Publish(last);
        }
    }
}
