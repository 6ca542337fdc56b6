"""Putting a verified, staged unit into place so that it is wholly present or absent.

Nothing is put into place unverified: just before the swap, every file the new manifest lists (on
object stores: every staged one) must be in staging with its recorded size, and with --verify checksum
its recorded checksum; otherwise the unit fails and the committed unit is left as it was. This holds
even if someone removed or changed staging meanwhile (before leases, a run into a sibling unit did:
the commit then re-created an empty staging unit and swapped it in, losing the good copy).

On local disks every step reaches the unit and its parent without following a link (localfs.py), so a
target whose directory is or passes through a link is never written, swapped or removed.

Filesystems with atomic directory rename (local, HDFS): the manifest is written into the staged unit,
then a new unit is renamed into place. An existing unit is swapped with the staged one in one step
where the kernel can (Linux renameat2 RENAME_EXCHANGE on local disks): readers see the old unit or
the new one, never neither. Elsewhere (HDFS) the old unit is renamed aside, the new one in, and the
old one deleted after the commit; between the two renames the unit is briefly absent, never mixed.

Object stores (rename is a copy): the old manifest is deleted first (the unit now counts as absent),
the staged objects are copied into place server-side, files absent from the source are deleted with
--delete, and the new manifest is written last. A crash in between leaves a unit without a current
manifest, which the next run treats as absent and copies again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from pyarrow import fs as pafs

from hivecat.copy import checksum, local_paths, s3copy
from hivecat.copy.listing import list_files
from hivecat.copy.localfs import is_local
from hivecat.copy.manifest import MANIFEST_NAME, FileEntry, UnitManifest
from hivecat.copy.storage import Location, Storage
from hivecat.copy.transfer import hash_file


def write_manifest(filesystem: pafs.FileSystem, unit: Location, manifest: UnitManifest) -> None:
    # compact: with `indent` json uses its pure-Python encoder (~3x slower on 20,000 entries)
    data = json.dumps(manifest.to_dict(), separators=(",", ":"), sort_keys=True).encode()
    with filesystem.open_output_stream(unit.child(MANIFEST_NAME).path) as out:
        out.write(data)


class StagingMismatch(OSError):
    """The staged files are not those the new manifest lists: nothing was committed."""


def verify_staged(filesystem: pafs.FileSystem, staging: Location, entries: Sequence[FileEntry],
                  checksums: bool = False, parallelism: int = 8) -> None:
    """Raise StagingMismatch unless each entry's file is in staging with its size (and checksum)."""
    staged = list_files(filesystem, staging)
    problems = [f"{e.path} is missing" if e.path not in staged else
                f"{e.path} has {staged[e.path].size} bytes, the manifest records {e.size}"
                for e in entries if e.path not in staged or staged[e.path].size != e.size]
    if not problems and checksums:
        problems = _checksum_problems(filesystem, staging, entries, parallelism)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise StagingMismatch(f"staged files do not match the new manifest, not committed: {problems[0]}{more}")


def _checksum_problems(filesystem: pafs.FileSystem, staging: Location, entries: Sequence[FileEntry],
                       parallelism: int) -> list[str]:
    # only this algorithm's values can be compared (older manifests may carry sha256; not in checksum mode)
    hashed = [e for e in entries if e.checksum and e.checksum.startswith(f"{checksum.ALGORITHM}:")]
    with ThreadPoolExecutor(parallelism) as pool:
        found = list(pool.map(lambda e: hash_file(filesystem, staging.child(e.path).path), hashed))
    return [f"{e.path} has checksum {value}, the manifest records {e.checksum}"
            for e, value in zip(hashed, found) if value != e.checksum]


def commit_by_rename(filesystem: pafs.FileSystem, staging: Location, target: Location, manifest: UnitManifest,
                     checksums: bool = False, parallelism: int = 8) -> None:
    verify_staged(filesystem, staging, manifest.files, checksums, parallelism)
    filesystem.create_dir(staging.path, recursive=True)  # an empty unit is still a unit
    write_manifest(filesystem, staging, manifest)
    if filesystem.get_file_info(target.path).type == pafs.FileType.NotFound:
        filesystem.create_dir(target.parent.path, recursive=True)
        filesystem.move(staging.path, target.path)
        return
    if is_local(filesystem) and local_paths.exchange(staging.path, target.path):
        filesystem.delete_dir(staging.path)  # the old unit, now out of sight
        return
    aside = Location(staging.scheme, staging.authority, staging.path + ".old")
    filesystem.move(target.path, aside.path)
    filesystem.move(staging.path, target.path)
    filesystem.delete_dir(aside.path)


def commit_on_object_store(storage: Storage, staging: Location, target: Location, manifest: UnitManifest,
                           staged: Iterable[str], removed: Iterable[str], parallelism: int,
                           checksums: bool = False, replaces_manifest: bool = True) -> None:
    """`replaces_manifest` False: the unit had no manifest just before (the copier checked), so none to delete."""
    staged = list(staged)
    wanted = set(staged)
    verify_staged(storage.filesystem(staging), staging, [e for e in manifest.files if e.path in wanted],
                  checksums, parallelism)
    client = storage.s3_client()
    if replaces_manifest:
        s3copy.delete_objects(client, [target.child(MANIFEST_NAME)])  # from here on the unit counts as absent
    with ThreadPoolExecutor(parallelism) as pool:
        list(pool.map(lambda rel: s3copy.copy_object(client, staging.child(rel), target.child(rel)), staged))
    s3copy.delete_objects(client, [target.child(rel) for rel in removed])
    write_manifest(storage.filesystem(target), target, manifest)


def remove_tree(storage: Storage, location: Location) -> None:
    """Delete a directory (staging, an old unit) and everything below it."""
    if location.is_object_store:
        s3copy.delete_prefix(storage.s3_client(), location)
        return
    filesystem = storage.filesystem(location)
    try:
        kind = filesystem.get_file_info(location.path).type
    except local_paths.LinkRefused:
        return  # reached only through a link (swapped in meanwhile): nothing there is this run's
    if kind == pafs.FileType.Directory:
        filesystem.delete_dir(location.path)
