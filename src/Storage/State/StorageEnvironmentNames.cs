namespace Storage.State;

/// <summary>Names of the files and folders inside an environment's directory.</summary>
internal static class StorageEnvironmentNames
{
    public const string LockFile = "lock";
    public const string JournalDirectory = "Journals";
}
