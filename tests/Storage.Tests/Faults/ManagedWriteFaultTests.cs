using Storage.Paging;
using Storage.Platform;
using Storage.Scratch;
using Storage.Tests.Support;

namespace Storage.Tests.FaultTests;

/// <summary>
/// The managed seam's partial writes (<see cref="PartialWriteException"/>): the prefix reaches the file for real,
/// then the write fails with the injected error; and the managed data file writer's first failure is final.
/// </summary>
public sealed class A_partial_managed_write
{
    [Fact]
    public void Writes_its_prefix_then_fails_with_the_injected_error()
    {
        using var temp = new TempDirectory("partial");
        var path = temp.Combine("file");
        var faults = new ScriptedFaults();
        var data = Enumerable.Range(0, 10_000).Select(i => (byte)(i * 7 + 1)).ToArray();
        using var handle = FileIo.OpenReadWrite(path, create: true);

        faults.FailWrites((_, _, _) => true, () => ScriptedFaults.PartialThenEio(3000));
        var error = Assert.Throws<StorageException>(() => FileIo.Write(handle, path, data, 100, faults));

        Assert.Equal((StorageErrorCode.IoFailure, 5, path), (error.ErrorCode, error.OsError, error.Path));
        Assert.IsType<PartialWriteException>(error.InnerException);
        var file = File.ReadAllBytes(path);
        Assert.Equal(3100, file.Length);
        Assert.True(file.AsSpan(100).SequenceEqual(data.AsSpan(0, 3000)));
    }

    [Fact]
    public void Across_gather_buffers_stops_inside_the_buffer_it_reaches()
    {
        using var temp = new TempDirectory("partial");
        var path = temp.Combine("file");
        var faults = new ScriptedFaults();
        var buffers = Enumerable.Range(0, 3).Select(b => (ReadOnlyMemory<byte>)Enumerable.Repeat((byte)(b + 1), 4096).ToArray()).ToList();
        using var handle = FileIo.OpenReadWrite(path, create: true);

        faults.FailWrites((_, _, _) => true, () => ScriptedFaults.PartialThenEio(4096 + 1000));
        Assert.Throws<StorageException>(() => FileIo.WriteGather(handle, path, buffers, 0, 3 * 4096, faults));
        var file = File.ReadAllBytes(path);
        Assert.Equal(5096, file.Length);
        Assert.All(file.AsSpan(0, 4096).ToArray(), b => Assert.Equal(1, b));
        Assert.All(file.AsSpan(4096).ToArray(), b => Assert.Equal(2, b));

        // At least the whole length: everything lands and the write still fails (ENOSPC here).
        faults.FailWrites((_, _, _) => true, () => new PartialWriteException(long.MaxValue, "No space left on device (injected)", 28));
        Assert.Throws<StorageFullException>(() => FileIo.WriteGather(handle, path, buffers, 0, 3 * 4096, faults));
        Assert.Equal(3 * 4096, File.ReadAllBytes(path).Length);
    }

    [Fact]
    public void Of_a_data_file_run_leaves_the_managed_writer_failed_for_good()
    {
        using var temp = new TempDirectory("partial");
        var path = temp.Combine("data");
        var faults = new ScriptedFaults();
        var buffer = new ScratchBuffer(2);
        try
        {
            using var handle = FileIo.OpenReadWrite(path, create: true);
            using var writer = PlatformIo.Managed.CreateDataWriter();
            faults.FailWrites((_, _, _) => true, () => ScriptedFaults.PartialThenEio(PageLayout.PageSizeBytes));

            Assert.Throws<StorageException>(() => writer.Write(handle, path, [(3L, buffer)], faults));
            Assert.Equal(4L * PageLayout.PageSizeBytes, new FileInfo(path).Length); // page 3 of the run reached the file
            var sync = Assert.Throws<StorageException>(() => writer.Sync(handle, path, faults));
            Assert.Equal(StorageErrorCode.IoFailure, sync.ErrorCode);
            Assert.IsType<PartialWriteException>(sync.InnerException!.InnerException);
            Assert.DoesNotContain(faults.Log, line => line.StartsWith("sync", StringComparison.Ordinal));
        }
        finally
        {
            buffer.Release();
        }
    }
}

public sealed class A_failed_managed_fsync
{
    [Fact]
    public void Is_never_retried_by_the_data_file_writer()
    {
        using var temp = new TempDirectory("fsync");
        var path = temp.Combine("data");
        var faults = new ScriptedFaults();
        using var handle = FileIo.OpenReadWrite(path, create: true);
        using var writer = PlatformIo.Managed.CreateDataWriter();
        faults.FailSyncs(_ => true, ScriptedFaults.Eio);

        var first = Assert.Throws<StorageException>(() => writer.Sync(handle, path, faults));
        var second = Assert.Throws<StorageException>(() => writer.Sync(handle, path, faults));

        Assert.Equal(5, first.OsError);
        Assert.Same(first, second.InnerException);
        Assert.Single(faults.Log, line => line.StartsWith("sync", StringComparison.Ordinal)); // the second never reached the disk
    }
}
