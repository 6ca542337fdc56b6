"""Listing a unit on either side, and reading the target unit's manifest.

Symbolic links are never followed: a link in a unit (to a file or a directory, inside the unit or out
of it, broken or looping) is listed as itself and refused, and so fails its unit, named; a directory
link is never descended, so no chain of links multiplies a tree and no loop is walked. Object-store
keys whose remainder below the unit is not a path inside it (`t//x`, `t/a/../x`) are refused alike.
Refused entries stay in the listing so that their unit cannot succeed without them: the file task
refuses each before reading or writing anything (transfer.py), which fails the unit with its name.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from pyarrow import fs as pafs

from hivecat.copy.documents import DocumentError
from hivecat.copy.manifest import MANIFEST_NAME, RecordedFiles, parse_recorded_files
from hivecat.copy.storage import Location, relative_path_refusal

STAGING_PREFIX = ".hivecat-staging-"
LINK_REFUSAL = "a symbolic link"


class FileStat(NamedTuple):  # a tuple: units hold tens of thousands
    size: int
    mtime_ns: int


class Listing(dict[str, FileStat]):
    """Files by relative path. `refused`: the listed entries that must not be copied, with why."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: dict[str, str] = {}

    def add(self, relative: str, stat: FileStat, refusal: str | None = None) -> None:
        self[relative] = stat
        if refusal is not None:
            self.refused[relative] = refusal


def list_files(filesystem: pafs.FileSystem, unit: Location) -> Listing:
    """Every file below `unit` by relative path, without our own manifest and staging."""
    if isinstance(filesystem, pafs.LocalFileSystem):
        return _list_local(unit.path)
    selector = pafs.FileSelector(unit.path, recursive=True, allow_not_found=True)
    files = Listing()
    for info in filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        relative = unit.relative(info.path)
        if relative == MANIFEST_NAME or relative.startswith(STAGING_PREFIX):
            continue
        files.add(relative, FileStat(info.size, info.mtime_ns or 0), relative_path_refusal(relative))
    return files


def _list_local(root: str) -> Listing:
    """With os.scandir: about two thirds of pyarrow's time here, as no FileInfo objects are made (a
    no-change rerun is mostly this listing). Unlike pyarrow, nothing is followed: a link is listed by
    its own lstat and refused, whatever it points to (its d_type says so: no extra system call)."""
    files = Listing()

    def walk(directory: str, prefix: str) -> None:
        with os.scandir(directory) as entries:
            for entry in entries:
                relative = prefix + entry.name
                if relative == MANIFEST_NAME or relative.startswith(STAGING_PREFIX):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    walk(entry.path, relative + "/")
                elif entry.is_file(follow_symlinks=False):  # inline: the hot path of a no-change rerun
                    stat = entry.stat(follow_symlinks=False)
                    files[relative] = FileStat(stat.st_size, stat.st_mtime_ns)
                elif entry.is_symlink():
                    stat = entry.stat(follow_symlinks=False)
                    files.add(relative, FileStat(stat.st_size, stat.st_mtime_ns), LINK_REFUSAL)

    try:
        walk(root, "")
    except FileNotFoundError:
        if os.path.lexists(root):  # something below vanished while listing: let the caller see it
            raise
    return files


class ManifestUnreadable(Exception):
    pass


def current_manifest(filesystem: pafs.FileSystem, unit: Location,
                     target_files: dict[str, FileStat]) -> RecordedFiles | None:
    """The entries of the unit's manifest if it is current: present, valid, and every file it lists is
    there with its size. Otherwise None: the unit counts as absent (e.g. an object-store commit that
    did not finish)."""
    path = unit.child(MANIFEST_NAME).path
    try:
        with filesystem.open_input_stream(path) as stream:
            text = stream.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if filesystem.get_file_info(path).type == pafs.FileType.NotFound:
            return None
        raise ManifestUnreadable(f"cannot read {unit.child(MANIFEST_NAME).uri}: {exc}") from None
    try:
        recorded = parse_recorded_files(text, unit.child(MANIFEST_NAME).uri)
    except DocumentError as exc:  # not ours to overwrite blindly (e.g. written by a newer hivecat)
        raise ManifestUnreadable(str(exc)) from None
    for path, entry in recorded.items():
        present = target_files.get(path)
        if present is None or present.size != entry["size"]:
            return None
    return recorded
