using FsCheck;
using FsCheck.Fluent;
using Storage.Collections;

namespace Storage.Tests.Collections;

/// <summary>The queue the flusher keeps its commit records in, and the reclaimer its retired buffers: a queue, in segments.</summary>
public sealed class A_segmented_queue
{
    /// <summary>Random runs of enqueues and dequeues, long enough to cross many segments, give what a <see cref="Queue{T}"/> gives.</summary>
    [Fact]
    public void Gives_what_a_queue_gives_for_any_run_of_enqueues_and_dequeues()
    {
        var step = Gen.Frequency(
            (3, Gen.Choose(1, 3 * SegmentedQueue<string>.SegmentLength).Select(n => n)),
            (2, Gen.Choose(1, 3 * SegmentedQueue<string>.SegmentLength).Select(n => -n)),
            (1, Gen.Constant(-int.MaxValue)));
        var property = Prop.ForAll(Gen.ArrayOf(step, 12).ToArbitrary(), steps =>
        {
            var queue = new SegmentedQueue<string>();
            var model = new Queue<string>();
            var next = 0;
            foreach (var n in steps)
            {
                if (n > 0)
                {
                    for (var i = 0; i < n; i++)
                    {
                        var item = (next++).ToString(System.Globalization.CultureInfo.InvariantCulture);
                        queue.Enqueue(item);
                        model.Enqueue(item);
                    }
                }
                else
                {
                    for (var i = 0; i < -(long)n && model.Count > 0; i++)
                    {
                        Assert.True(queue.TryPeek(out var peeked));
                        Assert.Equal(model.Peek(), peeked);
                        Assert.Equal(model.Dequeue(), queue.Dequeue());
                    }
                }
                Assert.Equal(model.Count, queue.Count);
                Assert.Equal(model.Count > 0, queue.TryPeek(out _));
                var listed = new List<string>();
                foreach (var item in queue) listed.Add(item);
                Assert.Equal(model, listed);
            }
            while (model.Count > 0) Assert.Equal(model.Dequeue(), queue.Dequeue());
            Assert.False(queue.TryDequeue(out _));
            Assert.Throws<InvalidOperationException>(() => queue.Dequeue());
        });
        FsCheck.Check.One(Config.QuickThrowOnFailure.WithMaxTest(60), property);
    }

    [Fact]
    public void Keeps_each_segment_under_the_large_object_heaps_threshold()
    {
        Assert.InRange(SegmentedQueue<string>.SegmentLength * IntPtr.Size, 1, 84_000);
        Assert.InRange(SegmentedQueue<(long, string)>.SegmentLength * 16, 1, 84_000);
        Assert.InRange(SegmentedQueue<byte>.SegmentLength, 16, 84_000);
        Assert.Equal(SegmentedQueue<(long, string)>.SegmentLength, (int)System.Numerics.BitOperations.RoundUpToPowerOf2((uint)SegmentedQueue<(long, string)>.SegmentLength));
    }
}
