"""`hivecat relocate` input handling: clear errors, passwords never from argv, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivecat import cli
from hivecat.catalog.model import KindCounts, ObjectKind, RelocationReport
from hivecat.commands.relocate import ApiTarget, UsageError, api_target, catalog_url, format_report, journal_url


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
])
def test_bad_catalog_urls(url: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        catalog_url(url, None)


@pytest.mark.parametrize("url,target", [
    ("glue://eu-west-1", ApiTarget("glue", "eu-west-1")),
    ("glue://us-gov-west-1/123456789012", ApiTarget("glue", "us-gov-west-1", catalog_id="123456789012")),
    ("thrift://metastore:9083", ApiTarget("thrift", "metastore", 9083)),
    ("mysql://hive@db/hms", None),
])
def test_api_catalog_urls(url: str, target: ApiTarget | None) -> None:
    assert api_target(url) == target


@pytest.mark.parametrize("url,message", [
    ("glue://EU_WEST", "expected glue://REGION"),
    ("glue://eu-west-1:443", "expected glue://REGION"),
    ("glue://key:secret@eu-west-1", "no user, password"),
    ("thrift://metastore", "expected thrift://HOST:PORT"),
    ("thrift://metastore:port", "port must be a number"),
    ("thrift://metastore:9083/db", "expected thrift://HOST:PORT"),
])
def test_bad_api_catalog_urls_exit_2(url: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["relocate", "--catalog", url, "--from", "s3://a/x", "--to", "s3://b/x"]) == 2
    err = capsys.readouterr().err
    assert message in err and "secret" not in err


@pytest.mark.parametrize("extra,message", [
    (["--segments", "11"], "--segments must be 1..10"),
    (["--segments", "0"], "--segments must be 1..10"),
    (["--chunk-size", "0"], "--chunk-size must be at least 1"),
    (["--journal-url", "mysql://u:hunter2@db/journal"], "HIVECAT_JOURNAL_PASSWORD"),
    (["--journal-url", "::"], "is not a database URL"),
])
def test_bad_api_options_exit_2(extra: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["relocate", "--catalog", "glue://eu-west-1", "--from", "s3://a/x", "--to", "s3://b/x", *extra]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "hunter2" not in err


@pytest.mark.parametrize("option", [["--segments", "2"], ["--endpoint-url", "http://x"], ["--skip-functions"]])
def test_glue_only_options_are_refused_for_thrift(option: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["relocate", "--catalog", "thrift://metastore:9083", "--from", "s3://a/x", "--to", "s3://b/x", *option]
    assert cli.main(argv) == 2
    assert "glue:// catalogs only" in capsys.readouterr().err


def test_journal_password_comes_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVECAT_JOURNAL_PASSWORD", "from-env")
    assert journal_url("mysql://hc@db/journal") == "mysql+pymysql://hc:from-env@db/journal"
    assert journal_url(None) is None


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


def test_text_report_shows_failures_and_their_errors() -> None:
    report = RelocationReport("r2", "glue://eu-west-1", "s3://a", "s3://b", False,
                              counts={ObjectKind.PARTITION: KindCounts(rewritten=3, failed=2)},
                              errors=["partition ['x']: InternalServiceException: boom"])
    text = format_report(report)
    assert "2 value(s) could not be written" in text and "InternalServiceException: boom" in text
