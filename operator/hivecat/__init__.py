"""hivecat: a Kubernetes operator that runs Hive catalogs across storage clusters."""

__version__ = "0.1.0"
