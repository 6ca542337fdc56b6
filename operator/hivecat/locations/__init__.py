"""Storage locations: the prefix rules for rebasing them (prefix.py) and HMS partition filters (partition_filter.py).

Plain logic and SQLAlchemy Core expressions; no I/O.
"""
