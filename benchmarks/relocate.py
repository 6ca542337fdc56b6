"""Relocation speed: hivecat vs a bare SQL UPDATE, Hive's metatool and Thrift alter_partitions; hivecat's Thrift
relocation through one connection vs several; Glue call count.

One run builds a partitioned table in a real HMS 2.3 schema on MariaDB (see relocate_support/hms_rows.py),
copies it once per contender, moves every location from hdfs://old-nn:8020/warehouse to
hdfs://new-nn:8020/warehouse with each contender on its own identical copy, checks each result, and
prints the figures side by side. Targets (issue 3): hivecat <= 3x the bare UPDATE at 1,000,000 partitions
(issue 29: <= 4x with notification events);
metatool >= 50x slower than hivecat at 100,000; Glue writes <= ceil(P/100) + a constant.

    python benchmarks/relocate.py            # full size: 1,000,000 / 100,000 / 10,000 / 5,000
    python benchmarks/relocate.py --small    # seconds; checks that everything works

MariaDB comes from HIVECAT_TEST_MYSQL_URL (default: the `hivecat` user `make setup` creates). Every
database, process and file the run creates is removed at the end, also when it fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from hivecat.local.scratch_db import create_database, drop_database
from relocate_support import hms_rows
from hivecat.catalog.model import EVENTS_ON
from hivecat.catalog.targets import DEFAULT_THRIFT_CONNECTIONS
from relocate_support.contenders import (
    floor_update, hivecat_relocate, hivecat_thrift_relocate, metatool_update_location, thrift_alter_partitions,
)
from relocate_support.glue_calls import count_glue_calls
from relocate_support import pg_activity, pg_rows

SERVER_URL = os.environ.get("HIVECAT_TEST_MYSQL_URL", "mysql+pymysql://hivecat:hivecat@127.0.0.1:3306")
PG_SERVER_URL = os.environ.get("HIVECAT_TEST_POSTGRES_URL", "postgresql+psycopg://hivecat:hivecat@127.0.0.1:5432")
ROUNDS = 3  # hivecat and the bare UPDATE at full size, each a median of this many runs


@dataclass(frozen=True)
class Sizes:
    partitions: int           # hivecat vs the bare UPDATE
    metatool_partitions: int  # metatool vs hivecat (and the table Thrift works on)
    thrift_partitions: int    # moved through alter_partitions
    thrift_batch: int
    glue_partitions: int


FULL = Sizes(1_000_000, 100_000, 10_000, 1000, 5000)
SMALL = Sizes(2000, 1000, 200, 100, 250)


def parse_args(argv: list[str] | None = None) -> Sizes:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="a quick run at small sizes")
    for field, what in (("partitions", "partitions for hivecat vs the bare UPDATE"),
                        ("metatool-partitions", "partitions for metatool vs hivecat"),
                        ("thrift-partitions", "partitions moved with alter_partitions"),
                        ("thrift-batch", "partitions per alter_partitions call"),
                        ("glue-partitions", "partitions in the Glue table")):
        parser.add_argument(f"--{field}", type=int, help=what)
    args = parser.parse_args(argv)
    base = SMALL if args.small else FULL
    sizes = Sizes(*(getattr(args, f) or getattr(base, f) for f in base.__dataclass_fields__))
    if min(sizes.__dict__.values()) < 1:
        parser.error("every size must be at least 1")
    if sizes.thrift_partitions > sizes.metatool_partitions:
        parser.error("--thrift-partitions must not exceed --metatool-partitions (Thrift works on that table)")
    return sizes


class Scratch:
    """Every database the run creates, dropped at the end."""

    def __init__(self, run: str):
        self.run = run
        self.names: list[tuple[str, str]] = []

    def name(self, role: str, server: str = SERVER_URL) -> str:
        name = f"hcb_{self.run}_{role}"
        self.names.append((server, name))
        return name

    def drop_all(self) -> None:
        for server, name in reversed(self.names):
            drop_database(server, name)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def timed(what: str, action):
    began = time.monotonic()
    result = action()
    log(f"  {what}: {time.monotonic() - began:.1f} s")
    return result


def build(scratch: Scratch, template: str, role: str, partitions: int, copies: list[str]) -> list[str]:
    """The table with `partitions` partitions, in one database per copy role; their names."""
    names = [scratch.name(f"{role}_{copy}") for copy in copies]
    first = names[0]
    hms_rows.copy_database(SERVER_URL, template, first)
    timed(f"{first}: {partitions} partitions", lambda: hms_rows.fill_partitions(
        hms_rows.database_url(SERVER_URL, first), partitions))
    hms_rows.verify_built(hms_rows.database_url(SERVER_URL, first), partitions)
    for name in names[1:]:
        timed(f"{name}: copy", lambda name=name: hms_rows.copy_database(SERVER_URL, first, name))
        hms_rows.verify_built(hms_rows.database_url(SERVER_URL, name), partitions)
    return names


def verified(name: str, partitions: int, who: str) -> None:
    hms_rows.verify_relocated(hms_rows.database_url(SERVER_URL, name), partitions, who)


def thrift_figures(scratch: Scratch, sizes: Sizes, workdir: Path) -> tuple[str, dict]:
    """A real HMS creates its schema and the table; the empty table is kept as the template of every
    other copy, then HMS's own database gets the mid-size table and Thrift moves part of it.

    The HMS stops before anything else is timed. Returns the template's name and the figures.
    """
    schema, template = scratch.name("thrift"), scratch.name("template")
    create_database(SERVER_URL, schema)
    m, t = sizes.metatool_partitions, sizes.thrift_partitions
    server = hms_rows.metastore_server(SERVER_URL, schema, workdir / "hms", heap="2g")
    timed("HMS start (creates its schema)", server.start)
    try:
        hms_rows.create_table_through_thrift(server)
        hms_rows.copy_database(SERVER_URL, schema, template)
        url = hms_rows.database_url(SERVER_URL, schema)
        timed(f"{schema}: {m} partitions", lambda: hms_rows.fill_partitions(url, m))
        hms_rows.verify_built(url, m)
        thrift = timed(f"Thrift alter_partitions, {t} of {m} in batches of {sizes.thrift_batch}",
                       lambda: thrift_alter_partitions(server, t, sizes.thrift_batch))
    finally:
        server.stop()
    check = hms_rows.check_locations(url)
    if (check.at_new, check.at_old) != (t, m - t):
        raise AssertionError(f"Thrift alter_partitions left a wrong result: {check}")
    per_1k = 1000 * thrift.alter_seconds / t
    return template, dict(thrift_partitions=t, thrift_batch=thrift.batch, thrift_s_per_1k=round(per_1k, 3),
                          thrift_with_reads_s_per_1k=round(1000 * thrift.total_seconds / t, 3),
                          thrift_extrapolated_s=round(per_1k * sizes.partitions / 1000, 1))


def thrift_hivecat_figures(scratch: Scratch, sizes: Sizes, workdir: Path, template: str) -> dict:
    """hivecat's own Thrift relocation of the `thrift_partitions` partitions of a table, on an HMS of its own:
    an untimed move old -> new warms the HMS's JIT and MariaDB's buffer pool, then new -> old through one
    connection and old -> new through the default number are timed. Every move's result is checked."""
    t, connections = sizes.thrift_partitions, DEFAULT_THRIFT_CONNECTIONS
    [name] = build(scratch, template, "thrift_hivecat", t, ["hms"])
    url = hms_rows.database_url(SERVER_URL, name)
    server = hms_rows.metastore_server(SERVER_URL, name, workdir / "hms_hivecat", heap="2g", schema_exists=True)
    timed("HMS start", server.start)

    def move(label: str, to_new: bool, through: int) -> float:
        old, new = (hms_rows.OLD_ROOT, hms_rows.NEW_ROOT) if to_new else (hms_rows.NEW_ROOT, hms_rows.OLD_ROOT)
        seconds = timed(f"hivecat over Thrift, {t}, {label}", lambda: hivecat_thrift_relocate(
            server, old, new, through, workdir / f"journal_{label.replace(' ', '_')}.db", t))
        if to_new:
            hms_rows.verify_partitions_relocated(url, t, f"hivecat over Thrift ({label})")
        else:
            hms_rows.verify_built(url, t)  # every location back where it was built
        return seconds
    try:
        move("warm-up", True, connections)
        serial_s = move("1 connection", False, 1)
        parallel_s = move(f"{connections} connections", True, connections)
    finally:
        server.stop()
    return dict(thrift_hivecat_serial_s=round(serial_s, 3), thrift_hivecat_parallel_s=round(parallel_s, 3),
                thrift_parallel_speedup=round(serial_s / parallel_s, 2), thrift_connections=connections)


def run(sizes: Sizes, workdir: Path) -> dict:
    scratch = Scratch(uuid.uuid4().hex[:8])
    figures: dict = {"partitions": sizes.partitions}
    try:
        template, thrift = thrift_figures(scratch, sizes, workdir)
        figures.update(thrift)
        figures.update(thrift_hivecat_figures(scratch, sizes, workdir, template))
        hivecat = big_figures(scratch, template, sizes.partitions, figures)

        m = sizes.metatool_partitions
        mid_metatool, mid_hivecat, mid_floor = build(scratch, template, "mid", m, ["metatool", "hivecat", "floor"])
        metatool_s = timed(f"metatool, {m}", lambda: metatool_update_location(SERVER_URL, mid_metatool, workdir))
        verified(mid_metatool, m, "metatool")
        hivecat_mid = timed(f"hivecat, {m}",
                            lambda: hivecat_relocate(SERVER_URL, mid_hivecat, scratch.name("journal_mid")))
        verified(mid_hivecat, m, "hivecat")
        floor_mid_s = timed(f"bare UPDATE, {m}", lambda: floor_update(SERVER_URL, mid_floor))
        verified(mid_floor, m, "the bare UPDATE")
        figures.update(metatool_partitions=m, metatool_s=round(metatool_s, 3),
                       hivecat_100k_s=round(hivecat_mid.seconds, 3), floor_100k_s=round(floor_mid_s, 3),
                       metatool_over_hivecat=round(metatool_s / hivecat_mid.seconds, 1))
    finally:
        scratch.drop_all()
    report_sql(figures, hivecat)
    figures.update(postgresql_figures(sizes.partitions))
    report_postgresql(figures)

    glue = timed(f"Glue on moto, {sizes.glue_partitions}", lambda: count_glue_calls(workdir, sizes.glue_partitions))
    figures.update(glue_partitions=glue.partitions, glue_writes_5000=glue.writes, glue_min_batches=glue.batches,
                   glue_writes_over_batches=glue.writes - glue.batches, glue_calls=sum(glue.calls.values()))
    print(f"Glue, {glue.partitions} partitions: {glue.writes} writes = ceil(P/100) {glue.batches} "
          f"+ {glue.writes - glue.batches}; all calls: {dict(sorted(glue.calls.items()))}")
    return figures


def big_figures(scratch: Scratch, template: str, partitions: int, figures: dict):
    """hivecat against the bare UPDATE on two copies of the 1M-partition table, run in turns (floor first in
    each round: it gets the warmer cache); medians of ROUNDS. Returns hivecat's slowest run."""
    big_hivecat, big_floor, big_events = build(scratch, template, "big", partitions, ["hivecat", "floor", "events"])
    runs: list = []
    event_runs: list = []

    def check(name: str, who: str):
        return lambda at_new: verified(name, partitions, who) if at_new else hms_rows.verify_built(
            hms_rows.database_url(SERVER_URL, name), partitions)

    floor_runs, hivecat_runs = [], []
    for n in range(ROUNDS):  # interleaved: a slow spell of the machine hits both
        at_new = n % 2 == 1
        old, new = (hms_rows.NEW_ROOT, hms_rows.OLD_ROOT) if at_new else (hms_rows.OLD_ROOT, hms_rows.NEW_ROOT)
        floor_runs.append(timed(f"bare UPDATE, {partitions}, round {n + 1}",
                                lambda: floor_update(SERVER_URL, big_floor, old, new)))
        check(big_floor, "the bare UPDATE")(not at_new)
        runs.append(timed(f"hivecat, {partitions}, round {n + 1}", lambda: hivecat_relocate(
            SERVER_URL, big_hivecat, scratch.name(f"journal_big{n}"), old, new)))
        check(big_hivecat, "hivecat")(not at_new)
        hivecat_runs.append(runs[-1].seconds)
        hms_rows.clear_notification_log(hms_rows.database_url(SERVER_URL, big_events))  # untimed: each round alike
        event_runs.append(timed(f"hivecat with notification events, {partitions}, round {n + 1}", lambda: hivecat_relocate(
            SERVER_URL, big_events, scratch.name(f"journal_events{n}"), old, new, notification_events=EVENTS_ON)))
        check(big_events, "hivecat with notification events")(not at_new)
        if event_runs[-1].events != partitions + 1:  # one ALTER_PARTITION each, one ALTER_TABLE (2.3: no database event)
            raise AssertionError(f"{event_runs[-1].events} notification events for {partitions} partitions and a table")
    hivecat_s, floor_s = statistics.median(hivecat_runs), statistics.median(floor_runs)
    events_s = statistics.median(r.seconds for r in event_runs)
    figures.update(hivecat_s=round(hivecat_s, 3), floor_s=round(floor_s, 3),
                   hivecat_over_floor=round(hivecat_s / floor_s, 2), rounds=ROUNDS,
                   events_s=round(events_s, 3), events_over_floor=round(events_s / floor_s, 2),
                   events_over_hivecat=round(events_s / hivecat_s, 2),
                   events_lock_s=round(statistics.median(r.lock_s for r in event_runs), 3),
                   events_per_run=event_runs[-1].events)
    # One more run, then its undo: on the hivecat copy, wherever the rounds left it, and back there after.
    at_new = ROUNDS % 2 == 1
    old, new = (hms_rows.NEW_ROOT, hms_rows.OLD_ROOT) if at_new else (hms_rows.OLD_ROOT, hms_rows.NEW_ROOT)
    undone = timed(f"hivecat, {partitions}, then its undo", lambda: hivecat_relocate(
        SERVER_URL, big_hivecat, scratch.name("journal_undo"), old, new, undo=True))
    check(big_hivecat, "hivecat's undo")(at_new)
    figures.update(undo_run_s=round(undone.seconds, 3), undo_s=round(undone.undo_s, 3),
                   undo_over_run=round(undone.undo_s / undone.seconds, 2))
    slowest = max(event_runs, key=lambda run: run.seconds)
    log(f"hivecat with notification events: its slowest statements at {partitions} partitions:")
    for seconds, statement in slowest.statements[:8]:
        log(f"  {seconds:7.2f} s  {statement[:160]}")
    for n, (hivecat_run, floor_run) in enumerate(zip(hivecat_runs, floor_runs), 1):  # JSON values stay scalars
        figures.update({f"hivecat_run{n}_s": round(hivecat_run, 3), f"floor_run{n}_s": round(floor_run, 3)})
    return max(runs, key=lambda run: run.seconds)


def watched(url: str, what: str, action):
    """timed(what, action), and what PostgreSQL did meanwhile (pg_activity: checkpoints, WAL, autovacuum of the
    tables of `url`'s database), logged beside it; (the action's result, what was seen)."""
    before = pg_activity.snapshot(url)
    result = timed(what, action)
    seen = pg_activity.between(before, pg_activity.snapshot(url))
    log(f"    meanwhile: {pg_activity.described(seen)}")
    return result, seen


def postgresql_figures(partitions: int) -> dict:
    """The same comparison on PostgreSQL: a Hive 3.1-shaped metastore (pg_rows), hivecat and the bare UPDATE
    on two copies, interleaved, medians of ROUNDS."""
    scratch = Scratch(uuid.uuid4().hex[:8])
    try:
        names = [scratch.name(role, PG_SERVER_URL) for role in ("pg_hivecat", "pg_floor")]
        urls = [create_database(PG_SERVER_URL, name) for name in names]
        for url in urls:
            timed(f"PostgreSQL: {partitions} partitions", lambda url=url: pg_rows.build(url, partitions))
        under = pg_rows.count_under(urls[0], hms_rows.OLD_ROOT)
        hivecat_runs, floor_runs, rounds = [], [], {}
        for n in range(ROUNDS):
            old, new = (hms_rows.NEW_ROOT, hms_rows.OLD_ROOT) if n % 2 else (hms_rows.OLD_ROOT, hms_rows.NEW_ROOT)
            seconds, seen = watched(urls[1], f"PostgreSQL bare UPDATE, round {n + 1}",
                                    lambda: floor_update(PG_SERVER_URL, names[1], old, new))
            floor_runs.append(seconds)
            rounds.update({f"pg_floor_run{n + 1}_s": round(seconds, 3),
                           **{f"pg_floor_run{n + 1}_{key}": value for key, value in seen.items()}})
            run, seen = watched(urls[0], f"PostgreSQL hivecat, round {n + 1}", lambda: hivecat_relocate(
                PG_SERVER_URL, names[0], f"hivecat_journal{n}", old, new))
            hivecat_runs.append(run.seconds)
            rounds.update({f"pg_hivecat_run{n + 1}_s": round(run.seconds, 3),
                           **{f"pg_hivecat_run{n + 1}_{key}": value for key, value in seen.items()}})
            for url, who in zip(urls, ("hivecat", "the bare UPDATE")):
                if (pg_rows.count_under(url, old), pg_rows.count_under(url, new)) != (0, under):
                    raise AssertionError(f"{who} on PostgreSQL left locations under {old}")
        old, new = (hms_rows.NEW_ROOT, hms_rows.OLD_ROOT) if ROUNDS % 2 else (hms_rows.OLD_ROOT, hms_rows.NEW_ROOT)
        undone = timed("PostgreSQL hivecat, then its undo", lambda: hivecat_relocate(
            PG_SERVER_URL, names[0], "hivecat_journal_undo", old, new, undo=True))
        if (pg_rows.count_under(urls[0], new), pg_rows.count_under(urls[0], old)) != (0, under):
            raise AssertionError(f"hivecat's undo on PostgreSQL left locations under {new}")
    finally:
        scratch.drop_all()
    hivecat_s, floor_s = statistics.median(hivecat_runs), statistics.median(floor_runs)
    return dict(**rounds, pg_hivecat_spread=round((max(hivecat_runs) - min(hivecat_runs)) / hivecat_s, 3),
                pg_partitions=partitions, pg_hivecat_s=round(hivecat_s, 3), pg_floor_s=round(floor_s, 3),
                pg_hivecat_over_floor=round(hivecat_s / floor_s, 2), pg_undo_run_s=round(undone.seconds, 3),
                pg_undo_s=round(undone.undo_s, 3), pg_undo_over_run=round(undone.undo_s / undone.seconds, 2))


def report_postgresql(figures: dict) -> None:
    f = figures
    print(f"{f['pg_partitions']:>9} partitions  PostgreSQL: hivecat {f['pg_hivecat_s']:.2f} s   bare UPDATE "
          f"{f['pg_floor_s']:.2f} s   hivecat/floor {f['pg_hivecat_over_floor']:.2f}x (medians of {ROUNDS})")
    for n in range(1, ROUNDS + 1):
        run, floor = (lambda key, n=n: f[f"pg_hivecat_run{n}_{key}"]), (lambda key, n=n: f[f"pg_floor_run{n}_{key}"])
        print(f"  round {n}: hivecat {run('s'):.2f} s with {run('checkpoints')} checkpoint(s), "
              f"{run('autovacuums')} autovacuum(s), {run('autoanalyzes')} autoanalyze(s); "
              f"bare UPDATE {floor('s'):.2f} s with {floor('checkpoints')} checkpoint(s)")
    print(f"  hivecat's spread over the rounds: {100 * f['pg_hivecat_spread']:.0f}% of its median "
          "(target: within 40%, i.e. +-20%)")
    print(f"{f['pg_partitions']:>9} partitions  PostgreSQL: a run {f['pg_undo_run_s']:.2f} s, its undo "
          f"{f['pg_undo_s']:.2f} s: {f['pg_undo_over_run']:.2f}x the run (target <= 2x)")


def report_sql(figures: dict, hivecat) -> None:
    f = figures
    print(f"{f['partitions']:>9} partitions  hivecat {f['hivecat_s']:.2f} s   bare UPDATE {f['floor_s']:.2f} s   "
          f"hivecat/floor {f['hivecat_over_floor']:.2f}x (target <= 2x; medians of {f['rounds']}: hivecat "
          f"{[f[f'hivecat_run{n}_s'] for n in range(1, f['rounds'] + 1)]}, bare UPDATE "
          f"{[f[f'floor_run{n}_s'] for n in range(1, f['rounds'] + 1)]})")
    print(f"{f['partitions']:>9} partitions  a run {f['undo_run_s']:.2f} s, its undo {f['undo_s']:.2f} s: "
          f"{f['undo_over_run']:.2f}x the run (target <= 2x)")
    print(f"{f['partitions']:>9} partitions  hivecat with notification events {f['events_s']:.2f} s: "
          f"{f['events_over_floor']:.2f}x the bare UPDATE (target <= 4x), {f['events_over_hivecat']:.2f}x hivecat "
          f"without; {f['events_per_run']} events, the listener's lock held {f['events_lock_s']:.2f} s (medians)")
    print(f"{f['metatool_partitions']:>9} partitions  metatool {f['metatool_s']:.2f} s   hivecat {f['hivecat_100k_s']:.2f} s"
          f"   bare UPDATE {f['floor_100k_s']:.2f} s   metatool/hivecat {f['metatool_over_hivecat']:.1f}x "
          f"(target >= 50x)")
    print(f"Thrift alter_partitions: {f['thrift_s_per_1k']:.2f} s per 1k partitions "
          f"({f['thrift_with_reads_s_per_1k']:.2f} s with the re-read of each batch; {f['thrift_partitions']} moved "
          f"in batches of {f['thrift_batch']}); extrapolated, not measured: {f['thrift_extrapolated_s']:.0f} s "
          f"for {f['partitions']}")
    print(f"hivecat over Thrift, {f['thrift_partitions']} partitions: 1 connection {f['thrift_hivecat_serial_s']:.2f} s"
          f", {f['thrift_connections']} connections {f['thrift_hivecat_parallel_s']:.2f} s, speed-up "
          f"{f['thrift_parallel_speedup']:.2f}x")
    print(f"hivecat's slowest statements at {f['partitions']} partitions:")
    for seconds, statement in hivecat.statements[:6]:
        print(f"  {seconds:7.2f} s  {statement[:160]}")


def main(argv: list[str] | None = None) -> int:
    sizes = parse_args(argv)
    # A plain kill runs the clean-up too (HMS and moto run in sessions of their own, so no signal reaches them).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    workdir = Path(tempfile.mkdtemp(prefix="hivecat-bench-relocate-"))
    try:
        figures = run(sizes, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
