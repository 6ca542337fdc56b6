"""The metastore's notification messages, built by the database itself (MySQL/MariaDB, PostgreSQL).

A message is what Hive's JSONMessageFactory (2.3, 3.1) or JSONMessageEncoder (4.x) writes for an alter, format
`json-0.2`: a JSON object whose `*ObjJson` fields hold Thrift objects in Thrift's TJSONProtocol (field ids as
keys, typed values), as strings. Hive's JSONMessageDeserializer reads them back into Partition, Table and
Database objects. Built in SQL so that a million partitions never travel to Python and back.

The objects are the smallest that deserialize into what a reader acts on: names, the partition's values, the
storage location, the rewritten parameters (and transient_lastDdlTime). Columns, formats and privileges are not
carried: a reader that needs them fetches the object, as Impala and Hive's REPL do for an alter.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Sequence

import sqlalchemy as sa

JSON_FORMAT = "json-0.2"  # JSONMessageFactory.MESSAGE_FORMAT, JSONMessageEncoder.FORMAT
GZIP_FORMAT = "gzip(json-2.0)"  # GzipJSONMessageEncoder.FORMAT (Hive 4's default): base64 of gzipped JSON
FORMATS = (JSON_FORMAT, GZIP_FORMAT)


def gzip_message(message: str) -> str:
    """A JSON message as GzipJSONMessageEncoder's serializer writes it."""
    return base64.b64encode(gzip.compress(message.encode(), compresslevel=6, mtime=0)).decode("ascii")

Text = sa.ColumnElement[str]


class Json:
    """JSON and TJSON text as SQL expressions of one dialect. Every field helper is NULL when its value is
    NULL, and `obj`/`join` skip NULL parts (CONCAT_WS does on both servers), so absent fields simply vanish."""

    def __init__(self, dialect: str) -> None:
        self.postgres = dialect == "postgresql"

    def quote(self, value: sa.ColumnElement) -> Text:
        """A JSON string literal of `value` (quotes, backslashes and control characters escaped); NULL stays
        NULL."""
        if self.postgres:
            return sa.cast(sa.func.to_json(sa.cast(value, sa.Text)), sa.Text)
        return sa.func.json_quote(value)

    def concat(self, *parts: sa.ColumnElement | str) -> Text:
        return sa.func.concat(*(sa.literal(p, sa.Text) if isinstance(p, str) else p for p in parts))

    def join(self, parts: Sequence[sa.ColumnElement | str]) -> Text:
        """Non-NULL parts joined by commas ('' for no parts: CONCAT_WS needs one)."""
        if not parts:
            return sa.literal("", sa.Text)
        return sa.func.concat_ws(",", *(sa.literal(p, sa.Text) if isinstance(p, str) else p for p in parts))

    def obj(self, parts: Sequence[sa.ColumnElement | str]) -> Text:
        return self.concat("{", self.join(parts), "}")

    def unless_null(self, value: sa.ColumnElement, text: Text) -> Text:
        return sa.case((value.is_(None), sa.null()), else_=text)

    def member(self, name: str, value: sa.ColumnElement) -> Text:
        """`"name":"value"` of a JSON object."""
        return self.concat(f'"{name}":', self.quote(value))

    def number(self, value: sa.ColumnElement) -> Text:
        return sa.cast(value, sa.String(20))

    # --- TJSONProtocol fields ----------------------------------------------------------------------------

    def t_str(self, field: int, value: sa.ColumnElement) -> Text:
        return self.unless_null(value, self.concat(f'"{field}":{{"str":', self.quote(value), "}"))

    def t_i32(self, field: int, value: sa.ColumnElement) -> Text:
        return self.unless_null(value, self.concat(f'"{field}":{{"i32":', self.number(value), "}"))

    def t_rec(self, field: int, parts: Sequence[sa.ColumnElement | str]) -> Text:
        return self.concat(f'"{field}":{{"rec":', self.obj(parts), "}")

    def t_str_map(self, field: int, count: sa.ColumnElement, pairs: Text) -> Text:
        """`"id":{"map":["str","str",count,{pairs}]}`; pairs: `"k":"v",...` already quoted."""
        return self.concat(f'"{field}":{{"map":["str","str",', self.number(count), ",{", pairs, "}]}")

    def t_list(self, field: int, element: str, count: sa.ColumnElement, items: Text) -> Text:
        """`"id":{"lst":["element",count,items]}`."""
        return self.concat(f'"{field}":{{"lst":["{element}",', self.number(count),
                           sa.case((count > 0, self.concat(",", items)), else_=sa.literal("", sa.Text)), "]}")

    def pair(self, key: sa.ColumnElement, value: sa.ColumnElement) -> Text:
        return self.concat(self.quote(key), ":", self.quote(sa.func.coalesce(value, "")))

    def aggregate(self, value: Text) -> Text:
        """The non-NULL values of a group joined by commas ('' when none)."""
        return sa.func.coalesce(sa.func.aggregate_strings(value, ","), sa.literal("", sa.Text))
