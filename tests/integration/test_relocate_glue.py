"""GlueCatalog relocation over HTTP against moto server, with more than 100 partitions.

moto ignores MaxResults, Segment and batch limits (tests/unit/test_glue_paging.py covers those against a
fake that enforces them) and has no user-defined-function API (GetUserDefinedFunctions answers 500), so
function resources are covered by the unit tests and skipped here (functions=False / --skip-functions).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hivecat import cli
from hivecat.catalog.glue import GlueCatalog
from hivecat.catalog.model import ObjectKind, RelocationRefused, RelocationRequest, Scope
from support.glue_lake import NEW, OLD, PARTITIONS, as_json, build_lake, dump, moved

@pytest.fixture
def lake(moto):
    glue = moto.client("glue")
    build_lake(glue)
    return glue


@pytest.fixture
def journal_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'journal.db'}"


def glue_catalog(moto, journal_url: str) -> GlueCatalog:
    return GlueCatalog(moto.region, endpoint_url=moto.endpoint, journal_url=journal_url, functions=False)


def test_relocate_database_moves_exactly_its_locations_and_undo_restores(lake, moto, journal_url) -> None:
    before = dump(lake)
    assert sum(1 for k in before if k.startswith("sales.events/")) == PARTITIONS
    catalog = glue_catalog(moto, journal_url)
    report = catalog.relocate(RelocationRequest(OLD, NEW, Scope("sales")))
    assert report.count(ObjectKind.PARTITION).rewritten == PARTITIONS
    assert report.count(ObjectKind.PARTITION_PARAM).rewritten == PARTITIONS
    assert report.count(ObjectKind.TABLE).rewritten == 2                 # events, dim
    assert report.count(ObjectKind.SERDE_PARAM).rewritten == 2
    assert report.count(ObjectKind.TABLE_PARAM).rewritten == 1           # path, not comment
    assert report.count(ObjectKind.TABLE_PARAM).skipped == 1
    assert report.count(ObjectKind.DATABASE).rewritten == 1
    assert report.conflicted == report.failed == 0
    assert report.tables_touched == ["sales.dim", "sales.events"]

    in_scope = {"sales", "sales.events", "sales.dim"} | {k for k in before if k.startswith("sales.events/")}
    assert as_json(dump(lake)) == moved(before, in_scope)  # everything in scope moved, nothing else changed

    undone = catalog.undo(report.run_id)
    assert undone.count(ObjectKind.PARTITION).rewritten == PARTITIONS and undone.conflicted == 0
    assert as_json(dump(lake)) == as_json(before)


def test_partition_filter_moves_only_matching_partitions(lake, moto, journal_url) -> None:
    before = dump(lake)
    report = glue_catalog(moto, journal_url).relocate(
        RelocationRequest(OLD, NEW, Scope("sales", "events", "dt >= '2026-05-01' AND dt < '2026-06-01'")))
    keys = {k for k in before if k.startswith("sales.events/['2026-05-")}
    assert len(keys) == 28 and report.count(ObjectKind.PARTITION).rewritten == 28
    assert as_json(dump(lake)) == moved(before, keys)


@pytest.mark.parametrize("request_,reason", [
    (RelocationRequest(OLD, NEW), "iceberg"),                                   # whole catalog holds other.ice
    (RelocationRequest(OLD, NEW, Scope("other", "acid")), "acid"),
    (RelocationRequest(OLD, "hdfs://nn:8020/warehouse"), "scheme-change"),
    (RelocationRequest(OLD, f"{OLD}/moved"), "overlap"),
    (RelocationRequest(OLD, "warehouse"), "invalid-uri"),
    (RelocationRequest(OLD, NEW, Scope("missing")), "not-found"),
    (RelocationRequest(OLD, NEW, Scope("sales", "missing")), "not-found"),
    (RelocationRequest(OLD, NEW, Scope("sales", "events", "nope = 1")), "invalid-filter"),
])
def test_every_refusal_changes_nothing(lake, moto, journal_url, request_, reason) -> None:
    before = dump(lake)
    with pytest.raises(RelocationRefused) as refused:
        glue_catalog(moto, journal_url).relocate(request_)
    assert reason in {r.reason for r in refused.value.refusals}
    assert dump(lake) == before


def test_skip_refused_moves_the_rest(lake, moto, journal_url) -> None:
    report = glue_catalog(moto, journal_url).relocate(RelocationRequest(OLD, NEW, Scope("other"), skip_refused=True))
    assert sorted(r.reason for r in report.refusals) == ["acid", "iceberg"]
    tables = {t["Name"]: t["StorageDescriptor"]["Location"] for t in lake.get_tables(DatabaseName="other")["TableList"]}
    assert tables == {"keep": f"{NEW}/other.db/keep", "ice": f"{OLD}/other.db/ice", "acid": f"{OLD}/other.db/acid"}


def test_dry_run_writes_nothing(lake, moto, tmp_path) -> None:
    before = dump(lake)
    journal = tmp_path / "journal.db"
    report = glue_catalog(moto, f"sqlite:///{journal}").relocate(
        RelocationRequest(OLD, NEW, Scope("sales"), dry_run=True))
    assert report.count(ObjectKind.PARTITION).rewritten == PARTITIONS and report.status == "dry-run"
    assert dump(lake) == before and not journal.exists()


def test_cli_relocate_history_and_undo(lake, moto, tmp_path, capsys) -> None:
    before = dump(lake)
    common = ["relocate", "--catalog", f"glue://{moto.region}", "--endpoint-url", moto.endpoint,
              "--journal-url", f"sqlite:///{tmp_path / 'j.db'}", "--skip-functions", "--output", "json"]
    assert cli.main([*common, "--from", OLD, "--to", NEW, "--database", "sales", "--chunk-size", "60"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["partition"]["rewritten"] == PARTITIONS
    assert cli.main([*common, "--history"]) == 0
    assert [r["status"] for r in json.loads(capsys.readouterr().out)] == ["done"]
    assert cli.main([*common, "--undo", report["run_id"]]) == 0
    assert dump(lake) == before
