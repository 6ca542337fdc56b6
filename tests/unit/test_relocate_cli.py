"""`hivecat relocate` input handling: clear errors, passwords never from argv, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivecat import cli
from hivecat.catalog.model import KindCounts, ObjectKind, RelocationReport
from hivecat.commands.relocate import UsageError, catalog_url, format_report


def test_password_in_url_is_rejected() -> None:
    with pytest.raises(UsageError, match="HIVECAT_CATALOG_PASSWORD"):
        catalog_url("mysql://hive:topsecret@db:3306/hms", None)


def test_short_schemes_map_to_drivers_and_password_comes_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVECAT_CATALOG_PASSWORD", "from-env")
    url = catalog_url("mariadb://hive@db:3306/hms", None)
    assert (url.drivername, url.password) == ("mysql+pymysql", "from-env")
    assert catalog_url("postgresql://hive@db/hms", None).drivername == "postgresql+psycopg"


def test_password_file_wins_and_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("from-file\n")
    assert catalog_url("mysql://hive@db/hms", secret).password == "from-file"
    with pytest.raises(UsageError, match="cannot read --password-file"):
        catalog_url("mysql://hive@db/hms", tmp_path / "missing")


@pytest.mark.parametrize("url,message", [
    ("not a url", "is not a database URL"),
    ("sqlite:///x.db", "unsupported catalog database"),
    ("thrift://hms:9083", "not supported by relocate yet"),
])
def test_bad_catalog_urls(url: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        catalog_url(url, None)


@pytest.mark.parametrize("argv,message", [
    (["--catalog", "mysql://h/db"], "--from and --to are required"),
    (["--catalog", "mysql://h/db", "--from", "a", "--to", "b", "--table", "t"], "--table needs its database"),
    (["--catalog", "mysql://u:pw@h/db", "--from", "a", "--to", "b"], "not in --catalog"),
])
def test_usage_errors_exit_2_with_message(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["relocate", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "pw@" not in err


def test_text_report_lists_counts_sample_and_tables_to_refresh() -> None:
    report = RelocationReport("r1", "mysql://h:3306/hms", "hdfs://a", "hdfs://b", False,
                              counts={ObjectKind.PARTITION: KindCounts(rewritten=5, conflicted=1)},
                              sample=[("hdfs://a/t/p=1", "hdfs://b/t/p=1")], tables_touched=["db.t"], seconds=0.5)
    text = format_report(report)
    assert "partition" in text and "5" in text
    assert "hdfs://a/t/p=1 -> hdfs://b/t/p=1" in text
    assert "REFRESH TABLE" in text and "  db.t" in text
    assert "1 value(s) changed by someone else" in text
