using System.Diagnostics;
using Storage.State;

namespace Storage.Transactions;

/// <summary>
/// The snapshots in use: each active transaction holds a slot with its transaction id and the reclaim
/// epoch it started in. The flusher never writes past the oldest snapshot; page versions are kept while
/// some snapshot sees them; scratch memory the flusher removes from the page table in epoch E is freed
/// only once no slot has an epoch before E.
/// </summary>
internal sealed class ReaderTable
{
    private readonly object _growLock = new();
    private Slot[] _slots = CreateSlots(64, 0);
    private long _epoch = 1;
    private long _readersEnded;

    /// <summary>Read transactions ended since open: when it moves, versions kept for them may have become garbage.</summary>
    public long ReadersEnded => Volatile.Read(ref _readersEnded);

    /// <summary>Starts a new epoch; returns it. Memory unlinked before this call may be freed once <see cref="OldestEpoch"/> reaches it.</summary>
    public long AdvanceEpoch() => Interlocked.Increment(ref _epoch);

    /// <summary>
    /// Claims a slot and pins a snapshot: the returned state cannot be flushed past, and the page versions it
    /// sees are kept, while the slot is held. <paramref name="beganTimestamp"/> (<see cref="Stopwatch"/> ticks)
    /// and <paramref name="beganAt"/> say when and where the transaction began, for the reader reports.
    /// </summary>
    public Slot Register(ref EnvironmentState current, out EnvironmentState state, SlotKind kind, long beganTimestamp, StackTrace? beganAt)
    {
        var slot = Claim(kind, beganTimestamp, beganAt);
        while (true)
        {
            state = Volatile.Read(ref current);
            Interlocked.Exchange(ref slot.TransactionId, state.TransactionId);
            // A flusher or pruner that looked at the slots before this write saw no newer state than this one only if
            // the state did not change meanwhile: check again, and pin the newer one if it did.
            if (ReferenceEquals(Volatile.Read(ref current), state)) break;
        }
        Interlocked.Exchange(ref slot.Epoch, Volatile.Read(ref _epoch));
        return slot;
    }

    /// <summary>
    /// Pins transaction <paramref name="transactionId"/> (pruning keeps the versions it sees) and the current
    /// epoch (buffers unlinked from now on stay allocated) while the flusher writes what it collected.
    /// </summary>
    public Slot Pin(long transactionId)
    {
        var slot = Claim(SlotKind.FlushPin, 0, null);
        Interlocked.Exchange(ref slot.TransactionId, transactionId);
        Interlocked.Exchange(ref slot.Epoch, Volatile.Read(ref _epoch));
        return slot;
    }

    public void Release(Slot slot)
    {
        if (slot.Kind == SlotKind.Reader) Interlocked.Increment(ref _readersEnded);
        slot.BeganAt = null;
        Volatile.Write(ref slot.Epoch, long.MaxValue);
        Volatile.Write(ref slot.TransactionId, long.MaxValue);
        Volatile.Write(ref slot.InUse, 0);
    }

    /// <summary>The oldest pinned snapshot, or <paramref name="latest"/> when none is older.</summary>
    public long OldestTransaction(long latest)
    {
        var oldest = latest;
        foreach (var slot in Volatile.Read(ref _slots))
        {
            if (Volatile.Read(ref slot.InUse) == 0) continue;
            oldest = Math.Min(oldest, Volatile.Read(ref slot.TransactionId));
        }
        return oldest;
    }

    /// <summary>
    /// Every pinned snapshot (or those of read transactions only), sorted and without repeats, into <paramref name="snapshots"/>
    /// (cleared first). Read the published state before calling: a transaction missing from the list registered afterwards,
    /// on that state or a newer one.
    /// </summary>
    public void CollectSnapshots(List<long> snapshots, bool readersOnly = false)
    {
        snapshots.Clear();
        Interlocked.MemoryBarrier();
        foreach (var slot in Volatile.Read(ref _slots))
        {
            if (Volatile.Read(ref slot.InUse) == 0 || (readersOnly && slot.Kind != SlotKind.Reader)) continue;
            var id = Volatile.Read(ref slot.TransactionId);
            if (id != long.MaxValue) snapshots.Add(id);
        }
        if (snapshots.Count < 2) return;
        snapshots.Sort();
        var unique = 1;
        for (var i = 1; i < snapshots.Count; i++)
        {
            if (snapshots[i] != snapshots[unique - 1]) snapshots[unique++] = snapshots[i];
        }
        snapshots.RemoveRange(unique, snapshots.Count - unique);
    }

    /// <summary>
    /// The read transaction with the oldest snapshot (the earliest begun among equals), or null. The fields are read
    /// without stopping the reader from ending: <see cref="ReaderInfo.Generation"/> tells whether the slot still holds it.
    /// </summary>
    public ReaderInfo? OldestReader()
    {
        ReaderInfo? oldest = null;
        foreach (var slot in Volatile.Read(ref _slots))
        {
            if (Volatile.Read(ref slot.InUse) == 0 || slot.Kind != SlotKind.Reader) continue;
            var state = Volatile.Read(ref slot.State);
            var id = Volatile.Read(ref slot.TransactionId);
            var began = Volatile.Read(ref slot.BeganTimestamp);
            var beganAt = slot.BeganAt;
            // Registration writes the id after claiming the slot; 0 and MaxValue are not snapshots yet (or any more).
            if (id == 0 || id == long.MaxValue || Volatile.Read(ref slot.State) != state) continue;
            if (oldest is { } o && (o.TransactionId < id || (o.TransactionId == id && o.BeganTimestamp <= began))) continue;
            oldest = new ReaderInfo(slot, state >> 1, id, began, beganAt, (state & 1) != 0);
        }
        return oldest;
    }

    /// <summary>
    /// Asks the reader <paramref name="reader"/> describes to end at its next call (it then releases its slot itself,
    /// on its own thread). Does nothing when that reader has ended meanwhile and the slot is someone else's.
    /// </summary>
    public static bool RequestEnd(in ReaderInfo reader)
    {
        var expected = reader.Generation << 1;
        return Interlocked.CompareExchange(ref reader.Slot.State, expected | 1, expected) == expected;
    }

    /// <summary>
    /// Buffers retired in an epoch up to this one are unreachable. The current epoch is read before the
    /// slots: a transaction that registers after it was read cannot reach anything unlinked before it,
    /// and one registered earlier is in the slots the scan then reads.
    /// </summary>
    public long ReclaimableEpoch()
    {
        var current = Volatile.Read(ref _epoch);
        Interlocked.MemoryBarrier();
        return Math.Min(current, OldestEpoch());
    }

    public long OldestEpoch()
    {
        var oldest = long.MaxValue;
        foreach (var slot in Volatile.Read(ref _slots))
        {
            if (Volatile.Read(ref slot.InUse) == 0) continue;
            oldest = Math.Min(oldest, Volatile.Read(ref slot.Epoch));
        }
        return oldest;
    }

    public int ActiveCount
    {
        get
        {
            var count = 0;
            foreach (var slot in Volatile.Read(ref _slots))
            {
                if (Volatile.Read(ref slot.InUse) != 0 && slot.Kind != SlotKind.FlushPin) count++;
            }
            return count;
        }
    }

    private Slot Claim(SlotKind kind, long beganTimestamp, StackTrace? beganAt)
    {
        while (true)
        {
            var slots = Volatile.Read(ref _slots);
            foreach (var slot in slots)
            {
                if (Volatile.Read(ref slot.InUse) == 0 && Interlocked.CompareExchange(ref slot.InUse, 1, 0) == 0)
                {
                    // 0 pins everything from the flusher until the real values are written: conservative while registering.
                    Interlocked.Exchange(ref slot.TransactionId, 0);
                    Interlocked.Exchange(ref slot.Epoch, 0);
                    slot.Kind = kind;
                    slot.BeganAt = beganAt;
                    Volatile.Write(ref slot.BeganTimestamp, beganTimestamp);
                    // A new generation, not asked to end: an end request for the slot's previous holder cannot reach this one.
                    Volatile.Write(ref slot.State, ((slot.State >> 1) + 1) << 1);
                    return slot;
                }
            }
            lock (_growLock)
            {
                if (!ReferenceEquals(slots, _slots)) continue;
                var grown = CreateSlots(slots.Length * 2, slots.Length);
                Array.Copy(slots, grown, slots.Length);
                Volatile.Write(ref _slots, grown);
            }
        }
    }

    private static Slot[] CreateSlots(int length, int from)
    {
        var slots = new Slot[length];
        for (var i = from; i < length; i++) slots[i] = new Slot();
        return slots;
    }

    internal enum SlotKind
    {
        Reader,
        Writer,
        FlushPin,
    }

    internal sealed class Slot
    {
        public int InUse;
        public long TransactionId = long.MaxValue;
        public long Epoch = long.MaxValue;
        public SlotKind Kind;

        /// <summary>When the transaction began (<see cref="Stopwatch"/> ticks).</summary>
        public long BeganTimestamp;

        /// <summary>Where it began, when stacks are tracked.</summary>
        public StackTrace? BeganAt;

        /// <summary>The holder's generation (bits 1 and up, one more at every claim) and, in bit 0, a request that it end.</summary>
        public long State;

        /// <summary>Whether the holder has been asked to end at its next call (read by the reader on every call).</summary>
        public bool EndRequested => (Volatile.Read(ref State) & 1) != 0;
    }

    /// <summary>A reader as <see cref="OldestReader"/> saw it.</summary>
    internal readonly record struct ReaderInfo(Slot Slot, long Generation, long TransactionId, long BeganTimestamp, StackTrace? BeganAt, bool EndRequested)
    {
        public TimeSpan Age => Stopwatch.GetElapsedTime(BeganTimestamp);
    }
}
