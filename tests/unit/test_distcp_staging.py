"""Staging belongs to its run: a commit takes only the staged files it verified against the new
manifest, and only staging whose run is dead is removed by other runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
from support.copy_trees import read_tree, uri, write_tree

from hivecat.copy import Copier, CopyOptions, LocalEngine, Storage
from hivecat.copy import commit as commit_module
from hivecat.copy import staging
from hivecat.copy.listing import STAGING_PREFIX
from hivecat.copy.plan import single_unit_plan
from hivecat.copy.storage import Location

FILES = {"part-0.parquet": os.urandom(70_000), "part-1.parquet": b"x" * 1000, "nested/part-2.parquet": b"z" * 500}


def copy(source: Path, target: Path, **options) -> dict:
    return Copier(single_unit_plan(uri(source), uri(target)), CopyOptions(**options),
                  engine=LocalEngine(2)).run().to_dict()


def replace_with_same_size(path: Path) -> None:
    """New content under the same name, without writing into the old inode (which staging may share
    with the committed unit through a hard link)."""
    fresh = path.with_name(path.name + ".tmp")
    fresh.write_bytes(bytes(255 - b for b in path.read_bytes()))
    os.replace(fresh, path)


TAMPERINGS = {
    "a carried file removed": lambda unit: (unit / "part-0.parquet").unlink(),
    "a copied file removed": lambda unit: (unit / "part-1.parquet").unlink(),
    "the whole staging removed": lambda unit: shutil.rmtree(unit.parent),  # as another run's cleanup did
    "a copied file truncated": lambda unit: os.truncate(unit / "part-1.parquet", 10),
}


@pytest.mark.parametrize("verify", ["size", "checksum"])
@pytest.mark.parametrize("tamper", sorted(TAMPERINGS))
def test_staging_that_lost_files_before_the_swap_is_not_committed(tmp_path: Path, monkeypatch, tamper: str,
                                                                   verify: str) -> None:
    source, target = write_tree(tmp_path / "src", FILES), tmp_path / "dst" / "t"
    copy(source, target, verify=verify)
    previous = read_tree(target, with_manifest=True)
    (source / "part-1.parquet").write_bytes(b"y" * 1001)
    real_commit = commit_module.commit_by_rename

    def cleanup_then_commit(filesystem, staging, *args, **kwargs):
        TAMPERINGS[tamper](Path(staging.path))
        return real_commit(filesystem, staging, *args, **kwargs)

    monkeypatch.setattr(commit_module, "commit_by_rename", cleanup_then_commit)
    summary = copy(source, target, verify=verify)
    assert summary["status"] == "failed" and "staged" in summary["units"][0]["reason"]
    assert read_tree(target, with_manifest=True) == previous  # the committed unit and its manifest, byte for byte
    assert sorted(p.name for p in target.parent.iterdir()) == ["t"]


def test_checksum_mode_refuses_a_staged_file_with_other_content_of_the_same_size(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    source, target = write_tree(tmp_path / "src", FILES), tmp_path / "dst" / "t"
    copy(source, target, verify="checksum")
    previous = read_tree(target, with_manifest=True)
    (source / "part-1.parquet").write_bytes(b"y" * 1001)
    real_commit = commit_module.commit_by_rename

    def swap_content_then_commit(filesystem, staging, *args, **kwargs):
        replace_with_same_size(Path(staging.path) / "part-1.parquet")
        return real_commit(filesystem, staging, *args, **kwargs)

    monkeypatch.setattr(commit_module, "commit_by_rename", swap_content_then_commit)
    summary = copy(source, target, verify="checksum")
    assert summary["status"] == "failed" and "checksum" in summary["units"][0]["reason"]
    assert read_tree(target, with_manifest=True) == previous


# --- whose staging is it -----------------------------------------------------------------------------

OLD = 1_577_836_800  # 2020-01-01, in seconds


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def staging_of(parent: Path, name: str, lease: staging.Lease | None, age: float | None = None) -> Path:
    root = write_tree(parent / f"{STAGING_PREFIX}{name}", {"t/half.parquet": b"x"})
    if lease is not None:
        staging.write_lease(Storage(), Location("file", "", str(root)), lease)
    if age is not None:
        for path in (*root.rglob("*"), root):
            os.utime(path, (OLD, OLD))
    return root


def test_only_the_staging_of_dead_runs_is_removed(tmp_path: Path) -> None:
    source, parent = write_tree(tmp_path / "src", FILES), tmp_path / "dst"
    alive = staging.this_process("live")
    roots = {
        "expired": (staging_of(parent, "expired", replace(alive, expires_at=time.time() - 1)), False),
        "pid gone": (staging_of(parent, "pid-gone", replace(alive, pid=dead_pid())), False),
        "pid reused": (staging_of(parent, "pid-reused", replace(alive, started=alive.started - 1)), False),
        "no lease, untouched for a term": (staging_of(parent, "old", None, age=OLD), False),
        "unreadable lease, untouched": (staging_of(parent, "garbled", None, age=OLD), False),
        "live": (staging_of(parent, "live", alive), True),
        "another host's": (staging_of(parent, "elsewhere", replace(alive, host="elsewhere", pid=dead_pid())), True),
        "no lease yet, just made": (staging_of(parent, "new", None), True),
    }
    (roots["unreadable lease, untouched"][0] / staging.LEASE_NAME).write_bytes(b"[" * 10_000)
    os.utime(roots["unreadable lease, untouched"][0] / staging.LEASE_NAME, (OLD, OLD))
    os.utime(roots["unreadable lease, untouched"][0], (OLD, OLD))
    summary = copy(source, parent / "t")
    assert summary["status"] == "succeeded"
    assert {name: root.exists() for name, (root, _) in roots.items()} == \
        {name: kept for name, (_, kept) in roots.items()}
    assert read_tree(parent / "t") == FILES


def test_a_run_holds_a_lease_on_its_staging_while_it_works(tmp_path: Path, monkeypatch) -> None:
    source, parent = write_tree(tmp_path / "src", FILES), tmp_path / "dst"
    seen = []
    real_commit = commit_module.commit_by_rename

    def look_then_commit(filesystem, unit_staging, *args, **kwargs):
        root = Location("file", "", str(Path(unit_staging.path).parent))
        seen.append((staging.read_lease(filesystem, root), staging.is_dead(filesystem, root)))
        return real_commit(filesystem, unit_staging, *args, **kwargs)

    monkeypatch.setattr(commit_module, "commit_by_rename", look_then_commit)
    summary = copy(source, parent / "t")
    [(lease, dead)] = seen
    assert lease.run_id == summary["run_id"] and lease.pid == os.getpid() and not dead
    assert time.time() < lease.expires_at <= time.time() + staging.LEASE_SECONDS
    assert sorted(p.name for p in parent.iterdir()) == ["t"]  # released: the staging root is gone


def test_leases_are_renewed_until_the_keeper_stops(tmp_path: Path) -> None:
    root = Location("file", "", str(tmp_path / f"{STAGING_PREFIX}r1"))
    filesystem = Storage().filesystem(root)

    def expires_at() -> float:
        # A lease is rewritten in place: a read that meets a renewal half-written sees none (write_lease), so
        # the next one is read.
        for _ in range(200):
            lease = staging.read_lease(filesystem, root)
            if lease is not None:
                return lease.expires_at
            time.sleep(0.005)
        raise AssertionError("no whole lease read in 200 tries")

    with staging.LeaseKeeper(Storage(), [root], "r1", seconds=30, renew=0.05):
        first = expires_at()
        deadline = time.monotonic() + 30  # a renewal is due every 0.05 s; only a keeper that never renews waits
        while expires_at() == first:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.01)
    last = expires_at()  # read after exit: a renewal may land between a read inside the block and the exit
    assert first < last
    time.sleep(0.2)  # a negative: four renewal periods in which nothing may be written
    assert expires_at() == last  # no renewal after exit


@pytest.mark.parametrize("data", [b"", b"{", b"[]", b'{"run_id": 1}', b"[" * 100_000,
                                  b'{"run_id":"r","host":"h","pid_namespace":null,"pid":true,"started":null,'
                                  b'"expires_at":1}'])
def test_anything_but_a_lease_reads_as_no_lease(data: bytes) -> None:
    assert staging.Lease.from_bytes(data) is None


def test_a_lease_round_trips() -> None:
    lease = staging.this_process("r1")
    assert staging.Lease.from_bytes(lease.to_bytes()) == lease
    assert not staging.owner_is_gone(lease)


def test_a_lease_that_never_expires_is_no_lease() -> None:
    lease = staging.this_process("r1")
    for forever in (b"NaN", b"Infinity"):
        assert staging.Lease.from_bytes(lease.to_bytes().replace(
            f'"expires_at": {lease.expires_at}'.encode(), b'"expires_at": ' + forever)) is None
