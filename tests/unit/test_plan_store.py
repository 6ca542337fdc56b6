"""Plans kept on a filesystem (copy/plan_store.py) and `hivecat distcp --plan URI --plan-digest`: a plan over a
ConfigMap's 1 MiB written whole and read back by its digest; a changed plan, an oversized file or bad JSON
refused with exit 2 and nothing written."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.copy_trees import read_tree, uri, write_tree

from hivecat import cli
from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import CopyPlan, Unit, single_unit_plan
from hivecat.copy.plan_store import (MAX_PLAN_BYTES, encode_plan, plan_location, read_plan, write_plan)
from hivecat.copy.storage import Storage, parse_uri

HIVECAT = Path(sys.executable).parent / "hivecat"  # the console script, run as a Job's container runs it


def many_units(count: int) -> CopyPlan:
    """`count` partitions of one table from the primary cluster (HDFS) to a secondary (S3), as the planner makes
    them. Nothing is read or written at these locations: only the plan is."""
    table = "warehouse/sales.db/orders"
    return CopyPlan(tuple(
        Unit(f"sales.orders/dt=2024-01-01/hour={i:05d}",
             parse_uri(f"hdfs://nn:8020/{table}/dt=2024-01-01/hour={i:05d}"),
             parse_uri(f"s3://dr/{table}/dt=2024-01-01/hour={i:05d}"))
        for i in range(count)))


def hivecat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HIVECAT), *args], capture_output=True, text=True, timeout=120)


def test_plan_location_is_under_the_secondarys_filesystem() -> None:
    assert plan_location("s3://dr/warehouse", "data", "orders", "20250101T000000Z-abc123") == (
        "s3://dr/warehouse/.hivecat/plans/data/orders/20250101T000000Z-abc123.json")
    assert plan_location("file:///", "data", "orders", "r1") == "file:///.hivecat/plans/data/orders/r1.json"
    for bad in ("", "..", "a/b", "../x"):
        with pytest.raises(ValueError):
            plan_location("hdfs://nn:8020", "data", bad, "r1")


def test_a_plan_over_a_mebibyte_is_written_whole_and_read_back_by_its_digest(tmp_path: Path) -> None:
    plan = many_units(20_000)
    location = plan_location(uri(tmp_path / "secondary"), "data", "orders", "run-1")
    digest = write_plan(Storage(), location, plan)
    written = Path(location.removeprefix("file://")).read_bytes()
    assert len(written) > 1024 * 1024  # more than a ConfigMap holds
    assert digest == "sha256:" + hashlib.sha256(written).hexdigest() and written == encode_plan(plan)
    assert read_plan(Storage(), location, digest) == plan
    assert [p.name for p in Path(location.removeprefix("file://")).parent.iterdir()] == ["run-1.json"]  # no temp


def test_rewriting_replaces_the_plan_and_the_old_digest_no_longer_reads(tmp_path: Path) -> None:
    location = uri(tmp_path / "plans" / "r.json")
    first = write_plan(Storage(), location, many_units(2))
    second = write_plan(Storage(), location, many_units(3))
    assert first != second and len(read_plan(Storage(), location, second).units) == 3
    assert read_plan(Storage(), location) == many_units(3)  # no digest: whatever is there
    with pytest.raises(CopyInputError, match="not the plan this run was given"):
        read_plan(Storage(), location, first)


def test_a_plan_inside_a_unit_is_refused_before_writing(tmp_path: Path) -> None:
    plan = single_unit_plan(uri(tmp_path / "src"), uri(tmp_path / "dst"))
    for inside in (tmp_path / "dst" / ".hivecat" / "p.json", tmp_path / "src" / "p.json"):
        with pytest.raises(CopyInputError, match="is inside the"):
            write_plan(Storage(), uri(inside), plan)
    assert not (tmp_path / "dst").exists()


def test_distcp_runs_a_plan_given_as_a_uri_with_its_digest(tmp_path: Path) -> None:
    write_tree(tmp_path / "src", {"part-0": b"x" * 10})
    location = uri(tmp_path / "fs" / ".hivecat" / "plans" / "data" / "orders" / "r.json")
    digest = write_plan(Storage(), location, single_unit_plan(uri(tmp_path / "src"), uri(tmp_path / "dst")))
    done = hivecat("distcp", "--plan", location, "--plan-digest", digest, "--engine", "local", "--output", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["totals"]["files_copied"] == 1
    assert read_tree(tmp_path / "dst") == {"part-0": b"x" * 10}


def test_distcp_refuses_a_plan_whose_digest_differs_with_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    write_tree(tmp_path / "src", {"part-0": b"x"})
    location = uri(tmp_path / "fs" / "r.json")
    digest = write_plan(Storage(), location, single_unit_plan(uri(tmp_path / "src"), uri(tmp_path / "dst")))
    other = "sha256:" + ("0" if digest[-1] != "0" else "1") * 64
    done = hivecat("distcp", "--plan", location, "--plan-digest", other, "--engine", "local")
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("hivecat distcp: plan ") and digest in line and other in line
    assert not (tmp_path / "dst").exists()


@pytest.mark.parametrize("args, message", [
    (["--plan-digest", "sha256:abc"], "is not sha256:<64 lower-case hex digits>"),
    (["--plan-digest", "SHA256:" + "a" * 64], "is not sha256:"),
])
def test_a_malformed_digest_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                         message: str) -> None:
    location = uri(tmp_path / "r.json")
    write_plan(Storage(), location, single_unit_plan(uri(tmp_path / "src"), uri(tmp_path / "dst")))
    assert cli.main(["distcp", "--plan", location, *args]) == 2
    assert message in capsys.readouterr().err


def test_a_digest_without_a_plan_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["distcp", "--from", uri(tmp_path / "a"), "--to", uri(tmp_path / "b"),
                     "--plan-digest", "sha256:" + "a" * 64]) == 2
    assert "--plan-digest goes with --plan" in capsys.readouterr().err


def test_bad_json_at_a_uri_is_the_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r.json").write_text("{not json")
    assert cli.main(["distcp", "--plan", uri(tmp_path / "r.json")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"hivecat distcp: plan {uri(tmp_path / 'r.json')}: not JSON")


def test_an_oversized_plan_is_refused_by_its_size_before_it_is_read(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.truncate(MAX_PLAN_BYTES + 1)  # sparse: no disk, and nothing to read if it were read
    for given in (uri(huge), str(huge)):
        assert cli.main(["distcp", "--plan", given]) == 2
        err = capsys.readouterr().err
        assert f"is {MAX_PLAN_BYTES + 1} bytes, over the {MAX_PLAN_BYTES}" in err and len(err.splitlines()) == 1


def test_missing_plans_and_directories_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["distcp", "--plan", uri(tmp_path / "nope.json")]) == 2
    assert f"cannot read plan {uri(tmp_path / 'nope.json')}: no such file" in capsys.readouterr().err
    assert cli.main(["distcp", "--plan", uri(tmp_path)]) == 2
    assert "not a file" in capsys.readouterr().err
    assert cli.main(["distcp", "--plan", "gs://bucket/p.json"]) == 2
    assert "unsupported scheme" in capsys.readouterr().err


def test_a_plan_that_grew_since_it_was_measured_is_read_up_to_the_bound_only(monkeypatch) -> None:
    """The read starts from the size measured and goes on in chunks, never past the bound + 1 (reading the bound
    at once reserved 512 MiB for every plan, whatever its size)."""
    import io

    from hivecat.copy import plan_store

    monkeypatch.setattr(plan_store, "MAX_PLAN_BYTES", 50)
    monkeypatch.setattr(plan_store, "_CHUNK", 7)
    assert plan_store._read_bounded(io.BytesIO(b"x" * 40), measured=10) == b"x" * 40  # grew from 10 to 40 bytes
    assert len(plan_store._read_bounded(io.BytesIO(b"x" * 400), measured=10)) == 51  # over the bound: refused after
    assert plan_store._read_bounded(io.BytesIO(b"x" * 10), measured=10) == b"x" * 10
