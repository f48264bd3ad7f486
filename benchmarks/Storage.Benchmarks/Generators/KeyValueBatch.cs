namespace Storage.Benchmarks.Generators;

/// <summary>
/// The puts of one write transaction, in two flat reused buffers, so filling and writing a batch
/// allocates nothing.
/// </summary>
internal sealed class KeyValueBatch
{
    private readonly byte[] _keys;
    private readonly byte[] _values;

    public KeyValueBatch(int capacity)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(capacity);
        Capacity = capacity;
        _keys = new byte[capacity * KeyFormat.KeySizeBytes];
        _values = new byte[capacity * ValueSource.ValueSizeBytes];
    }

    public int Capacity { get; }

    public int Count { get; private set; }

    public ReadOnlySpan<byte> Key(int index) =>
        _keys.AsSpan(CheckIndex(index) * KeyFormat.KeySizeBytes, KeyFormat.KeySizeBytes);

    public ReadOnlySpan<byte> Value(int index) =>
        _values.AsSpan(CheckIndex(index) * ValueSource.ValueSizeBytes, ValueSource.ValueSizeBytes);

    /// <summary>Replaces the contents with the next <paramref name="count"/> keys and values.</summary>
    public void Fill(IKeySource keys, ValueSource values, int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(count);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(count, Capacity);
        for (var i = 0; i < count; i++)
        {
            keys.Next(_keys.AsSpan(i * KeyFormat.KeySizeBytes, KeyFormat.KeySizeBytes));
            values.Next(_values.AsSpan(i * ValueSource.ValueSizeBytes, ValueSource.ValueSizeBytes));
        }
        Count = count;
    }

    /// <summary>Replaces the contents with the keys of <paramref name="numbers"/> (for deletes; the values are left as they were).</summary>
    public void SetKeys(ReadOnlySpan<ulong> numbers)
    {
        ArgumentOutOfRangeException.ThrowIfGreaterThan(numbers.Length, Capacity);
        for (var i = 0; i < numbers.Length; i++) KeyFormat.Write(numbers[i], _keys.AsSpan(i * KeyFormat.KeySizeBytes, KeyFormat.KeySizeBytes));
        Count = numbers.Length;
    }

    private int CheckIndex(int index)
    {
        if ((uint)index >= (uint)Count) throw new ArgumentOutOfRangeException(nameof(index), index, $"The batch holds {Count} puts.");
        return index;
    }
}
