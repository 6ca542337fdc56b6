"""The Local launcher: `hivecat distcp --plan` as a child process, its outcome read from the exit code and the
JSON summary; stopped with the operator, the child is terminated and the run reported cancelled."""

from __future__ import annotations

import time
from pathlib import Path

from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.plan import CopyPlan, Unit
from hivecat.copy.storage import parse_uri
from hivecat.replication.launch import (CANCELLED, FAILED, RUNNING, SUCCEEDED, WAITING, LocalLauncher, LocalRuns,
                                        distcp_args)
from hivecat.specs.tablereplica import CopySettings


def plan(source: Path, target: Path) -> CopyPlan:
    return CopyPlan((Unit("db.t", parse_uri(f"file://{source}"), parse_uri(f"file://{target}")),))


def test_a_plan_is_copied_by_the_child_process(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.parquet").write_bytes(b"x" * 1000)
    result = LocalLauncher(tmp_path / "work").run(plan(source, tmp_path / "dst"), CopySettings())
    assert result.outcome == SUCCEEDED and result.files_copied == 1 and result.bytes_copied == 1000
    assert result.copy_run_id and (tmp_path / "dst" / MANIFEST_NAME).is_file()
    assert list((tmp_path / "work").iterdir()) == []  # the plan file went with the run


def test_a_failing_copy_says_why(tmp_path: Path) -> None:
    result = LocalLauncher(tmp_path / "work").run(plan(tmp_path / "missing", tmp_path / "dst"), CopySettings())
    assert result.outcome == FAILED and "exit code 2" in result.message and "does not exist" in result.message


def test_stopping_terminates_the_child(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a").write_bytes(b"x")
    result = LocalLauncher(tmp_path / "work").run(plan(source, tmp_path / "dst"), CopySettings(), lambda: True)
    assert result.outcome == CANCELLED


def test_every_launcher_passes_the_same_arguments() -> None:
    copy = CopySettings("checksum", 4, 100, "local")
    assert distcp_args("p.json", copy) == ["--plan", "p.json", "--verify", "checksum", "--engine", "local",
                                           "--delete", "--parallelism", "4", "--bandwidth", "100", "--output", "json"]
    assert distcp_args("s3://b/p", CopySettings(), digest="sha256:ab", engine="spark", delete=False) == [
        "--plan", "s3://b/p", "--plan-digest", "sha256:ab", "--verify", "size", "--engine", "spark",
        "--output", "json"]


def test_local_runs_start_and_return_and_a_later_observe_reads_the_end(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.parquet").write_bytes(b"x" * 10)
    runs = LocalRuns(cap=1)
    launcher = LocalLauncher(tmp_path / "work", runs=runs, key=("ns", "r", "dr1"))
    assert launcher.observe() is None
    started = launcher.start(plan(source, tmp_path / "dst"), CopySettings())
    assert started.outcome == RUNNING and started.units == ("db.t",)
    other = LocalLauncher(tmp_path / "work", runs=runs, key=("ns", "r", "dr2"))
    waiting = other.start(plan(source, tmp_path / "dst2"), CopySettings())
    assert waiting.outcome == WAITING and "concurrency.localCopies" in waiting.message  # the cap: one at a time
    deadline = time.monotonic() + 120
    while (seen := launcher.observe()) is not None and seen.outcome == RUNNING and time.monotonic() < deadline:
        time.sleep(0.1)
    assert seen is not None and seen.outcome == SUCCEEDED and seen.units == ("db.t",) and seen.files_copied == 1
    assert launcher.observe() is None  # read once
    assert list((tmp_path / "work").iterdir()) == []


def test_cancelling_a_replicas_local_runs_stops_its_children_only(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a").write_bytes(b"x")
    runs = LocalRuns(cap=2)
    for replica in ("a", "b"):
        LocalLauncher(tmp_path / "work", runs=runs, key=("ns", replica, "dr1")).start(
            plan(source, tmp_path / f"dst-{replica}"), CopySettings())
    assert runs.cancel(("ns", "a")) == 1
    assert LocalLauncher(tmp_path / "work", runs=runs, key=("ns", "a", "dr1")).observe() is None
    assert runs.cancel() == 1  # the operator stops: every child
    assert runs.running() == 0


def test_the_first_syncs_after_a_start_are_spread_evenly_and_the_same_way_each_time() -> None:
    from hivecat.handlers.tablereplica import startup_delay
    delays = [startup_delay(f"uid-{i}", 30.0) for i in range(1000)]
    assert all(0 <= d < 30 for d in delays) and delays == [startup_delay(f"uid-{i}", 30.0) for i in range(1000)]
    assert all(80 <= sum(int(d // 3) == slot for d in delays) <= 120 for slot in range(10))  # ~100 per 3 s
    assert startup_delay("uid-1", 0) == 0
