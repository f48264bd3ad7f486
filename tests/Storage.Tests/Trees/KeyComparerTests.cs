using Storage.Trees;

namespace Storage.Tests.Trees;

public sealed class KeyComparerTests
{
    [Fact]
    public void Orders_keys_exactly_as_an_ordinal_byte_comparison_does()
    {
        var random = new Random(7);
        for (var i = 0; i < 200_000; i++)
        {
            var a = RandomKey(random);
            var b = random.Next(4) == 0 ? a.ToArray() : RandomKey(random);
            if (b.Length > 0 && random.Next(3) == 0) b[random.Next(b.Length)] ^= (byte)(1 << random.Next(8));
            Assert.Equal(Math.Sign(a.AsSpan().SequenceCompareTo(b)), Math.Sign(KeyComparer.Compare(a, b)));
        }
    }

    private static byte[] RandomKey(Random random)
    {
        // Short keys drawn from few byte values, so that long shared prefixes and equal keys are common.
        var key = new byte[random.Next(0, 80)];
        for (var j = 0; j < key.Length; j++) key[j] = (byte)(random.Next(3) switch { 0 => 0x00, 1 => 0xFF, _ => random.Next(256) });
        return key;
    }
}
