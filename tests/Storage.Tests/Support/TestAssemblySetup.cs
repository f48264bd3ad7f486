using System.Runtime.CompilerServices;
using Storage.Commit;
using Storage.Journal;

namespace Storage.Tests.Support;

internal static class TestAssemblySetup
{
    /// <summary>
    /// Every commit the tests make checks that the diff built from the lines page writes recorded equals a comparison of
    /// the whole page: a write that forgot to record its bytes fails the test that made it.
    /// </summary>
    [ModuleInitializer]
    internal static void CheckDiffsAgainstWholePages() => JournalEntryBuilder.CheckWrittenLines = true;
}
