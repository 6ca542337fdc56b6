"""The local fast paths agree with the generic pyarrow ones they stand in for: listing (os.scandir vs
FileSelector) and checksums (reused buffer and mmap windows vs pyarrow streams); a local copy that
differs from its source fails its unit in checksum mode; and the CLI stays light at startup."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest
from pyarrow import fs as pafs

from hivecat.copy import Copier, CopyOptions, LocalEngine, single_unit_plan, transfer
from hivecat.copy.listing import STAGING_PREFIX, FileStat, _list_local
from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.transfer import LOCAL_CHUNK_BYTES, _mapped_checksum, hash_file


def pyarrow_listing(root: Path) -> dict[str, FileStat]:
    infos = pafs.LocalFileSystem().get_file_info(pafs.FileSelector(str(root), recursive=True, allow_not_found=True))
    files = {}
    for info in infos:
        relative = info.path[len(str(root)) + 1:]
        if info.type == pafs.FileType.File and relative != MANIFEST_NAME and not relative.startswith(STAGING_PREFIX):
            files[relative] = FileStat(info.size, info.mtime_ns)
    return files


def test_scandir_listing_matches_pyarrows(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deep").mkdir(parents=True)
    (elsewhere / "deep" / "linked.parquet").write_bytes(b"l" * 7)
    unit = tmp_path / "unit"
    for relative, size in {"a.parquet": 3, "dt=1/b.parquet": 0, "dt=1/x/c": 9, MANIFEST_NAME: 5,
                           f"{STAGING_PREFIX}r1/t/d": 2, f"dt=1/{STAGING_PREFIX}kept": 4}.items():
        (unit / relative).parent.mkdir(parents=True, exist_ok=True)
        (unit / relative).write_bytes(b"x" * size)
    os.utime(unit / "a.parquet", ns=(1, 1_700_000_000_123_456_789))
    (unit / "to-dir").symlink_to(elsewhere)
    (unit / "to-file").symlink_to(unit / "a.parquet")
    (unit / "broken").symlink_to(tmp_path / "nowhere")
    listed = _list_local(str(unit))
    assert listed == pyarrow_listing(unit)
    assert set(listed) == {"a.parquet", "dt=1/b.parquet", "dt=1/x/c", f"dt=1/{STAGING_PREFIX}kept",
                           "to-dir/deep/linked.parquet", "to-file"}
    assert listed["a.parquet"] == FileStat(3, 1_700_000_000_123_456_789)
    assert _list_local(str(tmp_path / "missing")) == {} == pyarrow_listing(tmp_path / "missing")


def test_checksums_are_the_whole_files_crc32c_on_every_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transfer, "MAP_WINDOW_BYTES", mmap.ALLOCATIONGRANULARITY)  # several windows, small files
    for size in (0, 1, mmap.ALLOCATIONGRANULARITY, LOCAL_CHUNK_BYTES, 3 * LOCAL_CHUNK_BYTES + 17):
        data = os.urandom(size)
        (tmp_path / "f").write_bytes(data)
        expected = f"crc32c:{crc32c.crc32c(data):08x}"
        assert hash_file(pafs.LocalFileSystem(), str(tmp_path / "f")) == expected
        not_local = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())  # takes the stream path
        assert hash_file(not_local, "f") == expected
        assert _mapped_checksum(str(tmp_path / "f")) == expected


def test_a_local_copy_that_differs_from_its_source_fails_the_unit(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "part-0").write_bytes(os.urandom(100_000))

    def flip_one_byte(src: str, dst: str) -> None:  # a copy of the right size with one byte wrong
        data = bytearray(Path(src).read_bytes())
        data[50_000] ^= 1
        Path(dst).write_bytes(data)

    monkeypatch.setattr(transfer.shutil, "copyfile", flip_one_byte)
    plan = single_unit_plan(str(source), str(tmp_path / "dst"))
    assert Copier(plan, CopyOptions(verify="size"), engine=LocalEngine(2)).run().status == "succeeded"  # size only
    summary = Copier(single_unit_plan(str(source), str(tmp_path / "dst2")), CopyOptions(verify="checksum"),
                     engine=LocalEngine(2)).run()
    assert summary.status == "failed" and "checksum mismatch" in summary.units[0].reason
    assert not (tmp_path / "dst2").exists()  # nothing committed


def test_cli_startup_does_not_import_the_engine() -> None:
    code = ("import argparse, sys; from hivecat.commands import distcp; "
            "distcp.add_parser(argparse.ArgumentParser().add_subparsers()); "
            "print(sorted(m for m in ('pyarrow', 'jsonschema', 'hivecat.copy.copier') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
