"""A database host that asks for the password in clear text never gets it: hostile MySQL and PostgreSQL servers
on 127.0.0.1 (tests/support/hostile_sql.py) record every byte hivecat's clients send, through the real entry
points (open_catalog, probe_sql, read_schema_state), and the failure is the reason InsecureAuthentication
with a message that says what to do."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

import hivecat
from hivecat.catalog.connect import CatalogUnavailable, open_catalog
from hivecat.catalog.probes import probe_sql
from hivecat.catalog.schema_version import SchemaStateUnavailable, read_schema_state
from hivecat.catalog.targets import SqlTarget
from support.hostile_sql import (DIALOG_PASSWORD_PROMPT, MORE_DATA, auth_switch, hostile_server, mysql_session,
                                 postgres_session)

PASSWORD = "Hostile-Test-Pw-7c1e"
REASON = "InsecureAuthentication"


def open_it(target: SqlTarget) -> tuple[str, str]:
    with pytest.raises(CatalogUnavailable) as caught:
        open_catalog(target, password=PASSWORD)
    return caught.value.reason, caught.value.message


def probe_it(target: SqlTarget) -> tuple[str, str]:
    result = probe_sql(target, PASSWORD, timeout=5)
    assert not result.ok
    return result.reason, result.message


def read_it(target: SqlTarget) -> tuple[str, str]:
    with pytest.raises(SchemaStateUnavailable) as caught:
        read_schema_state(target, PASSWORD)
    return caught.value.reason, caught.value.message


ENTRY_POINTS = {"open_catalog": open_it, "probe_sql": probe_it, "read_schema_state": read_it}


def assert_refused(session, dialect: str, entry: Callable[[SqlTarget], tuple[str, str]]) -> str:
    with hostile_server(session) as (port, recorded):
        reason, message = entry(SqlTarget(dialect, "127.0.0.1", "hms", "hive", port))
    assert recorded.connections >= 1  # the client did reach the server and heard its request
    assert PASSWORD.encode() not in recorded.data
    assert (reason, PASSWORD in message, "\n" in message) == (REASON, False, False), message
    assert "127.0.0.1" in message and "clear text" in message
    return message


@pytest.mark.parametrize("entry", ENTRY_POINTS.values(), ids=ENTRY_POINTS)
@pytest.mark.parametrize("plugin, ask", [("mysql_clear_password", b""), ("dialog", DIALOG_PASSWORD_PROMPT)],
                         ids=["mysql_clear_password", "dialog"])
def test_mysql_auth_switch_to_a_clear_text_plugin_gets_no_password(plugin: str, ask: bytes, entry) -> None:
    message = assert_refused(mysql_session("mysql_native_password", auth_switch(plugin, ask)), "mysql", entry)
    assert plugin in message and "caching_sha2_password" in message


@pytest.mark.parametrize("entry", ENTRY_POINTS.values(), ids=ENTRY_POINTS)
def test_mysql_server_whose_default_plugin_is_clear_text_gets_no_password(entry) -> None:
    """The handshake itself names mysql_clear_password; the server then asks again by switching to it, or by
    asking for more data of the plugin the client kept."""
    for ask in (auth_switch("mysql_clear_password"), MORE_DATA):
        assert_refused(mysql_session("mysql_clear_password", ask), "mysql", entry)


@pytest.mark.parametrize("entry", ENTRY_POINTS.values(), ids=ENTRY_POINTS)
def test_postgresql_cleartext_password_request_gets_no_password(entry) -> None:
    message = assert_refused(postgres_session, "postgresql", entry)
    assert "scram-sha-256" in message


def test_every_engine_is_made_in_one_place() -> None:
    """Every SQLAlchemy engine for a metastore or journal database goes through catalog.engines.sql_engine."""
    package = Path(hivecat.__file__).resolve().parent
    makers = sorted(str(path.relative_to(package)) for path in package.rglob("*.py")
                    if re.search(r"\bcreate_engine\(", path.read_text()))
    assert makers == ["catalog/engines.py"]


def test_over_tls_pymysql_keeps_its_own_clear_text_plugins() -> None:
    """The guard steps aside (None: pymysql's own handling) only when pymysql has wrapped the socket in TLS."""
    import sqlalchemy as sa

    from hivecat.catalog.engines import password_safe_connect_args

    class Connection:
        host, _secure = "db.example", False

    plugins = password_safe_connect_args(sa.make_url("mysql+pymysql://hive@db.example/hms"))["auth_plugin_map"]
    assert set(plugins) == {"mysql_clear_password", "dialog"}
    for guard in plugins.values():
        assert guard(Connection()) is not None
        secure = Connection()
        secure._secure = True
        assert guard(secure) is None
    assert password_safe_connect_args(sa.make_url("postgresql+psycopg://hive@db/hms")) == {"require_auth": "!password"}
    assert password_safe_connect_args(sa.make_url("sqlite:///journal.db")) == {}
