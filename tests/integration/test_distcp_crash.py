"""A `hivecat distcp` process killed (SIGKILL) mid-copy: no partial unit is ever committed, the old
unit stays whole, and the rerun cleans the stale staging and completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.copy_trees import read_manifest, read_tree, uri, write_tree

from hivecat.copy.listing import STAGING_PREFIX
from hivecat.copy.staging import LEASE_NAME

FILES = {f"part-{i}.parquet": os.urandom(200_000) for i in range(4)}


def start_slow_copy(source: Path, target: Path) -> subprocess.Popen:
    # 0.1 MB/s per task, two tasks: about 4 s in all, so it is surely killed mid-copy
    return subprocess.Popen([sys.executable, "-m", "hivecat", "distcp", "--from", uri(source), "--to", uri(target),
                             "--engine", "local", "--parallelism", "2", "--bandwidth", "0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill_once_staging_has_bytes(process: subprocess.Popen, parent: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        staged = [p for d in parent.glob(f"{STAGING_PREFIX}*") for p in d.rglob("*")
                  if p.is_file() and p.name != LEASE_NAME]  # data, not the run's lease
        if any(p.stat().st_size > 0 for p in staged):
            os.kill(process.pid, signal.SIGKILL)
            process.wait(10)
            return
        assert process.poll() is None, process.stderr.read().decode()
        time.sleep(0.05)
    process.kill()
    raise AssertionError("the copy never staged a byte")


def rerun(source: Path, target: Path) -> str:
    result = subprocess.run([sys.executable, "-m", "hivecat", "distcp", "--from", uri(source), "--to", uri(target),
                             "--engine", "local"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_killed_first_copy_commits_nothing_and_rerun_completes(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", FILES)
    target = tmp_path / "replica" / "t"
    kill_once_staging_has_bytes(start_slow_copy(source, target), target.parent)
    assert not target.exists()  # absent, not half-present
    assert [p.name for p in target.parent.iterdir()][0].startswith(STAGING_PREFIX)
    out = rerun(source, target)
    assert "files copied 4" in out
    assert read_tree(target) == FILES
    assert [p.name for p in target.parent.iterdir()] == ["t"]  # stale staging cleaned


def test_killed_replacement_keeps_the_old_unit_whole(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", FILES)
    target = tmp_path / "replica" / "t"
    rerun(source, target)
    old = read_tree(target, with_manifest=True)
    changed = {name: os.urandom(200_000) for name in FILES}
    write_tree(source, changed)
    kill_once_staging_has_bytes(start_slow_copy(source, target), target.parent)
    assert read_tree(target, with_manifest=True) == old
    assert "files copied 4" in rerun(source, target)
    assert read_tree(target) == changed
    assert {f["path"] for f in read_manifest(target)["files"]} == set(changed)
    assert [p.name for p in target.parent.iterdir()] == ["t"]
