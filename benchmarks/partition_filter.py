"""Partition filters on the metastore database: time and mariadbd memory of a dry run, 1,000 vs 10,000 values.

One run builds a partitioned table (keys dt, hr) in a real HMS 2.3 schema on MariaDB (relocate_support/hms_rows.py:
a real HMS creates the schema and the table, the partitions are inserted set-based), then dry-runs
`SqlCatalog.relocate` scoped to that table with two filters on dt:

- `one_list`: one IN list of MAX_IN_VALUES values (1,000, the per-list cap of locations/partition_filter.py);
- `ten_lists`: the same number of values ten times over, as ten IN lists joined by OR (10,000 values, the
  whole-filter cap). 10,000 values in one list are refused by design, so the larger filter is measured as
  several lists of equal total size rather than by lifting the cap.

Both select the same partitions (every even day), so only the filter's size differs. Each dry run's report is
checked against the count computed here before its figures count. While it runs, a sampler reads the RSS of the
local mariadbd process from /proc every few milliseconds: `*_rss_before_mb`, `*_rss_peak_mb` and their
difference `*_rss_growth_mb`. RSS is the whole server's and rarely shrinks (freed memory is kept for reuse), so
each dry run also runs on a catalog of its own whose connections' peak memory MariaDB reports
(`*_session_peak_mb`: the largest MAX_MEMORY_USED of information_schema.PROCESSLIST among them, a warm-up run
included). Target: the 10,000-value figures stay within 3x the 1,000-value ones (`ten_over_one_s`,
`ten_over_one_rss_growth`, `ten_over_one_session_peak`; memory below MEMORY_FLOOR_MB counts as that floor, so
that the ratio of two small numbers is not read as a regression). The target is judged (`within_3x`) from
FULL's 20,000 partitions up: on a smaller table per-value costs dominate both runs.

    python benchmarks/partition_filter.py            # 20,000 partitions
    python benchmarks/partition_filter.py --small    # 2,000 partitions: checks that everything works

MariaDB comes from HIVECAT_TEST_MYSQL_URL (default: the `hivecat` user `make setup` creates); the memory figures
need the server on this machine (otherwise they are reported as "n/a"). Every database, process and file the
run creates is removed at the end, also when it fails.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from hivecat.catalog.model import ObjectKind, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.local.scratch_db import create_database, drop_database
from hivecat.locations.partition_filter import MAX_IN_VALUES, MAX_VALUES
from relocate_support import hms_rows

SERVER_URL = os.environ.get("HIVECAT_TEST_MYSQL_URL", "mysql+pymysql://hivecat:hivecat@127.0.0.1:3306")
FIRST_DAY = datetime.date(2000, 1, 1)  # hms_rows: partition i is dt = FIRST_DAY + i div 24 days, hr = i mod 24
HOURS = 24
LISTS = 10
MEMORY_FLOOR_MB = 16.0
SAMPLE_SECONDS = 0.002


@dataclass(frozen=True)
class Sizes:
    partitions: int
    values: int  # per IN list
    lists: int   # IN lists in the larger filter


FULL = Sizes(20_000, MAX_IN_VALUES, LISTS)
SMALL = Sizes(2_000, MAX_IN_VALUES, LISTS)


def parse_args(argv: list[str] | None = None) -> Sizes:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="a quick run on fewer partitions")
    parser.add_argument("--partitions", type=int, help="partitions in the table")
    parser.add_argument("--values", type=int, help=f"values per IN list (at most {MAX_IN_VALUES})")
    parser.add_argument("--lists", type=int, help="IN lists in the larger filter")
    args = parser.parse_args(argv)
    base = SMALL if args.small else FULL
    sizes = Sizes(args.partitions or base.partitions, args.values or base.values, args.lists or base.lists)
    if min(sizes.values, sizes.lists) < 1 or sizes.partitions < HOURS:
        parser.error(f"every size must be at least 1, and --partitions at least {HOURS} (one day)")
    if sizes.values > MAX_IN_VALUES or sizes.values * sizes.lists > MAX_VALUES:
        parser.error(f"the filters must stay within the caps: {MAX_IN_VALUES} values per list, {MAX_VALUES} in all")
    return sizes


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the filters ------------------------------------------------------------------------------------

def even_days(count: int, lists: int, which: int) -> list[str]:
    """The `which`-th of `lists` interleaved slices of the first `count * lists` even days: together the
    slices are the same days as one list of them, split `lists` ways."""
    return [(FIRST_DAY + datetime.timedelta(days=2 * (n * lists + which))).isoformat() for n in range(count)]


def in_lists(sizes: Sizes, lists: int) -> str:
    """`lists` IN lists on dt, of sizes.values days each, joined by OR; together every even day of the first
    2 * values * lists days."""
    return " OR ".join("dt IN (" + ", ".join(f"'{day}'" for day in even_days(sizes.values, lists, which)) + ")"
                       for which in range(lists))


def expected_partitions(partitions: int, days_selected: int) -> int:
    """Partitions on an even day among the first 2 * days_selected days (hms_rows' layout)."""
    days = -(-partitions // HOURS)
    return sum(min(HOURS, partitions - day * HOURS) for day in range(0, min(days, 2 * days_selected), 2))


# --- mariadbd's memory --------------------------------------------------------------------------------

def mariadbd_pid() -> int | None:
    """The local MariaDB (or MySQL) server process, if this machine runs one."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() in ("mariadbd", "mysqld"):
                    return int(entry.name)
            except OSError:
                continue
    return None


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmRSS line")


@dataclass
class Memory:
    before: float
    peak: float

    @property
    def growth(self) -> float:
        return self.peak - self.before


@contextmanager
def sampled_rss(pid: int | None) -> Iterator[Memory | None]:
    """mariadbd's RSS before the block and its highest sample during it (None without a local server)."""
    if pid is None:
        yield None
        return
    memory = Memory(rss_mb(pid), rss_mb(pid))
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            memory.peak = max(memory.peak, rss_mb(pid))
            stop.wait(SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield memory
    finally:
        stop.set()
        sampler.join()
        memory.peak = max(memory.peak, rss_mb(pid))


def sessions_peak_mb(database: str) -> float | str:
    """The highest memory peak among the server's connections to `database` (MariaDB's MAX_MEMORY_USED)."""
    engine = sa.create_engine(SERVER_URL)
    try:
        with engine.connect() as conn:
            peak = conn.execute(sa.text("SELECT MAX(MAX_MEMORY_USED) FROM information_schema.PROCESSLIST "
                                        "WHERE DB = :db"), {"db": database}).scalar()
    except sa.exc.DBAPIError:  # MySQL has no such column
        return "n/a"
    finally:
        engine.dispose()
    return "n/a" if peak is None else round(int(peak) / 2**20, 1)


# --- the run ------------------------------------------------------------------------------------------

def build(workdir: Path, name: str, partitions: int) -> None:
    """Database `name` with the real HMS schema and the table with `partitions` partitions. HMS stops
    before anything is measured (its connections would blur mariadbd's memory)."""
    create_database(SERVER_URL, name)
    server = hms_rows.metastore_server(SERVER_URL, name, workdir / "hms")
    began = time.monotonic()
    server.start()
    try:
        hms_rows.create_table_through_thrift(server)
    finally:
        server.stop()
    log(f"  HMS schema and table: {time.monotonic() - began:.1f} s")
    url = hms_rows.database_url(SERVER_URL, name)
    began = time.monotonic()
    hms_rows.fill_partitions(url, partitions)
    hms_rows.verify_built(url, partitions)
    log(f"  {partitions} partitions: {time.monotonic() - began:.1f} s")


@dataclass(frozen=True)
class Measured:
    seconds: float
    rss: Memory | None
    session_peak_mb: float | str


def dry_run(catalog: SqlCatalog, partition_filter: str, expected: int, pid: int | None) -> tuple[float, Memory | None]:
    request = RelocationRequest(hms_rows.OLD_ROOT, hms_rows.NEW_ROOT,
                                Scope(hms_rows.DATABASE, hms_rows.TABLE, partition_filter), dry_run=True)
    with sampled_rss(pid) as memory:
        began = time.monotonic()
        report = catalog.relocate(request)
        seconds = time.monotonic() - began
    selected = report.count(ObjectKind.PARTITION).rewritten
    if selected != expected:
        raise AssertionError(f"the dry run selected {selected} partitions, {expected} expected")
    return seconds, memory


def measured(name: str, partition_filter: str, expected: int, pid: int | None) -> Measured:
    """A dry run on a catalog (and connections) of its own, after a warm-up run with a one-value filter that
    fills the server's caches and the connection pool."""
    catalog = SqlCatalog(hms_rows.database_url(SERVER_URL, name), journal_schema=f"{name}_journal")
    try:
        dry_run(catalog, "dt = '2000-01-01'", HOURS, pid)
        seconds, memory = dry_run(catalog, partition_filter, expected, pid)
        return Measured(seconds, memory, sessions_peak_mb(name))
    finally:
        catalog.close()


def figures_of(prefix: str, run: Measured) -> dict:
    out: dict = {f"{prefix}_s": round(run.seconds, 3), f"{prefix}_session_peak_mb": run.session_peak_mb}
    for what in ("before", "peak", "growth"):
        out[f"{prefix}_rss_{what}_mb"] = "n/a" if run.rss is None else round(getattr(run.rss, what), 1)
    return out


def ratio(large: float, small: float, floor: float = 0.0) -> float:
    return round(max(large, floor) / max(small, floor, 1e-9), 2)


def run(sizes: Sizes, workdir: Path) -> dict:
    name = f"hcb_{uuid.uuid4().hex[:8]}_filter"
    pid = mariadbd_pid()
    one, ten = in_lists(sizes, 1), in_lists(sizes, sizes.lists)
    try:
        build(workdir, name, sizes.partitions)
        first = measured(name, one, expected_partitions(sizes.partitions, sizes.values), pid)
        log(f"  one IN list of {sizes.values}: {first.seconds:.2f} s")
        second = measured(name, ten, expected_partitions(sizes.partitions, sizes.values * sizes.lists), pid)
        log(f"  {sizes.lists} IN lists of {sizes.values}: {second.seconds:.2f} s")
    finally:
        drop_database(SERVER_URL, name)
    figures: dict = {"partitions": sizes.partitions, "one_list_values": sizes.values,
                     "ten_lists_values": sizes.values * sizes.lists, "ten_lists_lists": sizes.lists,
                     "one_list_filter_chars": len(one), "ten_lists_filter_chars": len(ten)}
    figures.update(figures_of("one_list", first))
    figures.update(figures_of("ten_lists", second))
    figures["ten_over_one_s"] = ratio(second.seconds, first.seconds)
    checks = [figures["ten_over_one_s"] <= 3]
    if first.rss is not None and second.rss is not None:
        figures["ten_over_one_rss_growth"] = ratio(second.rss.growth, first.rss.growth, MEMORY_FLOOR_MB)
        checks.append(figures["ten_over_one_rss_growth"] <= 3)
    if isinstance(first.session_peak_mb, float) and isinstance(second.session_peak_mb, float):
        figures["ten_over_one_session_peak"] = ratio(second.session_peak_mb, first.session_peak_mb, MEMORY_FLOOR_MB)
        checks.append(figures["ten_over_one_session_peak"] <= 3)
    # Judged at full size only: on a small table the fixed cost of a dry run is small, and the per-value
    # costs (sending and parsing the values) dominate both figures.
    judged = sizes.partitions >= FULL.partitions
    figures["within_3x"] = ("yes" if all(checks) else "no") if judged else "not judged (small table)"
    return figures


def report(figures: dict) -> None:
    f = figures
    for prefix, what in (("one_list", f"1 IN list of {f['one_list_values']}"),
                         ("ten_lists", f"{f['ten_lists_lists']} IN lists, {f['ten_lists_values']} values")):
        print(f"{what:>28}: {f[f'{prefix}_s']:.2f} s   mariadbd RSS {f[f'{prefix}_rss_before_mb']} -> "
              f"{f[f'{prefix}_rss_peak_mb']} MB (+{f[f'{prefix}_rss_growth_mb']})   session peak "
              f"{f[f'{prefix}_session_peak_mb']} MB")
    print(f"10k / 1k: time {f['ten_over_one_s']}x, RSS growth {f.get('ten_over_one_rss_growth', 'n/a')}x, "
          f"session peak {f.get('ten_over_one_session_peak', 'n/a')}x (target <= 3x: {f['within_3x']})")


def main(argv: list[str] | None = None) -> int:
    sizes = parse_args(argv)
    # A plain kill runs the clean-up too (HMS runs in a session of its own, so no signal reaches it).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    workdir = Path(tempfile.mkdtemp(prefix="hivecat-bench-filter-"))
    try:
        figures = run(sizes, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(figures)
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
