"""Is each unit's copy on a secondary whole and current? Decided from the data, never from a launcher's exit
code: both sides listed and the copy's `_hivecat_manifest.json` read, exactly as the copy engine decides what a
rerun would copy (its `decide`, without writing anything). A unit is in sync when the copy engine would copy
nothing and delete nothing in it.

The same check runs before a sync (only the units that need it are copied, a no-change sync launches nothing,
and a target directory hivecat does not own is refused instead of taken over) and after it (only units
verified now are recorded in the catalog).

Ownership is the copy engine's (copy/owner.py): given the TableReplica's owner, a copy another owner made, or
one made without an owner that the unit's `adopt` does not name, is NOT_OWNED; an ownerless copy that `adopt`
names is STALE, and the next copy takes it over. A unit is in sync only when its copy records this owner.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyarrow import fs as pafs

from hivecat.copy.copier import Copier, CopyOptions, UnitWork, root_refusal
from hivecat.copy.local_paths import LinkRefused
from hivecat.copy.manifest import fingerprint
from hivecat.copy.owner import Owner, foreign_files
from hivecat.copy.plan import CopyPlan, Unit
from hivecat.copy.storage import Storage
from hivecat.copy.summary import FAILED

IN_SYNC, STALE, NOT_OWNED, SOURCE_MISSING, UNREADABLE = "InSync", "Stale", "NotOwned", "SourceMissing", "Unreadable"
CHECK_THREADS = 8  # units listed at once: listing is I/O (HDFS, S3 round trips), not CPU


@dataclass(frozen=True)
class UnitCheck:
    unit: Unit
    state: str                 # IN_SYNC | STALE | NOT_OWNED | SOURCE_MISSING | UNREADABLE
    reason: str = ""
    files: int = 0             # files of the unit on the source
    bytes: int = 0             # their bytes
    checksum: str | None = None  # in sync: the fingerprint of the copy's manifest
    oldest_change_ns: int | None = None  # stale: mtime of the oldest source file not yet copied
    adopting: bool = False     # stale: an ownerless copy the bookkeeping names, taken over by the next copy

    @property
    def in_sync(self) -> bool:
        return self.state == IN_SYNC

    @property
    def copyable(self) -> bool:
        """A copy run can bring it in sync (absent or out of date, and the target is hivecat's or empty)."""
        return self.state == STALE


def check_units(units: Iterable[Unit], storage: Storage, verify: str = "size", *,
                owner: Owner | None = None) -> list[UnitCheck]:
    """One UnitCheck per unit, in plan order. `verify` is the TableReplica's copy.verify: with checksum, both
    sides' content is read, as the copy engine would. `owner`: the TableReplica's, as its copy runs get it (None:
    as a run by hand, which takes ownerless copies as its own and no owned one)."""
    units = list(units)
    if not units:
        return []
    copier = Copier(CopyPlan(tuple(units), owner), CopyOptions(verify=verify, dry_run=True, delete=True), storage)
    if all(u.source.scheme == "file" and u.target.scheme == "file" for u in units) and verify == "size":
        # Local listings are system calls under the GIL: threads only add contention (3x slower, measured
        # with benchmarks/replica_sync.py). Remote ones wait on round trips, and checksums read data.
        return [_check(copier, storage, i, unit) for i, unit in enumerate(units)]
    with ThreadPoolExecutor(min(CHECK_THREADS, len(units))) as pool:
        return list(pool.map(lambda indexed: _check(copier, storage, *indexed), enumerate(units)))


def _check(copier: Copier, storage: Storage, index: int, unit: Unit) -> UnitCheck:
    try:
        source_kind = storage.filesystem(unit.source).get_file_info(unit.source.path).type
    except LinkRefused as exc:  # never followed: the unit is not copied from wherever the link points
        return UnitCheck(unit, UNREADABLE, root_refusal(unit.source, exc))
    except OSError as exc:
        return UnitCheck(unit, UNREADABLE, f"cannot read the source {unit.source.uri}: {exc}")
    if source_kind != pafs.FileType.Directory:
        return UnitCheck(unit, SOURCE_MISSING, f"the source directory {unit.source.uri} does not exist")
    work = copier.decide(index, unit)
    sizes = [stat.size for stat in work.source_files.values()]
    counts = {"files": len(sizes), "bytes": sum(sizes)}
    if work.not_owned is not None:
        return UnitCheck(unit, NOT_OWNED, work.not_owned, **counts)
    if work.result.status == FAILED:
        return UnitCheck(unit, UNREADABLE, work.result.reason or "cannot be checked", **counts)
    if work.manifest is None and work.target_files:
        # Files without hivecat's manifest: somebody else's data (or a copy whose commit never finished on an
        # object store); or a copy written to since hivecat made it. hivecat neither trusts nor overwrites it.
        why = (foreign_files(unit.target.uri, len(work.target_files)) if work.found is None else
               f"{unit.target.uri} no longer holds the files its manifest lists (written to after hivecat copied "
               "it), so it is left alone")
        return UnitCheck(unit, NOT_OWNED, why, **counts)
    if work.needs_commit(delete=True):
        return UnitCheck(unit, STALE, _stale_reason(work), oldest_change_ns=_oldest_change(work),
                         adopting=work.adopting, **counts)
    return UnitCheck(unit, IN_SYNC, checksum=fingerprint(work.manifest or {}), **counts)


def _stale_reason(work: UnitWork) -> str:
    if work.adopting:
        return "made by an earlier hivecat: adopted by the next copy"
    if work.manifest is None:
        return "not copied yet"
    parts = []
    if work.to_copy:
        parts.append(f"{len(work.to_copy)} files new or changed on the source")
    if work.extras:
        parts.append(f"{len(work.extras)} files gone from the source")
    return ", ".join(parts) or "out of date"


def _oldest_change(work: UnitWork) -> int | None:
    changed = [work.source_files[p].mtime_ns for p in work.to_copy]
    return min(changed) if changed else None
