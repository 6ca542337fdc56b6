"""Copies belong to the TableReplica that made them: its owner (namespace, name, uid, catalog) is in every
manifest it commits, and no other owner's run, nor a run by hand, writes into, deletes from or replaces the
unit; the files stay byte for byte as they were. An ownerless copy (made before owners) is taken over only when
the unit's `adopt` is its fingerprint. The replica check (check_units) and housekeeping say and do the same."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from support.copy_trees import read_manifest, read_tree, uri, write_tree

from hivecat.copy import Copier, CopyOptions, LocalEngine, Storage, plan_from_document
from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.plan_store import read_plan, write_plan
from hivecat.copy.storage import parse_uri
from hivecat.replication.housekeeping import MARK_NAME, housekeep
from hivecat.replication.verify import IN_SYNC, NOT_OWNED, STALE, check_units

A = {"namespace": "team-a", "replica": "events", "uid": "6f1c0d2e-aaaa-4b7e-9d1e-000000000001", "catalog": "main"}
B = {"namespace": "team-b", "replica": "events", "uid": "0b9e7c55-bbbb-4c3d-8a2f-000000000002", "catalog": "main"}
FILES = {"part-0.parquet": b"a0" * 700, "part-1.parquet": b"a1" * 300, "nested/part-2.parquet": b"a2" * 50}
THEIRS = {"part-0.parquet": b"b0" * 900, "other.parquet": b"b9" * 20}
HIVECAT = str(Path(sys.executable).parent / "hivecat")
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def plan(units: list[tuple[str, Path, Path]], owner: dict | None = None, adopt: dict[str, str] | None = None):
    document: dict = {"version": 1, "units": [
        {"id": i, "source": uri(s), "target": uri(t), **({"adopt": adopt[i]} if adopt and i in adopt else {})}
        for i, s, t in units]}
    if owner is not None:
        document["owner"] = owner
    return plan_from_document(document)


def copy(units: list[tuple[str, Path, Path]], owner: dict | None = None, adopt: dict[str, str] | None = None,
         **options) -> dict[str, dict]:
    summary = Copier(plan(units, owner, adopt), CopyOptions(**options), engine=LocalEngine(2)).run().to_dict()
    return {u["id"]: u for u in summary["units"]}


def hashes(root: Path) -> dict[str, str]:
    """sha256 of every file below root, the manifest and any staging included."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def owned_by(owner: dict, tmp_path: Path, name: str = "t") -> Path:
    """A unit copied for `owner` into tmp_path/dst/<name>."""
    source = write_tree(tmp_path / f"src-{owner['namespace']}-{name}", FILES if owner is A else THEIRS)
    assert copy([(name, source, tmp_path / "dst" / name)], owner)[name]["status"] == "done"
    return tmp_path / "dst" / name


def test_the_owner_is_recorded_in_every_manifest_and_travels_with_the_plan(tmp_path: Path) -> None:
    target = owned_by(A, tmp_path)
    assert read_manifest(target)["owner"] == A and read_tree(target) == FILES
    planned = plan([("t", tmp_path / "src", target)], A, {"t": "sha256:" + "0" * 64})
    digest = write_plan(Storage(), uri(tmp_path / "plans" / "p.json"), planned)
    read = read_plan(Storage(), uri(tmp_path / "plans" / "p.json"), digest)
    assert read == planned and read.owner.uid == A["uid"] and read.units[0].adopt == "sha256:" + "0" * 64


def test_another_owners_run_fails_the_unit_and_leaves_it_byte_for_byte(tmp_path: Path) -> None:
    target = owned_by(A, tmp_path)
    before = hashes(tmp_path / "dst")
    theirs = write_tree(tmp_path / "theirs", THEIRS)
    fine = write_tree(tmp_path / "fine", FILES)
    for delete in (False, True):  # --delete never removes another owner's files either
        units = copy([("t", theirs, target), ("fine", fine, tmp_path / "dst-b" / f"fine-{delete}")], B, delete=delete)
        assert units["t"]["status"] == "failed"
        # team-b's run (and so team-b's status) is not told which TableReplica of team-a owns it
        assert units["t"]["reason"] == f"{uri(target)}: owned by a TableReplica of another namespace; not overwritten"
        assert units["t"]["files_deleted"] == 0 and units["t"]["files_copied"] == 0
        assert units["fine"]["status"] == "done"  # the other units go on
        assert hashes(tmp_path / "dst") == before
        assert sorted(p.name for p in (tmp_path / "dst").iterdir()) == ["t"]  # no staging left beside it


def test_the_owners_own_runs_update_and_delete_as_before(tmp_path: Path) -> None:
    target = owned_by(A, tmp_path)
    source = tmp_path / "src-team-a-t"
    (source / "part-1.parquet").unlink()
    units = copy([("t", source, target)], A, delete=True)
    assert units["t"]["status"] == "done" and units["t"]["files_deleted"] == 1
    assert read_manifest(target)["owner"] == A and "part-1.parquet" not in read_tree(target)
    assert copy([("t", source, target)], A)["t"]["status"] == "skipped"  # a no-change rerun


def test_a_run_by_hand_refuses_an_owned_unit_and_keeps_ownerless_copies_as_before(tmp_path: Path) -> None:
    target = owned_by(A, tmp_path)
    before = hashes(tmp_path / "dst")
    theirs = write_tree(tmp_path / "theirs", THEIRS)
    result = subprocess.run([HIVECAT, "distcp", "--from", uri(theirs), "--to", uri(target), "--delete",
                             "--engine", "local", "--output", "json"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    unit = json.loads(result.stdout)["units"][0]
    assert unit["status"] == "failed" and "owned by TableReplica team-a/events" in unit["reason"]
    assert hashes(tmp_path / "dst") == before
    # ownerless copies are a run by hand's own, as they always were
    mine = tmp_path / "mine"
    assert copy([("m", theirs, mine)])["m"]["status"] == "done" and "owner" not in read_manifest(mine)
    (theirs / "other.parquet").write_bytes(b"changed")
    assert copy([("m", theirs, mine)])["m"]["status"] == "done" and read_tree(mine)["other.parquet"] == b"changed"


def test_a_run_with_an_owner_leaves_a_directory_without_a_manifest_alone(tmp_path: Path) -> None:
    foreign = write_tree(tmp_path / "dst" / "t", {"somebodys.csv": b"not hivecat's"})
    before = hashes(tmp_path / "dst")
    source = write_tree(tmp_path / "src", FILES)
    unit = copy([("t", source, foreign)], A, delete=True)["t"]
    assert unit["status"] == "failed" and "without hivecat's manifest" in unit["reason"]
    assert hashes(tmp_path / "dst") == before


def ownerless_copy(tmp_path: Path) -> tuple[Path, Path, str]:
    """A copy made before owners (or by hand): source, target, and its fingerprint as bookkeeping recorded it."""
    source = write_tree(tmp_path / "src", FILES)
    target = tmp_path / "dst" / "t"
    assert copy([("t", source, target)])["t"]["status"] == "done"
    (check,) = check_units(plan([("t", source, target)]).units, Storage())
    assert check.state == IN_SYNC and "owner" not in read_manifest(target)
    return source, target, check.checksum


def test_an_ownerless_copy_is_adopted_only_with_its_fingerprint(tmp_path: Path) -> None:
    source, target, recorded = ownerless_copy(tmp_path)
    before = hashes(tmp_path / "dst")
    for adopt in (None, "sha256:" + "1" * 64):  # not named, or named with another fingerprint: refused
        unit = copy([("t", source, target)], A, {"t": adopt} if adopt else None, delete=True)["t"]
        assert unit["status"] == "failed"
        assert unit["reason"] == (f"{uri(target)}: made without an owner and not named by this TableReplica's "
                                  "bookkeeping; not overwritten")
        assert hashes(tmp_path / "dst") == before
    unit = copy([("t", source, target)], A, {"t": recorded})["t"]
    assert unit["status"] == "done" and unit["files_copied"] == 0  # the data stays; the manifest gains the owner
    assert read_manifest(target)["owner"] == A and read_tree(target) == FILES
    assert copy([("t", source, target)], B, {"t": recorded})["t"]["status"] == "failed"  # now A's, not B's


def test_check_units_says_whose_each_copy_is(tmp_path: Path) -> None:
    source, ownerless, recorded = ownerless_copy(tmp_path)
    theirs = owned_by(B, tmp_path, "theirs")
    ours = owned_by(A, tmp_path, "ours")
    owner = plan([("x", source, tmp_path / "x")], A).owner
    units = plan([("ownerless", source, ownerless), ("theirs", tmp_path / "src-team-b-theirs", theirs),
                  ("ours", tmp_path / "src-team-a-ours", ours)], A).units
    adoptable = replace(units[0], id="adoptable", adopt=recorded)  # as the planner names it from bookkeeping
    found = {c.unit.id: c for c in check_units([*units, adoptable], Storage(), owner=owner)}
    assert (found["ownerless"].state, found["ownerless"].reason) == (
        NOT_OWNED, f"{uri(ownerless)}: made without an owner and not named by this TableReplica's bookkeeping; "
                   "not overwritten")
    assert (found["adoptable"].state, found["adoptable"].reason) == (
        STALE, "made by an earlier hivecat: adopted by the next copy")
    assert found["adoptable"].copyable
    assert found["theirs"].state == NOT_OWNED and "owned by a TableReplica of another namespace" in \
        found["theirs"].reason and B["uid"] not in found["theirs"].reason  # team-b stays unnamed to team-a
    assert found["ours"].state == IN_SYNC
    # without an owner (a run by hand's view): an owned copy is nobody's to write, an ownerless one is
    by_hand = {c.unit.id: c.state for c in check_units([*units, adoptable], Storage())}
    assert by_hand == {"ownerless": IN_SYNC, "adoptable": IN_SYNC, "theirs": NOT_OWNED, "ours": NOT_OWNED}


def test_housekeeping_marks_and_removes_only_its_own_copies(tmp_path: Path) -> None:
    table = tmp_path / "dr1" / "sales.db" / "events"
    sources = {day: write_tree(tmp_path / "primary" / f"dt={day}", FILES) for day in ("1", "2", "3")}
    copy([("sales.events/dt=1", sources["1"], table / "dt=1")], A)
    copy([("sales.events/dt=2", sources["2"], table / "dt=2")], B)
    copy([("sales.events/dt=3", sources["3"], table / "dt=3")])  # ownerless
    before = {day: hashes(table / f"dt={day}") for day in ("2", "3")}
    owner = plan([("x", sources["1"], tmp_path / "x")], A).owner
    reports = [housekeep(Storage(), parse_uri(uri(table)), 1, "sales.events", [], NOW, 0, run_id, owner=owner)
               for run_id in ("r1", "r2")]  # every partition gone from the table; no delay
    assert reports[0].marked == [uri(table / "dt=1")] and reports[1].removed == [uri(table / "dt=1")]
    assert not (table / "dt=1").exists()
    kept = "\n".join(reports[1].kept)
    assert f"{uri(table / 'dt=2')}: the copy of sales.events/dt=2, gone from the table, is owned by a TableReplica " \
           "of another namespace, not by this TableReplica, so it is neither marked nor removed" in kept
    assert f"{uri(table / 'dt=3')}: the copy of sales.events/dt=3, gone from the table, was made without an owner" \
        in kept
    for day in ("2", "3"):  # never marked, never touched
        assert hashes(table / f"dt={day}") == before[day] and not (table / f"dt={day}" / MARK_NAME).exists()


def test_the_mark_names_its_owner(tmp_path: Path) -> None:
    table = tmp_path / "dr1" / "sales.db" / "events"
    copy([("sales.events/dt=1", write_tree(tmp_path / "p", FILES), table / "dt=1")], A)
    owner = plan([("x", tmp_path / "p", tmp_path / "x")], A).owner
    housekeep(Storage(), parse_uri(uri(table)), 1, "sales.events", [], NOW, 3600, "r1", owner=owner)
    assert json.loads((table / "dt=1" / MARK_NAME).read_text())["owner"] == A


class CommitFirst(LocalEngine):
    """Another owner's run commits into the same target while this run copies."""

    def __init__(self, other) -> None:
        super().__init__(2)
        self.other = other

    def execute(self, tasks, options, progress=None):
        self.other()
        return super().execute(tasks, options, progress)


def test_a_unit_another_run_committed_into_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", FILES)
    target = tmp_path / "dst" / "t"
    theirs = write_tree(tmp_path / "theirs", THEIRS)
    other = lambda: copy([("t", theirs, target)], B)  # noqa: E731
    summary = Copier(plan([("t", source, target)], A), CopyOptions(), engine=CommitFirst(other)).run().to_dict()
    unit = summary["units"][0]
    assert unit["status"] == "failed" and "committed into by another run" in unit["reason"], unit
    assert read_tree(target) == THEIRS and read_manifest(target)["owner"] == B


@pytest.mark.parametrize("bad", [{**A, "extra": "x"}, {k: v for k, v in A.items() if k != "uid"}, {**A, "uid": ""}])
def test_a_malformed_owner_is_refused_in_plans_and_manifests(tmp_path: Path, bad: dict) -> None:
    from hivecat.copy.documents import DocumentError

    with pytest.raises(DocumentError, match="plan"):
        plan([("t", tmp_path / "s", tmp_path / "t")], bad)
    target = owned_by(A, tmp_path)
    manifest = read_manifest(target)
    (target / MANIFEST_NAME).write_text(json.dumps({**manifest, "owner": bad}))
    before = hashes(tmp_path / "dst")
    unit = copy([("t", tmp_path / "src-team-a-t", target)], A)["t"]
    assert unit["status"] == "failed" and "unit manifest" in unit["reason"] and hashes(tmp_path / "dst") == before
