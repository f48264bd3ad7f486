using System.Buffers.Binary;
using Storage.Trees;

namespace Storage.Tests.Trees;

public sealed class BTreeCursorTests
{
    /// <summary>Even numbers 0, 2, ..., 2 * (count - 1), with values big enough to span ~70 leaves.</summary>
    private static TreeFixture EvenKeys(int count)
    {
        var fixture = new TreeFixture();
        for (int i = 0; i < count; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(2 * i), TreeFixture.Value(2 * i, 100));
        }
        fixture.Check();
        return fixture;
    }

    private static long Number(ReadOnlySpan<byte> key) => BinaryPrimitives.ReadInt64BigEndian(key);

    [Fact]
    public void Iterating_forward_visits_every_key_in_order_across_pages()
    {
        using var fixture = EvenKeys(5000);
        var cursor = fixture.Tree.CreateCursor();
        Assert.False(cursor.IsPositioned);
        Assert.True(cursor.SeekFirst());
        for (int i = 0; i < 5000; i++)
        {
            Assert.True(cursor.IsPositioned);
            Assert.Equal(2 * i, Number(cursor.Key));
            Assert.Equal(TreeFixture.Value(2 * i, 100), cursor.Value.ToArray());
            Assert.Equal(i < 4999, cursor.MoveNext());
        }
        Assert.False(cursor.IsPositioned);
        Assert.False(cursor.MoveNext());
        Assert.Throws<InvalidOperationException>(() => cursor.Key.Length);
    }

    [Fact]
    public void Iterating_backward_visits_every_key_in_reverse_order_across_pages()
    {
        using var fixture = EvenKeys(5000);
        var cursor = fixture.Tree.CreateCursor();
        Assert.True(cursor.SeekLast());
        for (int i = 4999; i >= 0; i--)
        {
            Assert.Equal(2 * i, Number(cursor.Key));
            Assert.Equal(TreeFixture.Value(2 * i, 100), cursor.Value.ToArray());
            Assert.Equal(i > 0, cursor.MovePrevious());
        }
        Assert.False(cursor.IsPositioned);
        Assert.False(cursor.MovePrevious());
    }

    [Fact]
    public void Seek_finds_the_first_key_at_or_after_any_key_and_steps_both_ways_from_it()
    {
        const int count = 5000;
        using var fixture = EvenKeys(count);
        var cursor = fixture.Tree.CreateCursor();
        // A one-byte key sorts before every 8-byte key.
        Assert.True(cursor.Seek(new byte[] { 0 }));
        Assert.Equal(0, Number(cursor.Key));
        Assert.False(cursor.MovePrevious());
        for (long k = 0; k <= 2 * (count - 1); k++)
        {
            long expected = (k + 1) / 2 * 2;
            Assert.True(cursor.Seek(TreeFixture.Key(k)), $"seek {k}");
            Assert.Equal(expected, Number(cursor.Key));
            if (expected > 0)
            {
                Assert.True(cursor.MovePrevious());
                Assert.Equal(expected - 2, Number(cursor.Key));
                Assert.True(cursor.MoveNext());
            }
            Assert.Equal(expected < 2 * (count - 1), cursor.MoveNext());
            if (cursor.IsPositioned)
            {
                Assert.Equal(expected + 2, Number(cursor.Key));
            }
        }
        Assert.False(cursor.Seek(TreeFixture.Key(2 * count)));
        Assert.False(cursor.IsPositioned);
    }

    [Fact]
    public void SeekLastLessOrEqual_finds_the_last_key_at_or_before_any_key_and_steps_both_ways_from_it()
    {
        const int count = 5000;
        using var fixture = EvenKeys(count);
        var cursor = fixture.Tree.CreateCursor();
        Assert.False(cursor.SeekLastLessOrEqual(new byte[] { 0 }));
        for (long k = 0; k <= 2 * count; k++)
        {
            long expected = Math.Min(k / 2 * 2, 2 * (count - 1));
            Assert.True(cursor.SeekLastLessOrEqual(TreeFixture.Key(k)), $"seek {k}");
            Assert.Equal(expected, Number(cursor.Key));
            if (expected < 2 * (count - 1))
            {
                Assert.True(cursor.MoveNext());
                Assert.Equal(expected + 2, Number(cursor.Key));
                Assert.True(cursor.MovePrevious());
            }
            Assert.Equal(expected > 0, cursor.MovePrevious());
            if (cursor.IsPositioned)
            {
                Assert.Equal(expected - 2, Number(cursor.Key));
            }
        }
    }

    [Fact]
    public void Deleting_the_current_entry_then_moving_next_yields_the_following_key()
    {
        using var fixture = EvenKeys(3000);
        var cursor = fixture.Tree.CreateCursor();
        Assert.True(cursor.SeekFirst());
        int seen = 0;
        do
        {
            Assert.Equal(2 * seen, Number(cursor.Key));
            Assert.True(fixture.Tree.Delete(cursor.Key));
            Assert.Throws<InvalidOperationException>(() => cursor.Value.Length);
            seen++;
        }
        while (cursor.MoveNext());
        Assert.Equal(3000, seen);
        Assert.Equal(0, fixture.State.Entries);
        fixture.Check();
    }

    [Fact]
    public void Deleting_the_current_entry_then_moving_previous_yields_the_preceding_key()
    {
        using var fixture = EvenKeys(3000);
        var cursor = fixture.Tree.CreateCursor();
        Assert.True(cursor.SeekLast());
        int seen = 0;
        do
        {
            Assert.Equal(2 * (2999 - seen), Number(cursor.Key));
            Assert.True(fixture.Tree.Delete(cursor.Key));
            seen++;
        }
        while (cursor.MovePrevious());
        Assert.Equal(3000, seen);
        fixture.Check();
    }

    [Fact]
    public void A_cursor_continues_correctly_after_inserts_and_deletes_around_it()
    {
        using var fixture = EvenKeys(4000);
        var cursor = fixture.Tree.CreateCursor();
        Assert.True(cursor.Seek(TreeFixture.Key(4000)));
        // Splits behind and ahead of the cursor, and the merges of a mass delete ahead of it.
        for (int i = 0; i < 2000; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(2 * i + 1), TreeFixture.Value(i, 100));
        }
        Assert.Equal(TreeFixture.Value(4000, 100), cursor.Value.ToArray());
        for (long k = 4002; k < 7000; k += 2)
        {
            Assert.True(fixture.Tree.Delete(TreeFixture.Key(k)));
        }
        Assert.True(cursor.MoveNext());
        Assert.Equal(7000, Number(cursor.Key));
        Assert.True(cursor.MovePrevious());
        Assert.Equal(4000, Number(cursor.Key));
        Assert.True(cursor.MovePrevious());
        Assert.Equal(3999, Number(cursor.Key));
        Assert.True(cursor.MovePrevious());
        Assert.Equal(3998, Number(cursor.Key));

        fixture.Tree.Put(TreeFixture.Key(3998), TreeFixture.Value(1, 5000));
        Assert.Equal(TreeFixture.Value(1, 5000), cursor.Value.ToArray());
        fixture.Check();
    }

    [Fact]
    public void Modifying_values_while_iterating_visits_every_key_once()
    {
        using var fixture = EvenKeys(3000);
        var cursor = fixture.Tree.CreateCursor();
        Assert.True(cursor.SeekFirst());
        int seen = 0;
        do
        {
            long number = Number(cursor.Key);
            Assert.Equal(2 * seen, number);
            // Growing values force splits under the cursor.
            fixture.Tree.Put(cursor.Key, TreeFixture.Value(number, 300));
            seen++;
        }
        while (cursor.MoveNext());
        Assert.Equal(3000, seen);
        fixture.Check();
    }

    [Fact]
    public void An_emptied_tree_has_nothing_to_seek()
    {
        using var fixture = EvenKeys(10);
        for (int i = 0; i < 10; i++)
        {
            fixture.Tree.Delete(TreeFixture.Key(2 * i));
        }
        var cursor = fixture.Tree.CreateCursor();
        Assert.False(cursor.SeekFirst());
        Assert.False(cursor.SeekLast());
        Assert.False(cursor.Seek(TreeFixture.Key(0)));
        Assert.False(cursor.SeekLastLessOrEqual(TreeFixture.Key(100)));
        Assert.False(cursor.IsPositioned);
    }
}
