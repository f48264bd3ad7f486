using Storage.Paging;
using Storage.Platform;

namespace Storage.Tests.Checksums;

public sealed class Crc32CTests
{
    [Fact]
    public void Gives_the_standard_check_value() =>
        Assert.Equal(0xE3069283u, Crc32C.Compute("123456789"u8));

    [Fact]
    public void The_interleaved_lanes_agree_with_a_bitwise_reference_at_every_length_around_the_chunk_size()
    {
        var random = new Random(11);
        var data = new byte[40_000];
        random.NextBytes(data);
        foreach (var length in new[] { 0, 1, 7, 8, 9, 8159, 8160, 8161, 8168, 8192, 16_320, 16_321, 24_480, 40_000 })
        {
            var seed = (uint)random.Next();
            Assert.Equal(Reference(data.AsSpan(0, length), seed), Crc32C.Compute(data.AsSpan(0, length), seed));
        }
    }

    [Fact]
    public void Appending_in_pieces_equals_computing_at_once()
    {
        var data = new byte[30_000];
        new Random(3).NextBytes(data);
        var state = Crc32C.Start(5);
        state = Crc32C.Append(state, data.AsSpan(0, 8_170));
        state = Crc32C.Append(state, data.AsSpan(8_170));
        Assert.Equal(Crc32C.Compute(data, 5), Crc32C.Finish(state));
    }

    [Fact]
    public void Appending_zeros_by_multiplying_equals_feeding_the_zero_bytes_at_every_length_of_a_page()
    {
        var random = new Random(5);
        for (var zeroBytes = 0; zeroBytes <= Storage.Paging.PageLayout.PageSizeBytes; zeroBytes++)
        {
            var state = (uint)random.Next() ^ ((uint)random.Next() << 16);
            var fed = state;
            for (var i = 0; i < zeroBytes; i++) fed = System.Numerics.BitOperations.Crc32C(fed, (byte)0);
            Assert.True(fed == Crc32C.AppendZeros(state, zeroBytes), $"{zeroBytes} zero bytes after 0x{state:X8}");
        }
    }

    private static uint Reference(ReadOnlySpan<byte> data, uint seed)
    {
        var crc = ~seed;
        foreach (var b in data)
        {
            crc ^= b;
            for (var i = 0; i < 8; i++) crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
        return ~crc;
    }
}
