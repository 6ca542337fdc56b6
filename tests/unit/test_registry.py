"""The cluster registry of a catalog: which ClusterStorages clusters.json holds, who wins a conflict, that a
refused ClusterStorage leaves its registered entry alone, that deleted ones go; the document itself (stable,
byte-identical when unchanged, garbled → empty) and its ConfigMap."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest

from hivecat.reasons import ALIAS_IS_FILESYSTEM, DUPLICATE_FILESYSTEM, FILESYSTEM_OVERLAP
from hivecat.replication.registry import (ClusterEntry, RegistryDecision, Rejection, cluster_entry, decide_registry,
                                        parse_registry_document, registry_document)
from hivecat.specs.clusterstorage import overlapping, parse_cluster_storage
from hivecat.workloads.registry import registry_config_map, registry_config_map_name

def entry(name: str, filesystem: str, aliases: tuple[str, ...] = (), previous: tuple[str, ...] = (),
          **compute: str) -> ClusterEntry:
    return ClusterEntry(name, filesystem, aliases, previous, {"type": "Local", **compute})


def registered(*entries: ClusterEntry) -> dict[str, ClusterEntry]:
    return {e.name: e for e in entries}


A = entry("a", "hdfs://nn-a:8020")
B = entry("b", "hdfs://nn-b:8020")
C = entry("c", "s3://bucket/c")


# --- ClusterEntry ------------------------------------------------------------------------------------------

def test_an_entry_as_json_and_back() -> None:
    e = entry("prod", "hdfs://nn:8020", ("hdfs://old:8020",), ("hdfs://older:8020",), image="tools:1")
    assert e.to_json() == {"filesystem": "hdfs://nn:8020", "aliases": ["hdfs://old:8020"],
                           "previousFilesystems": ["hdfs://older:8020"],
                           "compute": {"type": "Local", "image": "tools:1"}}
    assert ClusterEntry.from_json("prod", e.to_json()) == e


def test_an_entry_with_only_a_filesystem() -> None:
    assert ClusterEntry.from_json("x", {"filesystem": "file:///data"}) == ClusterEntry("x", "file:///data")


@pytest.mark.parametrize("data", [
    None, [], {}, {"filesystem": 1}, {"filesystem": "/bare"}, {"filesystem": "hdfs:///x"},
    {"filesystem": "hdfs://nn:8020", "aliases": "hdfs://old:8020"},
    {"filesystem": "hdfs://nn:8020", "aliases": [7]},
    {"filesystem": "hdfs://nn:8020", "previousFilesystems": ["nope"]},
    {"filesystem": "hdfs://nn:8020", "previousFilesystems": {}},
    {"filesystem": "hdfs://nn:8020", "compute": []},
    {"filesystem": "hdfs://nn:8020", "compute": {"type": 1}},
])
def test_entries_hivecat_could_not_have_written_are_refused(data: Any) -> None:
    with pytest.raises(ValueError):
        ClusterEntry.from_json("x", data)


def test_the_entry_of_a_parsed_storage() -> None:
    spec = parse_cluster_storage({"metadata": {"name": "prod", "namespace": "data"}, "spec": {
        "catalogRef": {"name": "analytics"}, "filesystem": "HDFS://NN:8020/", "aliases": ["hdfs://old:8020/"],
        "compute": {"type": "SparkApplication", "sparkApplication": {"image": "spark:3.5.1"}},
        "credentialsSecretRef": {"name": "not-in-the-registry"}}}, default_scan_interval=1800)
    assert cluster_entry(spec, ["hdfs://older:8020"]) == ClusterEntry(
        "prod", "hdfs://nn:8020", ("hdfs://old:8020",), ("hdfs://older:8020",),
        {"type": "SparkApplication", "image": "spark:3.5.1"})


# --- decide_registry: no conflicts --------------------------------------------------------------------------

def test_new_storages_without_conflicts_are_all_taken() -> None:
    b = entry("b", "hdfs://nn-b:8020", ("hdfs://old-b:8020",))
    assert decide_registry({}, [A, b, C]) == RegistryDecision({"a": A, "b": b, "c": C}, {})


def test_a_changed_storage_is_taken_as_it_is_now() -> None:
    moved = entry("a", "hdfs://nn-a2:8020", (), ("hdfs://nn-a:8020",))
    assert decide_registry(registered(A, B), [moved, B]) == RegistryDecision({"a": moved, "b": B}, {})


def test_deleted_storages_are_dropped() -> None:
    assert decide_registry(registered(A, B, C), [B]) == RegistryDecision({"b": B}, {})
    assert decide_registry(registered(A, B), []) == RegistryDecision({}, {})


def test_neighbours_are_not_overlaps() -> None:
    """Anchored: /w and /w2 are two places; nn and nn:8020 two authorities."""
    members = [entry("a", "hdfs://nn:8020/w"), entry("b", "hdfs://nn:8020/w2"), entry("c", "hdfs://nn"),
               entry("d", "s3://bucket/w", ("s3a://bucket/w",)), entry("e", "s3://bucket/w2", ("s3a://bucket/w2",))]
    decision = decide_registry({}, members)
    assert list(decision.entries) == ["a", "b", "c", "d", "e"] and decision.rejected == {}


def test_two_storages_may_share_an_alias() -> None:
    """Only filesystems are claimed; the registry takes both (drift repair goes to whichever runs first)."""
    a = entry("a", "hdfs://nn-a:8020", ("hdfs://old:8020",))
    b = entry("b", "hdfs://nn-b:8020", ("hdfs://old:8020",))
    assert decide_registry({}, [a, b]) == RegistryDecision({"a": a, "b": b}, {})


# --- decide_registry: each conflict rule --------------------------------------------------------------------

@pytest.mark.parametrize("second, reason, words", [
    (entry("b", "hdfs://nn-a:8020"), DUPLICATE_FILESYSTEM,
     "filesystem hdfs://nn-a:8020 is already registered by ClusterStorage a"),
    (entry("b", "HDFS://NN-A:8020/"), DUPLICATE_FILESYSTEM, "is already registered by ClusterStorage a"),
    (entry("b", "hdfs://nn-a:8020/warehouse"), FILESYSTEM_OVERLAP,
     "filesystem hdfs://nn-a:8020/warehouse and hdfs://nn-a:8020 of ClusterStorage a overlap"),
    (entry("b", "hdfs://nn-b:8020", ("hdfs://nn-a:8020",)), ALIAS_IS_FILESYSTEM,
     "alias hdfs://nn-a:8020 is, or overlaps, the filesystem hdfs://nn-a:8020 of ClusterStorage a"),
    (entry("b", "hdfs://nn-b:8020", ("hdfs://nn-a:8020/tmp",)), ALIAS_IS_FILESYSTEM,
     "alias hdfs://nn-a:8020/tmp is, or overlaps, the filesystem hdfs://nn-a:8020 of ClusterStorage a"),
    (entry("b", "hdfs://nn-b:8020", (), ("hdfs://nn-a:8020",)), ALIAS_IS_FILESYSTEM,
     "previous filesystem hdfs://nn-a:8020 is, or overlaps, the filesystem hdfs://nn-a:8020 of ClusterStorage a"),
])
def test_the_first_storage_wins_a_conflict(second: ClusterEntry, reason: str, words: str) -> None:
    decision = decide_registry({}, [A, second])
    assert decision.entries == {"a": A}
    [(name, rejection)] = decision.rejected.items()
    assert name == "b" and rejection.reason == reason and words in rejection.message
    assert "--" not in rejection.message


def test_a_filesystem_above_another_overlaps_it() -> None:
    inner = entry("a", "hdfs://nn:8020/warehouse")
    outer = entry("b", "hdfs://nn:8020")
    decision = decide_registry({}, [inner, outer])
    assert decision.entries == {"a": inner} and decision.rejected["b"].reason == FILESYSTEM_OVERLAP


def test_an_alias_above_another_filesystem_is_refused() -> None:
    inner = entry("a", "hdfs://nn:8020/warehouse")
    wide = entry("b", "hdfs://nn-b:8020", ("hdfs://nn:8020",))
    decision = decide_registry({}, [inner, wide])
    assert decision.rejected == {"b": Rejection(ALIAS_IS_FILESYSTEM, (
        "alias hdfs://nn:8020 is, or overlaps, the filesystem hdfs://nn:8020/warehouse of ClusterStorage a: "
        "drift repair would move that cluster's locations here; remove it"))}


@pytest.mark.parametrize("claim, what", [(("hdfs://nn-b:8020",), "alias"), ((), "previous filesystem")])
def test_a_filesystem_that_is_another_storages_drift_source_is_refused(claim: tuple[str, ...], what: str) -> None:
    """The other direction: the later storage's filesystem is the earlier one's alias or previous filesystem."""
    first = entry("a", "hdfs://nn-a:8020", claim, () if claim else ("hdfs://nn-b:8020",))
    decision = decide_registry({}, [first, B])
    assert decision.entries == {"a": first}
    assert decision.rejected["b"] == Rejection(ALIAS_IS_FILESYSTEM, (
        f"filesystem hdfs://nn-b:8020 is, or overlaps, {what} hdfs://nn-b:8020 of ClusterStorage a, whose drift "
        "repair would move locations away from it; use another filesystem or remove that alias first"))


# --- decide_registry: who wins, and the registry left unchanged ---------------------------------------------

def test_a_storage_registered_unchanged_wins_over_an_earlier_new_one() -> None:
    newcomer = entry("new", "hdfs://nn-a:8020")
    decision = decide_registry(registered(A), [newcomer, A])
    assert decision.entries == {"a": A}
    rejection = decision.rejected["new"]
    assert rejection.reason == DUPLICATE_FILESYSTEM and "ClusterStorage a" in rejection.message


def test_a_refused_change_keeps_the_registered_entry() -> None:
    """a moves onto b's filesystem: refused, and clusters.json still says what it said."""
    onto_b = entry("a", "hdfs://nn-b:8020", (), ("hdfs://nn-a:8020",))
    decision = decide_registry(registered(A, B), [onto_b, B])
    assert decision.entries == {"a": A, "b": B}
    assert decision.rejected["a"].reason == DUPLICATE_FILESYSTEM
    assert registry_document(decision.entries) == registry_document(registered(A, B))


def test_a_refused_new_storage_is_absent() -> None:
    decision = decide_registry(registered(A), [A, entry("b", "hdfs://nn-a:8020/x")])
    assert decision.entries == {"a": A} and set(decision.rejected) == {"b"}


def test_a_storage_refused_before_keeps_its_old_entry_on_the_next_pass() -> None:
    """The handler passes what the ConfigMap holds: the refused change is refused again, nothing moves."""
    onto_b = entry("a", "hdfs://nn-b:8020")
    first = decide_registry(registered(A, B), [onto_b, B])
    again = decide_registry(parse_registry_document(registry_document(first.entries)), [onto_b, B])
    assert again == first


def test_a_registered_storage_whose_compute_changed_keeps_its_filesystem() -> None:
    """Changed is not new: its registered filesystem stays claimed against a newcomer, even an earlier one."""
    retooled = entry("a", "hdfs://nn-a:8020", image="tools:2")
    newcomer = entry("new", "hdfs://nn-a:8020")
    decision = decide_registry(registered(A), [newcomer, retooled])
    assert decision.entries == {"a": retooled}
    assert decision.rejected["new"].reason == DUPLICATE_FILESYSTEM


def test_a_refused_change_still_claims_its_registered_filesystem() -> None:
    onto_b = entry("a", "hdfs://nn-b:8020")
    newcomer = entry("new", "hdfs://nn-a:8020")
    decision = decide_registry(registered(A, B), [newcomer, onto_b, B])
    assert decision.entries == {"a": A, "b": B}
    assert decision.rejected["a"].reason == DUPLICATE_FILESYSTEM
    assert decision.rejected["new"] == Rejection(DUPLICATE_FILESYSTEM, (
        "filesystem hdfs://nn-a:8020 is already registered by ClusterStorage a (as still registered): two "
        "clusters cannot be the same storage; use another filesystem, or add this URI as an alias of a"))


def test_a_filesystem_freed_by_a_move_can_be_taken_in_the_same_pass() -> None:
    """new (earlier) wants a's old filesystem, which a leaves in the same pass: both are taken."""
    newcomer = entry("new", "hdfs://nn-a:8020")
    moved = entry("a", "hdfs://nn-a2:8020")
    decision = decide_registry(registered(A), [newcomer, moved])
    assert decision == RegistryDecision({"new": newcomer, "a": moved}, {})


def test_between_two_changes_the_earlier_wins() -> None:
    a_to_x = entry("a", "hdfs://nn-x:8020")
    b_to_x = entry("b", "hdfs://nn-x:8020")
    decision = decide_registry(registered(A, B), [a_to_x, b_to_x])
    assert decision.entries == {"a": a_to_x, "b": B} and set(decision.rejected) == {"b"}
    decision = decide_registry(registered(A, B), [b_to_x, a_to_x])
    assert decision.entries == {"b": b_to_x, "a": A} and set(decision.rejected) == {"a"}


def test_a_freed_filesystem_goes_to_the_earlier_of_two_claimants() -> None:
    first, second = entry("first", "hdfs://nn-a:8020"), entry("second", "hdfs://nn-a:8020")
    moved = entry("a", "hdfs://nn-a2:8020")
    decision = decide_registry(registered(A), [first, second, moved])
    assert decision.entries == {"first": first, "a": moved} and set(decision.rejected) == {"second"}
    assert "ClusterStorage first" in decision.rejected["second"].message


def test_two_storages_swapping_filesystems_at_once_are_both_refused_and_unchanged() -> None:
    """Each still claims what the other wants; done one after the other (through a third name) it works."""
    decision = decide_registry(registered(A, B), [entry("a", B.filesystem), entry("b", A.filesystem)])
    assert decision.entries == {"a": A, "b": B} and set(decision.rejected) == {"a", "b"}


def test_a_hand_edited_registry_that_conflicts_with_itself() -> None:
    twin = entry("twin", A.filesystem)
    decision = decide_registry(registered(A, twin), [A, twin])
    assert decision.entries == {"a": A} and set(decision.rejected) == {"twin"}
    assert decision.rejected["twin"].reason == DUPLICATE_FILESYSTEM


def test_a_name_listed_twice_counts_once() -> None:
    decision = decide_registry({}, [A, entry("a", "hdfs://elsewhere:8020")])
    assert decision == RegistryDecision({"a": A}, {})


POOL = ["hdfs://nn:8020", "hdfs://nn:8020/w", "hdfs://nn:8020/w/x", "hdfs://old:8020", "hdfs://old:8020/w",
        "hdfs://nn2:8020"]


def _random_entry(rng: random.Random, name: str) -> ClusterEntry:
    filesystem = rng.choice(POOL)
    aliases = tuple(sorted({rng.choice(POOL) for _ in range(rng.randint(0, 2))} - {filesystem}))
    return entry(name, filesystem, aliases, image=rng.choice(["1", "2"]))


def _conflict_free(entries: dict[str, ClusterEntry]) -> bool:
    for x, y in itertools.permutations(entries.values(), 2):
        if overlapping(x.filesystem, y.filesystem):
            return False
        if any(overlapping(a, y.filesystem) for a in (*x.aliases, *x.previous_filesystems)):
            return False
    return True


def test_whatever_happens_the_registry_never_conflicts_and_refusals_change_nothing() -> None:
    rng = random.Random(14)
    for _ in range(400):
        names = [f"s{i}" for i in range(rng.randint(1, 4))]
        before: dict[str, ClusterEntry] = {}  # a registry hivecat wrote: conflict-free
        for n in names:
            candidate = _random_entry(rng, n)
            if rng.random() < 0.6 and _conflict_free({**before, n: candidate}):
                before[n] = candidate
        members = [before[n] if n in before and rng.random() < 0.5 else _random_entry(rng, n)
                   for n in names if rng.random() < 0.9]
        decision = decide_registry(before, members)
        assert _conflict_free(decision.entries)
        assert set(decision.entries) | set(decision.rejected) == {m.name for m in members}
        for m in members:
            if m.name in decision.rejected:
                assert decision.entries.get(m.name) == before.get(m.name)
            else:
                assert decision.entries[m.name] == m


# --- clusters.json ------------------------------------------------------------------------------------------

def test_the_document_verbatim() -> None:
    prod = entry("prod", "hdfs://nn:8020", ("hdfs://old:8020",), ("hdfs://older:8020",), image="tools:1")
    assert registry_document({"prod": prod, "dev": ClusterEntry("dev", "file:///data")}) == """{
  "dev": {
    "aliases": [],
    "compute": {},
    "filesystem": "file:///data",
    "previousFilesystems": []
  },
  "prod": {
    "aliases": [
      "hdfs://old:8020"
    ],
    "compute": {
      "image": "tools:1",
      "type": "Local"
    },
    "filesystem": "hdfs://nn:8020",
    "previousFilesystems": [
      "hdfs://older:8020"
    ]
  }
}
"""


def test_an_unchanged_registry_is_byte_identical() -> None:
    forward = registry_document(registered(A, B, C))
    backward = registry_document(dict(reversed(registered(A, B, C).items())))
    assert forward == backward
    redecided = decide_registry(parse_registry_document(forward), [C, A, B])
    assert registry_document(redecided.entries).encode() == forward.encode()


def test_alias_order_is_kept() -> None:
    e = entry("a", "hdfs://nn:8020", ("hdfs://z:8020", "hdfs://a:8020"))
    assert json.loads(registry_document({"a": e}))["a"]["aliases"] == ["hdfs://z:8020", "hdfs://a:8020"]
    assert parse_registry_document(registry_document({"a": e})) == {"a": e}


def test_the_empty_registry() -> None:
    assert registry_document({}) == "{}\n"
    assert parse_registry_document("{}\n") == {}


@pytest.mark.parametrize("text", [None, "", "{", "[]", "null", '"clusters"', "42", "{'a': 1}"])
def test_a_missing_or_garbled_document_is_empty(text: str | None) -> None:
    assert parse_registry_document(text) == {}


def test_entries_hivecat_could_not_have_written_are_left_out() -> None:
    text = json.dumps({"a": A.to_json(), "junk": {"filesystem": "/bare"}, "": B.to_json(), "c": "x"})
    assert parse_registry_document(text) == {"a": A}


# --- the ConfigMap ------------------------------------------------------------------------------------------

def test_the_registry_config_map() -> None:
    document = registry_document(registered(A))
    assert registry_config_map("analytics", "data", document) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "analytics-clusters", "namespace": "data", "labels": {
            "app.kubernetes.io/managed-by": "hivecat", "app.kubernetes.io/part-of": "analytics",
            "app.kubernetes.io/component": "registry", "hivecatalog.io/hivecatalog": "analytics"}},
        "data": {"clusters.json": document},
    }


def test_a_long_catalog_name_still_makes_a_valid_config_map_name() -> None:
    name = registry_config_map_name("a" * 70)
    assert len(name) <= 63 and name.endswith("-clusters")
    assert registry_config_map("a" * 70, "data", "{}\n")["metadata"]["name"] == name


def test_a_decision_compares_only_entries_that_share_a_storage(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 ClusterStorages with 4 aliases each, one of them a duplicate: every pair was compared before (about
    n²/2 = 500,000 comparisons); now only entries on the same storage are, and the verdict is the same."""
    from hivecat.replication import registry
    calls = [0]
    real = registry._conflict

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(registry, "_conflict", counted)
    members = [entry(f"c{i}", f"hdfs://nn{i}:8020", tuple(f"hdfs://old{i}-{k}:8020" for k in range(4)))
               for i in range(1000)]
    members.append(entry("dup", "hdfs://nn7:8020/"))
    decided = decide_registry({}, members)
    assert len(decided.entries) == 1000 and decided.rejected["dup"].reason == DUPLICATE_FILESYSTEM
    assert "ClusterStorage c7" in decided.rejected["dup"].message
    assert calls[0] < 5000, calls[0]
