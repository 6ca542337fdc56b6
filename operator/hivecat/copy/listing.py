"""Listing a unit on either side, and reading the target unit's manifest.

Symbolic links are never followed: a link in a unit (to a file or a directory, inside the unit or out
of it, broken or looping) is listed as itself and refused, and so fails its unit, named; a directory
link is never descended, so no chain of links multiplies a tree and no loop is walked. Object-store
keys whose remainder below the unit is not a path inside it (`t//x`, `t/a/../x`) are refused alike.
Refused entries stay in the listing so that their unit cannot succeed without them: the file task
refuses each before reading or writing anything (transfer.py), which fails the unit with its name.
A local unit whose own directory is, or passes through, a link is not listed at all: LinkRefused
(local_paths.py) fails the unit, naming the link.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from pyarrow import fs as pafs

from hivecat.copy import local_paths
from hivecat.copy.documents import DocumentError
from hivecat.copy.localfs import is_local
from hivecat.copy.manifest import MANIFEST_NAME, RecordedFiles, check_manifest_size, parse_manifest
from hivecat.copy.owner import Owner
from hivecat.copy.storage import Location, relative_path_refusal

STAGING_PREFIX = ".hivecat-staging-"
LINK_REFUSAL = "a symbolic link"


class FileStat(NamedTuple):  # a tuple: units hold tens of thousands
    size: int
    mtime_ns: int


# FileStat(size, mtime_ns) without the named tuple's Python-level __new__ (a call per listed file)
_file_stat = tuple.__new__
NO_REFUSALS: Mapping[str, str] = MappingProxyType({})


class Listing(dict[str, FileStat]):
    """Files by relative path. `refused`: the listed entries that must not be copied, with why. `has_manifest`:
    whether our manifest was listed too (when it was not, the unit has none to read: one round trip less).
    Slots, and one shared empty `refused` until something is refused: a run holds two listings a unit, and
    each one's own attribute dict and empty dict were a quarter of what a 20,000-unit run held after deciding."""

    __slots__ = ("refused", "has_manifest")

    def __init__(self) -> None:
        super().__init__()
        self.refused: Mapping[str, str] = NO_REFUSALS
        self.has_manifest = False

    def add(self, relative: str, stat: FileStat, refusal: str | None = None) -> None:
        self[relative] = stat
        if refusal is not None:
            if self.refused is NO_REFUSALS:
                self.refused = {}
            self.refused[relative] = refusal


def list_files(filesystem: pafs.FileSystem, unit: Location) -> Listing:
    """Every file below `unit` by relative path, without our own manifest and staging."""
    if is_local(filesystem):
        return _list_local(unit.path)
    selector = pafs.FileSelector(unit.path, recursive=True, allow_not_found=True)
    files = Listing()
    for info in filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        relative = unit.relative(info.path)
        if relative == MANIFEST_NAME or relative.startswith(STAGING_PREFIX):
            files.has_manifest |= relative == MANIFEST_NAME
            continue
        files.add(relative, FileStat(info.size, info.mtime_ns or 0), relative_path_refusal(relative))
    return files


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _list_local(root: str) -> Listing:
    """With os.scandir: about two thirds of pyarrow's time here, as no FileInfo objects are made (a
    no-change rerun is mostly this listing). Unlike pyarrow, nothing is followed: the root is opened once
    without following a link in its path (LinkRefused otherwise), each directory below relative to its
    parent's descriptor with O_NOFOLLOW, so no link swapped in redirects the walk; a link is listed by
    its own lstat and refused, whatever it points to (its d_type says so: no extra system call)."""
    files = Listing()
    try:
        fd = local_paths.open_dir(root)
    except FileNotFoundError:
        return files

    def walk(directory: int, prefix: str) -> None:
        below, top = [], not prefix  # our manifest and staging are at the top only
        with os.scandir(directory) as entries:
            for entry in entries:
                name = entry.name
                if top and (name == MANIFEST_NAME or name.startswith(STAGING_PREFIX)):
                    files.has_manifest |= name == MANIFEST_NAME
                    continue
                if entry.is_dir(follow_symlinks=False):
                    below.append(name)
                elif entry.is_file(follow_symlinks=False):  # inline: the hot path of a no-change rerun
                    stat = entry.stat(follow_symlinks=False)
                    files[prefix + name] = _file_stat(FileStat, (stat.st_size, stat.st_mtime_ns))
                elif entry.is_symlink():
                    stat = entry.stat(follow_symlinks=False)
                    files.add(prefix + name, FileStat(stat.st_size, stat.st_mtime_ns), LINK_REFUSAL)
        for name in below:  # after the scan: one descriptor per level is open, not two
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=directory)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                stat = os.stat(name, dir_fd=directory, follow_symlinks=False)  # swapped since it was listed
                files.add(prefix + name, FileStat(stat.st_size, stat.st_mtime_ns), LINK_REFUSAL)
                continue
            try:
                walk(child, prefix + name + "/")
            finally:
                os.close(child)

    try:
        walk(fd, "")
    finally:
        os.close(fd)
    return files


class ManifestUnreadable(Exception):
    pass


@dataclass(frozen=True)
class FoundManifest:
    """A target unit's manifest as read: its entries and owner (the commit checks that the unit still has an
    equal manifest before it replaces the unit)."""

    recorded: RecordedFiles
    owner: Owner | None

    def is_current(self, target_files: dict[str, FileStat]) -> bool:
        """Every file it lists is in the target with its size. A manifest that is not current makes the unit
        count as absent (e.g. an object-store commit that did not finish); its owner still decides who may
        write the unit."""
        for path, entry in self.recorded.items():
            present = target_files.get(path)
            if present is None or present.size != entry["size"]:
                return False
        return True


def read_manifest(filesystem: pafs.FileSystem, unit: Location) -> FoundManifest | None:
    """The unit's manifest; None when it has none. ManifestUnreadable when it cannot be used (unreadable, a
    link, too large, invalid): such a unit is neither trusted nor overwritten. The size is checked before
    the manifest is read into memory."""
    where = unit.child(MANIFEST_NAME)
    try:
        text = _manifest_bytes(filesystem, where)
    except FileNotFoundError:
        return None
    except local_paths.LinkRefused as exc:
        raise ManifestUnreadable(f"cannot read {where.uri}: {exc.strerror}") from None
    except DocumentError as exc:
        raise ManifestUnreadable(str(exc)) from None
    except OSError as exc:
        if filesystem.get_file_info(where.path).type == pafs.FileType.NotFound:
            return None
        raise ManifestUnreadable(f"cannot read {where.uri}: {exc}") from None
    try:
        recorded, owner = parse_manifest(text, where.uri)
    except DocumentError as exc:  # not ours to overwrite blindly (e.g. written by a newer hivecat)
        raise ManifestUnreadable(str(exc)) from None
    return FoundManifest(recorded, owner)


def _manifest_bytes(filesystem: pafs.FileSystem, where: Location) -> bytes:
    if is_local(filesystem):  # directly: through pyarrow's Python-level filesystem a small unit's check took 1/4 longer
        with open(local_paths.open_path(where.path, os.O_RDONLY), "rb") as stream:
            check_manifest_size(os.fstat(stream.fileno()).st_size, where.uri)
            return stream.read()
    with filesystem.open_input_file(where.path) as stream:
        check_manifest_size(stream.size(), where.uri)
        return stream.read()
