"""`hivecat distcp`: the command line, its output, and bad input (exit 2, nothing written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.copy_trees import read_tree, uri, write_tree

from hivecat import cli
from hivecat.copy.documents import RUN_SUMMARY, validate


def distcp(*args: str) -> int:
    return cli.main(["distcp", *args])


def test_copies_and_prints_a_valid_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_tree(tmp_path / "src", {"a": b"1", "d/b": b"22"})
    assert distcp("--from", uri(tmp_path / "src"), "--to", uri(tmp_path / "dst"), "--engine", "local",
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
        {"id": "db.t/dt=1", "source": uri(tmp_path / "src"), "target": uri(tmp_path / "dst" / "dt=1")}]}))
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
    (lambda t: ["--from", uri(t / "missing"), "--to", uri(t / "dst")], "does not exist"),
    (lambda t: ["--from", uri(t / "src"), "--to", uri(t / "src" / "copy")], "is inside source"),
    (lambda t: ["--from", uri(t / "src" / "sub"), "--to", uri(t / "src")], "is inside target"),
    (lambda t: ["--from", uri(t / "src"), "--to", uri(t / "src")], "source and target are the same location"),
    (lambda t: ["--from", uri(t / "src" / "a"), "--to", uri(t / "dst")], "is not a directory"),
    (lambda t: ["--from", uri(t / "src")], "--from needs --to"),
    (lambda t: ["--from", str(t / "src"), "--to", uri(t / "dst")], "--from '/"),
    (lambda t: ["--from", uri(t / "src"), "--to", "dst"], "--to 'dst' is a bare path"),
    (lambda t: ["--plan", _plan(t, "{not json")], "not JSON"),
    (lambda t: ["--plan", _plan(t, {"version": 2, "units": []})], "unsupported version 2"),
    (lambda t: ["--plan", _plan(t, {"version": 1, "units": [{"id": "x", "source": uri(t / "src")}]})],
     "'target' is a required property"),
    (lambda t: ["--plan", _plan(t, {"version": 1, "units": [
        {"id": "x", "source": uri(t / "src"), "target": str(t / "dst")}]})], "unit 'x': target '/"),
    (lambda t: ["--plan", str(t / "nope.json")], "cannot read plan"),
    (lambda t: ["--from", uri(t / "src"), "--to", uri(t / "dst"), "--parallelism", "0"], "at least 1"),
    (lambda t: ["--from", uri(t / "src"), "--to", "gs://b/k"], "unsupported scheme"),
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
    assert distcp("--from", uri(tmp_path / "src"), "--to", "s3://lake/t") == 2
    assert "S3 credentials" in capsys.readouterr().err


def test_failed_unit_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_tree(tmp_path / "src", {"a": b"1"})
    plan = _plan(tmp_path, {"version": 1, "units": [
        {"id": "u", "source": uri(tmp_path / "src"), "target": uri(tmp_path / "dst"), "expected_files": ["b"]}]})
    assert distcp("--plan", plan) == 1
    assert "failed  u" in capsys.readouterr().out


def test_help_lists_distcp_and_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["distcp", "--help"])
    out = capsys.readouterr().out
    for flag in ("--plan", "--from", "--to", "--engine", "--verify", "--parallelism", "--bandwidth", "--delete",
                 "--dry-run", "--output"):
        assert flag in out


# --- one rule for bare paths, through the installed entry point --------------------------------------------

HIVECAT = str(Path(sys.executable).parent / "hivecat")


@pytest.mark.parametrize(("args", "message"), [
    (lambda t: ["--from", str(t / "src"), "--to", uri(t / "dst")],
     lambda t: f"hivecat distcp: --from '{t}/src' is a bare path (no URI scheme); write it as a URI: file://{t}/src"),
    (lambda t: ["--from", uri(t / "src"), "--to", str(t / "dst")],
     lambda t: f"hivecat distcp: --to '{t}/dst' is a bare path (no URI scheme); write it as a URI: file://{t}/dst"),
    (lambda t: ["--from", uri(t / "dst"), "--to", uri(t / "dst") + "/"],
     lambda t: f"hivecat distcp: source and target are the same location: file://{os.path.realpath(t)}/dst"),
])
def test_bare_paths_and_a_same_location_exit_2_with_one_line(tmp_path: Path, args, message) -> None:
    write_tree(tmp_path / "src", {"a": b"1"})
    write_tree(tmp_path / "dst", {"old": b"0"})
    before = read_tree(tmp_path, with_manifest=True)
    result = subprocess.run([HIVECAT, "distcp", *args(tmp_path), "--engine", "local"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == message(tmp_path) + "\n"  # one line, no traceback
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert read_tree(tmp_path, with_manifest=True) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dst", "src"]  # no staging beside the target
