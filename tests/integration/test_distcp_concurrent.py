"""Runs into sibling units of one parent at the same time (two partitions of one table): each run's
staging is its own, so neither removes the other's, and both commit whole units. On S3 as well: the
staging of a dead run is removed, a live one kept, and a commit never takes staging that lost objects."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from support.copy_trees import read_manifest, read_tree, uri, write_tree

from hivecat.copy import Copier, CopyOptions, LocalEngine, S3Settings, Storage, single_unit_plan
from hivecat.copy import commit as commit_module
from hivecat.copy import staging
from hivecat.copy.documents import UNIT_MANIFEST, validate
from hivecat.copy.listing import STAGING_PREFIX
from hivecat.copy.storage import Location
from hivecat.copy.summary import CopySummary

OLD = {"dt=1": {"part-0.parquet": os.urandom(50_000), "part-1.parquet": b"old-1"},
       "dt=2": {"part-0.parquet": os.urandom(40_000), "gone.parquet": b"old-2"}}
NEW = {"dt=1": {"part-0.parquet": os.urandom(60_000), "part-1.parquet": b"new-1", "part-2.parquet": b"n" * 999},
       "dt=2": {"part-0.parquet": os.urandom(30_000), "part-9.parquet": b"new-2"}}


def write_source(source: Path, version: dict[str, dict[str, bytes]]) -> None:
    for unit, files in version.items():
        for stale in (source / unit).glob("*"):
            stale.unlink()
        write_tree(source / unit, files)


def assert_whole(unit: Path, files: dict[str, bytes]) -> None:
    """The unit holds exactly `files`, and its valid manifest lists each with its size."""
    assert read_tree(unit) == files
    manifest = read_manifest(unit)
    validate(UNIT_MANIFEST, manifest)
    assert {f["path"]: f["size"] for f in manifest["files"]} == {p: len(d) for p, d in files.items()}


def copy_unit(source: Path, target: Path, engine: LocalEngine | None = None) -> CopySummary:
    return Copier(single_unit_plan(uri(source), uri(target)), CopyOptions(delete=True),
                  engine=engine or LocalEngine(2)).run()


class PausingEngine(LocalEngine):
    """Copies into staging, then waits before the commit until told to go on."""

    def __init__(self) -> None:
        super().__init__(2)
        self.staged, self.go_on = threading.Event(), threading.Event()

    def execute(self, tasks, options, progress=None):
        results = super().execute(tasks, options, progress)
        self.staged.set()
        assert self.go_on.wait(60)
        return results


def test_two_runs_into_sibling_units_both_commit_whole_units(tmp_path: Path) -> None:
    source, target = tmp_path / "src", tmp_path / "dst"
    write_source(source, OLD)
    for unit in OLD:
        copy_unit(source / unit, target / unit)
    previous = {unit: read_tree(target / unit, with_manifest=True) for unit in OLD}
    write_source(source, NEW)

    engine_a, outcome = PausingEngine(), {}
    run_a = threading.Thread(target=lambda: outcome.setdefault("a", copy_unit(source / "dt=1", target / "dt=1",
                                                                              engine_a)))
    run_a.start()
    try:
        assert engine_a.staged.wait(60), "run A never staged its unit"
        # A holds its staged unit, not yet committed; B runs from start to end meanwhile
        summary_b = copy_unit(source / "dt=2", target / "dt=2")
        assert summary_b.status == "succeeded", summary_b.units[0].reason
        assert read_tree(target / "dt=1", with_manifest=True) == previous["dt=1"]  # nothing lost mid-way
        assert_whole(target / "dt=2", NEW["dt=2"])
    finally:
        engine_a.go_on.set()
        run_a.join(60)
    assert outcome["a"].status == "succeeded", outcome["a"].units[0].reason
    for unit in NEW:
        assert_whole(target / unit, NEW[unit])
    assert sorted(p.name for p in target.iterdir()) == ["dt=1", "dt=2"]  # both runs removed their own staging


def hivecat_distcp(source: Path, target: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "hivecat", "distcp", "--from", uri(source), "--to", uri(target),
            "--engine", "local", "--delete", *extra]


def test_two_hivecat_processes_into_sibling_units(tmp_path: Path) -> None:
    source, target = tmp_path / "src", tmp_path / "dst"
    write_source(source, OLD)
    for unit in OLD:
        copy_unit(source / unit, target / unit)
    write_source(source, NEW)
    # A: 0.01 MB/s per task, about six seconds; once it has staged bytes it is stopped (SIGSTOP: alive, its
    # staging mid-copy) while B runs from start to end, so A cannot end first however slow B's start is.
    slow = subprocess.Popen(hivecat_distcp(source / "dt=1", target / "dt=1", "--parallelism", "2",
                                           "--bandwidth", "0.01"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not any(p.is_file() and p.stat().st_size > 0 and p.name != staging.LEASE_NAME
                      for d in target.glob(f"{STAGING_PREFIX}*") for p in d.rglob("*")):
            assert slow.poll() is None and time.monotonic() < deadline, slow.stderr.read().decode()
            time.sleep(0.02)
        slow.send_signal(signal.SIGSTOP)
        try:
            fast = subprocess.run(hivecat_distcp(source / "dt=2", target / "dt=2"), capture_output=True,
                                  text=True, timeout=60)
        finally:
            slow.send_signal(signal.SIGCONT)
        assert fast.returncode == 0, fast.stderr
        assert slow.wait(60) == 0, slow.stderr.read().decode()
    finally:
        if slow.poll() is None:
            slow.kill()
            slow.wait()
    for unit in NEW:
        assert_whole(target / unit, NEW[unit])
    assert sorted(p.name for p in target.iterdir()) == ["dt=1", "dt=2"]


# --- S3: the lease is an object -------------------------------------------------------------------------

FILES = {"part-0.parquet": os.urandom(20_000), "part-1.parquet": b"p1" * 100}


@pytest.fixture
def lake(moto):
    s3 = moto.client("s3")
    s3.create_bucket(Bucket="lake")
    return s3


def s3_copy(source: Path, target: str) -> dict:
    return Copier(single_unit_plan(uri(source), target), CopyOptions(),
                  Storage(S3Settings.from_environment()), LocalEngine(2)).run().to_dict()


def s3_keys(s3, prefix: str) -> dict[str, bytes]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket="lake", Prefix=prefix)
    return {o["Key"]: s3.get_object(Bucket="lake", Key=o["Key"])["Body"].read()
            for page in pages for o in page.get("Contents", [])}


def test_s3_staging_of_a_dead_run_is_removed_and_a_live_one_kept(lake, tmp_path: Path) -> None:
    storage = Storage(S3Settings.from_environment())
    alive = staging.this_process("live")
    leases = {"dead": replace(alive, expires_at=time.time() - 1), "live": replace(alive, host="elsewhere")}
    for name, lease in leases.items():
        lake.put_object(Bucket="lake", Key=f"t/{STAGING_PREFIX}{name}/dt=9/half", Body=b"x")
        staging.write_lease(storage, Location("s3", "lake", f"lake/t/{STAGING_PREFIX}{name}"), lease)
    lake.put_object(Bucket="lake", Key=f"t/{STAGING_PREFIX}fresh/dt=8/half", Body=b"x")  # no lease yet
    write_tree(tmp_path / "src", FILES)
    assert s3_copy(tmp_path / "src", "s3://lake/t/dt=1")["status"] == "succeeded"
    left = {key.split("/")[1] for key in s3_keys(lake, f"t/{STAGING_PREFIX}")}
    assert left == {f"{STAGING_PREFIX}live", f"{STAGING_PREFIX}fresh"}


def test_s3_commit_refuses_staging_that_lost_an_object(lake, tmp_path: Path, monkeypatch) -> None:
    source = write_tree(tmp_path / "src", FILES)
    s3_copy(source, "s3://lake/t/dt=1")
    previous = s3_keys(lake, "t/dt=1/")
    (source / "part-1.parquet").write_bytes(b"changed")
    real_commit = commit_module.commit_on_object_store

    def cleanup_then_commit(storage, unit_staging, *args, **kwargs):
        bucket, _, key = unit_staging.child("part-1.parquet").path.partition("/")
        lake.delete_object(Bucket=bucket, Key=key)
        return real_commit(storage, unit_staging, *args, **kwargs)

    monkeypatch.setattr(commit_module, "commit_on_object_store", cleanup_then_commit)
    summary = s3_copy(source, "s3://lake/t/dt=1")
    assert summary["status"] == "failed" and "part-1.parquet is missing" in summary["units"][0]["reason"]
    assert s3_keys(lake, "t/dt=1/") == previous  # the manifest was not even deleted
    assert not s3_keys(lake, f"t/{STAGING_PREFIX}")
