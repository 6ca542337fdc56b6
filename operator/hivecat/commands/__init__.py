"""One module per `hivecat` subcommand: add_parser() declares it, run() carries it out."""
