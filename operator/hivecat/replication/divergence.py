"""Did a unit's original on the primary change after the copy the table points at was made from it?

After an unplanned failover the table points at copies that may be older than the originals (rows written on
the primary between the last sync and the outage), and after any failover someone may have written an original
by path. When the primary answers again, such a unit has two versions that neither contains: it is diverged.
A failback that pointed back at the original would drop what was written on the secondary meanwhile, and one
that copied the secondary's version into a new directory would shadow what the original holds. Neither is
chosen for the author: the failback holds diverged units until spec.failback.divergedWinner says which wins.

Decided from the copy's manifest, which records each file of the original it was made from (path, size, source
mtime), against a listing of the original now: a file added, removed or of another size or mtime is a change.
A unit without an original (added on the secondary while failed over) is not diverged; one whose copy has no
manifest while an original exists cannot be compared, and counts as diverged (kept, never guessed)."""

from __future__ import annotations

from pyarrow import fs as pafs

from hivecat.copy.listing import ManifestUnreadable, list_files, read_manifest
from hivecat.copy.local_paths import LinkRefused
from hivecat.copy.storage import Location, Storage

SHOWN_FILES = 3


def diverged(original: Location, copy: Location, storage: Storage) -> str | None:
    """Why `original` is no longer what `copy` was made from (words), or None when it is, or does not exist.
    Raises OSError when either side cannot be read."""
    originals = storage.filesystem(original)
    if originals.get_file_info(original.path).type != pafs.FileType.Directory:
        return None
    try:
        found = read_manifest(storage.filesystem(copy), copy)
        now = list_files(originals, original)
    except (ManifestUnreadable, LinkRefused) as exc:
        return f"cannot be compared with its copy ({exc})"
    if found is None:
        return f"{copy.uri} holds no manifest of hivecat's to compare {original.uri} with"
    recorded = found.recorded
    added = sorted(p for p in now if p not in recorded)
    removed = sorted(p for p in recorded if p not in now)
    changed = sorted(p for p, f in now.items() if p in recorded and (
        f.size != recorded[p]["size"] or f.mtime_ns != recorded[p]["source_mtime_ns"]))
    words = [f"{what}: {_named(paths)}" for what, paths in (("written after the copy", added),
                                                             ("removed after the copy", removed),
                                                             ("changed after the copy", changed)) if paths]
    return f"{original.uri}: {'; '.join(words)}" if words else None


def _named(paths: list[str]) -> str:
    more = f" (and {len(paths) - SHOWN_FILES} more)" if len(paths) > SHOWN_FILES else ""
    return ", ".join(paths[:SHOWN_FILES]) + more
