using System.Diagnostics;
using System.Globalization;
using System.Text;
using System.Text.Encodings.Web;
using System.Text.Json;

namespace Storage.Inspect;

/// <summary>JSON and table output.</summary>
internal static class Output
{
    private static readonly JsonSerializerOptions s_json = new()
    {
        WriteIndented = true,
        PropertyNamingPolicy = JsonNamingPolicy.CamelCase,
        Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping,
    };

    public static void Json(TextWriter writer, object value) => writer.WriteLine(JsonSerializer.Serialize(value, s_json));

    public static string N(long value) => value.ToString("N0", CultureInfo.InvariantCulture);

    public static string Bytes(long bytes) => bytes switch
    {
        >= 1L << 30 => $"{bytes / (double)(1L << 30):0.0} GiB",
        >= 1L << 20 => $"{bytes / (double)(1L << 20):0.0} MiB",
        >= 1L << 10 => $"{bytes / (double)(1L << 10):0.0} KiB",
        _ => $"{bytes} B",
    };

    public static string Percent(long part, long whole) => whole == 0 ? "-" : $"{100.0 * part / whole:0.0}%";

    /// <summary>Columns padded to their widest cell; numeric-looking cells are right-aligned.</summary>
    public static void Table(TextWriter writer, string[] headers, IEnumerable<string[]> rows)
    {
        var all = new List<string[]> { headers };
        all.AddRange(rows);
        var widths = new int[headers.Length];
        foreach (var row in all)
        {
            for (var i = 0; i < row.Length && i < widths.Length; i++) widths[i] = Math.Max(widths[i], row[i].Length);
        }
        foreach (var row in all)
        {
            var line = new StringBuilder();
            for (var i = 0; i < row.Length && i < widths.Length; i++)
            {
                if (i > 0) line.Append("  ");
                var right = row != headers && IsNumeric(row[i]);
                line.Append(right ? row[i].PadLeft(widths[i]) : (i == row.Length - 1 ? row[i] : row[i].PadRight(widths[i])));
            }
            writer.WriteLine(line.ToString().TrimEnd());
        }
    }

    private static bool IsNumeric(string cell) => cell.Length > 0 && (char.IsDigit(cell[0]) || cell == "-") && !cell.Contains(' ', StringComparison.Ordinal);
}

/// <summary>
/// A progress bar on stderr, only when both streams are a terminal (never into a file, a pipe or a test's writer), and
/// only once the run has taken half a second. Drawn on the working thread as it reports (<see cref="Progress{T}"/> would
/// post to the thread pool, after the line is cleared).
/// </summary>
internal sealed class ProgressBar : IProgress<CheckProgress>, IProgress<BackupProgress>, IProgress<RestoreProgress>
{
    private readonly Stopwatch _clock = Stopwatch.StartNew();
    private readonly TextWriter _error;
    private bool _drawn;

    private ProgressBar(TextWriter error) => _error = error;

    /// <summary>A bar when <paramref name="output"/> is the console's and both streams are a terminal; null otherwise.</summary>
    public static ProgressBar? For(TextWriter output, TextWriter error) =>
        !ReferenceEquals(output, Console.Out) || Console.IsOutputRedirected || Console.IsErrorRedirected ? null : new ProgressBar(error);

    public void Report(CheckProgress value) => Draw(value.PagesExamined, value.PagesTotal);

    public void Report(BackupProgress value) => Draw(value.PagesWritten, value.PagesTotal);

    public void Report(RestoreProgress value) => Draw(value.BytesRead, TotalBytes);

    /// <summary>What a restore's bytes read are out of (the backup file's length); 0 when unknown.</summary>
    public long TotalBytes { get; set; }

    private void Draw(long done, long total)
    {
        if (_clock.ElapsedMilliseconds < 500 || total <= 0) return;
        var fraction = Math.Clamp(done / (double)total, 0, 1);
        var filled = (int)(fraction * 30);
        _error.Write($"\r[{new string('#', filled)}{new string('.', 30 - filled)}] {fraction:P0}");
        _drawn = true;
    }

    /// <summary>Clears the bar's line, if it was drawn.</summary>
    public void Clear()
    {
        if (_drawn) _error.Write("\r" + new string(' ', 40) + "\r");
        _drawn = false;
    }
}
