using Storage.Environments;

namespace Storage.Transactions;

/// <summary>
/// The snapshots in use: each active transaction holds a slot with its transaction id and the reclaim
/// epoch it started in. The flusher never writes past the oldest snapshot, and scratch memory removed
/// from the page table in epoch E is freed only once no slot has an epoch before E.
/// </summary>
internal sealed class ReaderTable
{
    private readonly object _growLock = new();
    private Slot[] _slots = CreateSlots(64, 0);
    private long _epoch = 1;

    /// <summary>Starts a new epoch; returns it. Memory unlinked before this call may be freed once <see cref="OldestEpoch"/> reaches it.</summary>
    public long AdvanceEpoch() => Interlocked.Increment(ref _epoch);

    /// <summary>Claims a slot and pins a snapshot: the returned state cannot be flushed past while the slot is held.</summary>
    public Slot Register(ref EnvironmentState current, out EnvironmentState state)
    {
        var slot = Claim();
        while (true)
        {
            state = Volatile.Read(ref current);
            Interlocked.Exchange(ref slot.TransactionId, state.TransactionId);
            // A flusher that looked at the slots before this write saw no newer state than this one only if
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
        var slot = Claim();
        Interlocked.Exchange(ref slot.TransactionId, transactionId);
        Interlocked.Exchange(ref slot.Epoch, Volatile.Read(ref _epoch));
        return slot;
    }

    public void Release(Slot slot)
    {
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
            foreach (var slot in Volatile.Read(ref _slots)) count += Volatile.Read(ref slot.InUse);
            return count;
        }
    }

    private Slot Claim()
    {
        while (true)
        {
            var slots = Volatile.Read(ref _slots);
            foreach (var slot in slots)
            {
                if (Volatile.Read(ref slot.InUse) == 0 && Interlocked.CompareExchange(ref slot.InUse, 1, 0) == 0)
                {
                    // 0 pins everything until the real values are written: conservative while registering.
                    Interlocked.Exchange(ref slot.TransactionId, 0);
                    Interlocked.Exchange(ref slot.Epoch, 0);
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

    internal sealed class Slot
    {
        public int InUse;
        public long TransactionId = long.MaxValue;
        public long Epoch = long.MaxValue;
    }
}
