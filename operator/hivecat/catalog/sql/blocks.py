"""Journal blocks (their format: journal.py) written and unpacked on MySQL/MariaDB.

Blocks are written by one INSERT ... SELECT with GROUP_CONCAT of JSON_QUOTEd values. Whatever needs entries one
by one (undo, the fallback to planned keys, naming the values too long for their column) first unpacks them
into entries (unpack, same transaction): with the server's JSON_TABLE where it has one (MariaDB 10.6, MySQL
8.0.4), set-based as they were packed, else in Python (parse_block; also blocks in the earlier format).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import Join

from hivecat.catalog.journal import (APPLIED, BLOCK_KEYS, JSON_BLOCK_OPEN, Journal, kind_code, kind_of, parse_block,
                                     state_code)
from hivecat.catalog.model import ObjectKind, Refusal, RelocationRefused

DAMAGED = "journal-block-damaged"
CUT = "journal-block-cut"  # a block the server cut to group_concat_max_len while it was written
# The errors JSON_TABLE raises for an entry of the wrong shape (ERROR ON EMPTY / ERROR ON ERROR): MariaDB's
# ER_JSON_TABLE_ERROR_ON_FIELD, MySQL's ER_MISSING_JSON_TABLE_VALUE and ER_WRONG_JSON_TABLE_VALUE.
_JSON_TABLE_ERRORS = frozenset({4176, 3665, 3666})


def write_blocks(conn: sa.Connection, journal: Journal, run_id: str, kind: ObjectKind, sub: sa.Subquery,
                 longest: sa.ColumnElement[int] | None) -> int:
    """One INSERT ... SELECT of the rows of `sub` (key1, key2, tbl_id, value) grouped into blocks, each with its
    longest new value when given (the column's capacity is checked: too_long_planned); the entries written."""
    b, run_no = journal.blocks, journal.run_no(conn, run_id)
    tbl = sa.func.coalesce(sub.c.tbl_id, 0)
    block = sub.c.key1.op("DIV")(BLOCK_KEYS)  # integer division (FLOOR of a DECIMAL quotient costs a second per 1M)
    entry = sa.func.concat("[", sub.c.key1, ",", sa.func.json_quote(sub.c.key2), ",", sa.func.json_quote(sub.c.value),
                           "]")
    rows = (sa.select(sa.literal(run_no), sa.literal(kind_code(kind)), tbl, block, sa.func.count(),
                      sa.func.concat(JSON_BLOCK_OPEN, sa.func.aggregate_strings(entry, ","), "]"),
                      sa.null() if longest is None else longest)
            .group_by(tbl, block).order_by(sa.null()))  # MariaDB sorts groups unless told not to
    # MariaDB caps an aggregate at group_concat_max_len (1 MiB by default), cutting it with warning 1260: lifted
    # for this statement, and any cut refused all the same (it would lose old values).
    limit = conn.execute(sa.text("SELECT @@SESSION.group_concat_max_len")).scalar_one()
    conn.execute(sa.text("SET SESSION group_concat_max_len = 4294967295"))
    try:
        conn.execute(b.insert().from_select(["run_no", "kind", "tbl_id", "block", "entries", "payload", "longest"],
                                            rows))
        cut = [w for w in conn.execute(sa.text("SHOW WARNINGS")) if int(w[1]) == 1260]
    finally:
        conn.execute(sa.text(f"SET SESSION group_concat_max_len = {int(limit)}"))
    if cut:  # raising rolls the run back
        raise RelocationRefused([Refusal(CUT, (
            f"{kind.value}: the server cut a journal block ({cut[0][2]}); the run was rolled back and changed "
            "nothing"))])
    entries = conn.execute(sa.select(sa.func.coalesce(sa.func.sum(b.c.entries), 0))
                           .where(b.c.run_no == run_no, b.c.kind == kind_code(kind))).scalar_one()
    return int(entries)


def _damaged(run_id: str, detail: str) -> RelocationRefused:
    return RelocationRefused([Refusal(DAMAGED, f"run {run_id}: {detail}; nothing was changed")])


def _is_json(payload: sa.ColumnElement[str]) -> sa.ColumnElement[bool]:
    return sa.func.left(payload, 1) == JSON_BLOCK_OPEN


def has_json_table(dialect: sa.Dialect) -> bool:
    """Whether the server unpacks JSON blocks itself (JSON_TABLE: MariaDB 10.6, MySQL 8.0.4)."""
    version = tuple(dialect.server_version_info or ())
    return dialect.name in ("mysql", "mariadb") and version >= ((10, 6) if dialect.is_mariadb else (8, 0, 4))


def unpack(conn: sa.Connection, journal: Journal, run_id: str, state: str = APPLIED) -> dict[ObjectKind, int]:
    """Turn the run's blocks into one entry each, in `state` (their entries were all applied: undo unpacks them
    as undone, then marks those it could not undo); entries per kind. A damaged block refuses (the caller's
    transaction rolls back)."""
    if not journal.can_pack():
        return {}  # blocks are MySQL/MariaDB's
    b, run_no = journal.blocks, journal.run_no(conn, run_id)
    counts: dict[ObjectKind, int] = {}
    json_blocks = _is_json(b.c.payload)
    rest = sa.true()
    if has_json_table(conn.dialect):
        whole = sa.func.coalesce(sa.func.json_length(b.c.payload) == b.c.entries, False)  # NULL: not JSON
        bad_ones = sa.func.coalesce(sa.func.sum(sa.case((whole, 0), else_=1)), 0)
        found, bad = conn.execute(sa.select(sa.func.count(), bad_ones).where(b.c.run_no == run_no, json_blocks)).one()
        if bad:
            raise _damaged(run_id, f"{bad} journal block(s) do not hold the entries they count")
        if found:
            counts = _unpack_on_server(conn, journal, run_id, run_no, state)
            rest = ~json_blocks
    for kind, n in _unpack_in_python(conn, journal, run_id, run_no, state, rest).items():
        counts[kind] = counts.get(kind, 0) + n
    conn.execute(b.delete().where(b.c.run_no == run_no))
    return counts


def _unpack_on_server(conn: sa.Connection, journal: Journal, run_id: str, run_no: int,
                      state: str) -> dict[ObjectKind, int]:
    """JSON_TABLE over every JSON block of the run, one INSERT ... SELECT; entries per kind, checked against
    what the blocks count. JSON_TABLE converts a value of another type rather than refuse it, so an entry whose
    key is not of its block, or with a fourth element, is left out: its block then falls short of its count."""
    b, e, table = journal.blocks, journal.entries, conn.dialect.identifier_preparer.format_table
    insert = sa.text(
        f"INSERT INTO {table(e)} (run_no, kind, key1, key2, tbl_id, old_value, state) "
        "SELECT b.run_no, b.kind, j.key1, j.key2, NULLIF(b.tbl_id, 0), j.old_value, :state "
        f"FROM {table(b)} AS b, JSON_TABLE(b.payload, '$[*]' COLUMNS ("
        "key1 BIGINT PATH '$[0]' ERROR ON EMPTY ERROR ON ERROR, "
        "key2 VARCHAR(256) CHARACTER SET utf8mb4 PATH '$[1]' ERROR ON EMPTY ERROR ON ERROR, "
        "old_value LONGTEXT CHARACTER SET utf8mb4 PATH '$[2]' ERROR ON EMPTY ERROR ON ERROR, "
        "extra INT EXISTS PATH '$[3]')) AS j "
        f"WHERE b.run_no = :run_no AND LEFT(b.payload, 1) = :json_open AND j.key1 DIV {BLOCK_KEYS} = b.block "
        "AND j.extra = 0")
    try:
        written = conn.execute(insert, {"state": state_code(state), "run_no": run_no, "json_open": JSON_BLOCK_OPEN},
                               execution_options={"preserve_rowcount": True}).rowcount
    except sa.exc.DBAPIError as error:
        code = error.orig.args[0] if error.orig is not None and error.orig.args else None
        if code in _JSON_TABLE_ERRORS:
            raise _damaged(run_id, "a journal block holds an entry of another shape") from None
        raise
    expected = dict(conn.execute(sa.select(b.c.kind, sa.func.sum(b.c.entries)).where(
        b.c.run_no == run_no, _is_json(b.c.payload)).group_by(b.c.kind)).all())
    if written != sum(int(n) for n in expected.values()):
        raise _damaged(run_id, f"its journal blocks unpack to {written} entries, not {sum(expected.values())}")
    return {kind_of(k): int(n) for k, n in expected.items()}


def _unpack_in_python(conn: sa.Connection, journal: Journal, run_id: str, run_no: int, state: str,
                      which: sa.ColumnElement[bool]) -> dict[ObjectKind, int]:
    """The blocks `which` parsed here, some 16k entries at a time; entries per kind."""
    b = journal.blocks
    keys = conn.execute(sa.select(b.c.kind, b.c.tbl_id, b.c.block).where(b.c.run_no == run_no, which)
                        .order_by(b.c.kind, b.c.tbl_id, b.c.block)).all()
    counts: dict[ObjectKind, int] = {}
    for start in range(0, len(keys), 64):
        batch = keys[start:start + 64]
        rows = conn.execute(sa.select(b.c.kind, b.c.tbl_id, b.c.entries, b.c.payload).where(
            b.c.run_no == run_no, sa.tuple_(b.c.kind, b.c.tbl_id, b.c.block).in_([tuple(k) for k in batch])))
        entries = []
        for kind, tbl_id, count, payload in rows:
            try:
                parsed = parse_block(payload)
            except ValueError:
                parsed = []
            if len(parsed) != count:  # raising rolls the caller's transaction back
                raise _damaged(run_id, f"a journal block holds {len(parsed)} entries, not {count}")
            entries += [{"run_no": run_no, "kind": kind, "key1": key1, "key2": key2, "tbl_id": tbl_id or None,
                         "old_value": old, "state": state_code(state)} for key1, key2, old in parsed]
            counts[kind_of(kind)] = counts.get(kind_of(kind), 0) + count
        if entries:
            conn.execute(journal.entries.insert(), entries)
    return counts


class StraightJoin(Join):
    """`left STRAIGHT_JOIN right ON ...` (MySQL/MariaDB): the join order as written. A multi-table UPDATE writes
    the first table of its join order as it goes, any other through a temporary table of every changed row
    (on disk when a value is text): 13.9 s instead of 4.2 s for 1M storage descriptors undone."""

    inherit_cache = True


@compiles(StraightJoin, "mysql")
def _straight_join(element: StraightJoin, compiler, **kw) -> str:
    kw["asfrom"] = True
    return (f"{compiler.process(element.left, **kw)} STRAIGHT_JOIN {compiler.process(element.right, **kw)} "
            f"ON {compiler.process(element.onclause, **kw)}")
