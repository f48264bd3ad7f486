using System.Text;
using System.Text.Json;
using static Storage.Inspect.Tests.TestEnvironments;

namespace Storage.Inspect.Tests;

/// <summary><c>get</c>, <c>scan</c> and the rendering of keys and values they share with <c>dump</c>.</summary>
public class ReadCommandTests
{
    /// <summary>Text, JSON and binary values under text and binary keys, in a tree "docs"; an empty tree "empty".</summary>
    private static void CreateDocs(string directory)
    {
        using var env = StorageEnvironment.Open(directory, Quiet);
        using var tx = env.BeginWrite();
        var docs = tx.CreateTree("docs");
        docs.Put([0x01, 0x02], "bin key"u8);
        docs.Put("a/1"u8, "hello world"u8);
        docs.Put("a/2"u8, "{\n  \"name\": \"Ann\",\n  \"tags\": [1, 2]\n}"u8);
        docs.Put("a/3"u8, [0x00, 0xff, 0x10]);
        docs.Put("b/1"u8, "[1, 2, 3]"u8);
        docs.Put("b/2"u8, "hex:looks like a prefix"u8);
        docs.Put("c"u8, "café ünïcode"u8);
        docs.Put("d"u8, "line1\nline2"u8);
        docs.Put("e"u8, "{not json"u8);
        docs.Put("hex:k"u8, "x"u8);
        tx.CreateTree("empty");
        tx.Commit();
    }

    private const string AllDocs =
        "hex:0102\tbin key\n" +
        "a/1\thello world\n" +
        "a/2\t{\"name\":\"Ann\",\"tags\":[1,2]}\n" +
        "a/3\thex:00ff10\n" +
        "b/1\t[1,2,3]\n" +
        "b/2\ttext:hex:looks like a prefix\n" +
        "c\tcafé ünïcode\n" +
        "d\thex:6c696e65310a6c696e6532\n" +
        "e\t{not json\n" +
        "text:hex:k\tx\n";

    [Fact]
    public void Get_prints_text_json_and_hex_values()
    {
        using var dir = new TempDir();
        CreateDocs(dir.Path);

        AssertGet(dir.Path, "a/1", "hello world\n");
        AssertGet(dir.Path, "a/2", "{\"name\":\"Ann\",\"tags\":[1,2]}\n");
        AssertGet(dir.Path, "a/3", "hex:00ff10\n");
        AssertGet(dir.Path, "b/1", "[1,2,3]\n");
        AssertGet(dir.Path, "b/2", "text:hex:looks like a prefix\n");
        AssertGet(dir.Path, "c", "café ünïcode\n");
        AssertGet(dir.Path, "d", "hex:6c696e65310a6c696e6532\n");
        AssertGet(dir.Path, "e", "{not json\n");
        // Keys as bytes, and text that starts with a prefix.
        AssertGet(dir.Path, "hex:0102", "bin key\n");
        AssertGet(dir.Path, "hex:612F31", "hello world\n");
        AssertGet(dir.Path, "text:a/1", "hello world\n");
        AssertGet(dir.Path, "text:hex:k", "x\n");
        // --hex: the bytes whatever they hold.
        Assert.Equal(0, Run(out var text, out _, "get", "--hex", dir.Path, "docs", "a/1"));
        Assert.Equal("hex:68656c6c6f20776f726c64\n", text.ReplaceLineEndings("\n"));
    }

    [Fact]
    public void Get_json_says_how_key_and_value_were_rendered()
    {
        using var dir = new TempDir();
        CreateDocs(dir.Path);

        Assert.Equal(0, Run(out var text, out var err, "get", dir.Path, "docs", "a/2", "--json"));
        Assert.Equal("", err);
        Assert.Equal("""
            {
              "key": "a/2",
              "keyFormat": "text",
              "value": {
                "name": "Ann",
                "tags": [
                  1,
                  2
                ]
              },
              "valueFormat": "json",
              "valueBytes": 37
            }

            """, text.ReplaceLineEndings("\n"));

        Assert.Equal(0, Run(out text, out _, "get", dir.Path, "docs", "hex:0102", "--json"));
        using (var doc = JsonDocument.Parse(text))
        {
            Assert.Equal("0102", doc.RootElement.GetProperty("key").GetString());
            Assert.Equal("hex", doc.RootElement.GetProperty("keyFormat").GetString());
            Assert.Equal("bin key", doc.RootElement.GetProperty("value").GetString());
            Assert.Equal("text", doc.RootElement.GetProperty("valueFormat").GetString());
        }
        Assert.Equal(0, Run(out text, out _, "get", dir.Path, "docs", "a/3", "--json"));
        using (var doc = JsonDocument.Parse(text))
        {
            Assert.Equal("00ff10", doc.RootElement.GetProperty("value").GetString());
            Assert.Equal("hex", doc.RootElement.GetProperty("valueFormat").GetString());
            Assert.Equal(3, doc.RootElement.GetProperty("valueBytes").GetInt32());
        }
    }

    [Fact]
    public void Get_of_a_missing_key_or_tree_exits_1()
    {
        using var dir = new TempDir();
        CreateDocs(dir.Path);

        Assert.Equal(1, Run(out var text, out var err, "get", dir.Path, "docs", "a/4"));
        Assert.Equal("", text);
        Assert.Equal("error: key not found: a/4 (tree 'docs')\n", err.ReplaceLineEndings("\n"));
        Assert.Equal(1, Run(out _, out err, "get", dir.Path, "docs", "hex:ff"));
        Assert.Equal("error: key not found: hex:ff (tree 'docs')\n", err.ReplaceLineEndings("\n"));
        Assert.Equal(1, Run(out _, out err, "get", dir.Path, "empty", "a/1"));
        Assert.Equal("error: key not found: a/1 (tree 'empty')\n", err.ReplaceLineEndings("\n"));
        Assert.Equal(1, Run(out text, out err, "get", dir.Path, "nope", "a/1"));
        Assert.Equal("", text);
        Assert.Equal("error: there is no tree named 'nope'\n", err.ReplaceLineEndings("\n"));
        Assert.Equal(1, Run(out _, out err, "get", dir.Sub("nothing"), "docs", "a/1"));
        Assert.StartsWith("error: no environment directory", err);
    }

    [Fact]
    public void Scan_prints_every_entry_in_key_order()
    {
        using var dir = new TempDir();
        CreateDocs(dir.Path);

        AssertScan(dir.Path, AllDocs);
        AssertScan(dir.Path, "", "--tree-is-empty");
    }

    [Fact]
    public void Scan_by_prefix_range_and_limit()
    {
        using var dir = new TempDir();
        CreateDocs(dir.Path);

        AssertScan(dir.Path, "a/1\thello world\na/2\t{\"name\":\"Ann\",\"tags\":[1,2]}\na/3\thex:00ff10\n", "--prefix", "a/");
        AssertScan(dir.Path, "a/2\t{\"name\":\"Ann\",\"tags\":[1,2]}\na/3\thex:00ff10\nb/1\t[1,2,3]\n", "--from", "a/2", "--to", "b/2");
        // From is inclusive, to exclusive; both may fall between keys.
        AssertScan(dir.Path, "a/3\thex:00ff10\nb/1\t[1,2,3]\nb/2\ttext:hex:looks like a prefix\n", "--from", "a/25", "--to", "b/3");
        AssertScan(dir.Path, "hex:0102\tbin key\na/1\thello world\n", "--to", "a/2");
        AssertScan(dir.Path, "e\t{not json\ntext:hex:k\tx\n", "--from", "e");
        AssertScan(dir.Path, "hex:0102\tbin key\n", "--from", "hex:01", "--to", "hex:02");
        AssertScan(dir.Path, "hex:0102\tbin key\na/1\thello world\n", "--limit", "2");
        AssertScan(dir.Path, "a/1\thello world\na/2\t{\"name\":\"Ann\",\"tags\":[1,2]}\n", "--prefix", "a/", "--limit", "2");
        AssertScan(dir.Path, "b/1\t[1,2,3]\n", "--prefix", "b/", "--to", "b/2");
        AssertScan(dir.Path, "text:hex:k\tx\n", "--prefix", "text:hex:");
        AssertScan(dir.Path, AllDocs, "--limit", "100");
        // Nothing in the range: no lines, and still a success.
        AssertScan(dir.Path, "", "--prefix", "zz");
        AssertScan(dir.Path, "", "--from", "b/2", "--to", "b/2");
        AssertScan(dir.Path, "", "--from", "c", "--to", "a");
        AssertScan(dir.Path, "a/1\thex:68656c6c6f20776f726c64\n".Replace("a/1", "hex:612f31", StringComparison.Ordinal), "--prefix", "a/1", "--hex");
    }

    [Fact]
    public void Scan_json_is_one_array_with_an_entry_a_line()
    {
        using var dir = new TempDir();
        CreateDocs(dir.Path);

        Assert.Equal(0, Run(out var text, out var err, "scan", dir.Path, "docs", "--prefix", "a/", "--json"));
        Assert.Equal("", err);
        Assert.Equal("""
            [
              {"key":"a/1","keyFormat":"text","value":"hello world","valueFormat":"text","valueBytes":11},
              {"key":"a/2","keyFormat":"text","value":{"name":"Ann","tags":[1,2]},"valueFormat":"json","valueBytes":37},
              {"key":"a/3","keyFormat":"text","value":"00ff10","valueFormat":"hex","valueBytes":3}
            ]

            """, text.ReplaceLineEndings("\n"));

        Assert.Equal(0, Run(out text, out _, "scan", dir.Path, "docs", "--json"));
        using (var doc = JsonDocument.Parse(text))
        {
            var entries = doc.RootElement.EnumerateArray().ToList();
            Assert.Equal(10, entries.Count);
            Assert.Equal(["0102", "a/1", "a/2", "a/3", "b/1", "b/2", "c", "d", "e", "hex:k"], entries.Select(e => e.GetProperty("key").GetString()));
            Assert.Equal(["hex", "text", "text", "text", "text", "text", "text", "text", "text", "text"], entries.Select(e => e.GetProperty("keyFormat").GetString()));
            Assert.Equal(["text", "text", "json", "hex", "json", "text", "text", "hex", "text", "text"], entries.Select(e => e.GetProperty("valueFormat").GetString()));
            // Text without the prefix that the text output puts before it: the format says what it is.
            Assert.Equal("hex:looks like a prefix", entries[5].GetProperty("value").GetString());
            Assert.Equal(JsonValueKind.Array, entries[4].GetProperty("value").ValueKind);
        }

        Assert.Equal(0, Run(out text, out _, "scan", dir.Path, "docs", "--prefix", "zz", "--json"));
        Assert.Equal("[\n]\n", text.ReplaceLineEndings("\n"));
        Assert.Empty(JsonDocument.Parse(text).RootElement.EnumerateArray());
    }

    [Fact]
    public void Scan_of_a_missing_tree_exits_1()
    {
        using var dir = new TempDir();
        CreateDocs(dir.Path);

        Assert.Equal(1, Run(out var text, out var err, "scan", dir.Path, "nope"));
        Assert.Equal("", text);
        Assert.Equal("error: there is no tree named 'nope'\n", err.ReplaceLineEndings("\n"));
        Assert.Equal(1, Run(out text, out _, "scan", dir.Path, "nope", "--json"));
        Assert.Equal("", text);
    }

    [Fact]
    public void Scan_reads_what_an_open_environment_committed()
    {
        using var dir = new TempDir();
        using var env = StorageEnvironment.Open(dir.Path, Quiet);
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("live");
            for (var i = 0; i < 500; i++) tree.Put(Key(i), Encoding.ASCII.GetBytes($"{{\"n\":{i}}}"));
            tx.Commit();
        }
        // Nothing flushed yet: the entries come from the journal.
        Assert.Equal(0, Run(out var text, out _, "scan", dir.Path, "live", "--from", "key-000250", "--limit", "3"));
        Assert.Equal("key-000250\t{\"n\":250}\nkey-000251\t{\"n\":251}\nkey-000252\t{\"n\":252}\n", text.ReplaceLineEndings("\n"));
        Assert.Equal(0, Run(out text, out _, "get", dir.Path, "live", "key-000499"));
        Assert.Equal("{\"n\":499}\n", text.ReplaceLineEndings("\n"));
    }

    [Fact]
    public void Dump_renders_keys_and_values_as_text_or_hex_and_load_restores_every_byte()
    {
        using var dir = new TempDir();
        CreateDocs(dir.Path);

        Assert.Equal(0, Run(out var dump, out _, "dump", "--tree", "docs", dir.Path));
        dump = dump.ReplaceLineEndings("\n");
        // JSON stays as it is stored (a document spread over lines is hex), so that load gives back the same bytes.
        Assert.Equal(
            "VERSION=3\nformat=rendered\ntype=btree\ndatabase=docs\nentries=10\nHEADER=END\n" +
            " hex:0102\n bin key\n" +
            " a/1\n hello world\n" +
            " a/2\n hex:" + Convert.ToHexStringLower("{\n  \"name\": \"Ann\",\n  \"tags\": [1, 2]\n}"u8) + "\n" +
            " a/3\n hex:00ff10\n" +
            " b/1\n [1, 2, 3]\n" +
            " b/2\n text:hex:looks like a prefix\n" +
            " c\n café ünïcode\n" +
            " d\n hex:6c696e65310a6c696e6532\n" +
            " e\n {not json\n" +
            " text:hex:k\n x\n" +
            "DATA=END\n", dump);

        var path = dir.Sub("docs.dump");
        File.WriteAllText(path, dump);
        Assert.Equal(0, Run(out var loaded, out _, "load", path, dir.Sub("copy")));
        Assert.Contains("loaded 1 trees, 10 entries", loaded);
        Assert.Equal(0, Run(out var again, out _, "dump", "--tree", "docs", dir.Sub("copy")));
        Assert.Equal(dump, again.ReplaceLineEndings("\n"));
        Assert.Equal(0, Run(out var hexOriginal, out _, "dump", "--hex", "--tree", "docs", dir.Path));
        Assert.Equal(0, Run(out var hexCopy, out _, "dump", "--hex", "--tree", "docs", dir.Sub("copy")));
        Assert.Equal(hexOriginal, hexCopy);
        Assert.Contains("\nformat=bytevalue\n", hexOriginal.ReplaceLineEndings("\n"));
    }

    [Fact]
    public void Load_rejects_an_unknown_format_and_bad_hex_in_a_rendered_dump()
    {
        using var dir = new TempDir();
        var path = dir.Sub("bad.dump");
        File.WriteAllText(path, "VERSION=3\nformat=print\ndatabase=x\nHEADER=END\n k\n v\nDATA=END\n");
        Assert.Equal(1, Run(out _, out var err, "load", path, dir.Sub("target")));
        Assert.Contains("bad.dump:2: only format=rendered and format=bytevalue are supported", err);
        File.WriteAllText(path, "VERSION=3\nformat=rendered\ndatabase=x\nHEADER=END\n k\n hex:0g\nDATA=END\n");
        Assert.Equal(1, Run(out _, out err, "load", path, dir.Sub("target2")));
        Assert.Contains("bad.dump:6: a data line is not hex", err);
    }

    private static void AssertGet(string directory, string key, string expected)
    {
        Assert.Equal(0, Run(out var text, out var err, "get", directory, "docs", key));
        Assert.Equal("", err);
        Assert.Equal(expected, text.ReplaceLineEndings("\n"));
    }

    private static void AssertScan(string directory, string expected, params string[] options)
    {
        var tree = options is ["--tree-is-empty"] ? "empty" : "docs";
        if (tree == "empty") options = [];
        Assert.Equal(0, Run(out var text, out var err, ["scan", directory, tree, .. options]));
        Assert.Equal("", err);
        Assert.Equal(expected, text.ReplaceLineEndings("\n"));
    }
}
