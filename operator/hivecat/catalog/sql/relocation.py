"""Set-based, journaled, compare-and-set relocation over the HMS schema.

Plan: one INSERT ... SELECT per target writes (key, old value, new value) into the journal; the new
value is computed by the database from the same prefix rules as `rebase` (locations.prefix).
Apply: one UPDATE ... JOIN per (kind, chunk) moves the planned value in only where the row still holds
the planned old value (compare-and-set), marking the journal entry applied in the same statement
(MySQL multi-table UPDATE; a data-modifying CTE on PostgreSQL). Rows that changed in between stay
`planned` and are then marked `conflicted`: reported, never clobbered.
Without a chunk size the plan and every apply share one transaction: all or nothing. With one, each
chunk commits on its own and a crashed run resumes from its planned chunks.
Undo is the same statement with old and new swapped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from hivecat.catalog.journal import APPLIED, CONFLICTED, PLANNED, UNDO_CONFLICTED, UNDONE, Journal
from hivecat.catalog.model import ObjectKind
from hivecat.catalog.sql.limits import Capacity, capacity
from hivecat.catalog.sql.schema import HmsSchema
from hivecat.catalog.sql.targets import ScopeFilter, Target
from hivecat.locations.prefix import LocationPrefix, sql_match, sql_rewrite

Progress = Callable[[int, int], None]  # (chunks done, chunks total)


@dataclass(frozen=True)
class Plan:
    """What a run rewrites: the targets in scope and the tables excluded as refused."""

    targets: list[Target]
    scope: ScopeFilter
    old: LocationPrefix
    new: LocationPrefix
    param_keys: tuple[str, ...]
    excluded_tables: tuple[int, ...] = ()
    chunk_size: int | None = None
    only_tables: tuple[int, ...] | None = None  # restrict to these tables' objects (counting refusals)


def _scoped(plan: Plan, target: Target, s: HmsSchema, *, keys_selected: bool = True) -> sa.Subquery | None:
    """The target's rows in scope under the old prefix, as (key1, key2, value, tbl_id)."""
    select = target.select(s, plan.scope)
    if select is None:
        return None
    key1, key2, value, tbl_id = select.selected_columns
    conds = [sql_match(value, plan.old)]
    if target.param_keyed:
        conds.append(key2.in_(plan.param_keys) if keys_selected else key2.not_in(plan.param_keys))
    elif not keys_selected:
        return None
    if plan.excluded_tables:
        conds.append(sa.or_(tbl_id.is_(None), tbl_id.not_in(plan.excluded_tables)))
    if plan.only_tables is not None:
        conds.append(tbl_id.in_(plan.only_tables))
    return (select.where(*conds)
            .with_only_columns(key1.label("key1"), key2.label("key2"), value.label("value"), tbl_id.label("tbl_id"),
                               maintain_column_froms=True)
            .subquery())


def _chunk_of(key: sa.ColumnElement, chunk_size: int | None) -> sa.ColumnElement:
    if not chunk_size:
        return sa.literal(0)
    return (key - key % chunk_size) / chunk_size  # floor division in both dialects' integer arithmetic


def count_in_scope(conn: sa.Connection, s: HmsSchema, plan: Plan, *,
                   rewrites: bool = True) -> dict[ObjectKind, tuple[int, int]]:
    """kind -> (rows that would be rewritten, rows under the prefix left alone: unnamed param keys).

    rewrites=False counts only the second (a real run learns the first from its journal).
    """
    def count(target: Target, keys_selected: bool) -> int:
        sub = _scoped(plan, target, s, keys_selected=keys_selected)
        return 0 if sub is None else conn.execute(sa.select(sa.func.count()).select_from(sub)).scalar_one()

    counts: dict[ObjectKind, tuple[int, int]] = {}
    for target in plan.targets:
        rewrite = count(target, True) if rewrites else 0
        skip = count(target, False)
        if rewrite or skip:
            old = counts.get(target.kind, (0, 0))
            counts[target.kind] = (old[0] + rewrite, old[1] + skip)
    return counts


def sample_in_scope(conn: sa.Connection, s: HmsSchema, plan: Plan, limit: int) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for target in plan.targets:
        sub = _scoped(plan, target, s)
        if sub is None or len(pairs) >= limit:
            continue
        rows = conn.execute(sa.select(sub.c.value, sql_rewrite(sub.c.value, plan.old, plan.new))
                            .order_by(sub.c.key1, sub.c.key2).limit(limit - len(pairs)))
        pairs += [(r[0], r[1]) for r in rows]
    return pairs


def tables_in_scope(conn: sa.Connection, s: HmsSchema, plan: Plan) -> list[str]:
    """db.table of every table with a row the plan would rewrite."""
    ids: set[int] = set()
    for target in plan.targets:
        sub = _scoped(plan, target, s)
        if sub is not None:
            ids.update(r[0] for r in conn.execute(sa.select(sub.c.tbl_id).distinct()) if r[0] is not None)
    if not ids:
        return []
    t, d = s["TBLS"], s["DBS"]
    rows = conn.execute(sa.select(d.c.NAME, t.c.TBL_NAME).join(d, d.c.DB_ID == t.c.DB_ID)
                        .where(t.c.TBL_ID.in_(ids)).order_by(d.c.NAME, t.c.TBL_NAME))
    return [f"{db}.{name}" for db, name in rows]


def write_plan(conn: sa.Connection, s: HmsSchema, journal: Journal, run_id: str, plan: Plan) -> None:
    e = journal.entries
    for target in plan.targets:
        sub = _scoped(plan, target, s)
        if sub is None:
            continue
        rows = sa.select(
            sa.literal(run_id), sa.literal(target.kind.value), sub.c.key1, sub.c.key2, sub.c.tbl_id,
            _chunk_of(sub.c.key1, plan.chunk_size), sub.c.value, sql_rewrite(sub.c.value, plan.old, plan.new),
            sa.literal(PLANNED),
        )
        conn.execute(e.insert().from_select(
            ["run_id", "kind", "key1", "key2", "tbl_id", "chunk", "old_value", "new_value", "state"], rows))


@dataclass(frozen=True)
class TooLong:
    """A row whose rewritten value would not fit its column."""

    target: Target
    key1: int
    tbl_id: int | None
    old_value: str
    new_length: int
    limit: Capacity


def too_long(conn: sa.Connection, s: HmsSchema, plan: Plan, limit: int) -> list[TooLong]:
    """Up to `limit` rows in scope whose new value exceeds its column's capacity (read from the schema)."""
    found: list[TooLong] = []
    for target in plan.targets:
        cap = capacity(target.base.c[target.value], conn.dialect.name)
        sub = _scoped(plan, target, s)
        if cap is None or sub is None or len(found) >= limit:
            continue
        new_length = cap.length(sql_rewrite(sub.c.value, plan.old, plan.new))
        rows = conn.execute(sa.select(sub.c.key1, sub.c.tbl_id, sub.c.value, new_length)
                            .where(new_length > cap.limit).order_by(sub.c.key1, sub.c.key2).limit(limit - len(found)))
        found += [TooLong(target, int(r[0]), r[1], r[2], int(r[3]), cap) for r in rows]
    return found


def one_target_per_kind(targets: list[Target]) -> dict[ObjectKind, Target]:
    """Apply and undo need one target per kind: they join its base table to journal entries by key,
    whichever owner path (table or partition) planned them."""
    return {t.kind: t for t in targets}


def swap(conn: sa.Connection, journal: Journal, target: Target, run_id: str, chunk: int | None, *,
         undo: bool = False) -> None:
    """Move journal values into the base table where it still holds the expected value.

    Forward: expects old_value, writes new_value, planned -> applied (leftovers: conflicted).
    Undo: expects new_value, writes old_value, applied -> undone (leftovers: undo-conflicted).
    A value that would not fit its column is never written (relocate refuses such runs up front; this
    covers a row that grew between that check and the plan): it stays behind as a leftover.
    """
    e, b = journal.entries, target.base
    expect, write = (e.c.new_value, e.c.old_value) if undo else (e.c.old_value, e.c.new_value)
    from_state, to_state, leftover = (APPLIED, UNDONE, UNDO_CONFLICTED) if undo else (PLANNED, APPLIED, CONFLICTED)
    current = b.c[target.value]
    selected = [e.c.run_id == run_id, e.c.kind == target.kind.value, e.c.state == from_state,
                e.c.key1 == b.c[target.key1]]
    if target.key2:
        selected.append(e.c.key2 == sa.cast(b.c[target.key2], sa.String(256)))
    if chunk is not None:
        selected.append(e.c.chunk == chunk)
    cap = capacity(current, conn.dialect.name)
    if cap is not None:
        selected.append(cap.fits(write))

    if conn.dialect.name == "postgresql":
        moved = (sa.update(b).where(*selected, current == expect).values({current: write})
                 .returning(e.c.key1, e.c.key2).cte("moved"))
        conn.execute(sa.update(e).where(e.c.run_id == run_id, e.c.kind == target.kind.value,
                                        e.c.key1 == moved.c.key1, e.c.key2 == moved.c.key2)
                     .values(state=to_state).add_cte(moved))
    else:
        # Byte-exact compare: MySQL collations fold case and ignore trailing spaces.
        same = sa.cast(current, sa.LargeBinary) == sa.cast(expect, sa.LargeBinary)
        conn.execute(sa.update(b).where(*selected, same).values({current: write, e.c.state: to_state}))

    leftovers = [e.c.run_id == run_id, e.c.kind == target.kind.value, e.c.state == from_state]
    if chunk is not None:
        leftovers.append(e.c.chunk == chunk)
    conn.execute(sa.update(e).where(*leftovers).values(state=leftover))
