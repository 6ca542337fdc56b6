"""Which characters of a new prefix a metastore's character set can hold (hivecat.catalog.sql.charsets)."""

import pytest

from hivecat.catalog.sql.charsets import unstorable


@pytest.mark.parametrize("text,charset,dialect,expected", [
    ("hdfs://nn/müller", "latin1", "mysql", None),          # MySQL latin1 is cp1252: ü, €, „ fit
    ("s3://b/€uro„x", "latin1", "mysql", None),
    ("hdfs://nn/数据", "latin1", "mysql", "数"),
    ("hdfs://nn/ü", "ascii", "mysql", "ü"),
    ("hdfs://nn/数据", "utf8mb3", "mysql", None),             # in the Basic Multilingual Plane
    ("hdfs://nn/a\U0001F600", "utf8mb3", "mysql", "\U0001F600"),
    ("hdfs://nn/a\U0001F600", "utf8", "mysql", "\U0001F600"),  # MySQL's utf8 is utf8mb3
    ("hdfs://nn/a\U0001F600", "utf8mb4", "mysql", None),
    ("hdfs://nn/数据", "UTF8", "postgresql", None),
    ("hdfs://nn/数据", "SQL_ASCII", "postgresql", None),
    ("hdfs://nn/€", "LATIN1", "postgresql", "€"),           # PostgreSQL's LATIN1 is ISO 8859-1
    ("hdfs://nn/€", "WIN1252", "postgresql", None),
    ("hdfs://nn/数据", "no-such-charset", "mysql", None),     # unknown: not refused on a guess
])
def test_first_unstorable_character(text, charset, dialect, expected):
    assert unstorable(text, charset, dialect) == expected
