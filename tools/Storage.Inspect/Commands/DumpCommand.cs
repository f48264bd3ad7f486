using System.Globalization;
using System.Text;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary>
/// <c>dump [--tree NAME] [--output FILE] &lt;dir&gt;</c>: a portable text dump in the manner of mdb_dump: per tree a header
/// (<c>VERSION=3</c>, <c>format=bytevalue</c>, <c>type=btree</c>, <c>database=NAME</c>, <c>HEADER=END</c>), then one line per
/// key and one per value, each a space followed by lower-case hex, then <c>DATA=END</c>.
/// </summary>
internal static class DumpCommand
{
    public static int Run(ParsedArgs args, TextWriter output, TextWriter error)
    {
        var directory = args.Expect(1, "<dir>")[0];
        var only = args.Option("--tree");
        var path = args.Option("--output");
        using var snapshot = EnvironmentSnapshot.Open(directory);
        var trees = snapshot.ListTrees();
        if (only is not null)
        {
            trees = trees.Where(t => t.Name == only).ToList();
            if (trees.Count == 0) throw new InspectionException($"there is no tree named '{only}'");
        }
        using var file = path is null ? null : new StreamWriter(path, append: false, new UTF8Encoding(false));
        var writer = file ?? output;
        writer.NewLine = "\n";
        long total = 0;
        foreach (var tree in trees)
        {
            writer.WriteLine("VERSION=3");
            writer.WriteLine("format=bytevalue");
            writer.WriteLine("type=btree");
            writer.WriteLine($"database={tree.Name}");
            writer.WriteLine($"entries={tree.Entries.ToString(CultureInfo.InvariantCulture)}");
            writer.WriteLine("HEADER=END");
            snapshot.ForEachEntry(tree, (key, value) =>
            {
                writer.Write(' ');
                writer.WriteLine(Convert.ToHexString(key).ToLowerInvariant());
                writer.Write(' ');
                writer.WriteLine(Convert.ToHexString(value).ToLowerInvariant());
                total++;
            });
            writer.WriteLine("DATA=END");
        }
        if (file is not null) error.WriteLine($"dumped {trees.Count} trees, {total} entries to {path}");
        return Cli.Ok;
    }
}

/// <summary><c>load &lt;dump&gt; &lt;target-dir&gt;</c>: reads a dump and writes its trees into the environment at the target (created when missing).</summary>
internal static class LoadCommand
{
    private const int EntriesPerTransaction = 10_000;

    public static int Run(ParsedArgs args, TextWriter output, TextWriter error)
    {
        var positional = args.Expect(2, "<dump> <target-dir>");
        var dumpPath = positional[0];
        if (!File.Exists(dumpPath)) throw new InspectionException($"no dump file at {dumpPath}");
        using var reader = new StreamReader(dumpPath, Encoding.UTF8);
        using var env = StorageEnvironment.Open(positional[1]);
        var lineNumber = 0;
        var trees = 0;
        long entries = 0;
        string? line;
        while ((line = Next()) is not null)
        {
            if (line.Length == 0) continue;
            if (line != "VERSION=3") throw Bad("expected VERSION=3");
            string? name = null;
            while ((line = Next()) is not null && line != "HEADER=END")
            {
                if (line.StartsWith("database=", StringComparison.Ordinal)) name = line["database=".Length..];
                else if (line.StartsWith("format=", StringComparison.Ordinal) && line != "format=bytevalue") throw Bad("only format=bytevalue is supported");
            }
            if (line is null) throw Bad("the dump ends inside a header");
            if (string.IsNullOrEmpty(name)) throw Bad("the header names no database");
            trees++;
            var tx = env.BeginWrite();
            try
            {
                var tree = tx.OpenOrCreateTree(name);
                var inTransaction = 0;
                while (true)
                {
                    var keyLine = Next() ?? throw Bad("the dump ends before DATA=END");
                    if (keyLine == "DATA=END") break;
                    var valueLine = Next() ?? throw Bad("a key has no value line");
                    if (!keyLine.StartsWith(' ') || !valueLine.StartsWith(' ')) throw Bad("data lines start with a space");
                    tree.Put(Decode(keyLine), Decode(valueLine));
                    entries++;
                    if (++inTransaction == EntriesPerTransaction)
                    {
                        tx.Commit();
                        tx.Dispose();
                        tx = env.BeginWrite();
                        tree = tx.OpenTree(name);
                        inTransaction = 0;
                    }
                }
                tx.Commit();
            }
            finally
            {
                tx.Dispose();
            }
        }
        output.WriteLine($"loaded {trees} trees, {entries} entries into {Path.GetFullPath(positional[1])}");
        return Cli.Ok;

        string? Next()
        {
            lineNumber++;
            return reader.ReadLine();
        }

        byte[] Decode(string hexLine)
        {
            try
            {
                return Convert.FromHexString(hexLine.AsSpan(1));
            }
            catch (FormatException)
            {
                throw Bad("a data line is not hex");
            }
        }

        InspectionException Bad(string what) => new($"{dumpPath}:{lineNumber}: {what}");
    }
}
