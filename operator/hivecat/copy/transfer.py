"""Copying one file: the task every engine runs, on the driver's threads or on Spark executors.

A task copies a source file (or a file carried over from the current target unit) into the unit's
staging directory and verifies the copy: size always; with --verify checksum, the source's CRC32C
(see checksum.py) and, local to local, the copy compared byte for byte with the source as read
(elsewhere, the CRC32C of a full re-read of what was written); S3 ETags for server-side copies.
It also checks that the source did not change while it was copied. Failures are returned as results, not raised, so
one bad file fails its unit and not the whole run.

Nothing is read or written through a symbolic link (see listing.py): local files are opened and created
with no link followed anywhere in their path (local_paths.py, one openat2 per file where the kernel has it),
so a file, or the unit's directory, swapped for a link after it was listed is refused too. A relative path
that is not a path inside the unit (an object key like `t//x` or `t/a/../x`) is refused before anything is
read or written.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyarrow import fs as pafs

from hivecat.copy import checksum, local_paths, s3copy
from hivecat.copy.localfs import is_local
from hivecat.copy.storage import Location, Storage, relative_path_refusal

CHUNK_BYTES = 4 * 1024 * 1024          # pyarrow streams (object stores, HDFS)
LOCAL_CHUNK_BYTES = 1024 * 1024        # reading local files: small enough to stay in the CPU's cache
MAP_WINDOW_BYTES = 64 * 1024 * 1024    # verifying local copies through mmap, a window at a time
LINK_MESSAGE = "a symbolic link: never followed (replace it with the file it points to, or remove it)"


@dataclass(frozen=True)
class FileTask:
    unit_index: int
    relpath: str        # relative to the unit
    source: Location    # the file to read: in the source unit, or (carry) in the current target unit
    dest: Location      # the file to write, in staging
    size: int
    mtime_ns: int       # of `source`, as listed
    carry: bool = False  # an up-to-date file taken over from the current target unit


@dataclass(frozen=True)
class TransferOptions:
    storage: Storage
    checksum: bool = False
    bandwidth: float | None = None               # bytes per second, per task
    multipart_threshold: int = s3copy.MAX_SINGLE_COPY
    part_size: int = s3copy.DEFAULT_PART_SIZE


@dataclass(frozen=True)
class FileResult:
    task: FileTask
    bytes_copied: int = 0
    checksum: str | None = None
    etag: str | None = None
    error: str | None = None


class CopyFailed(Exception):
    pass


def run_task(task: FileTask, options: TransferOptions) -> FileResult:
    try:
        return _run(task, options)
    except CopyFailed as exc:
        return FileResult(task, error=f"{task.relpath}: {exc}")
    except local_paths.LinkRefused as exc:  # a directory of its path swapped for a link since it was listed
        return FileResult(task, error=f"{task.relpath}: {exc.strerror}")
    except Exception as exc:  # noqa: BLE001 - any I/O failure fails this file (and so its unit), not the run
        return FileResult(task, error=f"{task.relpath}: {type(exc).__name__}: {exc}")


def _run(task: FileTask, options: TransferOptions) -> FileResult:
    refusal = relative_path_refusal(task.relpath)
    if refusal is not None:  # before any write: joined to the staging directory it names another place
        raise CopyFailed(f"{task.source.uri} {refusal}")
    storage = options.storage
    src_fs, dst_fs = storage.filesystem(task.source), storage.filesystem(task.dest)
    if task.source.is_object_store and task.dest.is_object_store:
        etag = s3copy.server_side_copy(storage.s3_client(), task.source, task.dest, task.size, task.mtime_ns,
                                       options.multipart_threshold, options.part_size)
        _check_size(dst_fs, task)
        return FileResult(task, task.size, etag=etag)
    local = is_local(src_fs) and is_local(dst_fs)
    if not task.dest.is_object_store and not local:
        dst_fs.create_dir(task.dest.parent.path, recursive=True)
    digest = None
    if local and task.carry and _hardlink(task):
        pass  # committed files are never written in place, so old and new unit may share them
    elif local and not options.bandwidth and not options.checksum:
        # In-kernel copy: on the 2-CPU build machine, read() + write() through this process cost
        # 3-4x the kernel time of the in-kernel copy.
        with _open_source(task.source.path) as reader, _create(task.dest.path, "wb") as writer:
            _kernel_copy(reader.fileno(), writer.fileno())
            _check_local(reader.fileno(), writer.fileno(), task)
    elif local and not options.bandwidth:
        digest = _local_copy_compared(task)  # the copy is byte-identical to the source as read
    else:
        digest = _stream_copy(src_fs, dst_fs, task, options)
        _check_size(dst_fs, task)
        _check_unchanged(src_fs, task)
    if digest is not None and options.checksum and not local:
        written = hash_file(dst_fs, task.dest.path)
        if written != digest:
            raise CopyFailed(f"checksum mismatch after copy ({digest} read, {written} written)")
    return FileResult(task, 0 if task.carry else task.size, checksum=digest if options.checksum else None)


def _hardlink(task: FileTask) -> bool:
    """The carried file hard-linked into staging, both names reached without following a link; False when
    the filesystem cannot link it (copied instead)."""
    with local_paths.parent_of(task.source.path) as (source_dir, source_name), \
            local_paths.parent_of(task.dest.path, make=True) as (dest_dir, dest_name):
        try:
            os.link(source_name, dest_name, src_dir_fd=source_dir, dst_dir_fd=dest_dir, follow_symlinks=False)
        except OSError:  # another device, or links not allowed: copy instead
            return False
        linked = os.stat(dest_name, dir_fd=dest_dir, follow_symlinks=False)
        if stat.S_ISLNK(linked.st_mode):  # the inode linked is itself a symbolic link: the copy refuses it
            os.unlink(dest_name, dir_fd=dest_dir)
            return False
    if linked.st_size != task.size or linked.st_mtime_ns != task.mtime_ns:  # one inode: the copy is the source
        raise CopyFailed("the source changed while it was copied (rerun to copy the new version)")
    return True


def _open_source(path: str):
    """A local file opened for reading, refused (CopyFailed) if it is a symbolic link, LinkRefused if a
    directory of its path is one."""
    try:
        return open(local_paths.open_path(path, os.O_RDONLY), "rb", buffering=0)
    except local_paths.LinkRefused as exc:
        if exc.link == path:
            raise CopyFailed(LINK_MESSAGE) from None
        raise


def _create(path: str, mode: str):
    """A staged file created (its directories too) without following a link anywhere in its path."""
    flags = os.O_RDWR if "+" in mode else os.O_WRONLY
    return open(local_paths.create_file(path, flags | os.O_TRUNC), mode, buffering=0)


def _input_stream(filesystem: pafs.FileSystem, path: str):
    if is_local(filesystem):  # pyarrow's LocalFileSystem, handed in, would follow a link
        return pa.PythonFile(_open_source(path), mode="r")
    return filesystem.open_input_stream(path)


def _output_stream(filesystem: pafs.FileSystem, path: str):
    if is_local(filesystem):
        return pa.PythonFile(_create(path, "wb"), mode="w")
    return filesystem.open_output_stream(path)


def _stream_copy(src_fs: pafs.FileSystem, dst_fs: pafs.FileSystem, task: FileTask,
                 options: TransferOptions) -> str:
    crc, began, copied = 0, time.monotonic(), 0
    with _input_stream(src_fs, task.source.path) as reader, _output_stream(dst_fs, task.dest.path) as writer:
        for chunk in _stream_chunks(reader):
            crc = checksum.update(crc, chunk)
            writer.write(chunk)
            copied += chunk.size
            if options.bandwidth:  # sleep until this task's average rate is back under the limit
                ahead = copied / options.bandwidth - (time.monotonic() - began)
                if ahead > 0:
                    time.sleep(ahead)
    return checksum.label(crc)


def hash_file(filesystem: pafs.FileSystem, path: str) -> str:
    crc = 0
    if is_local(filesystem):
        try:
            reader = open(local_paths.open_path(path, os.O_RDONLY), "rb", buffering=0)
        except local_paths.LinkRefused:
            # Not read, and equal to no other hash, so never taken as up to date: a link in the source
            # then fails its unit when copied (_open_source), one in the target is replaced.
            return f"not-followed:{path}"
        with reader:
            for chunk in _local_chunks(reader):
                crc = checksum.update(crc, chunk)
    else:
        with filesystem.open_input_stream(path) as reader:
            for chunk in _stream_chunks(reader):
                crc = checksum.update(crc, chunk)
    return checksum.label(crc)


def _local_copy_compared(task: FileTask) -> str:
    """In-kernel copy, then one read of the source: its CRC32C for the manifest, and each chunk
    compared with the same bytes of the copy (mapped, not read into this process). The copy is
    accepted only if identical to what was read, which is stronger than comparing two checksums.
    Both through the descriptors the copy used: 2 opens per file instead of 4, which is what small
    files pay most for. A source that changes meanwhile fails this or the checks after it."""
    with _open_source(task.source.path) as reader, _create(task.dest.path, "w+b") as writer:
        _kernel_copy(reader.fileno(), writer.fileno())
        written = os.fstat(writer.fileno()).st_size
        if written != task.size:  # checked before mapping: a short copy must not be mapped past its end
            raise CopyFailed(f"size mismatch after copy: expected {task.size}, found {written}")
        digest = _compare_with_source(reader.fileno(), writer.fileno(), task.size)
        _check_local(reader.fileno(), writer.fileno(), task)
        return digest


def _compare_with_source(source_fd: int, copy_fd: int, size: int) -> str:
    """The source's CRC32C, raising CopyFailed unless the copy holds exactly the source's bytes.
    Only our own staged copy is mapped: a mapped file truncated by someone else would kill the
    process (SIGBUS), so the source is read with pread."""
    crc, flags = 0, mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    for window_start in range(0, size, MAP_WINDOW_BYTES):
        window_size = min(MAP_WINDOW_BYTES, size - window_start)
        with mmap.mmap(copy_fd, window_size, flags=flags, prot=mmap.PROT_READ, offset=window_start) as window, \
                memoryview(window) as copied:
            for start in range(0, window_size, LOCAL_CHUNK_BYTES):
                length = min(LOCAL_CHUNK_BYTES, window_size - start)
                # bytearray == buffer is one memcmp, but only for a bytearray of exactly that length
                buffer = _reused_buffer()
                chunk = buffer if len(buffer) == length else bytearray(length)
                if os.preadv(source_fd, [chunk], window_start + start) != length:
                    raise CopyFailed("the source changed while it was copied (rerun to copy the new version)")
                crc = checksum.update(crc, chunk)
                if chunk != copied[start:start + length]:
                    raise CopyFailed(f"the copy differs from the source in bytes {window_start + start}"
                                     f"-{window_start + start + length - 1}")
    return checksum.label(crc)


def _kernel_copy(source_fd: int, dest_fd: int) -> None:
    """copy_file_range (page cache to page cache, or a reflink where the filesystem shares extents);
    sendfile where the kernel refuses it (e.g. across filesystems before Linux 5.3). Both advance the
    two descriptors' offsets, so a fallback after a partial copy carries on where it stopped."""
    try:
        while os.copy_file_range(source_fd, dest_fd, MAP_WINDOW_BYTES):
            pass
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
        while os.sendfile(dest_fd, source_fd, None, MAP_WINDOW_BYTES):
            pass


_buffers = threading.local()


def _reused_buffer() -> bytearray:
    """One read buffer per thread (engine threads, Spark's worker): a fresh 1 MiB bytearray per file
    is zero-filled each time, four times the bytes of a 256 KiB file."""
    buffer = getattr(_buffers, "buffer", None)
    if buffer is None:
        buffer = _buffers.buffer = bytearray(LOCAL_CHUNK_BYTES)
    return buffer


def _local_chunks(reader) -> Iterator[memoryview]:
    """A file's content in chunks of this thread's buffer: each is valid until the next is read."""
    buffer = _reused_buffer()
    view = memoryview(buffer)
    while size := reader.readinto(buffer):
        yield view[:size]


def _stream_chunks(reader) -> Iterator:  # pyarrow NativeFile -> pyarrow Buffers
    # a new buffer per chunk: object-store writers may keep a reference to what they were given
    while (chunk := reader.read_buffer(CHUNK_BYTES)).size:
        yield chunk


def _check_local(source_fd: int, copy_fd: int, task: FileTask) -> None:
    """_check_size and _check_unchanged on the descriptors the copy used: no path is looked up again."""
    written = os.fstat(copy_fd).st_size
    if written != task.size:
        raise CopyFailed(f"size mismatch after copy: expected {task.size}, found {written}")
    now = os.fstat(source_fd)
    if now.st_size != task.size or now.st_mtime_ns != task.mtime_ns:
        raise CopyFailed("the source changed while it was copied (rerun to copy the new version)")


def _check_size(dst_fs: pafs.FileSystem, task: FileTask) -> None:
    written = dst_fs.get_file_info(task.dest.path)
    if written.type != pafs.FileType.File or written.size != task.size:
        raise CopyFailed(f"size mismatch after copy: expected {task.size}, found {written.size}")


def _check_unchanged(src_fs: pafs.FileSystem, task: FileTask) -> None:
    now = src_fs.get_file_info(task.source.path)
    # Object stores list mtimes in milliseconds but HEAD them in seconds: compare what both have.
    scale = 1_000_000_000 if task.source.is_object_store else 1
    if now.size != task.size or now.mtime_ns // scale != task.mtime_ns // scale:
        raise CopyFailed("the source changed while it was copied (rerun to copy the new version)")
