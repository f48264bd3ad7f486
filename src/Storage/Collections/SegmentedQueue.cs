using System.Runtime.CompilerServices;

namespace Storage.Collections;

/// <summary>
/// A first-in first-out queue kept in segments small enough to stay off the large object heap, with emptied segments
/// kept for reuse: a queue that fills to tens of thousands of items at each flush and drains again neither allocates
/// once warm nor, as a <see cref="Queue{T}"/> growing past 85,000 bytes does, makes the collector run a full (gen2)
/// collection for it. Not thread-safe.
/// </summary>
internal sealed class SegmentedQueue<T>
{
    /// <summary>Items a segment holds: a power of two, its array under 64 KiB.</summary>
    internal static readonly int SegmentLength = (int)Math.Max(16, System.Numerics.BitOperations.RoundUpToPowerOf2((uint)Math.Max(1, 32 * 1024 / Unsafe.SizeOf<T>())));

    /// <summary>Emptied segments kept for reuse at most.</summary>
    private const int MaxSpareSegments = 64;

    private readonly Stack<Segment> _spare = new();
    private Segment _head;
    private Segment _tail;
    private int _headIndex;
    private int _tailIndex;

    public SegmentedQueue()
    {
        _head = _tail = new Segment();
    }

    public int Count { get; private set; }

    public void Enqueue(T item)
    {
        if (_tailIndex == SegmentLength)
        {
            var next = _spare.Count > 0 ? _spare.Pop() : new Segment();
            _tail.Next = next;
            _tail = next;
            _tailIndex = 0;
        }
        _tail.Items[_tailIndex++] = item;
        Count++;
    }

    public bool TryPeek(out T item)
    {
        if (Count == 0)
        {
            item = default!;
            return false;
        }
        item = _head.Items[_headIndex];
        return true;
    }

    public bool TryDequeue(out T item)
    {
        if (!TryPeek(out item)) return false;
        if (RuntimeHelpers.IsReferenceOrContainsReferences<T>()) _head.Items[_headIndex] = default!;
        _headIndex++;
        Count--;
        if (Count == 0)
        {
            // Empty: the head is the tail; start over at its front.
            _headIndex = _tailIndex = 0;
        }
        else if (_headIndex == SegmentLength)
        {
            var emptied = _head;
            _head = emptied.Next!;
            emptied.Next = null;
            if (_spare.Count < MaxSpareSegments) _spare.Push(emptied);
            _headIndex = 0;
        }
        return true;
    }

    public T Dequeue() => TryDequeue(out var item) ? item : throw new InvalidOperationException("The queue is empty.");

    /// <summary>The items from the oldest, without taking them off (the queue must not change meanwhile).</summary>
    public Enumerator GetEnumerator() => new(this);

    public struct Enumerator(SegmentedQueue<T> queue)
    {
        private Segment? _segment = queue._head;
        private int _index = queue._headIndex - 1;
        private int _left = queue.Count;

        public readonly T Current => _segment!.Items[_index];

        public bool MoveNext()
        {
            if (_left == 0) return false;
            _left--;
            if (++_index == SegmentLength)
            {
                _segment = _segment!.Next;
                _index = 0;
            }
            return true;
        }
    }

    private sealed class Segment
    {
        public readonly T[] Items = new T[SegmentLength];
        public Segment? Next;
    }
}
