"""Storage claims across namespaces (reconcile/claims.py): one team's registered storage cannot be registered by
another unless both are granted it as shared; overlaps that exist at an upgrade stay in conflict on both sides
until the policy names one owner."""

from __future__ import annotations

from hivecat import reasons
from hivecat.reconcile.claims import Claim, claim_conflict

A = Claim("team-a", "dr", "s3://dr-bucket/warehouse", registered=True, created="2026-01-01T00:00:00Z")


def never_shared(_: Claim) -> bool:
    return False


def test_a_newcomer_from_another_namespace_is_refused_naming_the_first() -> None:
    b = Claim("team-b", "dr", "s3://dr-bucket/warehouse", registered=False, created="2025-01-01T00:00:00Z")
    violation = claim_conflict(b, [A], never_shared)
    assert violation is not None and violation.reason == reasons.STORAGE_CLAIM_CONFLICT
    assert "first" in violation.message
    assert "team-a" not in violation.message and "dr-bucket" not in violation.message.split("overlaps")[1]
    assert claim_conflict(A, [b], never_shared) is None  # the registered one keeps it, however old the other


def test_overlap_under_or_over_and_through_another_scheme_of_the_family() -> None:
    for other in ("s3://dr-bucket/warehouse/sales.db", "s3://dr-bucket", "s3a://dr-bucket/warehouse"):
        b = Claim("team-b", "x", other, False, "2027-01-01T00:00:00Z")
        assert claim_conflict(b, [A], never_shared) is not None, other
    for other in ("s3://dr-bucket/warehouse2", "s3://dr-bucket-2/warehouse", "hdfs://dr-bucket/warehouse"):
        b = Claim("team-b", "x", other, False, "2027-01-01T00:00:00Z")
        assert claim_conflict(b, [A], never_shared) is None, other


def test_the_same_namespace_is_the_registrys_business() -> None:
    mine = Claim("team-a", "other", A.filesystem, False, "2027-01-01T00:00:00Z")
    assert claim_conflict(mine, [A], never_shared) is None


def test_two_new_claims_the_older_wins() -> None:
    old = Claim("team-a", "x", "s3://lake/t", False, "2026-01-01T00:00:00Z")
    new = Claim("team-b", "x", "s3://lake/t", False, "2026-01-02T00:00:00Z")
    assert claim_conflict(old, [new], never_shared) is None
    assert claim_conflict(new, [old], never_shared) is not None


def test_both_registered_at_an_upgrade_both_are_in_conflict() -> None:
    b = Claim("team-b", "dr", A.filesystem, True, "2026-06-01T00:00:00Z")
    for mine, other in ((A, b), (b, A)):
        violation = claim_conflict(mine, [other], never_shared)
        assert violation is not None and "writes to neither and deletes nothing" in violation.message


def test_shared_only_when_both_sides_are_granted_it_as_shared() -> None:
    b = Claim("team-b", "dr", A.filesystem, False, "2027-01-01T00:00:00Z")
    assert claim_conflict(b, [A], lambda claim: True) is None
    assert claim_conflict(b, [A], lambda claim: claim.namespace == "team-b") is not None
