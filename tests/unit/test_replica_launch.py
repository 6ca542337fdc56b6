"""The Local launcher: `hivecat distcp --plan` as a child process, its outcome read from the exit code and the
JSON summary by a later observe; stopped with the operator (or its TableReplica), the child is terminated."""

from __future__ import annotations

import time
from pathlib import Path

from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.plan import CopyPlan, Unit
from hivecat.copy.storage import parse_uri
from hivecat.replication.launch import (FAILED, RUNNING, SUCCEEDED, WAITING, LaunchResult, LocalLauncher, LocalRuns,
                                        distcp_args)
from hivecat.specs.tablereplica import CopySettings


def plan(source: Path, target: Path) -> CopyPlan:
    return CopyPlan((Unit("db.t", parse_uri(f"file://{source}"), parse_uri(f"file://{target}")),))


def finished(launcher: LocalLauncher) -> LaunchResult:
    deadline = time.monotonic() + 120
    while (seen := launcher.observe()) is not None and seen.outcome == RUNNING and time.monotonic() < deadline:
        time.sleep(0.1)
    assert seen is not None
    return seen


def launcher(tmp_path: Path, runs: LocalRuns | None = None, secondary: str = "dr1") -> LocalLauncher:
    return LocalLauncher(tmp_path / "work", runs or LocalRuns(cap=1), ("ns", "r", secondary))


def test_a_plan_is_copied_by_the_child_process(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.parquet").write_bytes(b"x" * 1000)
    copying = launcher(tmp_path)
    assert copying.start(plan(source, tmp_path / "dst"), CopySettings()).outcome == RUNNING
    result = finished(copying)
    assert result.outcome == SUCCEEDED and result.files_copied == 1 and result.bytes_copied == 1000
    assert result.copy_run_id and (tmp_path / "dst" / MANIFEST_NAME).is_file()
    assert list((tmp_path / "work").iterdir()) == []  # the plan file went with the run


def test_a_failing_copy_says_why(tmp_path: Path) -> None:
    copying = launcher(tmp_path)
    copying.start(plan(tmp_path / "missing", tmp_path / "dst"), CopySettings())
    result = finished(copying)
    assert result.outcome == FAILED and "exit code 2" in result.message and "does not exist" in result.message


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
    first = launcher(tmp_path, runs)
    assert first.observe() is None
    started = first.start(plan(source, tmp_path / "dst"), CopySettings())
    assert started.outcome == RUNNING and started.units == ("db.t",)
    waiting = launcher(tmp_path, runs, "dr2").start(plan(source, tmp_path / "dst2"), CopySettings())
    assert waiting.outcome == WAITING and "concurrency.localCopies" in waiting.message  # the cap: one at a time
    seen = finished(first)
    assert seen.outcome == SUCCEEDED and seen.units == ("db.t",) and seen.files_copied == 1
    assert first.observe() is None  # read once
    assert list((tmp_path / "work").iterdir()) == []


def test_cancelling_a_replicas_local_runs_stops_its_children_only(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a").write_bytes(b"x")
    runs = LocalRuns(cap=2)
    for replica in ("a", "b"):
        LocalLauncher(tmp_path / "work", runs, ("ns", replica, "dr1")).start(
            plan(source, tmp_path / f"dst-{replica}"), CopySettings())
    assert runs.cancel(("ns", "a")) == 1
    assert LocalLauncher(tmp_path / "work", runs, ("ns", "a", "dr1")).observe() is None
    assert runs.cancel() == 1  # the operator stops: every child
    assert runs.running() == 0


def test_the_first_syncs_after_a_start_are_spread_evenly_and_the_same_way_each_time() -> None:
    from hivecat.handlers.tablereplica import startup_delay
    delays = [startup_delay(f"uid-{i}", 30.0) for i in range(1000)]
    assert all(0 <= d < 30 for d in delays) and delays == [startup_delay(f"uid-{i}", 30.0) for i in range(1000)]
    assert all(80 <= sum(int(d // 3) == slot for d in delays) <= 120 for slot in range(10))  # ~100 per 3 s
    assert startup_delay("uid-1", 0) == 0


def test_a_copy_workloads_plan_is_read_back_from_where_it_was_written_not_where_its_annotation_says(
        tmp_path: Path) -> None:
    """Hostile: someone who may edit Jobs in the namespace points the copy Job's plan annotation at another plan
    (other storage, other units). The pass reads the plan of the run id it recorded, at the location the start
    derived for it: the old code read the annotation's location and reported that plan's units."""
    from hivecat.copy.plan_store import plan_location, write_plan
    from hivecat.copy.storage import Storage
    from hivecat.handlers.copy_launch import JOB, workload_launcher
    from hivecat.replication.registry import ClusterEntry
    from hivecat.workloads.copy_job import ANNOTATION_PLAN, ANNOTATION_PLAN_DIGEST

    secondary = ClusterEntry("dr", (tmp_path / "dr").as_uri())
    owner = {"metadata": {"namespace": "team-a", "name": "sales", "uid": "u-1"}}
    launcher = workload_launcher(JOB, owner, "lake", secondary, Storage(), expected="run-1")
    ours = write_plan(Storage(), plan_location(secondary.filesystem, "team-a", "sales", "run-1"),
                      plan(tmp_path / "src", tmp_path / "dr" / "t"))
    other = CopyPlan((Unit("db.secret", parse_uri((tmp_path / "b" / "x").as_uri()),
                           parse_uri((tmp_path / "b" / "y").as_uri())),))
    elsewhere = (tmp_path / "b" / "plan.json").as_uri()
    theirs = write_plan(Storage(), elsewhere, other)
    hostile = {"annotations": {ANNOTATION_PLAN: elsewhere, ANNOTATION_PLAN_DIGEST: theirs}}
    assert launcher._units(hostile, "run-1") == ()  # their digest does not match our plan: nothing read
    honest = {"annotations": {ANNOTATION_PLAN: elsewhere, ANNOTATION_PLAN_DIGEST: ours}}
    assert launcher._units(honest, "run-1") == ("db.t",)
