"""Whether a new location prefix can be stored in the metastore's character sets.

HMS databases are latin1 on MySQL/MariaDB (utf8mb4 overflows its indexes): a prefix with a character
latin1 lacks would fail mid-run in strict mode and turn into `?` in non-strict mode. Every rewritten value
is the new prefix plus a suffix the column already holds, so checking the prefix alone is enough.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

# MySQL character sets and the Python codec holding the same characters (MySQL's latin1 is cp1252).
_MYSQL_CODECS = {"latin1": "cp1252", "ascii": "ascii", "utf8mb3": "utf-8", "utf8": "utf-8", "utf8mb4": "utf-8",
                 "ucs2": "utf-16-le", "utf16": "utf-16", "utf32": "utf-32"}
# PostgreSQL server encodings that hold any character (SQL_ASCII stores bytes unchecked).
_PG_UNLIMITED = {"UTF8", "SQL_ASCII"}


def mysql_charsets(conn: sa.Connection, columns: Iterable[tuple[str, str]]) -> set[str]:
    """Character sets of (table, column) pairs in the connection's current database."""
    pairs = sorted(set(columns))
    if not pairs:
        return set()
    c = sa.table("COLUMNS", sa.column("TABLE_SCHEMA"), sa.column("TABLE_NAME"), sa.column("COLUMN_NAME"),
                 sa.column("CHARACTER_SET_NAME"), schema="information_schema")
    rows = conn.execute(sa.select(c.c.CHARACTER_SET_NAME).distinct().where(
        c.c.TABLE_SCHEMA == sa.func.database(), sa.tuple_(c.c.TABLE_NAME, c.c.COLUMN_NAME).in_(pairs),
        c.c.CHARACTER_SET_NAME.is_not(None)))
    return {r[0] for r in rows}


def postgresql_charsets(conn: sa.Connection) -> set[str]:
    return {conn.execute(sa.text("SHOW server_encoding")).scalar()}


def unstorable(text: str, charset: str, dialect: str) -> str | None:
    """The first character of `text` that `charset` cannot hold, or None (also for unknown charsets)."""
    if text.isascii():  # every character set here holds ASCII; spares a per-character check of each value
        return None
    if dialect == "postgresql":
        if charset.upper() in _PG_UNLIMITED:
            return None
        codec = {"LATIN1": "latin-1", "WIN1252": "cp1252"}.get(charset.upper(), charset.lower())
    else:
        codec = _MYSQL_CODECS.get(charset.lower())
        if codec is None:
            return None
        if charset.lower() in ("utf8", "utf8mb3"):  # three bytes at most: the Basic Multilingual Plane
            return next((ch for ch in text if ord(ch) > 0xFFFF), None)
    try:
        "".encode(codec)
    except LookupError:
        return None
    return next((ch for ch in text if not _encodes(ch, codec)), None)


def _encodes(ch: str, codec: str) -> bool:
    try:
        ch.encode(codec)
    except UnicodeEncodeError:
        return False
    return True
