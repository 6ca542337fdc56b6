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
from hivecat.copy.listing import ManifestUnreadable, list_files, read_manifest
from hivecat.copy.local_paths import LinkRefused
from hivecat.copy.manifest import fingerprint
from hivecat.copy.owner import Owner, foreign_files
from hivecat.copy.plan import CopyPlan, Unit
from hivecat.copy.storage import Location, Storage
from hivecat.copy.summary import FAILED
from hivecat.copy.transfer import hash_file
from hivecat.replication.unit_states import IN_SYNC, NOT_OWNED, SOURCE_MISSING, STALE, UNREADABLE

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
    copy_fingerprint: str | None = None  # stale: the fingerprint of the whole (older) copy on the target, if any

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
                         adopting=work.adopting, copy_fingerprint=fingerprint(work.manifest) if work.manifest else None,
                         **counts)
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


# --- a recorded copy, from itself alone -------------------------------------------------------------------
# The day the primary does not answer, a copy is judged without its original: it is whole (every file its
# manifest lists is there with its size, nothing else is, and with copy.verify checksum each file's content
# matches the manifest's checksum) and it is the copy the bookkeeping recorded (its manifest's fingerprint is
# `hivecat.replica.<cluster>.checksum`). What it cannot show is whether the primary changed since.
WHOLE, NO_COPY, DAMAGED, NOT_RECORDED = "Whole", "NoCopy", "Damaged", "NotRecorded"
SHOWN_FILES = 3


@dataclass(frozen=True)
class RecordedCopy:
    unit_id: str
    location: Location  # hivecat.replica.<cluster>.location
    fingerprint: str    # hivecat.replica.<cluster>.checksum


@dataclass(frozen=True)
class CopyCheck:
    copy: RecordedCopy
    state: str  # WHOLE | NO_COPY | DAMAGED | NOT_RECORDED | NOT_OWNED | UNREADABLE
    reason: str = ""

    @property
    def whole(self) -> bool:
        return self.state == WHOLE


def check_copies(copies: Iterable[RecordedCopy], storage: Storage, verify: str = "size", *,
                 owner: Owner | None) -> list[CopyCheck]:
    """One CopyCheck per recorded copy, in order, reading the copies' side only (never an original)."""
    copies = list(copies)
    if not copies:
        return []
    if all(c.location.scheme == "file" for c in copies) and verify == "size":  # as check_units: no threads
        return [_check_copy(c, storage, verify, owner) for c in copies]
    with ThreadPoolExecutor(min(CHECK_THREADS, len(copies))) as pool:
        return list(pool.map(lambda c: _check_copy(c, storage, verify, owner), copies))


def _check_copy(copy: RecordedCopy, storage: Storage, verify: str, owner: Owner | None) -> CopyCheck:
    where = copy.location
    try:
        filesystem = storage.filesystem(where)
        if filesystem.get_file_info(where.path).type != pafs.FileType.Directory:
            return CopyCheck(copy, NO_COPY, f"{where.uri} does not exist")
        files = list_files(filesystem, where)
        found = read_manifest(filesystem, where)
    except LinkRefused as exc:
        return CopyCheck(copy, UNREADABLE, root_refusal(where, exc))
    except ManifestUnreadable as exc:
        return CopyCheck(copy, UNREADABLE, str(exc))
    except OSError as exc:
        return CopyCheck(copy, UNREADABLE, f"cannot read {where.uri}: {exc}")
    refused = getattr(files, "refused", {})
    if refused:
        return CopyCheck(copy, DAMAGED, f"{where.uri}: {_named(sorted(refused))}: not followed")
    if found is None:
        return CopyCheck(copy, NO_COPY, f"{where.uri} holds no manifest of hivecat's: no committed copy")
    if owner is not None and not owner.same(found.owner):
        return CopyCheck(copy, NOT_OWNED, f"{where.uri} is not a copy of this TableReplica's")
    if fingerprint(found.recorded) != copy.fingerprint:
        return CopyCheck(copy, NOT_RECORDED, f"{where.uri} is not the copy the catalog recorded (its manifest "
                                             "changed since)")
    short = sorted(p for p, e in found.recorded.items() if (f := files.get(p)) is None or f.size != e["size"])
    if short:
        return CopyCheck(copy, DAMAGED, f"{where.uri}: {_named(short)}: missing or not the size its manifest "
                                        "records")
    extra = sorted(p for p in files if p not in found.recorded)
    if extra:
        return CopyCheck(copy, DAMAGED, f"{where.uri}: {_named(extra)}: not in its manifest (written to after "
                                        "hivecat copied it)")
    if verify == "checksum":
        unsummed = sorted(p for p, e in found.recorded.items() if not (e.get("checksum") or "").startswith("crc32c:"))
        if unsummed:  # an older manifest's sha256, an object store's server-side copy: nothing to compare with
            return CopyCheck(copy, UNREADABLE, f"{where.uri}: {_named(unsummed)}: its manifest records no CRC32C, "
                                               "so the content cannot be verified")
        changed = sorted(p for p, e in found.recorded.items()
                         if hash_file(filesystem, where.child(p).path) != e["checksum"])
        if changed:
            return CopyCheck(copy, DAMAGED, f"{where.uri}: {_named(changed)}: content differs from its manifest's "
                                            "checksum")
    return CopyCheck(copy, WHOLE)


def _named(paths: list[str]) -> str:
    more = f" (and {len(paths) - SHOWN_FILES} more)" if len(paths) > SHOWN_FILES else ""
    return ", ".join(paths[:SHOWN_FILES]) + more
