namespace Storage.Fuzz;

/// <summary>A target noticed something wrong that is not an exception of the library (an invariant of its own, such as a key outside its page).</summary>
internal sealed class FuzzInvariantException(string message) : Exception(message);
