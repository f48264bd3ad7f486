using Storage.Inspection;
using Storage.Paging;
using Storage.State;

namespace Storage.Fuzz.Targets;

/// <summary>
/// <c>file-header</c>: the input is page 0 (and, when longer, page 1) of a data file. Parsed as given for both
/// slots, then with its checksums repaired (so that mutations of the fields get past the two CRCs), and read by
/// the offline reader's slot reader from a file.
/// </summary>
internal static class FileHeaderTarget
{
    public static void Run(byte[] input)
    {
        for (var slot = 0L; slot < 2; slot++)
        {
            var offset = (int)Math.Min(input.Length, slot * PageLayout.PageSizeBytes);
            var parsed = FileHeaderIo.TryParse(input.AsSpan(offset), slot, out var problem);
            if (parsed is null == problem is null) throw new FuzzInvariantException("TryParse must give a header or a problem, never both or neither");
        }

        var repaired = new byte[PageLayout.PageSizeBytes];
        input.AsSpan(0, Math.Min(input.Length, repaired.Length)).CopyTo(repaired);
        var claimed = BitConverter.ToInt64(repaired, 0);
        ChecksumRepair.RepairFileHeaderPage(repaired);
        if (claimed is 0 or 1)
        {
            var header = FileHeaderIo.TryParse(repaired, claimed, out var problem);
            if (header is null == problem is null) throw new FuzzInvariantException("TryParse must give a header or a problem, never both or neither");
        }

        using var directory = new ScratchDirectory("file-header");
        var path = directory.Combine(DataFile.FileName);
        File.WriteAllBytes(path, input);
        using var handle = File.OpenHandle(path);
        var slots = EnvironmentSnapshot.ReadSlots(handle);
        if (slots.Count != 2) throw new FuzzInvariantException($"ReadSlots gave {slots.Count} slots");
    }
}
