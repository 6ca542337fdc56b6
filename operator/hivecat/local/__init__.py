"""Local stand-ins for production services: a real Hive Metastore, Spark, free ports.

Used by `hivecat demo` and by the test fixtures; nothing here is used by the operator in a cluster.
"""
