"""A unit's own directory is never reached through a symbolic link: a source root that is a link (a pod's
`serviceaccount/..data`), or passes through one, fails its unit naming the link and nothing is read; a target
whose parent is a link gets nothing written through it; a root swapped for a link after the plan was made is
refused when it is read; the CLI refuses such a root with one line. Each both ways: one openat2(2) per path,
and the component-by-component walk used where the kernel has no openat2."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from support.copy_trees import read_tree, uri, write_tree

from hivecat.copy import Copier, CopyOptions, LocalEngine, plan_from_document, single_unit_plan

TOKEN = b"eyJhbGciOiJSUzI1NiJ9.the-operator's-service-account-token"
DATA = {"part-0.parquet": b"p0" * 500, "dt=1/part-1.parquet": b"p1" * 300}
HIVECAT = str(Path(sys.executable).parent / "hivecat")


@pytest.fixture(params=["openat2", "walk"], autouse=True)
def resolution(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every scenario both ways ("openat2" is the walk too where this kernel has none)."""
    if request.param == "walk":
        monkeypatch.setattr(importlib.import_module("hivecat.copy.local_paths"), "_openat2_works", False)
    return request.param


def secrets_dir(root: Path) -> Path:
    """As Kubernetes mounts a service account: `..data` a link to a timestamped directory with the token."""
    mount = root / "var/run/secrets/kubernetes.io/serviceaccount"
    write_tree(mount / "..2026_11_25_12_00_00.000000001", {"token": TOKEN, "inner/token": TOKEN})
    (mount / "..data").symlink_to("..2026_11_25_12_00_00.000000001")
    (mount / "token").symlink_to("..data/token")
    return mount


def holding_token(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and TOKEN in p.read_bytes())


def run(units: Sequence[tuple[str, Path, Path]], engine=None) -> dict[str, dict]:
    plan = plan_from_document({"version": 1, "units": [{"id": i, "source": uri(s), "target": uri(t)}
                                                       for i, s, t in units]})
    summary = Copier(plan, CopyOptions(), engine=engine or LocalEngine(2)).run().to_dict()
    return {u["id"]: u for u in summary["units"]}


def link_reason(root: Path, link: Path) -> str:
    return f"{uri(root)}: the unit's directory passes through a symbolic link at {link}; links are never followed"


def test_a_source_root_that_is_or_passes_through_a_link_fails_its_unit_and_nothing_is_copied(tmp_path: Path) -> None:
    mount = secrets_dir(tmp_path)
    write_tree(tmp_path / "data" / "t", DATA)
    out = tmp_path / "out"
    units = run([("leak", mount / "..data", out / "leak"), ("leak-inner", mount / "..data" / "inner", out / "inner"),
                 ("table", tmp_path / "data" / "t", out / "table")])
    assert units["leak"]["status"] == "failed"
    assert units["leak"]["reason"] == link_reason(mount / "..data", mount / "..data")
    assert units["leak-inner"]["status"] == "failed"
    assert units["leak-inner"]["reason"] == link_reason(mount / "..data" / "inner", mount / "..data")
    assert units["table"]["status"] == "done" and read_tree(out / "table") == DATA  # the other unit goes on
    assert sorted(p.name for p in out.iterdir()) == ["table"]  # no copy, no staging left
    assert holding_token(tmp_path) == [mount / "..2026_11_25_12_00_00.000000001" / "inner" / "token",
                                       mount / "..2026_11_25_12_00_00.000000001" / "token"]


def test_a_target_whose_parent_is_a_link_gets_nothing_written_through_it(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", DATA)
    elsewhere = write_tree(tmp_path / "another-teams-dir", {"theirs.csv": b"theirs"})
    (tmp_path / "warehouse").mkdir()
    (tmp_path / "warehouse" / "t").symlink_to(elsewhere)  # the table's directory on the secondary is a link
    before = read_tree(elsewhere, with_manifest=True)
    units = run([("into-link", source, tmp_path / "warehouse" / "t" / "dt=1"),
                 ("fine", source, tmp_path / "warehouse" / "u")])
    assert units["into-link"]["status"] == "failed"
    assert units["into-link"]["reason"] == link_reason(tmp_path / "warehouse" / "t" / "dt=1",
                                                       tmp_path / "warehouse" / "t")
    assert units["fine"]["status"] == "done" and read_tree(tmp_path / "warehouse" / "u") == DATA
    assert read_tree(elsewhere, with_manifest=True) == before
    assert sorted(p.name for p in elsewhere.iterdir()) == ["theirs.csv"]  # no copy, no staging, no lease


def test_a_target_that_is_a_link_is_neither_written_nor_replaced(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", DATA)
    elsewhere = write_tree(tmp_path / "elsewhere", {"theirs.csv": b"theirs"})
    (tmp_path / "dst").mkdir()
    (tmp_path / "dst" / "t").symlink_to(elsewhere)
    unit = run([("t", source, tmp_path / "dst" / "t")])["t"]
    assert unit["status"] == "failed" and unit["reason"] == link_reason(tmp_path / "dst" / "t", tmp_path / "dst" / "t")
    assert (tmp_path / "dst" / "t").is_symlink() and read_tree(elsewhere) == {"theirs.csv": b"theirs"}
    assert sorted(p.name for p in (tmp_path / "dst").iterdir()) == ["t"]


class SwapBeforeCopying(LocalEngine):
    """Runs the file tasks only after `swap`: the plan was made and the units decided on real directories."""

    def __init__(self, swap) -> None:
        super().__init__(2)
        self.swap = swap

    def execute(self, tasks, options, progress=None):
        self.swap()
        return super().execute(tasks, options, progress)


def test_a_source_root_swapped_for_a_link_after_the_plan_is_refused_when_read(tmp_path: Path) -> None:
    mount = secrets_dir(tmp_path)
    secrets = mount / "..2026_11_25_12_00_00.000000001"
    source = write_tree(tmp_path / "data" / "t", {"token": b"x" * len(TOKEN), "inner/token": b"y" * len(TOKEN)})
    for name in ("token", "inner/token"):  # the same sizes and times as the secrets: the listing cannot tell
        stat = (secrets / name).stat()
        os.utime(source / name, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    def swap() -> None:
        os.rename(source, tmp_path / "data" / "t.real")
        source.symlink_to(secrets)

    for verify in ("size", "checksum"):
        target = tmp_path / f"out-{verify}"
        summary = Copier(single_unit_plan(uri(source), uri(target)), CopyOptions(verify=verify),
                         engine=SwapBeforeCopying(swap)).run().to_dict()
        unit = summary["units"][0]
        assert unit["status"] == "failed", unit
        assert f"passes through a symbolic link at {source}; links are never followed" in unit["reason"], unit
        assert not target.exists()
        assert holding_token(tmp_path) == [secrets / "inner" / "token", secrets / "token"]
        source.unlink()
        os.rename(tmp_path / "data" / "t.real", source)


def test_a_target_parent_swapped_for_a_link_after_the_plan_gets_nothing(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", DATA)
    elsewhere = write_tree(tmp_path / "elsewhere", {"theirs.csv": b"theirs"})
    (tmp_path / "dst").mkdir()

    def swap() -> None:
        os.rename(tmp_path / "dst", tmp_path / "dst.real")
        (tmp_path / "dst").symlink_to(elsewhere)

    summary = Copier(single_unit_plan(uri(source), uri(tmp_path / "dst" / "t")), CopyOptions(),
                     engine=SwapBeforeCopying(swap)).run().to_dict()
    assert summary["units"][0]["status"] == "failed"
    assert "passes through a symbolic link at" in summary["units"][0]["reason"]
    assert sorted(p.name for p in elsewhere.iterdir()) == ["theirs.csv"]


@pytest.mark.parametrize("side", ["--from", "--to"])
def test_the_cli_refuses_a_root_through_a_link_with_one_line(tmp_path: Path, side: str) -> None:
    mount = secrets_dir(tmp_path)
    source = write_tree(tmp_path / "src", DATA)
    (tmp_path / "linked").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    if side == "--from":
        args, root, link = ["--from", uri(mount / "..data"), "--to", uri(tmp_path / "out")], mount / "..data", None
    else:
        args, root, link = ["--from", uri(source), "--to", uri(tmp_path / "linked" / "t")], tmp_path / "linked" / "t", \
            tmp_path / "linked"
    before = read_tree(tmp_path, with_manifest=True)
    result = subprocess.run([HIVECAT, "distcp", *args, "--engine", "local"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2, result
    assert result.stderr == f"hivecat distcp: {side} {link_reason(root, link or root)}\n"  # one line, no traceback
    assert result.stdout == ""
    assert read_tree(tmp_path, with_manifest=True) == before
    assert not (tmp_path / "out").exists() and list((tmp_path / "elsewhere").iterdir()) == []
