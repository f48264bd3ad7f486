namespace Storage.Fuzz;

/// <summary>One contract violation of the library that is known and not fixed yet, recognised by where it is thrown.</summary>
/// <param name="Id">Also the prefix of its reproducers' names under <c>findings/open/&lt;target&gt;/</c>.</param>
/// <param name="Summary">What is wrong, where, and what the fix looks like (findings/README.md has the long form).</param>
/// <param name="ExceptionTypes">The exception types it throws.</param>
/// <param name="Types">
/// The library types (full names) any of which may hold the innermost library frame. Types, not methods: once the JIT
/// has optimised the code, a small method is inlined into its caller and is no longer on the stack trace at all.
/// </param>
internal sealed record KnownIssue(string Id, string Summary, Type[] ExceptionTypes, string[] Types);
