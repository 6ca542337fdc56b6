"""Listing a unit on either side, and reading the target unit's manifest."""

from __future__ import annotations

from dataclasses import dataclass

from pyarrow import fs as pafs

from hivecat.copy.documents import DocumentError
from hivecat.copy.manifest import MANIFEST_NAME, UnitManifest, parse_manifest
from hivecat.copy.storage import Location

STAGING_PREFIX = ".hivecat-staging-"


@dataclass(frozen=True)
class FileStat:
    size: int
    mtime_ns: int


def list_files(filesystem: pafs.FileSystem, unit: Location) -> dict[str, FileStat]:
    """Every file below `unit` by relative path, without our own manifest and staging."""
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


class ManifestUnreadable(Exception):
    pass


def current_manifest(filesystem: pafs.FileSystem, unit: Location,
                     target_files: dict[str, FileStat]) -> UnitManifest | None:
    """The unit's manifest if it is current: present, valid, and every file it lists is there with its
    size. Otherwise None: the unit counts as absent (e.g. an object-store commit that did not finish)."""
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
        manifest = parse_manifest(text, unit.child(MANIFEST_NAME).uri)
    except DocumentError as exc:  # not ours to overwrite blindly (e.g. written by a newer hivecat)
        raise ManifestUnreadable(str(exc)) from None
    for entry in manifest.files:
        present = target_files.get(entry.path)
        if present is None or present.size != entry.size:
            return None
    return manifest
