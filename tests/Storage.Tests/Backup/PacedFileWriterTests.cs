using Storage.Platform;
using Storage.Tests.Support;

namespace Storage.Tests.Backup;

/// <summary>The backup file's writer, which hands what it wrote to the device in steps as it goes.</summary>
public sealed class A_paced_file_writer
{
    [Theory]
    [InlineData(4096)]
    [InlineData(64 << 10)]
    [InlineData(PacedFileWriter.DefaultStepBytes)]
    public void Writes_every_byte_in_order_in_writes_of_any_size_across_its_steps(long stepBytes)
    {
        using var dir = new TempDirectory();
        var path = dir.Combine("file");
        var random = new Random(7);
        var expected = new byte[3 * 1024 * 1024 + 123];
        random.NextBytes(expected);
        using (var writer = new PacedFileWriter(path, stepBytes))
        {
            for (var at = 0; at < expected.Length;)
            {
                var length = Math.Min(expected.Length - at, random.Next(1, 300_000));
                writer.Write(expected.AsSpan(at, length));
                at += length;
                Assert.Equal(at, writer.Length);
            }
            writer.Sync();
        }
        Assert.Equal(expected, File.ReadAllBytes(path));
    }

    [Fact]
    public void Does_not_write_over_a_file_that_exists()
    {
        using var dir = new TempDirectory();
        var path = dir.Combine("file");
        File.WriteAllText(path, "mine");
        Assert.Throws<IOException>(() => new PacedFileWriter(path));
        Assert.Equal("mine", File.ReadAllText(path));
    }
}
