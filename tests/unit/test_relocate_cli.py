"""`hivecat relocate` input handling: clear errors, passwords never from argv, exit codes."""

from __future__ import annotations

import re

import pytest

from hivecat import cli
from hivecat.catalog.model import KindCounts, ObjectKind, RelocationReport
from hivecat.catalog.targets import GlueTarget, InvalidTarget, SqlTarget, ThriftTarget, target_from_url
from hivecat.catalog.connect import CatalogUnavailable
from hivecat.commands import relocate as relocate_command
from hivecat.commands.relocate import format_report, journal_url


@pytest.mark.parametrize("url,target", [
    ("mysql://hive@db:3306/hms", SqlTarget("mysql", "db", "hms", "hive", 3306)),
    ("mariadb://hive@db/hms", SqlTarget("mysql", "db", "hms", "hive")),
    ("postgresql://hive@db:5433/hms", SqlTarget("postgresql", "db", "hms", "hive", 5433)),
    ("postgres://hive@db/hms", SqlTarget("postgresql", "db", "hms", "hive")),
    ("glue://eu-west-1", GlueTarget("eu-west-1")),
    ("glue://us-gov-west-1/123456789012", GlueTarget("us-gov-west-1", "123456789012")),
    ("thrift://metastore:9083", ThriftTarget("metastore", 9083)),
    ("thrift://metastore", ThriftTarget("metastore", 9083)),
])
def test_catalog_urls_become_typed_targets(url: str, target: object) -> None:
    assert target_from_url(url) == target


def test_sql_target_url_maps_dialect_to_driver_and_names_without_password() -> None:
    target = target_from_url("mariadb://hive@db/hms")
    assert isinstance(target, SqlTarget)
    url = target.url("s3cret")
    assert (url.drivername, url.port, url.password) == ("mysql+pymysql", 3306, "s3cret")
    assert target.name == "mysql://db:3306/hms" and "s3cret" not in repr(target)
    assert target_from_url("postgresql://hive@db/hms").url(None).drivername == "postgresql+psycopg"


@pytest.mark.parametrize("url,message", [
    ("not a url", "is not a catalog URL"),
    ("sqlite:///x.db", "unsupported catalog 'sqlite'"),
    ("mysql://hive:topsecret@db/hms", "carries a password"),
    ("mysql://hive@db/hms?password=topsecret", "carries a password"),
    ("mysql://u@127.0.0.1:notaport/db", "port must be a number from 1 to 65535, not 'notaport'"),
    ("mysql://u@db:70000/db", "port must be a number"),
    ("mysql://u@db", "expected mysql://USER@HOST[:PORT]/DATABASE"),
    ("glue://EU_WEST", "is not an AWS region"),
    ("glue://eu-west-1:443", "expected glue://REGION"),
    ("glue://key:topsecret@eu-west-1", "credentials come from the usual AWS chain"),
    ("glue://eu-west-1/12", "is not a Glue catalog id"),
    ("thrift://metastore:port", "port must be a number"),
    ("thrift://metastore:9083/db", "expected thrift://HOST:PORT"),
    ("thrift://hive:topsecret@metastore:9083", "Thrift API takes no user or password"),
])
def test_bad_catalog_urls_are_invalid_targets(url: str, message: str) -> None:
    with pytest.raises(InvalidTarget, match=re.escape(message)) as raised:
        target_from_url(url)
    assert "topsecret" not in str(raised.value)


@pytest.mark.parametrize("extra,message", [
    (["--segments", "11"], "1 to 10 segments, not 11"),
    (["--segments", "0"], "1 to 10 segments, not 0"),
    (["--chunk-size", "0"], "--chunk-size must be at least 1"),
    (["--journal-url", "mysql://u:hunter2@db/journal"], "HIVECAT_JOURNAL_PASSWORD"),
    (["--journal-url", "mysql://u@db/journal?password=hunter2"], "HIVECAT_JOURNAL_PASSWORD"),
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


@pytest.mark.parametrize("catalog,connections,message", [
    ("thrift://metastore:9083", "0",
     "--connections: a Thrift relocation writes through 1 to 32 metastore connections, not 0"),
    ("thrift://metastore:9083", "33", "1 to 32 metastore connections, not 33"),
    ("glue://eu-west-1", "2", "--connections applies to thrift:// catalogs only"),
    ("mysql://hive@db/hms", "2", "--connections applies to thrift:// catalogs only"),
])
def test_bad_connections_exit_2_before_connecting(catalog: str, connections: str, message: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["relocate", "--catalog", catalog, "--from", "s3://a/x", "--to", "s3://b/x", "--connections", connections]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("extra,connections", [([], 4), (["--connections", "12"], 12)])
def test_connections_reach_the_thrift_target(extra: list[str], connections: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    opened = []

    def open_catalog(target, **kwargs):
        opened.append(target)
        raise CatalogUnavailable("MetastoreUnreachable", "not in a unit test")
    monkeypatch.setattr(relocate_command, "open_catalog", open_catalog)
    argv = ["relocate", "--catalog", "thrift://metastore:9083", "--from", "s3://a/x", "--to", "s3://b/x", *extra]
    assert cli.main(argv) == 2
    assert opened == [ThriftTarget("metastore", 9083, connections)]


def test_journal_password_comes_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVECAT_JOURNAL_PASSWORD", "from-env")
    assert journal_url("mysql://hc@db/journal") == "mysql+pymysql://hc:from-env@db/journal"
    assert journal_url(None) is None


@pytest.mark.parametrize("argv,message", [
    (["--catalog", "mysql://h/db"], "--from and --to are required"),
    (["--catalog", "mysql://h/db", "--from", "a", "--to", "b", "--table", "t"], "--table needs its database"),
    (["--catalog", "mysql://u:pw@h/db", "--from", "s3://a/x", "--to", "s3://b/x"], "carries a password"),
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
