"""How long a value each location column can hold, read from the detected column types (never constants).

A rewrite that makes a value longer than its column holds must be refused before any write: PostgreSQL
and strict MariaDB would fail mid-run, and MariaDB in non-strict mode silently truncates.
VARCHAR(n) counts characters on both dialects; MySQL's TEXT family counts bytes (checked on the value's
UTF-8 form, which is never shorter than its latin1 form, so the check errs on the safe side); PostgreSQL
TEXT and unbounded VARCHAR have no limit worth checking.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from hivecat.locations.prefix import exact_text

# Byte capacities of MySQL/MariaDB's TEXT types; TEXT itself is checked last, as its subclasses differ.
_MYSQL_TEXT_BYTES: tuple[tuple[type, int], ...] = (
    (mysql.TINYTEXT, 2**8 - 1), (mysql.MEDIUMTEXT, 2**24 - 1), (mysql.LONGTEXT, 2**32 - 1), (sa.Text, 2**16 - 1),
)


@dataclass(frozen=True)
class Capacity:
    limit: int
    unit: str  # characters | bytes

    def length(self, value: sa.ColumnElement[str]) -> sa.ColumnElement[int]:
        """SQL length of `value` in this capacity's unit."""
        if self.unit == "bytes":
            return sa.func.octet_length(exact_text(value))  # its UTF-8 bytes on MySQL
        return sa.func.char_length(value)

    def fits(self, value: sa.ColumnElement[str]) -> sa.ColumnElement[bool]:
        return self.length(value) <= self.limit


def capacity(column: sa.Column, dialect: str) -> Capacity | None:
    """What `column` holds, or None when there is no practical limit."""
    type_ = column.type
    if dialect != "postgresql":
        for text_type, limit in _MYSQL_TEXT_BYTES:
            if isinstance(type_, text_type):
                return Capacity(limit, "bytes")
    if isinstance(type_, sa.String) and not isinstance(type_, sa.Text) and type_.length:
        return Capacity(type_.length, "characters")
    return None
