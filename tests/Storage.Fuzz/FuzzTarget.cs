namespace Storage.Fuzz;

/// <summary>One named fuzz target: a function of the input bytes that must keep <see cref="FuzzContract"/>.</summary>
internal sealed record FuzzTarget(string Name, string Summary, Action<byte[]> Run);
