"""Listing a unit on either side, and reading the target unit's manifest."""

from __future__ import annotations

import os
from typing import NamedTuple

from pyarrow import fs as pafs

from hivecat.copy.documents import DocumentError
from hivecat.copy.manifest import MANIFEST_NAME, RecordedFiles, parse_recorded_files
from hivecat.copy.storage import Location

STAGING_PREFIX = ".hivecat-staging-"


class FileStat(NamedTuple):  # a tuple: units hold tens of thousands
    size: int
    mtime_ns: int


def list_files(filesystem: pafs.FileSystem, unit: Location) -> dict[str, FileStat]:
    """Every file below `unit` by relative path, without our own manifest and staging."""
    if isinstance(filesystem, pafs.LocalFileSystem):
        return _list_local(unit.path)
    selector = pafs.FileSelector(unit.path, recursive=True, allow_not_found=True)
    files = {}
    for info in filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        relative = unit.relative(info.path)
        if relative == MANIFEST_NAME or relative.startswith(STAGING_PREFIX):
            continue
        files[relative] = FileStat(info.size, info.mtime_ns or 0)
    return files


def _list_local(root: str) -> dict[str, FileStat]:
    """As pyarrow lists a local tree (symlinks followed, broken ones left out), with os.scandir: about
    two thirds of pyarrow's time here, as no FileInfo objects are made. A no-change rerun is mostly
    this listing."""
    files: dict[str, FileStat] = {}

    def walk(directory: str, prefix: str) -> None:
        with os.scandir(directory) as entries:
            for entry in entries:
                relative = prefix + entry.name
                if relative == MANIFEST_NAME or relative.startswith(STAGING_PREFIX):
                    continue
                if entry.is_dir():
                    walk(entry.path, relative + "/")
                elif entry.is_file():
                    stat = entry.stat()
                    files[relative] = FileStat(stat.st_size, stat.st_mtime_ns)

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
