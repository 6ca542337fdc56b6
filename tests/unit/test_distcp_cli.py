"""`hivecat distcp`: the command line, its output, and bad input (exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.copy_trees import read_tree, write_tree

from hivecat import cli
from hivecat.copy.documents import RUN_SUMMARY, validate


def distcp(*args: str) -> int:
    return cli.main(["distcp", *args])


def test_copies_and_prints_a_valid_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_tree(tmp_path / "src", {"a": b"1", "d/b": b"22"})
    assert distcp("--from", str(tmp_path / "src"), "--to", f"file://{tmp_path}/dst", "--engine", "local",
                  "--output", "json", "--parallelism", "2") == 0
    summary = json.loads(capsys.readouterr().out)
    validate(RUN_SUMMARY, summary)
    assert summary["engine"] == "local" and summary["totals"]["bytes_copied"] == 3
    assert read_tree(tmp_path / "dst") == {"a": b"1", "d/b": b"22"}


def test_auto_picks_local_for_a_small_plan_and_text_output_names_units(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    write_tree(tmp_path / "src", {"a": b"1"})
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "units": [
        {"id": "db.t/dt=1", "source": str(tmp_path / "src"), "target": str(tmp_path / "dst" / "dt=1")}]}))
    assert distcp("--plan", str(plan), "--verify", "checksum") == 0
    out = capsys.readouterr().out
    assert "engine local, verify checksum" in out and "done    db.t/dt=1" in out
    assert distcp("--plan", str(plan)) == 0
    assert "skipped db.t/dt=1" in capsys.readouterr().out


def _plan(tmp_path: Path, document) -> str:
    path = tmp_path / "plan.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return str(path)


@pytest.mark.parametrize(("args", "message"), [
    (lambda t: ["--from", str(t / "missing"), "--to", str(t / "dst")], "does not exist"),
    (lambda t: ["--from", str(t / "src"), "--to", str(t / "src" / "copy")], "is inside source"),
    (lambda t: ["--from", str(t / "src" / "sub"), "--to", str(t / "src")], "is inside target"),
    (lambda t: ["--from", str(t / "src" / "a"), "--to", str(t / "dst")], "is not a directory"),
    (lambda t: ["--from", str(t / "src")], "--from needs --to"),
    (lambda t: ["--plan", _plan(t, "{not json")], "not JSON"),
    (lambda t: ["--plan", _plan(t, {"version": 2, "units": []})], "unsupported version 2"),
    (lambda t: ["--plan", _plan(t, {"version": 1, "units": [{"id": "x", "source": str(t / "src")}]})],
     "'target' is a required property"),
    (lambda t: ["--plan", str(t / "nope.json")], "cannot read plan"),
    (lambda t: ["--from", str(t / "src"), "--to", str(t / "dst"), "--parallelism", "0"], "at least 1"),
    (lambda t: ["--from", str(t / "src"), "--to", "gs://b/k"], "unsupported scheme"),
])
def test_bad_input_exits_2_with_a_message_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             args, message: str) -> None:
    write_tree(tmp_path / "src", {"a": b"1", "sub/b": b"2"})
    argv = args(tmp_path)
    before = read_tree(tmp_path, with_manifest=True)
    assert distcp(*argv) == 2
    assert message in capsys.readouterr().err
    assert read_tree(tmp_path, with_manifest=True) == before


def test_unreadable_credentials_exit_2_before_anything_is_written(tmp_path: Path, monkeypatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    write_tree(tmp_path / "src", {"a": b"1"})
    monkeypatch.setenv("HIVECAT_S3_CREDENTIALS_DIR", str(tmp_path / "no-secret-here"))
    assert distcp("--from", str(tmp_path / "src"), "--to", "s3://lake/t") == 2
    assert "S3 credentials" in capsys.readouterr().err


def test_failed_unit_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_tree(tmp_path / "src", {"a": b"1"})
    plan = _plan(tmp_path, {"version": 1, "units": [
        {"id": "u", "source": str(tmp_path / "src"), "target": str(tmp_path / "dst"), "expected_files": ["b"]}]})
    assert distcp("--plan", plan) == 1
    assert "failed  u" in capsys.readouterr().out


def test_help_lists_distcp_and_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["distcp", "--help"])
    out = capsys.readouterr().out
    for flag in ("--plan", "--from", "--to", "--engine", "--verify", "--parallelism", "--bandwidth", "--delete",
                 "--dry-run", "--output"):
        assert flag in out
