"""A recorded copy judged from itself alone (replication/verify.py:check_copies), as an unplanned failover must
when the primary does not answer: whole, the copy the bookkeeping recorded, this TableReplica's; a copy that is
truncated, missing a file, written to, replaced or someone else's is named, never taken. The originals are
removed before every check: nothing of theirs is read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.copy_trees import uri, write_tree

from hivecat.copy import Copier, CopyOptions, LocalEngine, Storage, plan_from_document
from hivecat.copy.manifest import MANIFEST_NAME, fingerprint, parse_manifest
from hivecat.copy.owner import Owner
from hivecat.copy.storage import parse_uri
from hivecat.replication.verify import (
    DAMAGED, NO_COPY, NOT_OWNED, NOT_RECORDED, UNREADABLE, WHOLE, RecordedCopy, check_copies,
)

A = {"namespace": "team-a", "replica": "events", "uid": "6f1c0d2e-aaaa-4b7e-9d1e-000000000001", "catalog": "main"}
B = {"namespace": "team-b", "replica": "events", "uid": "0b9e7c55-bbbb-4c3d-8a2f-000000000002", "catalog": "main"}
FILES = {"part-0.parquet": b"a0" * 700, "part-1.parquet": b"a1" * 300, "nested/part-2.parquet": b"a2" * 50}


def copied(tmp_path: Path, name: str = "dt=1", owner: dict = A) -> tuple[Path, RecordedCopy]:
    """A unit copied by the copy engine for `owner`, its original then removed; the copy as bookkeeping records it."""
    source = write_tree(tmp_path / "src" / name, FILES)
    target = tmp_path / "dst" / name
    plan = plan_from_document({"version": 1, "owner": owner,
                               "units": [{"id": name, "source": uri(source), "target": uri(target)}]})
    summary = Copier(plan, CopyOptions(verify="checksum"), engine=LocalEngine(2)).run().to_dict()
    assert summary["units"][0]["status"] == "done"
    shutil.rmtree(source)  # the primary is gone
    recorded, _ = parse_manifest((target / MANIFEST_NAME).read_bytes(), "test")
    return target, RecordedCopy(name, parse_uri(uri(target), "copy"), fingerprint(recorded))


def check(copy: RecordedCopy, verify: str = "size", owner: dict = A) -> tuple[str, str]:
    (found,) = check_copies([copy], Storage(), verify, owner=Owner.from_dict(owner))
    return found.state, found.reason


@pytest.mark.parametrize("verify", ["size", "checksum"])
def test_a_whole_recorded_copy_is_whole_without_its_original(tmp_path: Path, verify: str) -> None:
    _, copy = copied(tmp_path)
    assert check(copy, verify) == (WHOLE, "")


def test_a_truncated_or_missing_file_damages_the_copy_and_is_named(tmp_path: Path) -> None:
    target, copy = copied(tmp_path)
    (target / "part-1.parquet").write_bytes(b"a1" * 10)
    state, reason = check(copy)
    assert state == DAMAGED and "part-1.parquet" in reason
    target, copy = copied(tmp_path, "dt=2")
    (target / "nested" / "part-2.parquet").unlink()
    state, reason = check(copy)
    assert state == DAMAGED and "nested/part-2.parquet" in reason


def test_content_changed_in_place_is_seen_only_by_checksum(tmp_path: Path) -> None:
    target, copy = copied(tmp_path)
    (target / "part-0.parquet").write_bytes(b"zz" * 700)  # same size
    assert check(copy, "size")[0] == WHOLE
    state, reason = check(copy, "checksum")
    assert state == DAMAGED and "part-0.parquet" in reason


def test_a_file_written_into_the_copy_damages_it(tmp_path: Path) -> None:
    target, copy = copied(tmp_path)
    (target / "late.parquet").write_bytes(b"x")
    state, reason = check(copy)
    assert state == DAMAGED and "late.parquet" in reason


def test_a_copy_that_is_not_the_recorded_one_is_refused(tmp_path: Path) -> None:
    _, copy = copied(tmp_path)
    stale = RecordedCopy(copy.unit_id, copy.location, "sha256:" + "0" * 64)
    state, reason = check(stale)
    assert state == NOT_RECORDED and copy.location.uri in reason


def test_another_owners_copy_and_no_copy_at_all(tmp_path: Path) -> None:
    _, theirs = copied(tmp_path, owner=B)
    assert check(theirs)[0] == NOT_OWNED
    target, copy = copied(tmp_path, "dt=2")
    (target / MANIFEST_NAME).unlink()
    assert check(copy)[0] == NO_COPY
    shutil.rmtree(target)
    assert check(copy)[0] == NO_COPY


def test_a_manifest_without_crc32c_cannot_be_verified_by_content(tmp_path: Path) -> None:
    target, copy = copied(tmp_path)
    document = json.loads((target / MANIFEST_NAME).read_text())
    for entry in document["files"]:  # as an older hivecat recorded them
        entry["checksum"] = "sha256:" + "0" * 64
    manifest = json.dumps(document)
    (target / MANIFEST_NAME).write_text(manifest)
    recorded, _ = parse_manifest(manifest.encode(), "test")
    rewritten = RecordedCopy(copy.unit_id, copy.location, fingerprint(recorded))
    assert check(rewritten, "size")[0] == WHOLE
    assert check(rewritten, "checksum")[0] == UNREADABLE


def test_many_copies_keep_their_order(tmp_path: Path) -> None:
    copies = [copied(tmp_path, f"dt={i}")[1] for i in range(4)]
    (tmp_path / "dst" / "dt=2" / "part-0.parquet").unlink()
    found = check_copies(copies, Storage(), "checksum", owner=Owner.from_dict(A))
    assert [c.copy.unit_id for c in found] == [c.unit_id for c in copies]
    assert [c.state for c in found] == [WHOLE, WHOLE, DAMAGED, WHOLE]
