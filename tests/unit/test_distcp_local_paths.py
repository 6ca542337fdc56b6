"""The local fast paths agree with the generic pyarrow ones they stand in for: listing (os.scandir vs
FileSelector, but links listed as themselves, never followed) and checksums (reused buffer vs pyarrow streams); the in-kernel copy of checksum mode is
compared byte for byte with its source (any differing byte, a short copy or a source changed
meanwhile fails the unit, nothing committed) and falls back to sendfile; and the CLI stays light at
startup."""

from __future__ import annotations

import errno
import mmap
import os
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest
from pyarrow import fs as pafs
from support.copy_trees import uri

from hivecat.copy import Copier, CopyOptions, LocalEngine, single_unit_plan, transfer
from hivecat.copy.listing import LINK_REFUSAL, STAGING_PREFIX, FileStat, _list_local
from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.transfer import LOCAL_CHUNK_BYTES, CopyFailed, _compare_with_source, hash_file


def pyarrow_listing(root: Path) -> dict[str, FileStat]:
    infos = pafs.LocalFileSystem().get_file_info(pafs.FileSelector(str(root), recursive=True, allow_not_found=True))
    files = {}
    for info in infos:
        relative = info.path[len(str(root)) + 1:]
        if info.type == pafs.FileType.File and relative != MANIFEST_NAME and not relative.startswith(STAGING_PREFIX):
            files[relative] = FileStat(info.size, info.mtime_ns)
    return files


def test_scandir_listing_matches_pyarrows_but_for_links(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deep").mkdir(parents=True)
    (elsewhere / "deep" / "linked.parquet").write_bytes(b"l" * 7)
    unit = tmp_path / "unit"
    for relative, size in {"a.parquet": 3, "dt=1/b.parquet": 0, "dt=1/x/c": 9, MANIFEST_NAME: 5,
                           f"{STAGING_PREFIX}r1/t/d": 2, f"dt=1/{STAGING_PREFIX}kept": 4}.items():
        (unit / relative).parent.mkdir(parents=True, exist_ok=True)
        (unit / relative).write_bytes(b"x" * size)
    os.utime(unit / "a.parquet", ns=(1, 1_700_000_000_123_456_789))
    assert _list_local(str(unit)) == pyarrow_listing(unit) and not _list_local(str(unit)).refused
    links = {"to-dir": elsewhere, "to-file": unit / "a.parquet", "broken": tmp_path / "nowhere"}
    for name, to in links.items():
        (unit / name).symlink_to(to)
    listed = _list_local(str(unit))
    followed = pyarrow_listing(unit)  # pyarrow follows links, and leaves broken ones out
    assert set(followed) - set(listed) == {"to-dir/deep/linked.parquet"}
    assert set(listed) == {"a.parquet", "dt=1/b.parquet", "dt=1/x/c", f"dt=1/{STAGING_PREFIX}kept", *links}
    assert listed.refused == {name: LINK_REFUSAL for name in links}
    for name in links:  # each link by its own lstat, not by what it points to
        stat = (unit / name).lstat()
        assert listed[name] == FileStat(stat.st_size, stat.st_mtime_ns)
    assert listed["a.parquet"] == FileStat(3, 1_700_000_000_123_456_789)
    assert _list_local(str(tmp_path / "missing")) == {} == pyarrow_listing(tmp_path / "missing")


SIZES = (0, 1, mmap.ALLOCATIONGRANULARITY, LOCAL_CHUNK_BYTES, 3 * LOCAL_CHUNK_BYTES + 17)


def test_checksums_are_the_whole_files_crc32c_on_every_path(tmp_path: Path) -> None:
    for size in SIZES:
        data = os.urandom(size)
        (tmp_path / "f").write_bytes(data)
        expected = f"crc32c:{crc32c.crc32c(data):08x}"
        assert hash_file(pafs.LocalFileSystem(), str(tmp_path / "f")) == expected
        not_local = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())  # takes the stream path
        assert hash_file(not_local, "f") == expected


@pytest.mark.parametrize("window", [mmap.ALLOCATIONGRANULARITY, transfer.MAP_WINDOW_BYTES])
def test_the_copy_is_compared_with_the_source_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            window: int) -> None:
    monkeypatch.setattr(transfer, "MAP_WINDOW_BYTES", window)  # one window, or several even for small files
    for size in SIZES:
        data = os.urandom(size)
        (tmp_path / "src").write_bytes(data)
        for flipped in sorted({None, 0, size // 2, size - 1}, key=str):
            copy = bytearray(data)
            if flipped is not None and size:
                copy[flipped] ^= 0x80
            (tmp_path / "copy").write_bytes(copy)
            with open(tmp_path / "src", "rb") as source, open(tmp_path / "copy", "rb") as copied:
                if copy == data:  # the source's CRC32C, as recorded in the manifest
                    assert _compare_with_source(source.fileno(), copied.fileno(), size) \
                        == f"crc32c:{crc32c.crc32c(data):08x}"
                else:  # named by the compared chunk holding the flipped byte
                    chunk = min(window, LOCAL_CHUNK_BYTES)
                    first = flipped // chunk * chunk
                    with pytest.raises(CopyFailed, match=f"in bytes {first}-{min(first + chunk, size) - 1}$"):
                        _compare_with_source(source.fileno(), copied.fileno(), size)


def checksum_copy(source: Path, target: Path) -> dict:
    return Copier(single_unit_plan(uri(source), uri(target)), CopyOptions(verify="checksum"),
                  engine=LocalEngine(2)).run().to_dict()


def test_a_local_copy_that_differs_from_its_source_fails_the_unit(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "part-0").write_bytes(os.urandom(100_000))

    def kernel_copy_flipping_one_byte(source_fd: int, dest_fd: int) -> None:
        data = bytearray(os.pread(source_fd, 1 << 20, 0))
        data[50_000] ^= 1
        os.write(dest_fd, data)

    monkeypatch.setattr(transfer, "_kernel_copy", kernel_copy_flipping_one_byte)  # both modes' copy
    plan = single_unit_plan(uri(source), uri(tmp_path / "dst"))
    assert Copier(plan, CopyOptions(verify="size"), engine=LocalEngine(2)).run().status == "succeeded"  # size only
    summary = checksum_copy(source, tmp_path / "dst2")
    assert summary["status"] == "failed"
    assert "part-0: the copy differs from the source in bytes 0-99999" in summary["units"][0]["reason"]
    assert not (tmp_path / "dst2").exists()  # nothing committed


def test_a_short_copy_fails_the_unit_before_it_is_compared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_bytes(os.urandom(300_000))
    monkeypatch.setattr(transfer, "_kernel_copy",
                        lambda source_fd, dest_fd: os.write(dest_fd, os.pread(source_fd, 1000, 0)))
    summary = checksum_copy(tmp_path / "src", tmp_path / "dst")
    assert summary["status"] == "failed" and "size mismatch after copy" in summary["units"][0]["reason"]
    assert not (tmp_path / "dst").exists()


def test_a_source_changed_during_a_checksum_copy_fails_the_unit(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_bytes(b"a" * 200_000)
    real = transfer._kernel_copy

    def copy_then_rewrite(source_fd: int, dest_fd: int) -> None:  # same size, other bytes, new mtime
        real(source_fd, dest_fd)
        (tmp_path / "src" / "f").write_bytes(b"b" * 200_000)

    monkeypatch.setattr(transfer, "_kernel_copy", copy_then_rewrite)
    summary = checksum_copy(tmp_path / "src", tmp_path / "dst")
    assert summary["status"] == "failed" and "f: the copy differs from the source" in summary["units"][0]["reason"]
    assert not (tmp_path / "dst").exists()


def test_the_kernel_copy_falls_back_to_sendfile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> int:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(transfer.os, "copy_file_range", refuse)
    files = {"large": os.urandom(3 * LOCAL_CHUNK_BYTES + 7), "empty": b""}
    (tmp_path / "src").mkdir()
    for name, data in files.items():
        (tmp_path / "src" / name).write_bytes(data)
    summary = checksum_copy(tmp_path / "src", tmp_path / "dst")
    assert summary["status"] == "succeeded"
    assert {name: (tmp_path / "dst" / name).read_bytes() for name in files} == files


def test_cli_startup_does_not_import_the_engine() -> None:
    code = ("import argparse, sys; from hivecat.commands import distcp; "
            "distcp.add_parser(argparse.ArgumentParser().add_subparsers()); "
            "print(sorted(m for m in ('pyarrow', 'jsonschema', 'hivecat.copy.copier') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
