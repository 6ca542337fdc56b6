"""file:// as a pyarrow filesystem that never follows a symbolic link (local_paths.py).

pyarrow's own LocalFileSystem follows links everywhere, so `Storage.filesystem` gives this one for file://
locations: everything that reaches local data through the pyarrow API (validation, manifests, commits, leases
and staging, plans, housekeeping) then refuses a path through a link with LinkRefused. A listing shows a link
as what it is (FileType.Unknown, as webhdfs.py shows one), never what it points to. The hot paths (listing a
unit, copying a file) use local_paths directly; `is_local` tells them they may.
"""

from __future__ import annotations

import os
import shutil
import stat
from typing import Any

import pyarrow as pa
from pyarrow import fs as pafs

from hivecat.copy import local_paths

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def is_local(filesystem: pafs.FileSystem) -> bool:
    """True for local disks: this filesystem, or pyarrow's own (which tests hand in)."""
    return isinstance(filesystem, pafs.LocalFileSystem) or (
        isinstance(filesystem, pafs.PyFileSystem) and isinstance(filesystem.handler, NoFollowHandler))


def _info(path: str, found: os.stat_result | None) -> pafs.FileInfo:
    if found is None:
        return pafs.FileInfo(path, pafs.FileType.NotFound)
    if stat.S_ISREG(found.st_mode):
        return pafs.FileInfo(path, pafs.FileType.File, mtime_ns=found.st_mtime_ns, size=found.st_size)
    if stat.S_ISDIR(found.st_mode):
        return pafs.FileInfo(path, pafs.FileType.Directory, mtime_ns=found.st_mtime_ns)
    return pafs.FileInfo(path, pafs.FileType.Unknown, mtime_ns=found.st_mtime_ns)  # a link, a socket...


def _join(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}"


class NoFollowHandler(pafs.FileSystemHandler):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, NoFollowHandler)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(NoFollowHandler)

    def equals(self, other: object) -> bool:
        return self == other

    def get_type_name(self) -> str:
        return "local-nofollow"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        infos = []
        for path in paths:
            try:
                found: os.stat_result | None = local_paths.stat_path(path)
            except (FileNotFoundError, NotADirectoryError):
                found = None
            infos.append(_info(path, found))
        return infos

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        try:
            fd = local_paths.open_dir(selector.base_dir)
        except FileNotFoundError:
            if selector.allow_not_found:
                return []
            raise
        found: list[pafs.FileInfo] = []
        try:
            self._list(fd, selector.base_dir, selector.recursive, found)
        finally:
            os.close(fd)
        return found

    def _list(self, fd: int, directory: str, recursive: bool, found: list[pafs.FileInfo]) -> None:
        below = []
        with os.scandir(fd) as entries:
            for entry in entries:
                info = _info(_join(directory, entry.name), entry.stat(follow_symlinks=False))
                found.append(info)
                if recursive and info.type == pafs.FileType.Directory:
                    below.append(entry.name)
        for name in below:  # after the scan: one descriptor per level is open, not two
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            try:
                self._list(child, _join(directory, name), True, found)
            finally:
                os.close(child)

    def create_dir(self, path: str, recursive: bool) -> None:
        if recursive:
            local_paths.make_dirs(path)
            return
        with local_paths.parent_of(path) as (fd, name):
            try:
                os.mkdir(name, dir_fd=fd)
            except FileExistsError:
                if not stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise

    def delete_dir(self, path: str) -> None:
        local_paths.remove_tree(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        try:
            fd = local_paths.open_dir(path)
        except FileNotFoundError:
            if missing_dir_ok:
                return
            raise
        try:
            for name in os.listdir(fd):
                if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    shutil.rmtree(name, dir_fd=fd)
                else:
                    os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)

    def delete_root_dir_contents(self) -> None:
        raise PermissionError("refusing to delete everything on the local disk")

    def delete_file(self, path: str) -> None:
        local_paths.remove_file(path)

    def move(self, src: str, dest: str) -> None:
        local_paths.rename(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        with self.open_input_stream(src) as reader, self.open_output_stream(dest, None) as writer:
            while chunk := reader.read(4 * 1024 * 1024):
                writer.write(chunk)

    def open_input_stream(self, path: str) -> Any:
        return pa.PythonFile(os.fdopen(local_paths.open_path(path, os.O_RDONLY), "rb", buffering=0), mode="r")

    def open_input_file(self, path: str) -> Any:
        return self.open_input_stream(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        fd = local_paths.open_path(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        return pa.PythonFile(os.fdopen(fd, "wb", buffering=0), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        fd = local_paths.open_path(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        return pa.PythonFile(os.fdopen(fd, "ab", buffering=0), mode="w")


def filesystem() -> pafs.FileSystem:
    return pafs.PyFileSystem(NoFollowHandler())
