"""The copy engine's completeness checks, each handed the failure it exists for: a truncated copy (the size
check, the only completeness check in the default size mode and for S3 server-side copies), a same-size
corrupted copy off the local disk (the re-read checksum), an S3 copy whose ETag does not match its source,
and a multipart copy whose ETag does not count its parts."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from pyarrow import fs as pafs

from hivecat.copy import s3copy, transfer
from hivecat.copy.storage import Storage, parse_uri
from hivecat.copy.transfer import FileTask, TransferOptions, run_task

DATA = bytes(range(256)) * 64  # 16 KiB


def local_task(tmp_path: Path) -> FileTask:
    source = tmp_path / "src" / "f"
    source.parent.mkdir()
    source.write_bytes(DATA)
    return FileTask(0, "f", parse_uri(source.as_uri()), parse_uri((tmp_path / "staging" / "f").as_uri()), len(DATA),
                    source.stat().st_mtime_ns)


def test_a_truncated_local_copy_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def short_copy(source_fd: int, dest_fd: int) -> None:
        os.write(dest_fd, os.read(source_fd, len(DATA) // 2))

    monkeypatch.setattr(transfer, "_kernel_copy", short_copy)
    result = run_task(local_task(tmp_path), TransferOptions(Storage()))
    assert result.error is not None and "size mismatch after copy" in result.error


def test_a_truncated_server_side_copy_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """S3 → S3 copies are checked by size after the fact too: a short object written by the copy fails."""
    task = local_task(tmp_path)
    s3_task = FileTask(0, "f", parse_uri("s3://bucket/src/f"), parse_uri("s3://bucket/staging/f"), len(DATA), 0)

    class LocalAsS3(Storage):
        def filesystem(self, location):  # the "bucket" lives in tmp_path
            return pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())

        def s3_client(self):
            return None

    def short_server_side_copy(client, source, dest, size, mtime_ns, threshold, part_size) -> str:
        (tmp_path / "bucket" / "staging").mkdir(parents=True)
        (tmp_path / "bucket" / "staging" / "f").write_bytes(DATA[:100])
        return '"etag"'

    monkeypatch.setattr(s3copy, "server_side_copy", short_server_side_copy)
    assert task.size == len(DATA)
    result = run_task(s3_task, TransferOptions(LocalAsS3()))
    assert result.error is not None and "size mismatch after copy" in result.error


def test_a_corrupted_copy_off_the_local_disk_fails_the_checksum_reread(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Not local to local (here: a destination filesystem of another kind), the copy is re-read and its
    CRC32C compared with the source's: a flipped byte of the same size must fail."""
    task = local_task(tmp_path)
    real_stream_copy = transfer._stream_copy

    def corrupting_stream_copy(src_fs, dst_fs, copy_task, options) -> str:
        digest = real_stream_copy(src_fs, dst_fs, copy_task, options)
        path = Path(copy_task.dest.path)
        damaged = bytearray(path.read_bytes())
        damaged[100] ^= 0xFF
        path.write_bytes(bytes(damaged))
        return digest

    class OtherKindOfFilesystem(Storage):
        def filesystem(self, location):
            local = pafs.LocalFileSystem()
            return local if location is task.source else pafs.SubTreeFileSystem("/", local)

    monkeypatch.setattr(transfer, "_stream_copy", corrupting_stream_copy)
    result = run_task(task, TransferOptions(OtherKindOfFilesystem(), checksum=True))
    assert result.error is not None and "checksum mismatch after copy" in result.error


class FakeS3:
    """Just enough of boto3's S3 client for server_side_copy; answers with the ETags a test chooses."""

    def __init__(self, source_etag: str, copy_etag: str, multipart_etag: str = "") -> None:
        self.source_etag, self.copy_etag, self.multipart_etag = source_etag, copy_etag, multipart_etag
        self.aborted = False

    def head_object(self, Bucket: str, Key: str) -> dict:
        return {"ContentLength": len(DATA), "LastModified": dt.datetime.fromtimestamp(1_700_000_000, dt.timezone.utc),
                "ETag": self.source_etag}

    def copy_object(self, **_: object) -> dict:
        return {"CopyObjectResult": {"ETag": self.copy_etag}}

    def create_multipart_upload(self, **_: object) -> dict:
        return {"UploadId": "u1"}

    def upload_part_copy(self, PartNumber: int, **_: object) -> dict:
        return {"CopyPartResult": {"ETag": f'"part{PartNumber}"'}}

    def complete_multipart_upload(self, **_: object) -> dict:
        return {"ETag": self.multipart_etag}

    def abort_multipart_upload(self, **_: object) -> None:
        self.aborted = True


SOURCE, DEST = parse_uri("s3://bucket/src/f"), parse_uri("s3://bucket/dst/f")
MTIME_NS = 1_700_000_000 * 1_000_000_000


def test_a_single_part_copy_with_another_etag_fails() -> None:
    client = FakeS3('"0123abcd"', '"ffff0000"')
    with pytest.raises(s3copy.ServerSideCopyFailed, match="ETag mismatch after copy"):
        s3copy.server_side_copy(client, SOURCE, DEST, len(DATA), MTIME_NS)
    assert s3copy.server_side_copy(FakeS3('"0123abcd"', '"0123abcd"'), SOURCE, DEST, len(DATA), MTIME_NS)


def test_a_multipart_copy_must_count_its_parts() -> None:
    parts = -(-len(DATA) // 4096)
    with pytest.raises(s3copy.ServerSideCopyFailed, match=f"for a {parts}-part copy"):
        s3copy.server_side_copy(FakeS3('"0123abcd"', "", '"beef-3"'), SOURCE, DEST, len(DATA), MTIME_NS,
                                multipart_threshold=1024, part_size=4096)
    good = FakeS3('"0123abcd"', "", f'"beef-{parts}"')
    assert s3copy.server_side_copy(good, SOURCE, DEST, len(DATA), MTIME_NS, multipart_threshold=1024,
                                   part_size=4096) == f'"beef-{parts}"'
