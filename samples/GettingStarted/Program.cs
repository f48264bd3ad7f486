using System.Text.Json;
using Storage;

// Opens the environment in ./orders-db, creating it on first use. Disposing it flushes and syncs.
await using var env = StorageEnvironment.Open("orders-db");

// An order and its index entry, in one transaction: both are kept, or neither.
var order = new Order(1042, "customer-7", 99.50m);
using (var tx = env.BeginWrite())
{
    var orders = tx.OpenOrCreateTree("orders");
    var byCustomer = tx.OpenOrCreateTree("orders-by-customer");
    orders.Put(Keys.Int64(order.Id), JsonSerializer.SerializeToUtf8Bytes(order));
    byCustomer.Put(new KeyBuilder().Add(order.Customer).Add(order.Id).ToArray(), []); // no value needed
    tx.Commit(); // returns once the commit is durable
}

// A read transaction sees a snapshot. Spans point into the pages: nothing is copied.
var customerPrefix = new KeyBuilder().Add("customer-7").ToArray();
using (var read = env.BeginRead())
{
    if (read.OpenTree("orders").TryGet(Keys.Int64(1042), out var json))
        Console.WriteLine(JsonSerializer.Deserialize<Order>(json));

    foreach (var entry in read.OpenTree("orders-by-customer").Prefix(customerPrefix))
    {
        var key = new KeyReader(entry.Key);
        Console.WriteLine($"{key.ReadString()} placed order {key.ReadInt64()}");
    }
}

// Spans cannot cross an await: copy the entries out first.
List<KeyValuePair<byte[], byte[]>> batch;
using (var read = env.BeginRead())
{
    batch = read.OpenTree("orders").Range(Keys.Int64(1000), Keys.Int64(2000)).ToList();
}
foreach (var (key, value) in batch)
    await Console.Out.WriteLineAsync($"order {Keys.ReadInt64(key)}: {value.Length} bytes of JSON");

// Merged writes: the operations of many callers share one transaction and one durable write.
// An operation may run more than once, so it uses only the transaction it is given.
var removed = await env.WriteAsync(tx =>
{
    var deleted = tx.OpenOrCreateTree("orders").Delete(Keys.Int64(1042));
    tx.OpenOrCreateTree("orders-by-customer").Delete(new KeyBuilder().Add("customer-7").Add(1042L).ToArray());
    return deleted;
});
Console.WriteLine($"order 1042 removed: {removed}");

record Order(long Id, string Customer, decimal Total);
