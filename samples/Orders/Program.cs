using System.Text.Json;
using Storage;

// An orders store with a customer index kept in the same transactions as the orders: eight writers (four through merged
// writes, four through their own transactions committed asynchronously), two readers checking that the index and the
// orders always agree, a range copied out and used across awaits, then a reopen that finds everything.
// Usage: Orders [directory]; exit code 0 when every check holds.
var directory = args.Length > 0 ? args[0] : Path.Combine(Path.GetTempPath(), $"orders-{Guid.NewGuid():N}");
const int Writers = 8, OrdersPerWriter = 150;
string[] customers = ["ann", "annette", "bob", "carol", "dave"];
var failures = 0;
void Check(bool condition, string what)
{
    Console.WriteLine($"{(condition ? "ok  " : "FAIL")} {what}");
    if (!condition) Interlocked.Increment(ref failures);
}

static byte[] IndexKey(string customer, long id) => new KeyBuilder().Add(customer).Add(id).ToArray();

static void Place(WriteTransaction tx, Order order)
{
    tx.OpenOrCreateTree("orders").Put(Keys.Int64(order.Id), JsonSerializer.SerializeToUtf8Bytes(order));
    tx.OpenOrCreateTree("orders-by-customer").Put(IndexKey(order.Customer, order.Id), []);
}

await using (var env = StorageEnvironment.Open(directory, new StorageOptions { TrackTransactionStacks = true }))
{
    using var stop = new CancellationTokenSource();
    var writers = Enumerable.Range(0, Writers).Select(w => Task.Run(async () =>
    {
        for (var i = 0; i < OrdersPerWriter; i++)
        {
            var order = new Order(w * 100_000L + i, customers[(w + i) % customers.Length], 10 + i % 90);
            if (w % 2 == 0)
            {
                // Merged: the value the operation returns comes back once the commit is durable.
                var placed = await env.WriteAsync(tx =>
                {
                    Place(tx, order);
                    return order.Id;
                });
                if (placed != order.Id) throw new InvalidOperationException($"WriteAsync returned {placed}, not {order.Id}");
            }
            else
            {
                using var tx = await env.BeginWriteAsync();
                Place(tx, order);
                await tx.CommitAsync();
            }
        }
    })).ToArray();

    var checks = 0;
    var readers = Enumerable.Range(0, 2).Select(_ => Task.Run(async () =>
    {
        while (!stop.IsCancellationRequested)
        {
            using var read = env.BeginRead();
            if (!read.TryOpenTree("orders", out var orders) || !read.TryOpenTree("orders-by-customer", out var index)) continue;
            var indexed = 0L;
            foreach (var customer in customers)
            {
                // A lazy enumerable of copies: it may cross an await while the read transaction stays open.
                foreach (var (key, _) in index.ReadPrefix(new KeyBuilder().Add(customer).AsSpan()))
                {
                    await Task.Yield();
                    var reader = new KeyReader(key);
                    var (name, id) = (reader.ReadString(), reader.ReadInt64());
                    var json = orders.Get(Keys.Int64(id)) ?? throw new InvalidOperationException($"index entry ({name}, {id}) has no order");
                    if (JsonSerializer.Deserialize<Order>(json)!.Customer != customer) throw new InvalidOperationException($"order {id} is not {customer}'s");
                    indexed++;
                }
            }
            if (indexed != orders.Count) throw new InvalidOperationException($"{indexed} index entries for {orders.Count} orders in one snapshot");
            Interlocked.Increment(ref checks);
        }
    })).ToArray();

    await Task.WhenAll(writers);
    stop.Cancel();
    await Task.WhenAll(readers);
    Check(checks > 0, $"two readers checked {checks} snapshots while eight writers committed: index and orders agreed in every one");

    List<KeyValuePair<byte[], byte[]>> firstWriters;
    using (var read = env.BeginRead())
    {
        firstWriters = read.OpenTree("orders").Range(Keys.Int64(0), Keys.Int64(200_000)).ToList();
    }
    var total = 0m;
    foreach (var (_, value) in firstWriters)
    {
        await Task.Yield();
        total += JsonSerializer.Deserialize<Order>(value)!.Total;
    }
    Check(firstWriters.Count == 2 * OrdersPerWriter, $"a range copied out and summed across awaits: {firstWriters.Count} orders, {total} in total");
}

await using (var reopened = StorageEnvironment.Open(directory))
{
    using var read = reopened.BeginRead();
    Check(read.OpenTree("orders").Count == Writers * OrdersPerWriter, $"after a reopen: {read.OpenTree("orders").Count} orders");
    var annette = read.OpenTree("orders-by-customer").Prefix(new KeyBuilder().Add("annette").AsSpan()).Count();
    var ann = read.OpenTree("orders-by-customer").Prefix(new KeyBuilder().Add("ann").AsSpan()).Count();
    Check(ann + annette == Writers * OrdersPerWriter * 2 / customers.Length && ann > 0 && annette > 0,
        $"the index prefix of 'ann' holds only ann's orders ({ann}), not annette's ({annette})");
    Check(reopened.Check().IsConsistent, "the consistency check finds nothing");
}

Directory.Delete(directory, recursive: true);
Console.WriteLine(failures == 0 ? "orders sample: ok" : $"orders sample: {failures} checks failed");
return failures == 0 ? 0 : 1;

record Order(long Id, string Customer, decimal Total);
