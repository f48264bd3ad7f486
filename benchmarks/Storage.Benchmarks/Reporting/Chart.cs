using System.Diagnostics;
using System.Text.Json;

namespace Storage.Benchmarks.Reporting;

/// <summary>
/// The chart of a run: the throughputs as JSON next to the Markdown report, drawn as SVG by Vega-Lite
/// (benchmarks/chart/render.mjs, run with Node.js; its packages are installed with npm ci on first use).
/// Without Node.js the JSON is still written and the run says why there is no chart.
/// </summary>
internal static class Chart
{
    public static void Write(ResultTable table, string root, string basePath, string title, string subtitle, TextWriter output)
    {
        var cells = new List<Dictionary<string, object?>>();
        foreach (var row in table.Rows)
        {
            foreach (var engine in table.Engines)
            {
                var cell = table.Get(row.Key, engine);
                cells.Add(new Dictionary<string, object?>
                {
                    ["workload"] = row.Label,
                    ["unit"] = row.Unit,
                    ["engine"] = engine,
                    ["value"] = cell.Throughput is { } value && double.IsFinite(value) ? value : null,
                    ["text"] = cell.Text,
                });
            }
        }
        var json = basePath + ".json";
        var document = new Dictionary<string, object?> { ["title"] = title, ["subtitle"] = subtitle, ["engines"] = table.Engines, ["cells"] = cells };
        File.WriteAllText(json, JsonSerializer.Serialize(document, new JsonSerializerOptions { WriteIndented = true }));

        var chartDirectory = Path.Combine(root, "benchmarks", "chart");
        var svg = basePath + ".svg";
        if (!Directory.Exists(Path.Combine(chartDirectory, "node_modules")) && !Run("npm", ["ci", "--no-audit", "--no-fund", "--silent"], chartDirectory, output))
        {
            output.WriteLine("No chart: Node.js and npm are needed to install benchmarks/chart (scripts/prerequisites.sh installs them as root).");
            return;
        }
        if (Run("node", [Path.Combine(chartDirectory, "render.mjs"), json, svg], chartDirectory, output))
        {
            output.WriteLine($"Chart written to {Path.GetRelativePath(root, svg)}");
        }
        else
        {
            output.WriteLine("No chart: benchmarks/chart/render.mjs did not run (see above).");
        }
    }

    private static bool Run(string program, string[] arguments, string directory, TextWriter output)
    {
        try
        {
            using var process = Process.Start(new ProcessStartInfo(program, arguments)
            {
                WorkingDirectory = directory,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
            });
            if (process is null) return false;
            var stderr = process.StandardError.ReadToEndAsync();
            process.StandardOutput.ReadToEnd();
            if (!process.WaitForExit(120_000))
            {
                process.Kill();
                output.WriteLine($"{program} did not finish within 2 minutes.");
                return false;
            }
            if (process.ExitCode != 0) output.WriteLine($"{program} failed ({process.ExitCode}): {stderr.Result.Trim()}");
            return process.ExitCode == 0;
        }
        catch (System.ComponentModel.Win32Exception)
        {
            return false; // not installed
        }
    }
}
