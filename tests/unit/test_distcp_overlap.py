"""The plan's overlap check (sort and one pass) refuses exactly what a pair-by-pair check refuses, in the
same words, and stays fast for plans of many partitions.

Property: for random small plans over a few filesystems and path segments that sort on either side
of "/" ("a-b", "a.b" before it, "a0" after it), nested, equal and root locations included,
`check_overlaps` raises the message the reference below raises, or passes when it passes. The
reference is the plain definition: for each unit, for each unit, three containment tests.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import Unit, _overlapping_targets, check_overlaps, plan_from_document
from hivecat.copy.storage import Location, parse_uri


def reference_check(units: tuple[Unit, ...]) -> None:
    ids = [u.id for u in units]
    if len(set(ids)) != len(ids):
        raise CopyInputError(f"unit ids must be unique: {sorted({i for i in ids if ids.count(i) > 1})}")
    for unit in units:
        if unit.source == unit.target:
            raise CopyInputError(f"source and target are the same location: {unit.source.uri}")
    for unit in units:
        for other in units:
            if unit.target.contains(other.source):
                raise CopyInputError(f"source {other.source.uri} is inside target {unit.target.uri}")
            if other.source.contains(unit.target):
                raise CopyInputError(f"target {unit.target.uri} is inside source {other.source.uri}")
            if other is not unit and unit.target.contains(other.target):
                raise CopyInputError(f"target {other.target.uri} of unit {other.id!r} is inside target "
                                     f"{unit.target.uri} of unit {unit.id!r}")


def outcome(check, units: tuple[Unit, ...]) -> str | None:
    try:
        check(units)
    except CopyInputError as exc:
        return str(exc)
    return None


SEGMENTS = ["a", "b", "a-b", "a.b", "a0", "ab", "dt=1"]
FILESYSTEMS = [("file", ""), ("hdfs", "nn:8020"), ("s3", "lake"), ("s3", "replica")]


@st.composite
def locations(draw) -> Location:
    """Normalised, as parse_uri leaves paths: the root of a disk or namenode, never of a bucket."""
    scheme, authority = draw(st.sampled_from(FILESYSTEMS))
    segments = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1 if scheme == "s3" else 0, max_size=3))
    if scheme == "s3":
        return Location(scheme, authority, "/".join([authority, *segments]))
    return Location(scheme, authority, "/" + "/".join(segments))


@st.composite
def unit_sets(draw) -> tuple[Unit, ...]:
    count = draw(st.integers(1, 7))
    ids = [f"u{i}" for i in range(count)]
    if count > 1 and draw(st.integers(0, 19)) == 0:
        ids[-1] = ids[0]  # now and then a repeated id
    # a unit copied onto itself stops the check first: now and then only, so the rest gets tested
    pairs = st.tuples(locations(), locations())
    pairs = pairs if draw(st.integers(0, 19)) == 0 else pairs.filter(lambda pair: pair[0] != pair[1])
    return tuple(Unit(i, *draw(pairs)) for i in ids)


def refused_units(units: tuple[Unit, ...]) -> set[int]:
    """The units the reference would refuse, were each the first to be checked."""
    return {index for index, unit in enumerate(units) for other in units
            if unit.target.contains(other.source) or other.source.contains(unit.target)
            or (other is not unit and unit.target.contains(other.target))}


@settings(max_examples=1000, deadline=None)
@given(unit_sets())
def test_the_sorted_check_refuses_what_the_pairwise_check_refuses(units: tuple[Unit, ...]) -> None:
    assert outcome(check_overlaps, units) == outcome(reference_check, units)
    assert _overlapping_targets(units) == refused_units(units)


def plan(*pairs: tuple[str, str]) -> dict:
    return {"version": 1, "units": [{"id": f"u{i}", "source": s, "target": t} for i, (s, t) in enumerate(pairs)]}


@pytest.mark.parametrize(("pairs", "message"), [
    ((("s3://lake/t/dt=1", "s3://lake/t/dt=1"),), "source and target are the same location: s3://lake/t/dt=1"),
    ((("s3://lake/t", "s3://copy/t"), ("s3://lake/u", "s3://lake/t/dt=2")),
     "target s3://lake/t/dt=2 is inside source s3://lake/t"),
    ((("s3://lake/a", "s3://copy/a"), ("s3://copy/a/b", "s3://copy/b")),
     "source s3://copy/a/b is inside target s3://copy/a"),
    ((("s3://lake/a", "s3://copy/t"), ("s3://lake/b", "s3://copy/t-1"), ("s3://lake/c", "s3://copy/t/dt=1")),
     "target s3://copy/t/dt=1 of unit 'u2' is inside target s3://copy/t of unit 'u0'"),
    ((("s3://lake/a", "s3://copy/t"), ("s3://lake/b", "s3://copy/t")),
     "target s3://copy/t of unit 'u1' is inside target s3://copy/t of unit 'u0'"),
])
def test_each_refusal_across_units(pairs: tuple[tuple[str, str], ...], message: str) -> None:
    with pytest.raises(CopyInputError) as raised:
        plan_from_document(plan(*pairs))
    assert str(raised.value) == message


def partition_units(count: int) -> list[Unit]:
    return [Unit(f"dt={i}", parse_uri(f"s3://lake/db/t/dt={i}"), parse_uri(f"s3://replica/db/t/dt={i}"))
            for i in range(count)]


def test_large_plans_are_checked_in_n_log_n(monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 partitions: the pair-by-pair check took 268 s on the 2-CPU build machine (growing as n²).
    Counted, not timed (speed is measured in benchmarks/): a few containment tests per unit at most, and
    a check that makes more fails at once instead of running for minutes."""
    units = partition_units(20_000)
    bound, calls, contains = 4 * len(units), [0], Location.contains

    def counted(self: Location, other: Location) -> bool:
        calls[0] += 1
        if calls[0] > bound:
            raise AssertionError(f"more than {bound} containment tests for {len(units)} units: pair by pair?")
        return contains(self, other)
    monkeypatch.setattr(Location, "contains", counted)
    check_overlaps(tuple(units))
    units.append(Unit("late", parse_uri("s3://replica/db/t/dt=7/x"), parse_uri("s3://elsewhere/x")))
    calls[0] = 0
    with pytest.raises(CopyInputError) as raised:
        check_overlaps(tuple(units))
    assert str(raised.value) == "source s3://replica/db/t/dt=7/x is inside target s3://replica/db/t/dt=7"
