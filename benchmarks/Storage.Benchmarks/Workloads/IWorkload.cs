using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>One workload of WORKLOADS.md, run against one engine at a time.</summary>
internal interface IWorkload
{
    /// <summary>"W1", as given to <c>--workloads</c>.</summary>
    string Id { get; }

    string Name { get; }

    /// <summary>The table rows this workload fills (W3 has two).</summary>
    IReadOnlyList<WorkloadRow> Rows { get; }

    /// <summary>Runs on fresh directories from <paramref name="context"/>; throws when the engine fails.</summary>
    IReadOnlyList<RowResult> Run(IEngine engine, RunContext context);
}
