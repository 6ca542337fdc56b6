"""The unit manifest `_hivecat_manifest.json`, written inside each committed target unit.

Its name starts with `_`, so Hive, Spark and MSCK REPAIR do not see it as data. A unit counts as
present only with a current manifest: on object stores, where the commit is a series of copies, the
manifest is written last.

A manifest is input from the target (whoever can write there can write it), and parsed it takes about
5x its size in memory, so one over MAX_MANIFEST_BYTES is refused before it is read (the copier checks
its size first): that is 250,000-350,000 entries, far more files than one unit holds. Like any manifest
hivecat cannot use, it fails its unit, which is then neither trusted nor overwritten.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, NamedTuple

from hivecat.copy import documents
from hivecat.copy.owner import Owner

MANIFEST_NAME = "_hivecat_manifest.json"
MAX_MANIFEST_BYTES = 64 * 1024**2  # an entry takes 190-270 bytes


def check_manifest_size(size: int, where: str) -> None:
    if size > MAX_MANIFEST_BYTES:
        raise documents.DocumentError(f"unit manifest {where}: too large ({size:,} bytes; "
                               f"the limit is {MAX_MANIFEST_BYTES:,})")


class FileEntry(NamedTuple):  # a tuple: a manifest holds one per file, tens of thousands
    path: str              # relative to the unit, "/"-separated
    size: int
    source_mtime_ns: int
    checksum: str | None   # "crc32c:<hex>" when computed (older manifests: "sha256:<hex>")
    etag: str | None       # the copy's S3 ETag, for server-side copies
    copied_at: str
    run_id: str


@dataclass(frozen=True)
class UnitManifest:
    unit_id: str
    source: str
    run_id: str
    committed_at: str
    files: tuple[FileEntry, ...]
    owner: Owner | None = None  # the TableReplica the copy belongs to (owner.py); None: made by hand

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {"version": documents.VERSION, "unit_id": self.unit_id, "source": self.source,
                                    "run_id": self.run_id, "committed_at": self.committed_at,
                                    "files": [f._asdict() for f in self.files]}
        if self.owner is not None:  # absent, not null: an ownerless manifest stays readable by older hivecats
            document["owner"] = self.owner.to_dict()
        return document


def manifest_from_document(document: dict[str, Any]) -> UnitManifest:
    owner = document.get("owner")
    return UnitManifest(document["unit_id"], document["source"], document["run_id"], document["committed_at"],
                        tuple(recorded_entry(f) for f in document["files"]),
                        Owner.from_dict(owner) if owner is not None else None)


RecordedFiles = dict[str, dict[str, Any]]  # a manifest's file entries as read (JSON objects), by path


def parse_manifest(text: bytes, where: str) -> tuple[RecordedFiles, Owner | None]:
    """A validated manifest's entries, left as parsed (a no-change rerun compares them with the listing
    directly, and FileEntry tuples are made, `recorded_entry`, only for units that are rewritten), and its owner."""
    check_manifest_size(len(text), where)  # the caller checks before reading; this holds whoever reads
    document = documents.parse(documents.UNIT_MANIFEST, text, where)
    owner = document.get("owner")
    return {f["path"]: f for f in document["files"]}, Owner.from_dict(owner) if owner is not None else None


def fingerprint(recorded: RecordedFiles) -> str:
    """sha256 of what a manifest says of each file (path, size, checksum or source mtime): equal for two copies
    of the same content; recorded in the catalog as `hivecat.replica.<cluster>.checksum`, and compared with a
    unit's `adopt` before an ownerless copy is taken over (owner.py)."""
    entries = [(path, entry["size"], entry.get("checksum") or entry["source_mtime_ns"])
               for path, entry in sorted(recorded.items())]
    return "sha256:" + hashlib.sha256(json.dumps(entries, separators=(",", ":")).encode()).hexdigest()


def recorded_entry(entry: dict[str, Any]) -> FileEntry:
    return FileEntry(**entry)
