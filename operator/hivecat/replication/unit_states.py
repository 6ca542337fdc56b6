"""What a check found of a unit's copy on a secondary (replication/verify.py), in a module of its own so that
the bookkeeping, which `hivecat route` loads, reads them without loading the copy engine."""

IN_SYNC, STALE, NOT_OWNED, SOURCE_MISSING, UNREADABLE = "InSync", "Stale", "NotOwned", "SourceMissing", "Unreadable"
