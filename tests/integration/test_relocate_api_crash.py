"""Crash tests for the API relocation backends on the real services: Glue on moto server, Thrift on the real HMS.

`hivecat relocate` runs in a subprocess with a small chunk size; the test watches the journal (a SQLite file)
and SIGKILLs the process once some partition chunks are applied. Then: the journal and the catalog agree on
what moved; a different request is refused (`unfinished-run`, exit 3) and changes nothing; the same command
resumes the killed run despite the dead process's lock, writes only what was left (every partition exactly
once) and reports counts that add up; `--undo RUN_ID` restores the exact prior state.

The subprocess runs hivecat's CLI through tests/support/paced_cli.py, which sleeps before each partition
write (a slow link, so the kill lands between two chunks whatever the machine's speed) and counts the
partitions it writes. The journal is read with plain sqlite3, not with hivecat's own journal code. The Glue
lake, its dump and expected state come from support.glue_lake (grown to 600 partitions); the HMS state is
compared as a full SQL dump of every location column and parameter (support.location_dump).
"""

from __future__ import annotations

import copy
import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hmsclient.genthrift.hive_metastore.ttypes import Database, FieldSchema, Partition

from hivecat.catalog.journal import APPLIED, kind_code, kind_of, state_code, state_of
from hivecat.catalog.model import ObjectKind
from hivecat.catalog.targets import DEFAULT_THRIFT_CONNECTIONS
from hivecat.locations.prefix import rebase
from support import glue_lake
from support.hms_tables import hive_table
from support.location_dump import dump_locations
from support.services import unique_name

PACED_CLI = Path(__file__).resolve().parents[1] / "support" / "paced_cli.py"
PACE_SECONDS = 0.2


# --- the killed run, observed through its journal -----------------------------------------------

def _journal_query(journal: Path, sql: str) -> list[tuple]:
    """Rows of `sql` on the journal; [] while the file or its tables do not exist yet."""
    if not journal.exists():
        return []
    try:
        with sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise


def _states(journal: Path, run_id: str) -> dict[tuple[str, str], int]:
    rows = _journal_query(journal, "SELECT e.kind, e.state, count(*) FROM hivecat_journal_entries e "
                                   "JOIN hivecat_journal_runs r ON r.run_no = e.run_no "
                                   f"WHERE r.run_id = '{run_id}' GROUP BY e.kind, e.state")
    return {(kind_of(kind).value, state_of(state)): n for kind, state, n in rows}


def _runs(journal: Path) -> list[tuple[str, str]]:
    return _journal_query(journal, "SELECT run_id, status FROM hivecat_journal_runs ORDER BY started_at, run_id")


@dataclass
class Killed:
    pid: int
    applied: int  # partition entries the journal recorded as applied when the kill was sent


def run_and_kill(command: list[str], journal: Path, kill_at: int, *, timeout: float = 180) -> Killed:
    """Start `command`, SIGKILL it once the journal holds at least `kill_at` applied partition entries."""
    applied_sql = (f"SELECT count(*) FROM hivecat_journal_entries WHERE kind = {kind_code(ObjectKind.PARTITION)} "
                   f"AND state = {state_code(APPLIED)}")
    process = subprocess.Popen([sys.executable, str(PACED_CLI), str(PACE_SECONDS), "relocate", *command],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    try:
        while True:
            applied = (_journal_query(journal, applied_sql) or [(0,)])[0][0]
            if applied >= kill_at:
                process.send_signal(signal.SIGKILL)  # a crash: no finally blocks, no lock release
                break
            if process.poll() is not None:
                out, err = process.communicate()
                pytest.fail(f"the run ended (exit {process.returncode}) before it could be killed mid-run "
                            f"({applied} partitions applied):\n{out}\n{err}")
            if time.monotonic() > deadline:
                pytest.fail(f"no progress to kill at within {timeout}s ({applied} partitions applied)")
            time.sleep(0.01)
    finally:
        if process.poll() is None:  # already SIGKILLed, or the test failed: never leave it running
            process.kill()
        process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    return Killed(process.pid, applied)


def hivecat(*args: str) -> subprocess.CompletedProcess:
    """The real CLI, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "hivecat", "relocate", *args],
                          capture_output=True, text=True, timeout=300)


def hivecat_counting(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """The CLI through the pacing wrapper (no pause): its result and how many partitions it wrote."""
    done = subprocess.run([sys.executable, str(PACED_CLI), "0", "relocate", *args],
                          capture_output=True, text=True, timeout=300)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("partitions-written "), done.stderr
    return done, int(last.split()[1])


def settled(read: Callable[[], int], quiet: float = 1.0) -> int:
    """`read()` once it stops changing: a write the killed process sent just before it died still lands."""
    value = read()
    while True:
        time.sleep(quiet)
        again = read()
        if again == value:
            return value
        value = again


def check_crash_resume_undo(*, common: list[str], request: list[str], other_request: list[str], journal: Path,
                            partitions: int, chunk: int, in_flight: int, dump: Callable[[], object],
                            moved_partitions: Callable[[], int], expected_after: object,
                            expected_counts: dict[str, int]) -> None:
    """The whole scenario, shared by both backends (see the module docstring). `in_flight`: how many chunks
    the backend writes at once."""
    before = dump()
    killed = run_and_kill([*common, *request, "--chunk-size", str(chunk)], journal, kill_at=2 * chunk)

    # Killed in the middle: some partitions moved, not all; the journal holds a running run with
    # applied and planned partition entries that cover every partition exactly once.
    [(run_id, status)] = _runs(journal)
    assert status == "running"
    states = _states(journal, run_id)
    applied = states.get(("partition", "applied"), 0)
    assert applied >= killed.applied >= 2 * chunk
    assert applied + states.get(("partition", "planned"), 0) == partitions
    assert applied < partitions, "the run was not killed in the middle"
    moved_at_kill = settled(moved_partitions)
    # Whatever the journal calls applied is in the catalog; at most the chunks in flight are ahead of it.
    assert applied <= moved_at_kill <= applied + in_flight * chunk
    assert 0 < moved_at_kill < partitions
    # The killed process's lock is still there, held by a pid that no longer exists on this host.
    [(owner,)] = _journal_query(journal, "SELECT owner FROM hivecat_locks")
    assert owner == f"{socket.gethostname()}:{killed.pid}"
    after_kill = dump()

    # A different request is refused while the run is unfinished, and changes nothing.
    other = hivecat(*common, *other_request, "--chunk-size", str(chunk))
    assert other.returncode == 3, other.stderr
    assert "refused (unfinished-run)" in other.stderr and run_id in other.stderr
    assert dump() == after_kill
    assert _runs(journal) == [(run_id, "running")] and _states(journal, run_id) == states

    # The same command resumes that run: it writes only the partitions still left, then the run is done.
    resumed, written = hivecat_counting(*common, *request, "--chunk-size", str(chunk), "--output", "json")
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["run_id"] == run_id and report["status"] == "done"
    assert written == partitions - moved_at_kill  # every partition written exactly once over both processes
    assert dump() == expected_after               # everything in scope moved, nothing else changed
    assert moved_partitions() == partitions
    assert _runs(journal) == [(run_id, "done")]
    assert _journal_query(journal, "SELECT count(*) FROM hivecat_locks") == [(0,)]
    # The report covers the whole run (the killed part too), and it adds up with the journal.
    rewritten = {kind: c["rewritten"] for kind, c in report["counts"].items() if c["rewritten"]}
    assert rewritten == expected_counts
    assert report["conflicted"] == report["failed"] == 0
    assert report["rewritten"] == sum(expected_counts.values()) == sum(_states(journal, run_id).values())
    assert {state for _, state in _states(journal, run_id)} == {"applied"}

    # Undo restores the exact prior state.
    undone = hivecat(*common, "--undo", run_id, "--output", "json")
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["counts"]["partition"]["rewritten"] == partitions
    assert dump() == before
    assert _runs(journal) == [(run_id, "undone")]


# --- Glue on moto server ---------------------------------------------------------------------------

GLUE_PARTITIONS, GLUE_CHUNK = 600, 50


@pytest.fixture
def sales_lake(moto):
    """The Glue backend tests' lake (sales: events with 250 partitions, dim, tables outside the prefix; other:
    out of scope, under the same prefix), with events grown to 600 partitions."""
    lake = moto.client("glue")
    glue_lake.build_lake(lake)
    entries = []
    for i in range(glue_lake.PARTITIONS, GLUE_PARTITIONS):
        location = f"{glue_lake.OLD}/sales.db/events/dt=extra-{i:04d}"
        entries.append({"Values": [f"extra-{i:04d}"], "StorageDescriptor": glue_lake.storage_descriptor(location),
                        "Parameters": {"path": location}})
    for start in range(0, len(entries), 100):  # AWS's BatchCreatePartition limit
        answer = lake.batch_create_partition(DatabaseName="sales", TableName="events",
                                             PartitionInputList=entries[start:start + 100])
        assert not answer.get("Errors")
    return lake


def test_glue_killed_run_resumes_refuses_others_and_undo_restores(sales_lake, moto, tmp_path: Path) -> None:
    old, new = glue_lake.OLD, glue_lake.NEW
    journal = tmp_path / "journal.db"
    common = ["--catalog", f"glue://{moto.region}", "--endpoint-url", moto.endpoint,
              "--journal-url", f"sqlite:///{journal}", "--skip-functions"]

    def dump() -> dict:
        return glue_lake.as_json(glue_lake.dump(sales_lake))
    before = dump()
    partitions = {k for k in before if k.startswith("sales.events/")}
    assert len(partitions) == GLUE_PARTITIONS
    expected_after = glue_lake.moved(before, {"sales", "sales.events", "sales.dim"} | partitions)

    def moved_partitions() -> int:
        return sum(1 for k, p in dump().items()
                   if k in partitions and p["StorageDescriptor"]["Location"].startswith(new + "/"))

    check_crash_resume_undo(
        common=common, request=["--from", old, "--to", new, "--database", "sales"],
        other_request=["--from", old, "--to", "s3://third-lake/warehouse", "--database", "sales"],
        journal=journal, partitions=GLUE_PARTITIONS, chunk=GLUE_CHUNK, in_flight=1, dump=dump,
        moved_partitions=moved_partitions, expected_after=expected_after,
        # `comment` is not a location key; the tables outside the prefix (elsewhere, near_miss) stay.
        expected_counts={"database": 1, "table": 2, "table_param": 1, "serde_param": 2,
                         "partition": GLUE_PARTITIONS, "partition_param": GLUE_PARTITIONS})


# --- Thrift on the real Hive Metastore (the CLI's default: several chunks in flight) -------------------

THRIFT_PARTITIONS, THRIFT_CHUNK = 300, 25
# HMS stamps these itself on every alter; they are not locations and no relocation restores them.
HMS_VOLATILE = ("transient_lastDdlTime",)


@pytest.fixture
def hms_lake(hive_metastore, tmp_path: Path):
    """A database of the test's own: a 300-partition table (in scope) and a table beside it under the same prefix."""
    old, db = f"file:{tmp_path}/old", unique_name("hc_crash")
    with hive_metastore.client() as hms:
        hms.create_database(Database(name=db, locationUri=f"{old}/{db}.db", parameters={}))
        events = hive_table(db, "events", f"{old}/{db}.db/events", keys=[FieldSchema("n", "int", "")],
                                     params={"path": f"{old}/{db}.db/events"}, serde={"path": f"{old}/{db}.db/events"})
        hms.create_table(events)
        parts = []
        for n in range(THRIFT_PARTITIONS):
            sd = copy.deepcopy(events.sd)
            sd.location = f"{old}/{db}.db/events/n={n}"
            parts.append(Partition(values=[str(n)], dbName=db, tableName="events", sd=sd,
                                   parameters={"path": sd.location, "note": sd.location}))
        hms.add_partitions(parts)
        hms.create_table(hive_table(db, "beside", f"{old}/{db}.db/beside"))
    yield old, db
    with hive_metastore.client() as hms:
        hms.drop_database(db, True, True)


def _hms_dump(hive_metastore) -> dict[str, list[tuple]]:
    """Every location column and parameter of the whole HMS, less the DDL timestamps HMS stamps itself."""
    state = dump_locations(hive_metastore.sql_url)
    for name in ("TABLE_PARAMS", "PARTITION_PARAMS"):
        state[name] = [row for row in state[name] if row[1] not in HMS_VOLATILE]
    return state


def test_thrift_killed_run_resumes_refuses_others_and_undo_restores(hive_metastore, hms_lake, tmp_path: Path) -> None:
    old, db = hms_lake
    new = f"file:{tmp_path}/new"
    journal = tmp_path / "journal.db"
    common = ["--catalog", f"thrift://127.0.0.1:{hive_metastore.port}", "--journal-url", f"sqlite:///{journal}"]

    with hive_metastore.client() as hms:
        table = hms.get_table(db, "events")
        expected_locations = {p.sd.location: rebase(p.sd.location, old, new)
                              for p in hms.get_partitions(db, "events", -1)}
    before = _hms_dump(hive_metastore)
    # The expected state: this table's locations, serde/table `path` and partitions' `path` move; nothing else.
    moves = {**expected_locations, table.sd.location: rebase(table.sd.location, old, new)}
    expected_after = copy.deepcopy(before)
    expected_after["SDS"] = sorted((sd_id, moves.get(location, location)) for sd_id, location in before["SDS"])
    for name in ("SERDE_PARAMS", "TABLE_PARAMS", "PARTITION_PARAMS"):  # `note` is not a location key
        expected_after[name] = sorted((owner, key, moves.get(value, value) if key == "path" else value)
                                      for owner, key, value in before[name])

    def moved_partitions() -> int:
        with hive_metastore.client() as hms:
            return sum(1 for p in hms.get_partitions(db, "events", -1) if p.sd.location.startswith(new + "/"))

    check_crash_resume_undo(
        common=common, request=["--from", old, "--to", new, "--database", db, "--table", "events"],
        other_request=["--from", old, "--to", new, "--database", db, "--table", "beside"],
        journal=journal, partitions=THRIFT_PARTITIONS, chunk=THRIFT_CHUNK, in_flight=DEFAULT_THRIFT_CONNECTIONS,
        dump=lambda: _hms_dump(hive_metastore),
        moved_partitions=moved_partitions, expected_after=expected_after,
        expected_counts={"table": 1, "table_param": 1, "serde_param": 1 + THRIFT_PARTITIONS,  # partitions: own SerDe
                         "partition": THRIFT_PARTITIONS, "partition_param": THRIFT_PARTITIONS})
