"""OperatorConfig: what the operator reads from its environment, and the defaults when it is unset."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivecat.config import OperatorConfig, config


def test_everything_from_the_environment() -> None:
    cfg = OperatorConfig.from_environ({
        "XDG_STATE_HOME": "/var/lib/state", "HIVECAT_JOURNAL_URL": "postgresql+psycopg://db/journal",
        "POD_NAMESPACE": "hivecat-system", "HOME": "/home/op",
    })
    assert cfg == OperatorConfig(Path("/var/lib/state/hivecat"), "postgresql+psycopg://db/journal", "hivecat-system")


def test_defaults_follow_the_xdg_spec() -> None:
    cfg = OperatorConfig.from_environ({"HOME": "/home/op"})
    assert cfg == OperatorConfig(Path("/home/op/.local/state/hivecat"), journal_url=None, pod_namespace=None)


@pytest.mark.parametrize("xdg", ["", "relative/state"])
def test_empty_or_relative_state_home_falls_back_to_home(xdg: str) -> None:
    cfg = OperatorConfig.from_environ({"HOME": "/home/op", "XDG_STATE_HOME": xdg})
    assert cfg.state_dir == Path("/home/op/.local/state/hivecat")


def test_empty_values_count_as_unset() -> None:
    cfg = OperatorConfig.from_environ({"HOME": "/home/op", "HIVECAT_JOURNAL_URL": "", "POD_NAMESPACE": ""})
    assert (cfg.journal_url, cfg.pod_namespace) == (None, None)


def test_reading_the_environment_creates_nothing(tmp_path: Path) -> None:
    cfg = OperatorConfig.from_environ({"XDG_STATE_HOME": str(tmp_path / "state")})
    assert cfg.state_dir == tmp_path / "state" / "hivecat"
    assert not (tmp_path / "state").exists()


def test_config_is_read_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config.cache_clear()
    try:
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
        first = config()
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "elsewhere"))
        assert config() is first and first.state_dir == tmp_path / "hivecat"
    finally:
        config.cache_clear()  # later users read their own environment, not this test's


def test_allow_lists_are_comma_separated() -> None:
    from hivecat.config import OperatorConfig

    cfg = OperatorConfig.from_environ({"HOME": "/home/x", "HIVECAT_ALLOWED_IMAGES": "a/*, b:1,,",
                                       "HIVECAT_ALLOWED_SERVICE_ACCOUNTS": "spark"})
    assert cfg.allowed_images == ("a/*", "b:1") and cfg.allowed_service_accounts == ("spark",)
    assert OperatorConfig.from_environ({"HOME": "/home/x"}).allowed_images == ()


def test_metastore_image_from_the_environment_with_a_default() -> None:
    from hivecat.config import DEFAULT_METASTORE_IMAGE

    assert OperatorConfig.from_environ({"HOME": "/h"}).metastore_image == DEFAULT_METASTORE_IMAGE == "apache/hive:3.1.3"
    assert OperatorConfig.from_environ({"HOME": "/h", "HIVECAT_METASTORE_IMAGE": ""}).metastore_image == (
        "apache/hive:3.1.3")
    cfg = OperatorConfig.from_environ({"HOME": "/h", "HIVECAT_METASTORE_IMAGE": " registry.example.com/hive:4.0.1 "})
    assert cfg.metastore_image == "registry.example.com/hive:4.0.1"


def test_drift_and_journal_settings() -> None:
    cfg = OperatorConfig.from_environ({"HOME": "/home/op", "HIVECAT_DRIFT_SCAN_SECONDS": "600",
                                       "HIVECAT_JOURNAL_SCHEMA": "hms_journal"})
    assert (cfg.drift_scan_seconds, cfg.journal_schema) == (600.0, "hms_journal")
    unset = OperatorConfig.from_environ({"HOME": "/home/op", "HIVECAT_DRIFT_SCAN_SECONDS": "soon",
                                         "HIVECAT_JOURNAL_SCHEMA": " "})
    assert (unset.drift_scan_seconds, unset.journal_schema) == (1800.0, "hivecat")
