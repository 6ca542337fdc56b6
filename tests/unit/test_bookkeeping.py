"""The bookkeeping a check leaves (replication/bookkeeping.py): a unit not known to be in sync is no longer
routed to (its `location` goes), but the fingerprint and time of its last verified copy stay while that copy
may still be whole -- the unit is out of date but the copy is the recorded one, or nothing could be read --
since an unplanned failover needs exactly those units. They go with the copy: replaced, damaged, someone
else's, or its source gone."""

from __future__ import annotations

import pytest

from hivecat.copy.plan import Unit
from hivecat.copy.storage import parse_uri
from hivecat.replication.bookkeeping import bookkeeping, replica_key
from hivecat.replication.planner import UnitRef
from hivecat.replication.unit_states import IN_SYNC, NOT_OWNED, SOURCE_MISSING, STALE, UNREADABLE
from hivecat.replication.verify import UnitCheck

NOW = "2026-11-27T12:00:00Z"
SOURCE, TARGET = "hdfs://nn:8020/warehouse/t/dt=1", "s3://dr/warehouse/t/dt=1"
RECORDED = "sha256:" + "a" * 64
LOCATION, SYNCED, CHECKSUM = (replica_key("dr", f) for f in ("location", "syncedAt", "checksum"))
KEPT = {LOCATION: TARGET, SYNCED: "2026-11-20T08:00:00Z", CHECKSUM: RECORDED}
UNIT = Unit("dt=1", parse_uri(SOURCE, "source"), parse_uri(TARGET, "target"))


def left(check: UnitCheck, parameters: dict[str, str] = KEPT) -> tuple[dict[str, str], int]:
    """The unit's parameters after the bookkeeping of `check` (and how many units it counts as cleared)."""
    book = bookkeeping("dr", {"dt=1": UnitRef(("1",), SOURCE, parameters)}, [check], NOW)
    after = dict(parameters)
    for update in book.updates:
        assert update.expected_location == SOURCE  # compare-and-set on the unit's location, always
        for key in update.remove:
            after.pop(key, None)
        after.update(update.params)
    return after, book.cleared


def test_a_unit_in_sync_is_recorded_with_its_copys_fingerprint() -> None:
    after, cleared = left(UnitCheck(UNIT, IN_SYNC, checksum="sha256:" + "b" * 64), {})
    assert after == {LOCATION: TARGET, SYNCED: NOW, CHECKSUM: "sha256:" + "b" * 64} and cleared == 0


@pytest.mark.parametrize("check", [
    UnitCheck(UNIT, STALE, "2 files new or changed on the source", copy_fingerprint=RECORDED),
    UnitCheck(UNIT, UNREADABLE, "cannot read the source: namenode down"),
], ids=["stale-but-intact", "unreadable"])
def test_the_last_verified_copy_stays_recorded_but_is_no_longer_routed_to(check: UnitCheck) -> None:
    after, cleared = left(check)
    assert after == {SYNCED: KEPT[SYNCED], CHECKSUM: RECORDED} and cleared == 1
    again, cleared = left(check, after)  # the next check changes nothing more
    assert again == after and cleared == 0


@pytest.mark.parametrize("check", [
    UnitCheck(UNIT, STALE, "not copied yet"),  # the copy is not whole any more (or gone)
    UnitCheck(UNIT, STALE, "out of date", copy_fingerprint="sha256:" + "c" * 64),  # another copy is there now
    UnitCheck(UNIT, NOT_OWNED, "someone else's"),
    UnitCheck(UNIT, SOURCE_MISSING, "the source directory does not exist"),
], ids=["damaged", "replaced", "not-owned", "source-gone"])
def test_the_keys_go_with_the_copy(check: UnitCheck) -> None:
    after, cleared = left(check)
    assert after == {} and cleared == 1


def test_a_unit_with_no_keys_gets_none() -> None:
    assert left(UnitCheck(UNIT, UNREADABLE, "down"), {}) == ({}, 0)
    assert left(UnitCheck(UNIT, STALE, "not copied yet"), {}) == ({}, 0)
