using Storage.Inspect;


return args.Length switch
{
    >= 2 when args[0] == "info" => InfoCommand.Run(args[1], Console.Out),
    _ => Usage(),
};

static int Usage()
{
    Console.Error.WriteLine("usage: storage-inspect info <environment-directory>");
    return 2;
}
