"""Symbolic links are never followed: a link in a source unit (to a file or a directory, inside the unit
or out of it, broken or looping) fails that unit, naming it, and nothing is read through it; directory
links are not descended; one unit's links never stop the run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyarrow import fs as pafs
from support.copy_trees import read_tree, uri, write_tree

from hivecat.copy import Copier, CopyOptions, LocalEngine, plan_from_document, single_unit_plan
from hivecat.copy.listing import list_files
from hivecat.copy.storage import Location, Storage, parse_uri
from hivecat.copy.transfer import FileTask, TransferOptions, hash_file, run_task

SECRET = b"the operator's service-account token"
DATA = {"part-0.parquet": b"p0" * 500, "dt=1/part-1.parquet": b"p1" * 300}


def copy(source: Path, target: Path, **options) -> dict:
    return Copier(single_unit_plan(uri(source), uri(target)), CopyOptions(**options),
                  engine=LocalEngine(2)).run().to_dict()


def files_holding(root: Path, data: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and data in p.read_bytes()]


@pytest.mark.parametrize("verify", ["size", "checksum"])
@pytest.mark.parametrize("link", ["../../outside/secret.txt", "../part-0.parquet", "../../outside"])
def test_a_link_fails_its_unit_and_nothing_is_read_through_it(tmp_path: Path, link: str, verify: str) -> None:
    write_tree(tmp_path / "outside", {"secret.txt": SECRET})
    source = write_tree(tmp_path / "src", DATA)
    (source / "dt=1" / "leak").symlink_to(link)
    summary = copy(source, tmp_path / "dst", verify=verify)
    unit = summary["units"][0]
    assert unit["status"] == "failed" and unit["reason"].startswith("dt=1/leak: a symbolic link"), unit["reason"]
    assert files_holding(tmp_path, SECRET) == [tmp_path / "outside" / "secret.txt"]
    assert not (tmp_path / "dst").exists()  # nothing committed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "src"]  # no staging left either


def test_directory_link_chains_are_not_descended(tmp_path: Path) -> None:
    """17 directories of 1 KiB, each level two links to the one below: followed, 131,071 files."""
    source = write_tree(tmp_path / "src", {"l0/f": b"x" * 1024})
    for level in range(1, 17):
        for name in ("a", "b"):
            (source / f"l{level}").mkdir(exist_ok=True)
            (source / f"l{level}" / name).symlink_to(f"../l{level - 1}")
    listed = list_files(pafs.LocalFileSystem(), parse_uri(uri(source)))
    assert len(listed) == 1 + 16 * 2  # the file, and each link as itself
    assert listed.refused == {f"l{level}/{name}": "a symbolic link" for level in range(1, 17) for name in "ab"}
    summary = copy(source, tmp_path / "dst")
    assert summary["units"][0]["status"] == "failed"
    assert "a symbolic link" in summary["units"][0]["reason"] and "(and 31 more)" in summary["units"][0]["reason"]
    assert not (tmp_path / "dst").exists()


def test_a_link_loop_fails_its_unit_not_the_run(tmp_path: Path) -> None:
    looping = write_tree(tmp_path / "looping", DATA)
    (looping / "self").symlink_to("self")
    (looping / "ping").symlink_to("pong")
    (looping / "pong").symlink_to("ping")
    (looping / "dt=1" / "up").symlink_to(".")  # a directory loop: followed, dt=1/up/up/up/...
    fine = write_tree(tmp_path / "fine", DATA)
    plan = plan_from_document({"version": 1, "units": [
        {"id": "looping", "source": uri(looping), "target": uri(tmp_path / "dst" / "looping")},
        {"id": "fine", "source": uri(fine), "target": uri(tmp_path / "dst" / "fine")}]})
    summary = Copier(plan, CopyOptions(), engine=LocalEngine(2)).run().to_dict()
    by_id = {u["id"]: u for u in summary["units"]}
    assert by_id["looping"]["status"] == "failed" and "a symbolic link" in by_id["looping"]["reason"]
    assert "(and 3 more)" in by_id["looping"]["reason"]
    assert by_id["fine"]["status"] == "done" and read_tree(tmp_path / "dst" / "fine") == DATA
    assert not (tmp_path / "dst" / "looping").exists()


# --- the file task itself: a file swapped for a link after the listing is still refused ----------------


@pytest.mark.parametrize("mode", ["size", "checksum", "bandwidth", "carry"])
def test_the_file_task_never_reads_through_a_link(tmp_path: Path, mode: str) -> None:
    write_tree(tmp_path, {"secret": SECRET})
    (tmp_path / "unit").mkdir()
    (tmp_path / "unit" / "f").symlink_to(tmp_path / "secret")
    # as the copier makes them: the unit's (resolved) path joined with the listed relative path
    source, dest = (Location("file", "", str(tmp_path / d / "f")) for d in ("unit", "staging"))
    task = FileTask(0, "f", source, dest, len(SECRET), (tmp_path / "secret").stat().st_mtime_ns,
                    carry=mode == "carry")
    options = TransferOptions(Storage(), checksum=mode == "checksum",
                              bandwidth=1e9 if mode == "bandwidth" else None)
    result = run_task(task, options)
    assert result.error is not None and result.error.startswith("f: a symbolic link"), result.error
    assert files_holding(tmp_path, SECRET) == [tmp_path / "secret"]


def test_a_link_never_hashes_equal_to_anything(tmp_path: Path) -> None:
    """Checksum mode compares source and target files of the same size by hash: a link, on either side,
    must not make a file count as up to date (and so be carried, or skipped)."""
    write_tree(tmp_path, {"f": SECRET})
    for name in ("a", "b"):
        (tmp_path / name).symlink_to(tmp_path / "f")
    local = pafs.LocalFileSystem()
    hashes = {hash_file(local, str(tmp_path / name)) for name in ("f", "a", "b")}
    assert len(hashes) == 3


def test_links_in_the_target_unit_are_not_followed_either(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", DATA)
    write_tree(tmp_path / "outside", {"secret.txt": SECRET})
    assert copy(source, tmp_path / "dst")["status"] == "succeeded"
    (tmp_path / "dst" / "planted").symlink_to(tmp_path / "outside" / "secret.txt")  # an extra: carried over
    (source / "part-0.parquet").write_bytes(b"changed")
    summary = copy(source, tmp_path / "dst")
    assert summary["units"][0]["status"] == "failed"
    assert summary["units"][0]["reason"].startswith("planted: a symbolic link")
    assert files_holding(tmp_path, SECRET) == [tmp_path / "outside" / "secret.txt"]
    assert os.path.islink(tmp_path / "dst" / "planted")  # the committed unit is left as it was
    with_delete = copy(source, tmp_path / "dst", delete=True)  # --delete removes it with the old unit
    assert with_delete["status"] == "succeeded" and read_tree(tmp_path / "dst") == {**DATA,
                                                                                    "part-0.parquet": b"changed"}
