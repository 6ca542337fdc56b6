"""Storage claims across namespaces (reconcile/claims.py): one team's registered storage cannot be registered by
another unless both are granted it as shared; overlaps that exist at an upgrade stay in conflict on both sides
until the policy names one owner."""

from __future__ import annotations

from hivecat import reasons
from hivecat.reconcile.claims import Claim, KnownClaims, claim_conflict

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



SPELLINGS = ("s3://dr-bucket", "s3a://DR-Bucket/warehouse", "s3n://dr-bucket/warehouse/x", "s3://dr-bucket-2/w",
             "s3://dr-bucket/warehouse2", "s3://dr-bucket/warehouse.db", "s3://dr-bucket/Warehouse/x",
             "s3://dr-bucket/team-a/w", "s3://dr-bucket/team-a", "s3://dr-bucket/team-b/w/deep/er",
             "hdfs://nn:8020/data", "hdfs://NN:8020/data/sales", "hdfs://nn/data", "hdfs://nn:9000/data",
             "hdfs://nn:8020/", "viewfs://nn:8020/data", "webhdfs://nn:8020/data", "gs://b/w",
             "abfs://c@acct.dfs.core.windows.net/w", "abfss://c@acct.dfs.core.windows.net/w/x",
             "abfs://d@acct.dfs.core.windows.net/w", "file:/data", "file:///data/x", "file:/data0", "file:/other",
             "not a uri", "s3://", "hdfs:///data")


def test_the_storage_index_finds_exactly_the_overlaps() -> None:
    """KnownClaims.near looks at one storage's paths above, at and below a filesystem: it must find exactly
    the claims that overlap it (every spelling of a family, case rules, sibling paths that share a prefix)."""
    claims = [Claim(f"team-{i}", f"c{i}", fs, False, f"2026-01-{i + 1:02d}T00:00:00Z")
              for i, fs in enumerate(SPELLINGS)]
    known = KnownClaims.of(claims)
    pairs = 0
    for mine in claims:
        expected = {c.name for c in claims if c is not mine and claim_conflict(mine, [c], never_shared) is not None
                    or claim_conflict(c, [mine], never_shared) is not None}
        near = {c.name for c in known.near(mine.filesystem) if c is not mine}
        assert near == expected, mine.filesystem
        pairs += len(expected)
    assert pairs >= 30  # the spellings above do overlap (the s3 family, hdfs://nn:8020, abfs, file)
    assert known.by_name["team-0", "c0"].filesystem == "s3://dr-bucket"
    assert known.near("not a uri") == []
