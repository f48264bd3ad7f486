namespace Storage.Fuzz.Tests;

public sealed class EnvironmentFramingTests
{
    [Fact]
    public void Encode_then_decode_gives_the_same_files()
    {
        var data = new byte[40_000];
        data[0] = 1;
        data[100] = 2;
        data[105] = 3;
        data[39_999] = 4;
        var journal = new byte[4096 * 3];
        new Random(7).NextBytes(journal.AsSpan(0, 5000));
        var framing = new EnvironmentFraming { Flags = EnvironmentFraming.RepairChecksumsFlag };
        framing.Files[0] = data;
        framing.Files[3] = journal;
        framing.Files[4] = [];

        var decoded = EnvironmentFraming.Decode(framing.Encode());

        Assert.Equal(framing.Flags, decoded.Flags);
        Assert.Equal([0, 3, 4], decoded.Files.Keys);
        Assert.Equal(data, decoded.Files[0]);
        Assert.Equal(journal, decoded.Files[3]);
        Assert.Empty(decoded.Files[4]);
    }

    [Fact]
    public void A_zero_length_chunk_sets_the_file_length()
    {
        // flags, then: file 0 at 0 "abc"; file 0 length 2.
        byte[] input = [0, 0, 0, 0, 0, 0, 3, 0, (byte)'a', (byte)'b', (byte)'c', 0, 2, 0, 0, 0, 0, 0];

        var decoded = EnvironmentFraming.Decode(input);

        Assert.Equal("ab"u8.ToArray(), decoded.Files[0]);
    }

    [Fact]
    public void Offsets_past_the_limit_are_dropped_and_short_chunks_keep_what_they_have()
    {
        byte[] input = [0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 1, 0, 9, 2, 4, 0, 0, 0, 10, 0, 7, 8];

        var decoded = EnvironmentFraming.Decode(input);

        Assert.False(decoded.Files.ContainsKey(1));
        Assert.Equal([0, 0, 0, 0, 7, 8], decoded.Files[2]);
    }
}
