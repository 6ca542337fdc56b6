"""The `hivecat` entry point: subcommands listed, `run` is kopf's own `run`, bad input is an error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hivecat import cli


def test_help_lists_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "run" in out and "demo" in out


def test_run_help_is_kopf_run_with_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage: hivecat run" in out
    for flag in ("--standalone", "--all-namespaces", "--namespace", "--liveness", "--peering", "--verbose"):
        assert flag in out


def test_run_passes_flags_through_and_loads_our_handlers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import kopf.cli

    seen: dict[str, object] = {}
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))  # only its existence is checked first

    def fake_run(**kwargs: object) -> None:  # stands in for kopf's operator loop
        seen.update(kwargs)

    monkeypatch.setattr(kopf.cli.run, "callback", fake_run)
    assert cli.main(["run", "--standalone", "-n", "team-a", "-n", "team-b"]) == 0
    assert seen["modules"] == (cli.HANDLERS_MODULE,)
    assert seen["standalone"] is True
    assert seen["namespaces"] == ("team-a", "team-b")


def test_unknown_kopf_flag_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    assert cli.main(["run", "--no-such-flag"]) == 2


@pytest.mark.parametrize("files,kubeconfig,expected", [
    ([], None, False),
    (["home/.kube/config"], None, True),
    ([], "missing", False),
    (["a"], "missing:a", True),
])
def test_cluster_configured_looks_for_a_kubeconfig_file(tmp_path: Path, files: list[str], kubeconfig: str | None,
                                                        expected: bool) -> None:
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    environ = {} if kubeconfig is None else {
        "KUBECONFIG": ":".join(str(tmp_path / part) for part in kubeconfig.split(":"))}
    assert cli.cluster_configured(environ, home=tmp_path / "home") is expected


def test_unknown_subcommand_exits_2_with_message() -> None:
    result = subprocess.run([sys.executable, "-m", "hivecat", "frobnicate"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "invalid choice: 'frobnicate'" in result.stderr


def test_console_script_help() -> None:
    result = subprocess.run([sys.executable, "-m", "hivecat", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "demo" in result.stdout
    assert all(name in result.stdout for name in cli.COMMANDS)


@pytest.mark.parametrize(("command", "loaded", "not_loaded"), [
    ("distcp", "hivecat.commands.distcp", "sqlalchemy"),  # a copy Job's process: no relocate, no SQL
    ("route", "hivecat.commands.route", "hivecat.commands.distcp"),
])
def test_a_command_line_loads_only_its_own_command(command: str, loaded: str, not_loaded: str) -> None:
    probe = ("import sys\nfrom hivecat import cli\ntry:\n    cli.main([%r, '--help'])\nexcept SystemExit:\n    pass\n"
             "print(%r in sys.modules, %r in sys.modules)" % (command, loaded, not_loaded))
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "True False"


def test_handlers_module_imports_and_registers_startup() -> None:
    import kopf

    import hivecat.handlers  # noqa: F401

    registry = kopf.get_default_registry()
    assert any(h.fn.__module__ == "hivecat.handlers" for h in registry._activities.get_all_handlers())
