"""Housekeeping of copies whose unit is gone: a partition dropped on the source (or moved to another location)
leaves its copy on each secondary. That copy is not removed at once, since a drop can be a mistake and a copy
may be all that is left of it: it is marked, and removed once the mark is older than the TableReplica's
`spec.housekeeping.delay` (circus-train's idea of expired replica paths).

What counts as such a copy, on one secondary, below the table's directory there (a copy placed elsewhere is not
looked for):
- a directory carrying hivecat's manifest (so hivecat made it) whose unit id is one of this table's partitions;
- whose manifest names this TableReplica as its owner (copy/owner.py). A copy of the table that another
  TableReplica owns, or that names no owner, is reported and kept, and never marked;
- which no unit of the table, in scope or not, has as its location or its copy's location now;
- and whose files are still exactly those the manifest lists, with their sizes. A copy somebody wrote into
  since is not hivecat's to remove: it is reported and kept.

On local disks nothing is listed, marked or removed through a symbolic link (copy/localfs.py).

The mark is a file `_hivecat_dropped.json` inside the copy (its `_` hides it from Hive and Spark), naming the
owner too. A unit that comes back at the same place before the removal is a unit again: the next copy run
rewrites the directory and the mark goes with the files the source does not have. Removal deletes the data files first and the
manifest last, so a removal that stops halfway leaves a copy that is still hivecat's and is finished later.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from pyarrow import fs as pafs

from hivecat.copy import documents
from hivecat.copy.listing import list_files
from hivecat.copy.manifest import MANIFEST_NAME, check_manifest_size
from hivecat.copy.owner import Owner, owner_seen_by, same_owner
from hivecat.copy.storage import Location, Storage
from hivecat.timestamps import API_TIME

MARK_NAME = "_hivecat_dropped.json"


@dataclass
class HousekeepingReport:
    marked: list[str] = field(default_factory=list)    # copies marked in this pass
    waiting: int = 0                                    # marked earlier, their delay not over
    removed: list[str] = field(default_factory=list)   # copies removed in this pass
    kept: list[str] = field(default_factory=list)      # "uri: why" of copies of gone units left alone

    @property
    def pending(self) -> int:
        """Copies of gone units still on the secondary, waiting for their delay."""
        return len(self.marked) + self.waiting


def housekeep(storage: Storage, table_copy: Location, depth: int, table_id: str, live: Iterable[Location],
              now: datetime, delay_seconds: float, run_id: str, *, owner: Owner | None = None) -> HousekeepingReport:
    """Mark and remove the copies of gone units below `table_copy` (the table's directory on a secondary), down
    to `depth` levels (the number of partition keys). `live`: every location the table's units have now and
    their copies' locations on this secondary, which are never touched. `table_id`: db.table. `owner`: the
    TableReplica's; only copies whose manifest names it are marked or removed (None: only copies that name no
    owner, as a run by hand would take)."""
    report = HousekeepingReport()
    filesystem = storage.filesystem(table_copy)
    protected = list(live)
    skip = {p.path.rstrip("/") for p in protected}
    try:
        found = _copies_below(filesystem, table_copy, depth, skip)
    except OSError as exc:
        report.kept.append(f"{table_copy.uri}: cannot be listed: {exc}")
        return report
    for copy in found:
        if any(copy.contains(p) or p.contains(copy) for p in protected):
            continue
        try:
            _tend(filesystem, copy, table_id, now, delay_seconds, run_id, owner, report)
        except (OSError, documents.DocumentError) as exc:
            report.kept.append(f"{copy.uri}: cannot be checked: {exc}")
    return report


def _copies_below(filesystem: pafs.FileSystem, root: Location, depth: int, skip: set[str]) -> list[Location]:
    """Directories with a manifest down to `depth` levels below root; not below one, nor below a live unit."""
    found: list[Location] = []
    level = [root]
    for _ in range(depth):
        deeper: list[Location] = []
        for directory in level:
            selector = pafs.FileSelector(directory.path, recursive=False, allow_not_found=True)
            for info in filesystem.get_file_info(selector):
                name = posixpath.basename(info.path.rstrip("/"))
                if info.type != pafs.FileType.Directory or name.startswith((".", "_")):
                    continue  # staging, hidden and Hive's own `_` directories are nobody's unit
                child = directory.child(name)
                if child.path.rstrip("/") in skip:
                    continue  # a unit's copy now: the common case, decided without another call
                if filesystem.get_file_info(child.child(MANIFEST_NAME).path).type == pafs.FileType.File:
                    found.append(child)
                else:
                    deeper.append(child)
        level = deeper
    return found


def _tend(filesystem: pafs.FileSystem, copy: Location, table_id: str, now: datetime, delay_seconds: float,
          run_id: str, owner: Owner | None, report: HousekeepingReport) -> None:
    manifest = _read_manifest(filesystem, copy)
    unit = str(manifest.get("unit_id", ""))
    if not unit.startswith(table_id + "/"):
        return  # another table's copy (or this table's own directory): not this TableReplica's to judge
    found = Owner.from_dict(manifest["owner"]) if "owner" in manifest else None
    if not same_owner(found, owner):
        whose = f"is owned by {owner_seen_by(found, owner)}" if found is not None else "was made without an owner"
        report.kept.append(f"{copy.uri}: the copy of {unit}, gone from the table, {whose}, not by this "
                           "TableReplica, so it is neither marked nor removed")
        return
    files = list_files(filesystem, copy)
    files.pop(MARK_NAME, None)
    recorded = {entry["path"]: entry["size"] for entry in manifest["files"]}
    if files.refused or {path: stat.size for path, stat in files.items()} != recorded:
        report.kept.append(f"{copy.uri}: the copy of {unit}, gone from the table, was written to after hivecat "
                           "copied it, so it is not removed; remove it by hand once its data is not needed")
        return
    since = _read_mark(filesystem, copy)
    if since is None:
        _write_mark(filesystem, copy, unit, now, run_id, owner)
        report.marked.append(copy.uri)
    elif now - since >= timedelta(seconds=delay_seconds):
        _remove(filesystem, copy, files)
        report.removed.append(copy.uri)
    else:
        report.waiting += 1


def _read_manifest(filesystem: pafs.FileSystem, copy: Location) -> dict:
    where = copy.child(MANIFEST_NAME)
    check_manifest_size(filesystem.get_file_info(where.path).size, where.uri)
    with filesystem.open_input_stream(where.path) as stream:
        return documents.parse(documents.UNIT_MANIFEST, stream.read(), where.uri)


def _read_mark(filesystem: pafs.FileSystem, copy: Location) -> datetime | None:
    path = copy.child(MARK_NAME).path
    if filesystem.get_file_info(path).type != pafs.FileType.File:
        return None
    with filesystem.open_input_stream(path) as stream:
        text = stream.read(4096)
    try:
        since = datetime.strptime(json.loads(text)["since"], API_TIME)
    except (ValueError, KeyError, TypeError):
        return None  # unreadable: marked again from now, which only delays the removal
    return since.replace(tzinfo=timezone.utc)


def _write_mark(filesystem: pafs.FileSystem, copy: Location, unit: str, now: datetime, run_id: str,
                owner: Owner | None) -> None:
    body = {"since": now.strftime(API_TIME), "unit": unit, "run": run_id,
            "owner": owner.to_dict() if owner is not None else None,
            "why": "the unit is gone from the table; hivecat removes this copy once the delay is over"}
    with filesystem.open_output_stream(copy.child(MARK_NAME).path) as stream:
        stream.write(json.dumps(body).encode())


def _remove(filesystem: pafs.FileSystem, copy: Location, files: Iterable[str]) -> None:
    """Data first, the mark and the manifest last: a removal cut short is still a marked copy of hivecat's."""
    for relative in files:
        filesystem.delete_file(copy.child(relative).path)
    filesystem.delete_file(copy.child(MARK_NAME).path)
    filesystem.delete_file(copy.child(MANIFEST_NAME).path)
    filesystem.delete_dir(copy.path)
