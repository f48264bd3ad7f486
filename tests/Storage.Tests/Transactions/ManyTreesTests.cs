using System.Text;
using Storage.Tests.Support;

namespace Storage.Tests.TransactionTests;

public sealed class Two_hundred_trees
{
    [Fact]
    public void Keep_their_own_contents_across_commits_and_a_reopen()
    {
        using var temp = new TempDirectory();
        const int trees = 200;
        static string Name(int i) => $"tree-{i:D3}";
        static byte[] Key(int tree, int k) => Encoding.ASCII.GetBytes($"{tree}/{k}");

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            using (var tx = env.BeginWrite())
            {
                for (var i = 0; i < trees; i++) tx.CreateTree(Name(i));
                tx.Commit();
            }
            // Fill them over several transactions, interleaved.
            for (var round = 0; round < 4; round++)
            {
                using var tx = env.BeginWrite();
                for (var i = 0; i < trees; i++)
                {
                    var tree = tx.OpenTree(Name(i));
                    for (var k = round * 5; k < round * 5 + 5 + i % 3; k++) tree.Put(Key(i, k), TestData.Value(i * 100 + k, k == 3 && i % 10 == 0 ? 2500 : 16));
                }
                tx.Commit();
            }
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            using var tx = env.BeginRead();
            var names = tx.ListTrees();
            Assert.Equal(Enumerable.Range(0, trees).Select(Name), names);
            for (var i = 0; i < trees; i++)
            {
                var tree = tx.OpenTree(Name(i));
                var model = OrdinalBytes.NewModel();
                for (var round = 0; round < 4; round++)
                {
                    for (var k = round * 5; k < round * 5 + 5 + i % 3; k++) model[Key(i, k)] = TestData.Value(i * 100 + k, k == 3 && i % 10 == 0 ? 2500 : 16);
                }
                TreeAssert.Equal(model, tree, Name(i));
            }
        }
    }
}
