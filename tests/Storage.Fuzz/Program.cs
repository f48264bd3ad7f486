using System.Globalization;
using SharpFuzz;

namespace Storage.Fuzz;

/// <summary>The command line (see README.md). Exit codes: 0 fine, 1 contract violations found, 2 bad usage.</summary>
internal static class Program
{
    public static int Main(string[] args)
    {
        try
        {
            return args.FirstOrDefault() switch
            {
                "list" => List(),
                "run" when args.Length == 2 => RunUnderAfl(FuzzTargets.Get(args[1])),
                "replay" when args.Length >= 2 => Replay(args[1], args[2..]),
                "mutate" when args.Length >= 2 => Mutate(args[1], args[2..]),
                "generate-corpus" => GenerateCorpus(args[1..]),
                "unframe" when args.Length == 3 => Unframe(args[1], args[2]),
                "reframe" when args.Length == 3 => Reframe(args[1], args[2]),
                _ => Usage(),
            };
        }
        catch (ArgumentException e)
        {
            Console.Error.WriteLine($"error: {e.Message}");
            return 2;
        }
    }

    private static int Usage()
    {
        Console.Error.WriteLine("""
            usage: Storage.Fuzz <mode> ...
              list                                   the targets
              run <target>                           under afl-fuzz (SharpFuzz's out-of-process fork server; input on stdin)
              replay <target|all> [--verbose] [file|dir ...]
                                                     runs inputs once each (default: the corpus and saved findings)
              mutate <target|all> [--executions N] [--seconds S] [--seed N] [--save DIR]
                                                     in-process mutations of the corpus (no AFL needed)
              generate-corpus [--output DIR]         writes the seed corpus from fresh environments
              unframe <environment-input> <dir>      writes the directory an environment input describes (for
                                                     storage-inspect or a debugger)
              reframe <environment-input> <output>   rewrites an environment input in its smallest framing
            """);
        return 2;
    }

    private static int List()
    {
        foreach (var target in FuzzTargets.All) Console.WriteLine($"{target.Name,-14} {target.Summary}");
        return 0;
    }

    private static int RunUnderAfl(FuzzTarget target)
    {
        // An untyped exception escaping the action is a crash to afl-fuzz; so is the death of the child process
        // (SIGSEGV, SIGBUS, stack overflow), which the out-of-process server survives and restarts from.
        // STORAGE_FUZZ_LOG names a file that gets every exception afl-fuzz counts as a crash (afl-fuzz keeps no output).
        var log = Environment.GetEnvironmentVariable("STORAGE_FUZZ_LOG");
        Fuzzer.OutOfProcess.Run(stream =>
        {
            using var memory = new MemoryStream();
            stream.CopyTo(memory);
            try
            {
                FuzzContract.Execute(target, memory.ToArray());
            }
            catch (Exception e) when (log is not null)
            {
                File.AppendAllText(log, $"{DateTime.UtcNow:O} {target.Name} ({memory.Length} bytes): {e}\n");
                throw;
            }
        });
        return 0;
    }

    private static IEnumerable<FuzzTarget> Targets(string name) => name == "all" ? FuzzTargets.All : [FuzzTargets.Get(name)];

    private static int Replay(string name, string[] arguments)
    {
        var verbose = arguments.Contains("--verbose");
        var paths = arguments.Where(a => a != "--verbose").ToArray();
        var violations = 0;
        var known = 0;
        foreach (var target in Targets(name))
        {
            var files = paths.Length == 0
                ? [.. Corpus.Replayable(target.Name), .. Corpus.OpenFindings(target.Name)]
                : paths.SelectMany(p => Directory.Exists(p) ? Corpus.Files(p) : [p]).ToList();
            foreach (var file in files)
            {
                var result = FuzzRunner.RunOne(target, File.ReadAllBytes(file));
                Console.WriteLine($"{target.Name} {file}: {result.Describe()}");
                if (verbose) foreach (var refusal in result.Refusals) Console.WriteLine($"    refused: {refusal}");
                if (result.Outcome == FuzzOutcome.KnownIssue) known++;
                if (result.KeepsContract) continue;
                violations++;
                if (result.Violation is not null) Console.WriteLine(result.Violation);
            }
        }
        Console.WriteLine((violations == 0 ? "no new violations" : $"{violations} inputs broke the contract")
            + (known > 0 ? $"; {known} inputs hit known open issues (STORAGE_FUZZ_STRICT=1 counts them as violations)" : ""));
        return violations == 0 ? 0 : 1;
    }

    private static int Mutate(string name, string[] options)
    {
        var executions = int.Parse(Option(options, "--executions") ?? "2000", CultureInfo.InvariantCulture);
        var seconds = double.Parse(Option(options, "--seconds") ?? "10", CultureInfo.InvariantCulture);
        var seed = int.Parse(Option(options, "--seed") ?? "1", CultureInfo.InvariantCulture);
        var save = Option(options, "--save");
        var violations = 0;
        foreach (var target in Targets(name))
        {
            var seeds = Corpus.Seeds(target.Name).Select(File.ReadAllBytes).ToList();
            var summary = MutationPass.Run(target, seeds, seed, executions, TimeSpan.FromSeconds(seconds));
            Console.WriteLine($"{target.Name}: {summary.Executions} executions in {summary.Elapsed.TotalSeconds:F1} s ({summary.Executions / Math.Max(0.001, summary.Elapsed.TotalSeconds):F0}/s): {summary.Accepted} accepted, {summary.Rejected} rejected, {summary.Violations.Count} violations");
            foreach (var (input, result) in summary.Violations)
            {
                violations++;
                var where = "";
                if (save is not null)
                {
                    Directory.CreateDirectory(Path.Combine(save, target.Name));
                    where = Path.Combine(save, target.Name, $"mutation-{Convert.ToHexString(System.Security.Cryptography.SHA256.HashData(input))[..16].ToLowerInvariant()}");
                    File.WriteAllBytes(where, input);
                }
                Console.WriteLine($"  {result.Describe()} {where}");
                if (result.Violation is not null) Console.WriteLine(result.Violation);
            }
        }
        return violations == 0 ? 0 : 1;
    }

    private static int GenerateCorpus(string[] options)
    {
        var output = Option(options, "--output") ?? Path.Combine(Corpus.ProjectDirectory, "corpus");
        CorpusGenerator.Generate(output, Console.Out);
        return 0;
    }

    private static int Unframe(string input, string directory)
    {
        if (Directory.Exists(directory) && Directory.EnumerateFileSystemEntries(directory).Any()) throw new ArgumentException($"{directory} is not empty");
        Directory.CreateDirectory(directory);
        EnvironmentFraming.Decode(File.ReadAllBytes(input)).WriteTo(directory);
        Console.WriteLine($"wrote {directory}");
        return 0;
    }

    private static int Reframe(string input, string output)
    {
        var bytes = EnvironmentFraming.Decode(File.ReadAllBytes(input)).Encode();
        File.WriteAllBytes(output, bytes);
        Console.WriteLine($"wrote {output} ({bytes.Length} bytes)");
        return 0;
    }

    private static string? Option(string[] options, string name)
    {
        var at = Array.IndexOf(options, name);
        if (at < 0) return null;
        return at + 1 < options.Length ? options[at + 1] : throw new ArgumentException($"{name} needs a value");
    }
}
