"""The Local launcher: `hivecat distcp --plan` as a child process, its outcome read from the exit code and the
JSON summary; stopped with the operator, the child is terminated and the run reported cancelled."""

from __future__ import annotations

from pathlib import Path

from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.plan import CopyPlan, Unit
from hivecat.copy.storage import parse_uri
from hivecat.replication.launch import CANCELLED, FAILED, SUCCEEDED, LocalLauncher, distcp_args
from hivecat.specs.tablereplica import CopySettings


def plan(source: Path, target: Path) -> CopyPlan:
    return CopyPlan((Unit("db.t", parse_uri(f"file://{source}"), parse_uri(f"file://{target}")),))


def test_a_plan_is_copied_by_the_child_process(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.parquet").write_bytes(b"x" * 1000)
    result = LocalLauncher(tmp_path / "work").run(plan(source, tmp_path / "dst"), CopySettings())
    assert result.outcome == SUCCEEDED and result.files_copied == 1 and result.bytes_copied == 1000
    assert result.copy_run_id and (tmp_path / "dst" / MANIFEST_NAME).is_file()
    assert list((tmp_path / "work").iterdir()) == []  # the plan file went with the run


def test_a_failing_copy_says_why(tmp_path: Path) -> None:
    result = LocalLauncher(tmp_path / "work").run(plan(tmp_path / "missing", tmp_path / "dst"), CopySettings())
    assert result.outcome == FAILED and "exit code 2" in result.message and "does not exist" in result.message


def test_stopping_terminates_the_child(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a").write_bytes(b"x")
    result = LocalLauncher(tmp_path / "work").run(plan(source, tmp_path / "dst"), CopySettings(), lambda: True)
    assert result.outcome == CANCELLED


def test_every_launcher_passes_the_same_arguments() -> None:
    copy = CopySettings("checksum", 4, 100, "local")
    assert distcp_args("p.json", copy) == ["--plan", "p.json", "--verify", "checksum", "--engine", "local",
                                           "--delete", "--parallelism", "4", "--bandwidth", "100", "--output", "json"]
    assert distcp_args("s3://b/p", CopySettings(), digest="sha256:ab", engine="spark", delete=False) == [
        "--plan", "s3://b/p", "--plan-digest", "sha256:ab", "--verify", "size", "--engine", "spark",
        "--output", "json"]
