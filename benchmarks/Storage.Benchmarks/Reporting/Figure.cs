namespace Storage.Benchmarks.Reporting;

/// <summary>One labelled figure of a detail section, already formatted.</summary>
internal readonly record struct Figure(string Label, string Value);
