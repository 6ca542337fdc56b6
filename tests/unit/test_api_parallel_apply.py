"""The API driver writes up to `backend.parallelism` chunks at once (issue 17) and keeps the journal exact:
the same journal, catalog state and report as one chunk at a time; never more chunks in flight than the
bound; the journal touched by the calling thread only; and after a worker's error, the chunks that ended
are recorded, the error is raised, and rerunning the request finishes the run with nothing conflicted and
every partition written exactly once. Runs on an in-memory backend (support.fake_api_backend)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from hivecat.catalog.api.backend import WriteRejected
from hivecat.catalog.api.driver import ApiCatalog
from hivecat.catalog.journal import APPLIED, PLANNED, kind_of, state_of
from hivecat.catalog.model import ObjectKind, RelocationReport, RelocationRequest, Scope
from support.fake_api_backend import FakeApiBackend, LostReply

OLD, NEW = "s3://old-lake/wh", "s3://new-lake/wh"
PARTITIONS, BATCH = 60, 4  # 15 partition chunks, plus one for the database and one for the table


def catalog(tmp_path: Path, parallelism: int, *, pause: float = 0.005, name: str = "journal") -> ApiCatalog:
    backend = FakeApiBackend(OLD, PARTITIONS, batch_size=BATCH, parallelism=parallelism, pause=pause)
    return ApiCatalog(backend, f"sqlite:///{tmp_path / name}.db")


def journal_rows(cat: ApiCatalog, run_id: str) -> list[tuple]:
    """Every entry of the run, without its run id."""
    e = cat.journal.entries
    columns = [e.c.kind, e.c.key1, e.c.key2, e.c.object, e.c.chunk, e.c.old_value, e.c.new_value, e.c.state]
    with cat.engine.connect() as conn:
        rows = conn.execute(sa.select(*columns).where(e.c.run_no == cat.journal.run_no(conn, run_id))
                            .order_by(e.c.key1))
        return [(kind_of(kind).value, *rest, state_of(state)) for kind, *rest, state in rows]


def partition_states(cat: ApiCatalog, run_id: str) -> dict[tuple[str, ...], str]:
    return {tuple(json.loads(obj)["values"]): state for kind, _, _, obj, _, _, _, state in journal_rows(cat, run_id)
            if kind == ObjectKind.PARTITION.value}


def outcome(report: RelocationReport) -> tuple:
    """What a report says, in an order that does not depend on which chunk ended first."""
    counts = {kind: (c.rewritten, c.skipped, c.conflicted, c.refused, c.failed) for kind, c in report.counts.items()}
    return report.status, counts, sorted(report.errors), report.tables_touched


def someone_moves_partition_after_planning(cat: ApiCatalog, values: tuple[str, ...], location: str) -> None:
    plan = cat._plan

    def planned_then_moved(*args, **kwargs):
        planned = plan(*args, **kwargs)
        cat.backend.partitions[values]["location"] = location
        return planned
    cat._plan = planned_then_moved


def test_parallel_apply_gives_the_journal_state_and_report_of_serial(tmp_path: Path) -> None:
    runs = []
    for parallelism in (1, 4):
        cat = catalog(tmp_path, parallelism, name=f"journal{parallelism}")
        cat.backend.rejected = {("7",): WriteRejected("InternalError: boom", conflict=False),
                                ("8",): WriteRejected("NoSuchObject: gone", conflict=True)}
        someone_moves_partition_after_planning(cat, ("20",), "s3://elsewhere/p20")
        report = cat.relocate(RelocationRequest(OLD, NEW))
        forward = (journal_rows(cat, report.run_id), cat.backend.locations(), cat.backend.database,
                   cat.backend.table, outcome(report))
        cat.backend.rejected = {}
        undone = cat.undo(report.run_id)
        runs.append((forward, journal_rows(cat, report.run_id), cat.backend.locations(), outcome(undone)))
    serial, parallel = runs
    assert parallel == serial
    (_, _, _, _, (status, counts, errors, _)), _, locations, _ = serial
    assert status == "partial" and counts[ObjectKind.PARTITION] == (PARTITIONS - 3, 0, 2, 0, 1)
    assert len(errors) == 3
    assert locations[("20",)] == "s3://elsewhere/p20"
    assert all(loc.startswith(OLD) for values, loc in locations.items() if values != ("20",))


class Gate:
    """Holds its callers until `n` of them are inside at once, then stays open for good. So reaching n at
    once does not depend on the machine's speed: while they wait none ends, and the driver can only start
    more, up to its bound. A driver that never gets there fails the test after TIMEOUT seconds."""

    TIMEOUT = 60

    def __init__(self, n: int, what: str):
        self.n, self.what = n, what
        self.lock, self.opened = threading.Lock(), threading.Event()
        self.now = self.peak = 0  # inside now; most inside at once

    @contextmanager
    def inside(self) -> Iterator[None]:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
            if self.now >= self.n:
                self.opened.set()
        try:
            if not self.opened.wait(self.TIMEOUT):
                raise AssertionError(f"only {self.peak} of {self.n} {self.what} were ever under way at once")
            yield
        finally:
            with self.lock:
                self.now -= 1


@pytest.mark.parametrize("parallelism", [1, 3, 6])
def test_chunks_in_flight_never_exceed_the_bound(tmp_path: Path, parallelism: int) -> None:
    cat = catalog(tmp_path, parallelism)
    gate, swap = Gate(parallelism, "chunks"), cat._swap

    def counted(rows, *, undo):
        with gate.inside():
            return swap(rows, undo=undo)
    cat._swap = counted
    report = cat.relocate(RelocationRequest(OLD, NEW))
    assert report.status == "done" and report.count(ObjectKind.PARTITION).rewritten == PARTITIONS
    assert gate.peak == parallelism


def test_journal_and_progress_stay_on_the_calling_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cat = catalog(tmp_path, 4)
    journal_threads, write_threads = set(), set()

    def on_thread(target, name: str, seen: set) -> None:
        original = getattr(target, name)

        def recorded(*args, **kwargs):
            seen.add(threading.get_ident())
            return original(*args, **kwargs)
        monkeypatch.setattr(target, name, recorded)
    for name in ("pending_chunks", "chunk_entries", "set_states", "renew_lock"):
        on_thread(cat.journal, name, journal_threads)
    gate, write = Gate(2, "partition writes"), cat.backend.write_partitions

    def two_at_once(*args, **kwargs):  # two writes under way together run on two threads, however fast
        with gate.inside():
            return write(*args, **kwargs)
    monkeypatch.setattr(cat.backend, "write_partitions", two_at_once)
    on_thread(cat.backend, "write_partitions", write_threads)
    progress: list[tuple[int, int]] = []
    report = cat.relocate(RelocationRequest(OLD, NEW),
                          progress=lambda done, total: (journal_threads.add(threading.get_ident()),
                                                        progress.append((done, total))))
    assert report.status == "done"
    assert journal_threads == {threading.get_ident()}
    assert len(write_threads) > 1 and threading.get_ident() not in write_threads
    chunks = 2 + PARTITIONS // BATCH
    assert progress == [(done, chunks) for done in range(1, chunks + 1)]


def test_a_worker_error_records_the_chunks_that_ended_then_a_rerun_finishes_exactly(tmp_path: Path) -> None:
    cat = catalog(tmp_path, 4, pause=0.02)
    request = RelocationRequest(OLD, NEW, Scope("db", "t"))
    cat.backend.fail_write(3)  # stores its batch, then the connection dies before the answer
    with pytest.raises(LostReply):
        cat.relocate(request)
    [run] = cat.history()
    assert run.status == "running"
    states = partition_states(cat, run.run_id)
    moved = {values for values, location in cat.backend.locations().items() if location.startswith(NEW)}
    applied = {values for values, state in states.items() if state == APPLIED}
    # Every chunk that ended was recorded; only the failed call's batch is written but still planned.
    assert applied <= moved and len(moved - applied) == BATCH
    assert all(states[values] == PLANNED for values in moved - applied)
    assert sum(state == PLANNED for state in states.values()) > BATCH, "no new chunk may start after the error"

    cat.backend.fail_write(None)
    report = cat.relocate(request)  # the same request resumes the run
    assert report.run_id == run.run_id and report.status == "done"
    assert report.conflicted == report.failed == 0
    assert report.count(ObjectKind.PARTITION).rewritten == PARTITIONS
    assert set(partition_states(cat, run.run_id).values()) == {APPLIED}
    assert all(location.startswith(NEW) for location in cat.backend.locations().values())
    assert set(cat.backend.writes.values()) == {1} and len(cat.backend.writes) == PARTITIONS  # each once
