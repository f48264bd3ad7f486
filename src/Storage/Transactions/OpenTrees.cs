namespace Storage.Transactions;

/// <summary>
/// The trees a transaction opened, by name. Most transactions open one tree: it is kept in a field, and a dictionary is
/// made only for a second, so that beginning a transaction and opening its tree allocate no dictionary.
/// </summary>
internal struct OpenTrees
{
    private Tree? _single;
    private Dictionary<string, Tree>? _many;

    public readonly bool TryGet(string name, out Tree tree)
    {
        if (_many is not null) return _many.TryGetValue(name, out tree!);
        if (_single is not null && string.Equals(_single.Name, name, StringComparison.Ordinal))
        {
            tree = _single;
            return true;
        }
        tree = null!;
        return false;
    }

    /// <summary>Adds or replaces the tree under its name.</summary>
    public void Set(Tree tree)
    {
        if (_many is not null)
        {
            _many[tree.Name] = tree;
        }
        else if (_single is null || string.Equals(_single.Name, tree.Name, StringComparison.Ordinal))
        {
            _single = tree;
        }
        else
        {
            _many = new Dictionary<string, Tree>(StringComparer.Ordinal) { [_single.Name] = _single, [tree.Name] = tree };
            _single = null;
        }
    }

    public void Remove(string name)
    {
        if (_many is not null) _many.Remove(name);
        else if (_single is not null && string.Equals(_single.Name, name, StringComparison.Ordinal)) _single = null;
    }

    public readonly Enumerator GetEnumerator() => new(_single, _many);

    /// <summary>The open trees, in no particular order; the set must not change meanwhile.</summary>
    public struct Enumerator
    {
        private readonly Tree? _single;
        private Dictionary<string, Tree>.Enumerator _many;
        private readonly bool _useMany;
        private bool _singleDone;

        public Enumerator(Tree? single, Dictionary<string, Tree>? many)
        {
            _single = single;
            _useMany = many is not null;
            _many = many?.GetEnumerator() ?? default;
            Current = null!;
        }

        public Tree Current { get; private set; }

        public bool MoveNext()
        {
            if (_useMany)
            {
                if (!_many.MoveNext()) return false;
                Current = _many.Current.Value;
                return true;
            }
            if (_singleDone || _single is null) return false;
            _singleDone = true;
            Current = _single;
            return true;
        }
    }
}
