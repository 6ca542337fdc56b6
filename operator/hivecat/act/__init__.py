"""The passes that act: each carries out, through its ports (catalogs, storage, copy launchers, the registry),
what reconcile/ decides without I/O, and returns an outcome that reconcile/ renders as status. Handlers run
them on their kind's pool; the CLI's demo and the tests run them with their own ports."""
