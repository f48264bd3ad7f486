using Storage.Platform;

namespace Storage.Recovery;

/// <summary>What an environment's journal is made from, once recovery has read the header and listed the files.</summary>
internal readonly record struct JournalContext(string JournalDirectory, ulong EnvironmentId, long FirstFreeFileNumber, PlatformIo Io, StorageOptions Options);
