"""The plan, run summary and unit manifest: versioned, shipped as package data, validated both ways."""

from __future__ import annotations

import json

import pytest

from hivecat.copy import documents
from hivecat.copy.documents import DocumentError
from hivecat.copy.manifest import FileEntry, UnitManifest, manifest_from_document
from hivecat.copy.owner import Owner
from hivecat.copy.plan import plan_from_document
from hivecat.copy.summary import FAILED, CopySummary, UnitResult

PLAN = {"version": 1, "units": [{"id": "db.t/dt=1", "source": "file:///data/t/dt=1", "target": "file:///copy/t/dt=1",
                                 "expected_files": ["part-0.parquet"]}]}


@pytest.mark.parametrize("kind", [documents.PLAN, documents.RUN_SUMMARY, documents.UNIT_MANIFEST])
def test_each_schema_ships_with_the_package_and_pins_version_1(kind: str) -> None:
    schema = documents.schema(kind)
    assert schema["properties"]["version"] == {"const": 1}
    assert "version" in schema["required"]


def test_plan_round_trips_through_its_schema() -> None:
    plan = plan_from_document(PLAN)
    assert plan.units[0].expected_files == ("part-0.parquet",)
    assert plan_from_document(plan.to_dict()) == plan


@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_wrong_version_is_named_as_such(version) -> None:
    with pytest.raises(DocumentError, match=f"unsupported version {version!r}"):
        plan_from_document({**PLAN, "version": version})


@pytest.mark.parametrize(("document", "message"), [
    ({"version": 1, "units": []}, "should be non-empty"),
    ({"version": 1, "units": [{"id": "x", "source": "file:///a"}]}, "'target' is a required property"),
    ({"version": 1, "units": [{"id": "x", "source": "file:///a", "target": "file:///b", "extra": 1}]},
     "Additional properties"),
    ({"version": 1, "units": [{"id": "", "source": "file:///a", "target": "file:///b"}]}, "units/0/id"),
    ([1, 2], "expected a JSON object"),
])
def test_malformed_plans_are_refused_with_the_place(document, message: str) -> None:
    with pytest.raises(DocumentError, match=message):
        plan_from_document(document)


def test_not_json_is_refused() -> None:
    with pytest.raises(DocumentError, match="not JSON"):
        documents.parse(documents.PLAN, b"{units: ", "plan.json")


def test_manifest_round_trips_and_rejects_a_bad_checksum() -> None:
    entry = FileEntry("a/b.parquet", 3, 123, "sha256:" + "0" * 64, None, "2026-01-01T00:00:00+00:00", "r1")
    manifest = UnitManifest("db.t", "file:///data/t", "r1", "2026-01-01T00:00:00+00:00", (entry,))
    document = json.loads(json.dumps(manifest.to_dict()))
    documents.validate(documents.UNIT_MANIFEST, document)
    assert manifest_from_document(document) == manifest
    document["files"][0]["checksum"] = "md5:abc"
    with pytest.raises(DocumentError, match="files/0/checksum"):
        documents.validate(documents.UNIT_MANIFEST, document)


def test_a_manifest_with_an_owner_round_trips_and_one_without_has_no_owner_key() -> None:
    entry = FileEntry("a.parquet", 3, 123, None, None, "2026-01-01T00:00:00+00:00", "r1")
    owner = Owner("team-a", "events", "6f1c0d2e-0000-4b7e-9d1e-000000000001", "main")
    for manifest in (UnitManifest("db.t", "file:///data/t", "r1", "2026-01-01T00:00:00+00:00", (entry,), owner),
                     UnitManifest("db.t", "file:///data/t", "r1", "2026-01-01T00:00:00+00:00", (entry,))):
        document = json.loads(json.dumps(manifest.to_dict()))
        documents.validate(documents.UNIT_MANIFEST, document)  # the fast path and jsonschema agree on it
        assert manifest_from_document(document) == manifest
        assert ("owner" in document) == (manifest.owner is not None)  # older hivecats read ownerless ones


def test_run_summary_validates_and_counts() -> None:
    summary = CopySummary("r1", "local", "size", False, False, "2026-01-01T00:00:00+00:00", 1.5,
                          [UnitResult("a", "s", "t", "done", None, 2, 10, 1, 0),
                           UnitResult("b", "s2", "t2", FAILED, "boom")])
    document = summary.to_dict()
    assert document["status"] == "failed"
    assert document["totals"] == {"units_done": 1, "units_skipped": 0, "units_failed": 1, "files_copied": 2,
                                  "bytes_copied": 10, "files_skipped": 1, "files_deleted": 0}
    summary.engine = "mapreduce"
    with pytest.raises(DocumentError, match="engine"):
        summary.to_dict()


@pytest.mark.parametrize("text", [b"[" * 100_000 + b"]" * 100_000,
                                  b'{"version":1,"files":' + b'[{"a":' * 50_000 + b"1}]" * 50_000 + b"}",
                                  '{"version":1,"files":' + "[" * 40 + "]" * 40 + "}"])
def test_nesting_deeper_than_the_bound_is_refused_without_recursion(text) -> None:
    with pytest.raises(DocumentError, match=f"unit manifest m.json: nested deeper than {documents.MAX_NESTING}"):
        documents.parse(documents.UNIT_MANIFEST, text, "m.json")


def test_nesting_up_to_the_bound_is_left_to_the_schema() -> None:
    def nested(depth: int) -> str:  # the top-level object is level 1
        return '{"version":1,"units":[],"extra":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"

    with pytest.raises(DocumentError, match="Additional properties"):
        documents.parse(documents.PLAN, nested(documents.MAX_NESTING))
    with pytest.raises(DocumentError, match="nested deeper than"):
        documents.parse(documents.PLAN, nested(documents.MAX_NESTING + 1))


def test_malformed_json_is_reported_as_not_json_not_as_nesting() -> None:
    with pytest.raises(DocumentError, match="not JSON"):
        documents.parse(documents.PLAN, b'{"version": 1, "units": [}')


@pytest.mark.parametrize("document", [{"version": 1, "units": "x" * 1_000_000},
                                      {"version": "x" * 1_000_000, "units": []},
                                      {"version": json.loads("[" * 900 + "]" * 900), "units": []}])
def test_a_huge_or_deep_invalid_value_does_not_make_a_huge_message(document) -> None:
    with pytest.raises(DocumentError) as refused:
        documents.validate(documents.PLAN, document)
    assert len(str(refused.value)) < 500


@pytest.mark.parametrize("count", [0, 1, 2, 2500])
def test_the_summary_written_in_pieces_is_the_summary_document(monkeypatch, count: int) -> None:
    import io

    from hivecat.copy import summary as summary_module

    monkeypatch.setattr(summary_module, "WRITE_UNITS", 1000)
    summary = CopySummary("r1", "local", "size", False, False, "2026-12-07T00:00:00+00:00", seconds=1.5)
    summary.units = [UnitResult(f"p={n}", f"file:///s/{n}", f"file:///t/{n}", status="done" if n % 3 else FAILED,
                                reason=None if n % 3 else 'a "quoted"\nreason', files_copied=n) for n in range(count)]
    written = io.StringIO()
    summary.write_json(written)
    assert json.loads(written.getvalue()) == summary.to_dict()
    assert sum(line.startswith('    {"id": ') for line in written.getvalue().splitlines()) == count  # a unit a line


def test_a_summary_unit_that_breaks_the_schema_is_refused_before_its_piece_is_written() -> None:
    import io

    summary = CopySummary("r1", "local", "size", False, False, "2026-12-07T00:00:00+00:00")
    summary.units = [UnitResult("a", "s", "t", status="done"),
                     UnitResult("b", "s", "t", status="done", files_copied=-1)]
    written = io.StringIO()
    with pytest.raises(DocumentError):
        summary.write_json(written)
    assert '"id": "a"' not in written.getvalue()
