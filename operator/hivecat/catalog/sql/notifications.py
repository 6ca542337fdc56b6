"""Notification events for the rewrites hivecat writes straight into the metastore database.

The metastore logs a change made through its API in NOTIFICATION_LOG (its DbNotificationListener), and engines
that cache metastore objects (Impala's catalogd, Doris, Hive's REPL) refresh what the log names. A direct
rewrite is logged by nobody, so a run logs it itself, in its own transaction: one ALTER_PARTITION, ALTER_TABLE or
ALTER_DATABASE event per object whose location (or location-bearing parameter) it changed, as the metastore
would for an alter of that object (none of the schemas 2.3-4.0 has a batch alter event).

Event ids stay dense and ordered against the metastore's own events: the rows are written with placeholder ids
(negative, unique per run), then, just before the commit, the run takes the lock the listener takes (SELECT
NEXT_EVENT_ID FROM NOTIFICATION_SEQUENCE FOR UPDATE), numbers its rows from it and moves it on. The lock is
held from there to the commit only: the metastore's own events wait that long and no longer. NL_IDs (the row
keys) come from DataNucleus's SEQUENCE_TABLE row for MNotificationLog, reserved in a transaction of their own
as DataNucleus does (gaps there are harmless; event ids have none).

Whether to write: `auto` writes when the metastore has a notification log and a listener has logged into it
(NOTIFICATION_SEQUENCE has moved past 1): without one, nothing would read the events or expire them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import sqlalchemy as sa

from hivecat.catalog.model import ObjectKind
from hivecat.catalog.sql.notification_json import FORMATS, GZIP_FORMAT, JSON_FORMAT, Json, Text, gzip_message
from hivecat.catalog.sql.schema import HmsSchema

AUTO, ON, OFF = "auto", "on", "off"  # RelocationRequest.notification_events
NL_SEQUENCE = "org.apache.hadoop.hive.metastore.model.MNotificationLog"
DDL_TIME = "transient_lastDdlTime"
MAX_KEYS = 32  # partition keys a message spells out (values beyond are left out of keyValues and values)
GZIP_BATCH = 2000  # messages compressed (in Python: neither server gzips) and written back at a time


@dataclass(frozen=True)
class EventLog:
    """Where and how a run logs its events; `note` says once why it logs none."""

    write: bool
    note: str | None = None
    format: str = JSON_FORMAT


def event_log(conn: sa.Connection, s: HmsSchema, mode: str) -> EventLog:
    if mode == OFF:
        return EventLog(False)
    if not (s.has("NOTIFICATION_LOG") and s.has("NOTIFICATION_SEQUENCE") and s.has("SEQUENCE_TABLE")):
        return EventLog(False, "this metastore schema has no notification log (NOTIFICATION_LOG, "
                               "NOTIFICATION_SEQUENCE): no notification events were written")
    seq = s["NOTIFICATION_SEQUENCE"]
    next_id = conn.execute(sa.select(sa.func.max(seq.c.NEXT_EVENT_ID))).scalar()
    if mode == AUTO and (next_id or 0) <= 1:
        return EventLog(False, "no notification listener has ever logged an event in this metastore "
                               "(NOTIFICATION_SEQUENCE has not moved): no notification events were written, "
                               "as nothing would read or expire them")
    message_format = _configured_format(conn, s)
    if message_format not in FORMATS:
        return EventLog(False, f"the metastore writes its events in a format hivecat does not write "
                               f"({message_format[:40]!r}, from hive.metastore.event.message.factory): no notification "
                               f"events were written")
    return EventLog(True, format=message_format)


def _configured_format(conn: sa.Connection, s: HmsSchema) -> str:
    """The format of the metastore's latest event (what its hive.metastore.event.message.factory writes), else
    its release's default: gzip JSON from Hive 4 on (the schema with DB_MANAGED_LOCATION_URI), JSON before."""
    log = s["NOTIFICATION_LOG"]
    if "MESSAGE_FORMAT" in log.c:
        latest = conn.execute(sa.select(log.c.MESSAGE_FORMAT).order_by(log.c.EVENT_ID.desc()).limit(1)).first()
        if latest is not None and latest[0]:
            return str(latest[0])
    return GZIP_FORMAT if s.has_managed_location else JSON_FORMAT


Changes = Callable[[Iterable[ObjectKind]], sa.Subquery]  # (kind, key1, key2, before, after) of those kinds


def _resolve(s: HmsSchema, changes: Changes, owner: str) -> list[sa.Select]:
    """(id, what, key, before, after) per changed row, `id` the owning partition's, table's or database's:
    what is L (its storage location), M (a database's managed location), P (a parameter), S (a SerDe parameter)
    or X (anything else). Each part reads only its own kinds."""
    def rows(id_col, what: str, src: sa.Subquery, frm, with_key: bool = False) -> sa.Select:
        none = sa.cast(sa.null(), sa.Text)
        return (sa.select(id_col.label("id"), sa.literal(what).label("what"),
                          sa.cast(src.c.key2, sa.Text).label("pkey") if with_key else none.label("pkey"),
                          sa.cast(src.c.before, sa.Text).label("before"), sa.cast(src.c.after, sa.Text).label("after"))
                .select_from(frm))

    if owner == "database":
        src = changes([ObjectKind.DATABASE])
        out = [rows(src.c.key1, "L", src, src)]
        if s.has_managed_location:
            src = changes([ObjectKind.DATABASE_MANAGED])
            out.append(rows(src.c.key1, "M", src, src))
        return out
    base, sd_kind, param_kind, param_id = (
        (s["PARTITIONS"].alias("o"), ObjectKind.PARTITION, ObjectKind.PARTITION_PARAM, "PART_ID") if owner == "partition"
        else (s["TBLS"].alias("o"), ObjectKind.TABLE, ObjectKind.TABLE_PARAM, "TBL_ID"))
    own_id = base.c[param_id]
    sds = s["SDS"].alias("osd")
    loc, params, serde = changes([sd_kind]), changes([param_kind]), changes([ObjectKind.SERDE_PARAM])
    out = [
        rows(own_id, "L", loc, loc.join(base, base.c.SD_ID == loc.c.key1)),
        rows(params.c.key1, "P", params, params, with_key=True),
        rows(own_id, "S", serde, serde.join(sds, sds.c.SERDE_ID == serde.c.key1).join(base, base.c.SD_ID == sds.c.SD_ID),
             with_key=True),
    ]
    if s.has("SKEWED_COL_VALUE_LOC_MAP"):
        skewed = changes([ObjectKind.SKEWED_LOCATION])
        out.append(rows(own_id, "X", skewed, skewed.join(base, base.c.SD_ID == skewed.c.key1)))
    return out


def _grouped(j: Json, parts: list[sa.Select]) -> sa.Subquery:
    """One row per object: its location before and after (NULL when unchanged), and its rewritten parameters
    and SerDe parameters as counted `"k":"v"` lists, before and after."""
    u = sa.union_all(*parts).subquery("changed")

    def agg(what: str, value: sa.ColumnElement) -> Text:
        return j.aggregate(sa.case((u.c.what == what, j.pair(u.c.pkey, value)), else_=sa.null()))

    def count(what: str) -> sa.ColumnElement[int]:
        return sa.func.sum(sa.case((u.c.what == what, 1), else_=0))

    def first(what: str, value: sa.ColumnElement) -> sa.ColumnElement:
        return sa.func.max(sa.case((u.c.what == what, value), else_=sa.null()))

    return (sa.select(u.c.id,
                      first("L", u.c.before).label("loc_before"), first("L", u.c.after).label("loc_after"),
                      first("M", u.c.before).label("managed_before"), first("M", u.c.after).label("managed_after"),
                      count("P").label("n_params"), agg("P", u.c.before).label("params_before"),
                      agg("P", u.c.after).label("params_after"),
                      count("S").label("n_serde"), agg("S", u.c.before).label("serde_before"),
                      agg("S", u.c.after).label("serde_after"),
                      # numbered here, on narrow rows: over the finished messages it cost twice their building
                      sa.func.row_number().over(order_by=u.c.id).label("rank"))
            .group_by(u.c.id).subquery("objects"))


class Messages:
    """The INSERT ... SELECTs of one run's events, per object kind."""

    def __init__(self, conn: sa.Connection, s: HmsSchema, catalog_name: str | None, now: int) -> None:
        self.s, self.j, self.now = s, Json(conn.dialect.name), now
        self.catalog_name = catalog_name if s.has_catalogs else None
        self.v3 = s.has_catalogs  # Hive 3+: tableType and isTruncateOp in messages, catName in objects

    def _header(self, db: sa.ColumnElement, table: sa.ColumnElement | None) -> list[Text]:
        j = self.j
        head = [j.member("server", sa.literal("")), j.member("servicePrincipal", sa.literal("")),
                j.member("db", db)]
        if table is not None:
            head.append(j.member("table", table))
        return head

    def _params(self, field: int, n: sa.ColumnElement, pairs: Text, ddl_time: bool) -> Text:
        j = self.j
        if ddl_time:
            stamp = j.pair(sa.literal(DDL_TIME), sa.literal(str(self.now)))
            pairs = j.concat(stamp, sa.case((n > 0, j.concat(",", pairs)), else_=sa.literal("", sa.Text)))
            n = n + 1
        return j.t_str_map(field, n, pairs)

    def _sd(self, field: int, location: sa.ColumnElement, n_serde: sa.ColumnElement, serde: Text) -> Text:
        j = self.j
        serde_info = sa.case((n_serde > 0, j.t_rec(7, [j.t_str_map(3, n_serde, serde)])), else_=sa.null())
        return j.t_rec(field, [j.t_str(2, location), serde_info])

    def _with_keys(self, frm, tbl_id, part_id, width: int):
        """`frm` outer-joined to each partition key (and value, for a partition) by position, `width` of them."""
        keys = [self.s["PARTITION_KEYS"].alias(f"k{i}") for i in range(width)]
        vals = [self.s["PARTITION_KEY_VALS"].alias(f"v{i}") for i in range(width)] if part_id is not None else []
        for i, k in enumerate(keys):
            frm = frm.outerjoin(k, sa.and_(k.c.TBL_ID == tbl_id, k.c.INTEGER_IDX == i))
        for i, v in enumerate(vals):
            frm = frm.outerjoin(v, sa.and_(v.c.PART_ID == part_id, v.c.INTEGER_IDX == i))
        return frm, keys, vals

    def _table_obj(self, t, d, keys, location: sa.ColumnElement, n_params, params: Text, n_serde,
                   serde: Text, ddl_time: bool, brief: bool = False) -> Text:
        """A Table: `brief` (the table of a partition's event, once per partition) without owner and times."""
        j = self.j
        n_keys = sum((sa.case((k.c.PKEY_NAME.is_(None), 0), else_=1) for k in keys), sa.literal(0))
        key_recs = j.join([j.unless_null(k.c.PKEY_NAME, j.obj([j.t_str(1, k.c.PKEY_NAME), j.t_str(2, k.c.PKEY_TYPE)]))
                           for k in keys])
        whole = [j.t_str(3, t.c.OWNER), j.t_i32(4, t.c.CREATE_TIME), j.t_i32(5, t.c.LAST_ACCESS_TIME),
                 j.t_i32(6, t.c.RETENTION)] if brief is False else []
        parts = [j.t_str(1, t.c.TBL_NAME), j.t_str(2, d.c.NAME), *whole, self._sd(7, location, n_serde, serde),
                 j.t_list(8, "rec", n_keys, key_recs), self._params(9, n_params, params, ddl_time),
                 j.t_str(12, t.c.TBL_TYPE)]
        if self.catalog_name:
            parts.append(j.t_str(17, d.c.CTLG_NAME))
        return j.obj(parts)

    def partitions(self, grouped: sa.Subquery, width: int) -> sa.Select:
        """(EVENT_TYPE, DB_NAME, TBL_NAME, MESSAGE) of ALTER_PARTITION events, one per grouped partition."""
        s, j, g = self.s, self.j, grouped
        p, psd, t, tsd, d = (s["PARTITIONS"].alias("p"), s["SDS"].alias("psd"), s["TBLS"].alias("t"),
                             s["SDS"].alias("tsd"), s["DBS"].alias("d"))
        frm = (g.join(p, p.c.PART_ID == g.c.id).join(t, t.c.TBL_ID == p.c.TBL_ID).join(d, d.c.DB_ID == t.c.DB_ID)
               .outerjoin(psd, psd.c.SD_ID == p.c.SD_ID).outerjoin(tsd, tsd.c.SD_ID == t.c.SD_ID))
        frm, keys, vals = self._with_keys(frm, t.c.TBL_ID, p.c.PART_ID, width)
        n_vals = sum((sa.case((v.c.PART_KEY_VAL.is_(None), 0), else_=1) for v in vals), sa.literal(0))
        values = j.join([j.quote(v.c.PART_KEY_VAL) for v in vals])
        key_values = j.join([sa.case((v.c.PART_KEY_VAL.is_(None), sa.null()), else_=j.pair(k.c.PKEY_NAME, v.c.PART_KEY_VAL))
                             for k, v in zip(keys, vals)])

        def partition(location, n_params, params, n_serde, serde, ddl_time: bool) -> Text:
            parts = [j.t_list(1, "str", n_vals, values), j.t_str(2, d.c.NAME), j.t_str(3, t.c.TBL_NAME),
                     self._sd(6, location, n_serde, serde), self._params(7, n_params, params, ddl_time)]
            if self.catalog_name:
                parts.append(j.t_str(9, d.c.CTLG_NAME))
            return j.obj(parts)

        now_loc = psd.c.LOCATION
        table = self._table_obj(t, d, keys, tsd.c.LOCATION, sa.literal(0), sa.literal("", sa.Text), sa.literal(0),
                                sa.literal("", sa.Text), False, brief=True)
        before = partition(sa.func.coalesce(g.c.loc_before, now_loc), g.c.n_params, g.c.params_before, g.c.n_serde,
                           g.c.serde_before, False)
        after = partition(sa.func.coalesce(g.c.loc_after, now_loc), g.c.n_params, g.c.params_after, g.c.n_serde,
                          g.c.serde_after, True)
        message = [*self._header(d.c.NAME, t.c.TBL_NAME)]
        if self.v3:
            message.append(j.member("tableType", t.c.TBL_TYPE))
        message.append(j.member("tableObjJson", table))
        if self.v3:
            message.append(j.member("isTruncateOp", sa.literal("false")))
        message += [j.concat('"timestamp":', str(self.now)), j.concat('"keyValues":', j.obj([key_values])),
                    j.member("partitionObjBeforeJson", before), j.member("partitionObjAfterJson", after)]
        return self._event("ALTER_PARTITION", d, t.c.TBL_NAME, j.obj(message), frm, g.c.rank)

    def tables(self, grouped: sa.Subquery, width: int) -> sa.Select:
        s, j, g = self.s, self.j, grouped
        t, tsd, d = s["TBLS"].alias("t"), s["SDS"].alias("tsd"), s["DBS"].alias("d")
        frm = (g.join(t, t.c.TBL_ID == g.c.id).join(d, d.c.DB_ID == t.c.DB_ID)
               .outerjoin(tsd, tsd.c.SD_ID == t.c.SD_ID))
        frm, keys, _ = self._with_keys(frm, t.c.TBL_ID, None, width)
        now_loc = tsd.c.LOCATION
        before = self._table_obj(t, d, keys, sa.func.coalesce(g.c.loc_before, now_loc), g.c.n_params,
                                 g.c.params_before, g.c.n_serde, g.c.serde_before, False)
        after = self._table_obj(t, d, keys, sa.func.coalesce(g.c.loc_after, now_loc), g.c.n_params,
                                g.c.params_after, g.c.n_serde, g.c.serde_after, True)
        message = [*self._header(d.c.NAME, t.c.TBL_NAME)]
        if self.v3:
            message.append(j.member("tableType", t.c.TBL_TYPE))
        message += [j.member("tableObjBeforeJson", before), j.member("tableObjAfterJson", after)]
        if self.v3:
            message.append(j.member("isTruncateOp", sa.literal("false")))
        message.append(j.concat('"timestamp":', str(self.now)))
        return self._event("ALTER_TABLE", d, t.c.TBL_NAME, j.obj(message), frm, g.c.rank)

    def databases(self, grouped: sa.Subquery) -> sa.Select:
        s, j, g = self.s, self.j, grouped
        d = s["DBS"].alias("d")

        def database(location, managed) -> Text:
            parts = [j.t_str(1, d.c.NAME), j.t_str(3, location)]
            if self.catalog_name:
                parts.append(j.t_str(8, d.c.CTLG_NAME))
            if s.has_managed_location:
                parts.append(j.t_str(10, managed))
            return j.obj(parts)

        managed = d.c.DB_MANAGED_LOCATION_URI if s.has_managed_location else sa.null()
        before = database(sa.func.coalesce(g.c.loc_before, d.c.DB_LOCATION_URI),
                          sa.func.coalesce(g.c.managed_before, managed))
        after = database(sa.func.coalesce(g.c.loc_after, d.c.DB_LOCATION_URI),
                         sa.func.coalesce(g.c.managed_after, managed))
        message = [*self._header(d.c.NAME, None), j.member("dbObjBeforeJson", before),
                   j.member("dbObjAfterJson", after), j.concat('"timestamp":', str(self.now))]
        return self._event("ALTER_DATABASE", d, sa.null(), j.obj(message), g.join(d, d.c.DB_ID == g.c.id), g.c.rank)

    def _event(self, event_type: str, d, table, message: Text, frm, rank) -> sa.Select:
        return (sa.select(sa.literal(event_type).label("event_type"),
                          (d.c.CTLG_NAME if self.catalog_name else sa.null()).label("cat_name"),
                          d.c.NAME.label("db_name"), table.label("tbl_name"), message.label("message"),
                          rank.label("rank"))
                .select_from(frm))


def publish(conn: sa.Connection, engine: sa.Engine, s: HmsSchema, changes: Changes,
            catalog_name: str | None, message_format: str = JSON_FORMAT) -> int:
    """Log one event per object with rows in `changes`, numbered under the listener's lock; bump
    transient_lastDdlTime of the partitions and tables. Returns the events written."""
    now = int(time.time())
    j = Json(conn.dialect.name)
    messages = Messages(conn, s, catalog_name, now)
    upper = conn.execute(sa.select(sa.func.count()).select_from(changes(list(ObjectKind)))).scalar_one()
    if not upper:
        return 0
    first = _reserve_rows(engine, s, upper)
    log = s["NOTIFICATION_LOG"]
    width = _key_width(conn, s)
    written = 0
    plans: list[sa.Select] = []
    resolved = {owner: _resolve(s, changes, owner) for owner in ("database", "table", "partition")}
    groups = {owner: _grouped(j, parts) for owner, parts in resolved.items()}
    if s.has_catalogs:  # Hive 2.3 has no ALTER_DATABASE event
        plans.append(messages.databases(groups["database"]))
    plans += [messages.tables(groups["table"], width), messages.partitions(groups["partition"], width)]
    columns = ["NL_ID", "EVENT_ID", "EVENT_TIME", "EVENT_TYPE", "DB_NAME", "TBL_NAME", "MESSAGE"]
    has_format = "MESSAGE_FORMAT" in log.c
    has_cat = "CAT_NAME" in log.c
    for select in plans:
        e = select.subquery("events")
        nl_id = first + written + e.c.rank - 1
        values = [nl_id, -nl_id, sa.literal(now), e.c.event_type, e.c.db_name, e.c.tbl_name, e.c.message]
        cols = list(columns)
        if has_format:
            values.append(sa.literal(message_format))
            cols.append("MESSAGE_FORMAT")
        if has_cat:
            values.append(e.c.cat_name)
            cols.append("CAT_NAME")
        result = conn.execute(log.insert().from_select(cols, sa.select(*values)),
                              execution_options={"preserve_rowcount": True})
        written += result.rowcount
    _bump_ddl_time(conn, s, resolved, now)
    if written and message_format == GZIP_FORMAT:
        _compress(conn, s, first, upper)
    if written:
        _number(conn, s, first, upper, written)
    return written


def _compress(conn: sa.Connection, s: HmsSchema, first: int, reserved: int) -> None:
    """Rewrite the run's JSON messages (built by the database) as gzip JSON, a batch of NL_IDs at a time."""
    log = s["NOTIFICATION_LOG"]
    for low in range(first, first + reserved, GZIP_BATCH):
        rows = conn.execute(sa.select(log.c.NL_ID, log.c.MESSAGE)
                            .where(log.c.NL_ID >= low, log.c.NL_ID < min(low + GZIP_BATCH, first + reserved),
                                   log.c.EVENT_ID < 0)).all()
        if rows:
            conn.execute(sa.update(log).where(log.c.NL_ID == sa.bindparam("nl")).values(MESSAGE=sa.bindparam("m")),
                         [{"nl": nl, "m": gzip_message(message)} for nl, message in rows])


def _key_width(conn: sa.Connection, s: HmsSchema) -> int:
    """The most partition keys any table has (bounded): how many positions the messages spell out."""
    k = s["PARTITION_KEYS"]
    width = conn.execute(sa.select(sa.func.max(k.c.INTEGER_IDX))).scalar()
    return 0 if width is None else min(int(width) + 1, MAX_KEYS)


def _reserve_rows(engine: sa.Engine, s: HmsSchema, count: int) -> int:
    """The first of `count` NL_IDs taken from DataNucleus's SEQUENCE_TABLE row, in a transaction of its own
    (as DataNucleus allocates): [next + 1, next + count], the row moved past them whichever end of its block
    DataNucleus hands out first."""
    seq = s["SEQUENCE_TABLE"]
    log = s["NOTIFICATION_LOG"]
    with engine.begin() as conn:
        row = conn.execute(sa.select(seq.c.NEXT_VAL).where(seq.c.SEQUENCE_NAME == NL_SEQUENCE)
                           .with_for_update()).first()
        if row is None:  # no event was ever logged through DataNucleus: start above any row
            start = conn.execute(sa.select(sa.func.coalesce(sa.func.max(log.c.NL_ID), 0))).scalar_one() + 1
            conn.execute(seq.insert().values(SEQUENCE_NAME=NL_SEQUENCE, NEXT_VAL=start + count + 1))
            return int(start) + 1
        current = int(row[0])
        conn.execute(sa.update(seq).where(seq.c.SEQUENCE_NAME == NL_SEQUENCE).values(NEXT_VAL=current + count + 1))
        return current + 1


def _number(conn: sa.Connection, s: HmsSchema, first: int, reserved: int, written: int) -> None:
    """Take the listener's lock, give the run's rows the next `written` event ids in their order, and move
    the sequence on. Held from here to the commit."""
    seq, log = s["NOTIFICATION_SEQUENCE"], s["NOTIFICATION_LOG"]
    row = conn.execute(sa.select(seq.c.NNI_ID, seq.c.NEXT_EVENT_ID).with_for_update()).first()
    if row is None:  # a schema whose listener never ran (2.3 makes the row on its first event)
        conn.execute(seq.insert().values(NNI_ID=1, NEXT_EVENT_ID=1))
        row = (1, 1)
    next_id = int(row[1])
    conn.execute(sa.update(log).where(log.c.NL_ID >= first, log.c.NL_ID < first + reserved, log.c.EVENT_ID < 0)
                 .values(EVENT_ID=next_id - log.c.EVENT_ID - first))
    conn.execute(sa.update(seq).where(seq.c.NNI_ID == row[0]).values(NEXT_EVENT_ID=next_id + written))


def _bump_ddl_time(conn: sa.Connection, s: HmsSchema, resolved: dict[str, list[sa.Select]], now: int) -> None:
    """transient_lastDdlTime of each rewritten partition and table, as an alter through the metastore sets it."""
    for owner, params, key in (("partition", s["PARTITION_PARAMS"], "PART_ID"), ("table", s["TABLE_PARAMS"], "TBL_ID")):
        changed = sa.union_all(*resolved[owner]).subquery("changed")
        ids = sa.select(changed.c.id).distinct().subquery("ids")  # joined: IN (...) ran once per parameter row
        conn.execute(sa.update(params).where(params.c[key] == ids.c.id, params.c.PARAM_KEY == DDL_TIME)
                     .values(PARAM_VALUE=str(now)))
