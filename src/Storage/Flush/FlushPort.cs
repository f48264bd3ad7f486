using Storage.Commit;
using Storage.Journal;
using Storage.Paging;
using Storage.Scratch;
using Storage.State;
using Storage.Transactions;

namespace Storage.Flush;

/// <summary>
/// What the flusher works with, and all it reaches of the environment: the data file it writes and syncs, the page table
/// whose versions it writes, the snapshots it must not pass, the scratch memory it gives back, the journal it retires,
/// which versions must stay, the published states, the write lock (to give space back and move an idle member's journal
/// start), and the environment's health (a failed flush poisons it).
/// </summary>
internal sealed record FlushPort(
    ulong EnvironmentId,
    StorageOptions Options,
    DataFile DataFile,
    PageTable PageTable,
    ReaderTable Readers,
    ReaderMonitor ReaderMonitor,
    ScratchPool Scratch,
    ScratchReclaimer Reclaimer,
    IEnvironmentJournal Journal,
    VersionRetention Versions,
    EnvironmentStates States,
    WriterLock WriterLock,
    EnvironmentHealth Health);
