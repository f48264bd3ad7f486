using Storage.Inspect;

return Cli.Run(args, Console.Out, Console.Error);
