"""Hive's partition names (PARTITIONS.PART_NAME, get_partitions_by_names): k1=v1/k2=v2, escaped as Hive's
FileUtils.escapePathName does. Shared by the Thrift backend and the SQL parameter writes, which find
partitions by name through the (PART_NAME, TBL_ID) index."""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
# Hive's FileUtils.escapePathName: these characters are stored %XX-escaped in partition names.
_ESCAPED = frozenset([chr(c) for c in range(1, 0x20)] + list('"#%\'*/:=?\\\x7f{[]^'))


def _escape(text: str) -> str:
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


def partition_name(keys: Sequence[str], values: Sequence[str]) -> str:
    """The PART_NAME HMS stores for these values (Warehouse.makePartName)."""
    return "/".join(f"{_escape(k.lower())}={_escape(v) if v else DEFAULT_PARTITION_NAME}"
                    for k, v in zip(keys, values))
