"""Set-based, journaled, compare-and-set relocation over the HMS schema.

Plan: one INSERT ... SELECT per target writes (key, old value) into the journal; the new value is computed by
the database from the same prefix rules as `rebase` (locations.prefix) whenever it is needed.
Apply: one UPDATE ... JOIN per (kind, chunk) moves the planned value in only where the row still holds
the planned old value (compare-and-set), marking the journal entry applied in the same statement
(MySQL multi-table UPDATE; a data-modifying CTE on PostgreSQL). Rows that changed in between stay
`planned` and are then marked `conflicted`: reported, never clobbered.
Without a chunk size the plan and every apply share one transaction: all or nothing. With one, each
chunk commits on its own and a crashed run resumes from its planned chunks.
MySQL/MariaDB without a chunk size take a faster path: at REPEATABLE READ the plan's INSERT ... SELECT
holds shared locks on the rows it read until commit, so single-table UPDATEs replace the join — of every
row under the old prefix when the plan is unrestricted (rewrite_matching), else of the planned keys
(rewrite_planned) — entries are journaled as applied up front (packed into blocks when the plan is
unrestricted: packable), and any count that differs from the plan rolls the run back.
Undo is the same statement with old and new swapped; a packed run's entries are unpacked as undone and only
the base table is written (swap_applied), its leftovers then marked undo-conflicted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field

import sqlalchemy as sa

from hivecat.catalog.journal import (
    APPLIED, CONFLICTED, PLANNED, UNDO_CONFLICTED, UNDONE, Journal, kind_code, state_code,
)
from hivecat.catalog.model import ObjectKind
from hivecat.catalog.sql.blocks import StraightJoin, unpack, write_blocks
from hivecat.catalog.sql.limits import Capacity, capacity
from hivecat.catalog.sql.schema import HmsSchema
from hivecat.catalog.sql.targets import ScopeFilter, Target
from hivecat.locations.prefix import LocationPrefix, exact_text, rebase, sql_match, sql_rewrite

SMALL_PLAN = 1000  # up to this many planned rows of a kind, the fast path names their keys in its UPDATE


@dataclass(frozen=True)
class RelocationPlan:
    """What a run rewrites: the targets in scope and the tables excluded as refused."""

    targets: list[Target]
    scope: ScopeFilter
    old: LocationPrefix
    new: LocationPrefix
    param_keys: tuple[str, ...]
    excluded_tables: tuple[int, ...] = ()
    chunk_size: int | None = None
    only_tables: tuple[int, ...] | None = None  # restrict to these tables' objects (counting refusals)
    expected: tuple[str, ...] | None = None  # RelocationRequest.expected_locations
    # parameter table -> (a caller-named key, an unnamed key) under the old prefix, once known; see params_under
    params_seen: dict[str, Future[tuple[bool, bool]]] = field(default_factory=dict, compare=False, repr=False)
    params_lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)


def _scoped(plan: RelocationPlan, target: Target, s: HmsSchema, *, keys_selected: bool = True) -> sa.Subquery | None:
    """The target's rows in scope under the old prefix, as (key1, key2, value, tbl_id)."""
    select = target.select(s, plan.scope)
    if select is None:
        return None
    key1, key2, value, tbl_id = select.selected_columns
    conds = []
    if target.param_keyed:  # the cheap key test first: most parameters are not locations
        conds.append(key2.in_(plan.param_keys) if keys_selected else key2.not_in(plan.param_keys))
    elif not keys_selected:
        return None
    conds.append(sql_match(value, plan.old))
    if plan.excluded_tables:
        conds.append(sa.or_(tbl_id.is_(None), tbl_id.not_in(plan.excluded_tables)))
    if plan.only_tables is not None:
        conds.append(tbl_id.in_(plan.only_tables))
    if plan.expected is not None:  # byte for byte: MySQL's collations fold case, and HDFS paths do not
        conds.append(exact_text(value).in_([exact_text(sa.literal(v)) for v in plan.expected]) if plan.expected
                     else sa.false())
    return (select.where(*conds)
            .with_only_columns(key1.label("key1"), key2.label("key2"), value.label("value"), tbl_id.label("tbl_id"),
                               maintain_column_froms=True)
            .subquery())


def _spellings(old: LocationPrefix, new: LocationPrefix) -> list[tuple[str, str | None]]:
    """(each spelling of the old prefix, what rebase makes of it): how a matched value changes."""
    spellings = ["".join(piece.text for piece in pattern) for pattern in old.patterns()]
    return [(spelling, rebase(spelling, old, new)) for spelling in spellings]


def _rewritten(value: sa.ColumnElement[str], plan: RelocationPlan | Moves) -> sa.ColumnElement[str]:
    """The new value of a row already known to match the old prefix: with one spelling, a plain
    CONCAT (no second evaluation of the match, as sql_rewrite's CASE does)."""
    spellings = _spellings(plan.old, plan.new)
    if len(spellings) == 1 and spellings[0][1] is not None:
        spelling, replacement = spellings[0]
        return sa.func.concat(sa.literal(replacement), sa.func.substring(value, len(spelling) + 1))
    return sql_rewrite(value, plan.old, plan.new)


@dataclass(frozen=True)
class Moves:
    """A journaled run's prefixes: all that is needed to recompute its entries' new values."""

    old: LocationPrefix
    new: LocationPrefix


def changes(conn: sa.Connection, journal: Journal, run_id: str, state: str, moves: RelocationPlan | Moves,
            kinds: Iterable[ObjectKind], *, undo: bool = False, chunk: tuple[int, int] | None = None) -> sa.Subquery:
    """(kind, key1, key2, before, after) of every row of `kinds` the run's transaction moved: its entries now in
    `state` (of one chunk), and the rows of its packed plan (journal.touched). Read per kind, by primary key."""
    e, t, run_no = journal.entries, journal.touched, journal.run_no(conn, run_id)
    codes = [kind_code(kind) for kind in kinds]
    forward = (e.c.old_value, new_value(e, moves))
    before, after = forward[::-1] if undo else forward
    where = [e.c.run_no == run_no, e.c.kind.in_(codes), e.c.state == state_code(state)]
    if chunk is not None:
        where += journal.key_range(*chunk)
    entries = sa.select(e.c.kind, e.c.key1, e.c.key2, before.label("before"), after.label("after")).where(*where)
    staged = sa.select(t.c.kind, t.c.key1, t.c.key2, t.c.old_value, _rewritten(t.c.old_value, moves)
                       ).where(t.c.run_no == run_no, t.c.kind.in_(codes))
    return sa.union_all(entries, staged).subquery("src")


def new_value(e: sa.Table, moves: RelocationPlan | Moves) -> sa.ColumnElement[str]:
    """An entry's new value: recomputed from its old one (the journal stores it no more), or as stored by
    journals written before that."""
    return sa.func.coalesce(e.c.new_value, _rewritten(e.c.old_value, moves))


def can_grow(plan: RelocationPlan, cap: Capacity) -> bool:
    """Whether a rewrite can make a value longer in `cap`'s unit (a new prefix no longer than every
    spelling of the old one cannot)."""
    def size(text: str) -> int:
        return len(text.encode()) if cap.unit == "bytes" else len(text)
    return any(new is None or size(new) > size(old) for old, new in _spellings(plan.old, plan.new))


def params_under(conn: sa.Connection, target: Target, plan: RelocationPlan) -> tuple[bool, bool]:
    """Whether the parameter table of `target` holds any caller-named key, and any other key, with a
    value under the old prefix, whoever owns it. Usually neither: one scan of that table alone says so
    (remembered in the plan), sparing the owner joins of the count and of the plan, and the shared
    locks a plan's INSERT ... SELECT would take on every parameter row it reads.
    Thread-safe: a caller asking while another thread scans that table waits for its answer (a run scans
    them on a second connection while it plans, see SqlCatalog._execute)."""
    name = target.base.name
    with plan.params_lock:
        seen = plan.params_seen.get(name)
        mine = seen is None
        if mine:
            seen = plan.params_seen[name] = Future()
    if mine:
        try:
            b = target.base
            named = sa.cast(b.c[target.key2], sa.String(256)).in_(plan.param_keys)
            row = conn.execute(sa.select(sa.func.max(sa.case((named, 1), else_=0)),
                                         sa.func.max(sa.case((named, 0), else_=1)))
                               .where(sql_match(b.c[target.value], plan.old))).one()
            seen.set_result((bool(row[0]), bool(row[1])))
        except BaseException as exc:
            seen.set_exception(exc)
            raise
    return seen.result()


def count_in_scope(conn: sa.Connection, s: HmsSchema, plan: RelocationPlan, *,
                   rewrites: bool = True) -> dict[ObjectKind, tuple[int, int]]:
    """kind -> (rows that would be rewritten, rows under the prefix left alone: unnamed param keys).

    rewrites=False counts only the second (a real run learns the first from its journal).
    """
    def count(target: Target, keys_selected: bool) -> int:
        sub = _scoped(plan, target, s, keys_selected=keys_selected)
        if sub is None:
            return 0
        if not keys_selected and not params_under(conn, target, plan)[1]:
            return 0
        return conn.execute(sa.select(sa.func.count()).select_from(sub)).scalar_one()

    counts: dict[ObjectKind, tuple[int, int]] = {}
    for target in plan.targets:
        rewrite = count(target, True) if rewrites else 0
        skip = count(target, False)
        if rewrite or skip:
            old = counts.get(target.kind, (0, 0))
            counts[target.kind] = (old[0] + rewrite, old[1] + skip)
    return counts


def sample_in_scope(conn: sa.Connection, s: HmsSchema, plan: RelocationPlan, limit: int) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for target in plan.targets:
        sub = _scoped(plan, target, s)
        if sub is None or len(pairs) >= limit:
            continue
        rows = conn.execute(sa.select(sub.c.value, sql_rewrite(sub.c.value, plan.old, plan.new))
                            .order_by(sub.c.key1, sub.c.key2).limit(limit - len(pairs)))
        pairs += [(r[0], r[1]) for r in rows]
    return pairs


def tables_in_scope(conn: sa.Connection, s: HmsSchema, plan: RelocationPlan) -> list[str]:
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


def write_plan(conn: sa.Connection, s: HmsSchema, journal: Journal, run_id: str, plan: RelocationPlan,
               state: str = PLANNED, packed: frozenset[ObjectKind] = frozenset(),
               stage_packed: bool = False) -> dict[ObjectKind, int]:
    """Journal every row in scope as (key, old value) in `state`; entries written per kind. Kinds in `packed`
    are written as blocks (see journal.py: applied entries only, MySQL/MariaDB), and with stage_packed also
    as rows of journal.touched, for the run's notification events."""
    e = journal.entries
    written: dict[ObjectKind, int] = {}
    for target in plan.targets:
        sub = _scoped(plan, target, s)
        if sub is None:
            continue
        if target.param_keyed and not params_under(conn, target, plan)[0]:
            continue  # nothing to plan (a plain read: a row written from now on is the next run's)
        if target.kind in packed:
            cap = checked_capacity(target, plan, conn.dialect.name)
            longest = None if cap is None else sa.func.max(cap.length(_rewritten(sub.c.value, plan)))
            written[target.kind] = written.get(target.kind, 0) + write_blocks(conn, journal, run_id, target.kind, sub,
                                                                               longest)
            if stage_packed:
                conn.execute(journal.touched.insert().from_select(
                    ["run_no", "kind", "key1", "key2", "old_value"],
                    sa.select(sa.literal(journal.run_no(conn, run_id)), sa.literal(kind_code(target.kind)),
                              sub.c.key1, sub.c.key2, sub.c.value)))
            continue
        rows = sa.select(
            sa.literal(journal.run_no(conn, run_id)), sa.literal(kind_code(target.kind)), sub.c.key1, sub.c.key2,
            sub.c.tbl_id, sub.c.value, sa.literal(state_code(state)),
        )
        # Only what undo needs: the old value (the new one is recomputed, see new_value); a chunk is a key range.
        # preserve_rowcount: SQLAlchemy keeps an INSERT's count only when asked (psycopg's reads -1 otherwise)
        result = conn.execute(e.insert().from_select(
            ["run_no", "kind", "key1", "key2", "tbl_id", "old_value", "state"], rows),
            execution_options={"preserve_rowcount": True})
        written[target.kind] = written.get(target.kind, 0) + result.rowcount
    return written


def packable(plan: RelocationPlan) -> frozenset[ObjectKind]:
    """The kinds a locked run over the whole catalog journals as blocks: those of one target (a block's key
    is the kind's, so two owner paths of one kind could collide), not parameters (few, and rewritten by
    planned keys, read from entries)."""
    if not unrestricted(plan):
        return frozenset()  # a restricted run rewrites by planned keys, read from entries
    targets: dict[ObjectKind, list[Target]] = {}
    for target in plan.targets:
        targets.setdefault(target.kind, []).append(target)
    return frozenset(kind for kind, of_kind in targets.items() if len(of_kind) == 1 and not of_kind[0].param_keyed)


@dataclass(frozen=True)
class TooLong:
    """A row whose rewritten value would not fit its column."""

    target: Target
    key1: int
    tbl_id: int | None
    old_value: str
    new_length: int
    limit: Capacity


def too_long(conn: sa.Connection, s: HmsSchema, plan: RelocationPlan, limit: int) -> list[TooLong]:
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


def checked_capacity(target: Target, plan: RelocationPlan, dialect: str) -> Capacity | None:
    """The capacity a run checks its planned new values of `target` against, or None when none can exceed it.
    MySQL's byte-counted TEXT columns are checked even when nothing grows: the check measures UTF-8."""
    cap = capacity(target.base.c[target.value], dialect)
    if cap is None or (cap.unit == "characters" and not can_grow(plan, cap)):
        return None
    return cap


def too_long_planned(conn: sa.Connection, journal: Journal, plan: RelocationPlan, run_id: str, limit: int) -> list[TooLong]:
    """too_long, read from a run's journal entries right after its plan (same transaction): one pass
    over values already rewritten instead of recomputing every rewrite over the scope."""
    e, b, found = journal.entries, journal.blocks, []
    run_no = journal.run_no(conn, run_id)
    for target in one_target_per_kind(plan.targets).values():
        cap = checked_capacity(target, plan, conn.dialect.name)
        if cap is None or len(found) >= limit:
            continue
        if conn.execute(sa.select(b.c.block).where(b.c.run_no == run_no, b.c.kind == kind_code(target.kind),
                                                   b.c.longest > cap.limit).limit(1)).first() is not None:
            unpack(conn, journal, run_id)  # a refused run: rolled back, so unpacking costs nothing that stays
        new_length = cap.length(_rewritten(e.c.old_value, plan))
        rows = conn.execute(sa.select(e.c.key1, e.c.tbl_id, e.c.old_value, new_length)
                            .where(e.c.run_no == run_no, e.c.kind == kind_code(target.kind),
                                   new_length > cap.limit)
                            .order_by(e.c.key1, e.c.key2).limit(limit - len(found)))
        found += [TooLong(target, int(r[0]), r[1], r[2], int(r[3]), cap) for r in rows]
    return found


def rewrite_planned(conn: sa.Connection, journal: Journal, target: Target, run_id: str, plan: RelocationPlan,
                    planned: int) -> int:
    """The one-transaction fast path (MySQL/MariaDB at REPEATABLE READ): rewrite exactly the `planned`
    rows of the target's kind with a single-table UPDATE; returns how many rows it matched.

    No compare-and-set join is needed (MariaDB runs a multi-table UPDATE in two passes, ~5x slower): the
    plan's INSERT ... SELECT took shared locks on every row it read, held until commit, so a planned row
    still holds its planned old value here. The match (and, when values grow, the capacity test) stay
    in the WHERE clause as a second guard; the caller requires the count to equal `planned` and rolls the
    whole run back otherwise.
    """
    e, b = journal.entries, target.base
    current = b.c[target.value]
    keys: list[sa.ColumnElement] = [b.c[target.key1]]
    planned_keys = sa.select(e.c.key1).where(e.c.run_no == journal.run_no(conn, run_id),
                                             e.c.kind == kind_code(target.kind))
    if target.key2:
        keys.append(sa.cast(b.c[target.key2], sa.String(256)))
        planned_keys = planned_keys.add_columns(e.c.key2)
    if planned <= SMALL_PLAN:  # literal keys: an index range, not a scan of the whole table
        planned_keys = [tuple(r) if target.key2 else r[0] for r in conn.execute(planned_keys)]
    conds = [(sa.tuple_(*keys) if target.key2 else keys[0]).in_(planned_keys), sql_match(current, plan.old)]
    cap = capacity(current, conn.dialect.name)
    if cap is not None and can_grow(plan, cap):
        conds.append(cap.fits(_rewritten(current, plan)))
    return conn.execute(sa.update(b).where(*conds).values({current: _rewritten(current, plan)})).rowcount


def unrestricted(plan: RelocationPlan) -> bool:
    """Whether the plan takes every row under the old prefix its targets reach: the whole catalog, no
    partition filter, no table excluded."""
    return (plan.scope.whole_catalog and plan.scope.partition_predicate is None and not plan.excluded_tables
            and plan.only_tables is None and plan.expected is None)


def rewrite_matching(conn: sa.Connection, target: Target, plan: RelocationPlan, planned: int) -> bool:
    """The fast path's cheaper apply for an unrestricted plan: one UPDATE of every row of the target's column
    under the old prefix (the bare UPDATE a DBA would write: no join to the journal), kept only when it
    rewrote exactly `planned` rows, the planned rows of every kind kept in that column. Else it is rolled back
    to a savepoint and False returned (rows the plan left alone: a storage descriptor no table or partition
    owns, another HMS catalog's); the caller then rewrites by planned keys.

    Exact: the plan's shared locks keep each planned row at its planned value, so every planned row matches
    here and gets the journaled new value; a count equal to the plan's leaves no room for any other row.
    """
    current = target.base.c[target.value]
    conds = [sql_match(current, plan.old)]
    cap = capacity(current, conn.dialect.name)
    if cap is not None and can_grow(plan, cap):
        conds.append(cap.fits(_rewritten(current, plan)))
    savepoint = conn.begin_nested()
    if conn.execute(sa.update(target.base).where(*conds).values({current: _rewritten(current, plan)})).rowcount \
            == planned:
        savepoint.commit()
        return True
    savepoint.rollback()
    return False


def one_target_per_kind(targets: list[Target]) -> dict[ObjectKind, Target]:
    """Apply and undo need one target per kind: they join its base table to journal entries by key,
    whichever owner path (table or partition) planned them."""
    return {t.kind: t for t in targets}


def _entry_row(e: sa.Table, target: Target) -> list[sa.ColumnElement[bool]]:
    """A journal entry and the row of the target's base table it was planned from: the same keys."""
    b = target.base
    same = [e.c.key1 == b.c[target.key1]]
    if target.key2:
        same.append(e.c.key2 == sa.cast(b.c[target.key2], sa.String(256)))
    return same


def _same(current: sa.ColumnElement[str], value: sa.ColumnElement[str], dialect: str) -> sa.ColumnElement[bool]:
    """Compare-and-set's comparison: byte-exact on MySQL/MariaDB, whose collations fold case and ignore trailing
    spaces."""
    if dialect == "postgresql":
        return current == value
    return sa.cast(current, sa.LargeBinary) == sa.cast(value, sa.LargeBinary)


def swap_applied(conn: sa.Connection, journal: Journal, target: Target, run_id: str, planned: int,
                 moves: RelocationPlan | Moves, *, undo: bool = False) -> None:
    """Move journal values in where the row still holds the value they replace (compare-and-set), for entries
    already journaled in their outcome: applied (the one-transaction forward apply on PostgreSQL, journaled as
    applied up front) or, with `undo`, undone (a packed run's entries, unpacked as undone). One UPDATE writes
    the base table only, without the second write per entry that swap makes to flip its state (half of its time
    at 1M). Only when fewer rows moved than were `planned` are the others found (their row does not hold the
    value written: changed in between by someone else, or grown past the column) and marked conflicted.
    On MySQL/MariaDB the base table comes first in the join, bounded by the entries' key range (StraightJoin)."""
    e, b, dialect = journal.entries, target.base, conn.dialect.name
    current = b.c[target.value]
    expect, write = (new_value(e, moves), e.c.old_value) if undo else (e.c.old_value, new_value(e, moves))
    state, leftover = (UNDONE, UNDO_CONFLICTED) if undo else (APPLIED, CONFLICTED)
    ours = [e.c.run_no == journal.run_no(conn, run_id), e.c.kind == kind_code(target.kind),
            e.c.state == state_code(state)]
    same_row = _entry_row(e, target)
    guards = [_same(current, expect, dialect)]
    cap = capacity(current, dialect)
    if cap is not None:
        guards.append(cap.fits(write))
    if dialect == "postgresql":
        update = sa.update(b).where(*ours, *same_row, *guards)
    else:
        low, high = conn.execute(sa.select(sa.func.min(e.c.key1), sa.func.max(e.c.key1)).where(*ours)).one()
        key = b.c[target.key1]
        update = sa.update(StraightJoin(b, e, sa.and_(*same_row, *ours))).where(key >= low, key <= high, *guards)
    moved = conn.execute(update.values({current: write})).rowcount
    if moved != planned:
        holds = sa.select(b.c[target.key1]).where(*same_row, _same(current, write, dialect)).exists()
        conn.execute(sa.update(e).where(*ours, ~holds).values(state=state_code(leftover)))


def swap(conn: sa.Connection, journal: Journal, target: Target, run_id: str, chunk: tuple[int, int] | None,
         moves: RelocationPlan | Moves, *, undo: bool = False) -> None:
    """Move journal values into the base table where it still holds the expected value; chunk: (chunk, size),
    the entries of one key range (Journal.key_range), else all.

    Forward: expects old_value, writes new_value, planned -> applied (leftovers: conflicted).
    Undo: expects new_value, writes old_value, applied -> undone (leftovers: undo-conflicted).
    A value that would not fit its column is never written (relocate refuses such runs up front; this
    covers a row that grew between that check and the plan): it stays behind as a leftover.
    """
    e, b = journal.entries, target.base
    expect, write = (new_value(e, moves), e.c.old_value) if undo else (e.c.old_value, new_value(e, moves))
    from_state, to_state, leftover = (state_code(s) for s in (
        (APPLIED, UNDONE, UNDO_CONFLICTED) if undo else (PLANNED, APPLIED, CONFLICTED)))
    current = b.c[target.value]
    ours = [e.c.run_no == journal.run_no(conn, run_id), e.c.kind == kind_code(target.kind)]
    if chunk is not None:
        ours += journal.key_range(*chunk)
    selected = [*ours, e.c.state == from_state, *_entry_row(e, target)]
    cap = capacity(current, conn.dialect.name)
    if cap is not None:
        selected.append(cap.fits(write))

    if conn.dialect.name == "postgresql":
        moved = (sa.update(b).where(*selected, current == expect).values({current: write})
                 .returning(e.c.key1, e.c.key2).cte("moved"))
        conn.execute(sa.update(e).where(*ours, e.c.key1 == moved.c.key1, e.c.key2 == moved.c.key2)
                     .values(state=to_state).add_cte(moved))
    else:
        conn.execute(sa.update(b).where(*selected, _same(current, expect, conn.dialect.name))
                     .values({current: write, e.c.state: to_state}))

    conn.execute(sa.update(e).where(*ours, e.c.state == from_state).values(state=leftover))
