using Storage.Tests.Support;

namespace Storage.Tests.ModelTests;

/// <summary>
/// Runs a scenario against a real environment and an in-memory model: the committed model (what a new
/// snapshot, a reopen and a crash-and-reopen must show) and the pending model (what the open write
/// transaction must show). Every observation is compared; the first difference throws, naming the step.
/// </summary>
internal sealed class ModelRunner : IDisposable
{
    private const string TreeName = "model";
    private readonly TempDirectory _temp = new("model");
    private readonly StorageOptions _options;
    private StorageEnvironment _env;
    private WriteTransaction? _tx;
    private SortedDictionary<byte[], byte[]> _committed = OrdinalBytes.NewModel();
    private SortedDictionary<byte[], byte[]> _pending = OrdinalBytes.NewModel();
    private const int MaxSnapshots = 4;
    private readonly List<(ReadTransaction Transaction, SortedDictionary<byte[], byte[]> Model)> _snapshots = [];
    private long _lastTransactionId;
    private int _step;

    /// <summary>What a crash must leave at least: the last commit known durable (a durable commit, a checkpoint, a clean close).</summary>
    private (long TransactionId, SortedDictionary<byte[], byte[]> Model) _durable;

    /// <summary>Lazy commits after <see cref="_durable"/>, in order: a crash may keep any prefix of them (the background writes them in order).</summary>
    private readonly List<(long TransactionId, SortedDictionary<byte[], byte[]> Model)> _lazy = [];

    public ModelRunner(int optionsIndex)
    {
        _options = ModelOptions.Get(optionsIndex);
        try
        {
            _env = StorageEnvironment.Open(_temp.Path, _options);
            using var tx = _env.BeginWrite();
            tx.CreateTree(TreeName);
            _lastTransactionId = tx.Commit().TransactionId;
            _durable = (_lastTransactionId, _committed);
        }
        catch
        {
            _env?.Dispose();
            _temp.Dispose();
            throw;
        }
    }

    public void Run(Scenario scenario)
    {
        foreach (var command in scenario.Commands)
        {
            _step++;
            try
            {
                Apply(command);
            }
            catch (Exception e) when (e is not ModelMismatchException)
            {
                throw new ModelMismatchException($"Step {_step} ({command}) threw {e.GetType().Name}: {e.Message}", e);
            }
        }
        _step++;
        try
        {
            Finish();
        }
        catch (Exception e) when (e is not ModelMismatchException)
        {
            throw new ModelMismatchException($"The final check threw {e.GetType().Name}: {e.Message}", e);
        }
    }

    private void Apply(Command command)
    {
        switch (command)
        {
            case Command.Put put:
            {
                var key = ModelKeys.Get(put.Key);
                var value = ModelGenerators.Value(put);
                Writer().Put(key, value);
                _pending[key] = value;
                break;
            }
            case Command.Delete delete:
            {
                var key = ModelKeys.Get(delete.Key);
                var removed = Writer().Delete(key);
                Expect(_pending.Remove(key) == removed, $"Delete returned {removed}");
                break;
            }
            case Command.Get get:
                if (_tx is not null) CheckGet(_tx.OpenTree(TreeName), _pending, get.Key, "the write transaction");
                using (var read = _env.BeginRead()) CheckGet(read.OpenTree(TreeName), _committed, get.Key, "a new snapshot");
                break;
            case Command.Scan scan:
                if (_tx is not null) CheckScan(_tx.OpenTree(TreeName), _pending, scan, "the write transaction");
                using (var read = _env.BeginRead()) CheckScan(read.OpenTree(TreeName), _committed, scan, "a new snapshot");
                break;
            case Command.Commit commit:
                if (_tx is null) break;
                var stats = _tx.Commit(commit.Lazy ? CommitDurability.Lazy : CommitDurability.Durable);
                _tx.Dispose();
                _tx = null;
                _committed = OrdinalBytes.Copy(_pending);
                if (stats.TransactionId != 0)
                {
                    Expect(stats.TransactionId == _lastTransactionId + 1, $"Commit returned transaction {stats.TransactionId} after {_lastTransactionId}");
                    Expect(stats.IsDurable == !commit.Lazy, $"the commit says durable={stats.IsDurable}");
                    _lastTransactionId = stats.TransactionId;
                    if (commit.Lazy) _lazy.Add((_lastTransactionId, _committed));
                    else AllDurable();
                }
                // The reader check decides whether scratch spills; run it at a known point rather than on the flusher's schedule.
                if (_options.Hooks.SpillWhenPinned) _env.ReaderMonitor.CheckNow();
                break;
            case Command.Rollback:
                RollBack();
                break;
            case Command.Reopen:
                CloseAll();
                _env.Dispose();
                // Closed cleanly: the files must check clean (pages, bitmaps against what the trees reach, holes only where free).
                var problems = Storage.Inspection.EnvironmentSnapshot.Check(_temp.Path).Problems;
                Expect(problems.Count == 0, $"the checker found {problems.Count} problem(s) after closing: {string.Join("; ", problems.Take(3))}");
                _env = StorageEnvironment.Open(_temp.Path, _options);
                AllDurable();
                CheckCommitted("after a reopen");
                break;
            case Command.CrashAndReopen:
                CloseAll();
                CrashAndReopen("after a crash and reopen");
                break;
            case Command.Checkpoint:
                _env.Checkpoint();
                AllDurable();
                break;
            case Command.Compact:
                Apply(new Command.Commit());
                // Compaction commits transactions of its own; they change no entry.
                _lastTransactionId += _env.Compact().Transactions;
                AllDurable();
                CheckCommitted("after compacting");
                break;
            case Command.OpenSnapshot:
            {
                if (_snapshots.Count == MaxSnapshots) break;
                var snapshot = _env.BeginRead();
                _snapshots.Add((snapshot, _committed));
                Expect(snapshot.TransactionId == _lastTransactionId, $"a new snapshot has id {snapshot.TransactionId}, the last commit was {_lastTransactionId}");
                break;
            }
            case Command.CheckSnapshot check:
            {
                if (_snapshots.Count == 0) break;
                var (snapshot, model) = _snapshots[check.Which % _snapshots.Count];
                Compare(model, snapshot.OpenTree(TreeName), $"the snapshot of transaction {snapshot.TransactionId}");
                break;
            }
            case Command.CloseSnapshot close:
            {
                if (_snapshots.Count == 0) break;
                var index = close.Which % _snapshots.Count;
                _snapshots[index].Transaction.Dispose();
                _snapshots.RemoveAt(index);
                break;
            }
            default:
                throw new InvalidOperationException($"Unknown command {command}.");
        }
    }

    private Tree Writer()
    {
        _tx ??= _env.BeginWrite(TimeSpan.FromSeconds(30));
        return _tx.OpenTree(TreeName);
    }

    private void RollBack()
    {
        _tx?.Dispose();
        _tx = null;
        _pending = OrdinalBytes.Copy(_committed);
    }

    private void CloseAll()
    {
        RollBack();
        foreach (var (snapshot, _) in _snapshots) snapshot.Dispose();
        _snapshots.Clear();
    }

    private void Finish()
    {
        foreach (var (snapshot, model) in _snapshots) Compare(model, snapshot.OpenTree(TreeName), $"the snapshot of transaction {snapshot.TransactionId} at the end");
        if (_tx is not null) Compare(_pending, _tx.OpenTree(TreeName), "the write transaction at the end");
        CloseAll();
        CheckCommitted("at the end");
        CrashAndReopen("after the final crash and reopen");
    }

    /// <summary>Everything committed is durable now (written by a durable commit, a checkpoint or a clean close).</summary>
    private void AllDurable()
    {
        _durable = (_lastTransactionId, _committed);
        _lazy.Clear();
    }

    /// <summary>
    /// A crash keeps the last durable commit and may keep any prefix of the lazy commits after it, each whole; which one
    /// is read from the recovered transaction id, and the recovered entries must be exactly that commit's.
    /// </summary>
    private void CrashAndReopen(string when)
    {
        _env.SimulateCrash();
        _env = StorageEnvironment.Open(_temp.Path, _options);
        long recovered;
        using (var read = _env.BeginRead()) recovered = read.TransactionId;
        var state = recovered == _durable.TransactionId ? _durable : _lazy.Find(lazy => lazy.TransactionId == recovered);
        Expect(state.Model is not null,
            $"{when}: the last transaction is {recovered}, expected {_durable.TransactionId} (the last durable one){(_lazy.Count == 0 ? "" : $" or a lazy one up to {_lastTransactionId}")}");
        _committed = state.Model!;
        _pending = OrdinalBytes.Copy(_committed);
        _lastTransactionId = recovered;
        AllDurable();
        CheckCommitted(when);
    }

    private void CheckCommitted(string when)
    {
        using var read = _env.BeginRead();
        Expect(read.TransactionId == _lastTransactionId, $"{when}: the last transaction is {read.TransactionId}, expected {_lastTransactionId}");
        Compare(_committed, read.OpenTree(TreeName), when);
    }

    private void CheckGet(Tree tree, SortedDictionary<byte[], byte[]> model, int keyIndex, string where)
    {
        var key = ModelKeys.Get(keyIndex);
        var found = tree.TryGet(key, out var value);
        var expected = model.TryGetValue(key, out var modelValue);
        Expect(found == expected, $"{where}: TryGet({ModelKeys.Describe(keyIndex)}) found={found}, the model says {expected}");
        if (found) Expect(value.SequenceEqual(modelValue), $"{where}: the value of {ModelKeys.Describe(keyIndex)} is {TestData.Show(value)}, expected {TestData.Show(modelValue)}");
        Expect(tree.Count == model.Count, $"{where}: Count is {tree.Count}, the model holds {model.Count}");
    }

    private void CheckScan(Tree tree, SortedDictionary<byte[], byte[]> model, Command.Scan scan, string where)
    {
        IEnumerable<KeyValuePair<byte[], byte[]>> expected;
        List<KeyValuePair<byte[], byte[]>> actual;
        if (scan.Prefix >= 0)
        {
            var prefix = ModelKeys.Get(scan.Prefix);
            expected = model.Where(p => p.Key.AsSpan().StartsWith(prefix));
            actual = TreeAssert.ReadRange(tree.Prefix(prefix, scan.Reverse));
        }
        else
        {
            var from = scan.From < 0 ? [] : ModelKeys.Get(scan.From);
            var to = scan.To < 0 ? [] : ModelKeys.Get(scan.To);
            expected = model.Where(p => (from.Length == 0 || OrdinalBytes.Instance.Compare(p.Key, from) >= 0) && (to.Length == 0 || OrdinalBytes.Instance.Compare(p.Key, to) < 0));
            actual = TreeAssert.ReadRange(tree.Range(from, to, scan.Reverse));
        }
        var list = expected.ToList();
        if (scan.Reverse) list.Reverse();
        Wrap(() => TreeAssert.SameEntries(list, actual, $"{where}: {scan}"));
    }

    private void Compare(SortedDictionary<byte[], byte[]> model, Tree tree, string where) => Wrap(() => TreeAssert.Equal(model, tree, where));

    private void Wrap(Action check)
    {
        try
        {
            check();
        }
        catch (Xunit.Sdk.XunitException e)
        {
            throw new ModelMismatchException($"Step {_step}: {e.Message}", e);
        }
    }

    private void Expect(bool condition, string message)
    {
        if (!condition) throw new ModelMismatchException($"Step {_step}: {message}");
    }

    public void Dispose()
    {
        try
        {
            _tx?.Dispose();
            foreach (var (snapshot, _) in _snapshots) snapshot.Dispose();
            _env.Dispose();
        }
        catch (StorageException)
        {
            // A failed run may leave the environment poisoned; the directory goes anyway.
        }
        _temp.Dispose();
    }
}

internal sealed class ModelMismatchException(string message, Exception? inner = null) : Exception(message, inner);
