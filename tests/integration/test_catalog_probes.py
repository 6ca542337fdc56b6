"""Backend probes and Glue defaults against real services: MariaDB, PostgreSQL, a Hive 2.3 metastore and a
moto server. The classification of Glue credential errors, which moto does not produce, is in
tests/unit/test_probes.py."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from hivecat.catalog.glue.defaults import create_database, ensure_default_database, glue_client
from hivecat.catalog.probes import probe_glue, probe_sql, probe_thrift
from hivecat.catalog.targets import SqlTarget
from hivecat.local.net import free_port

WRONG_PASSWORD = "Wr0ng-Pa55word-x7"
# Seconds a probe may overrun its timeout (process scheduling on a busy machine, libpq's 2 s minimum rounding);
# a probe that ignored its timeout would take far longer: pymysql's default is 10 s, libpq and Thrift have none.
SLACK = 5


def sql_target(url: str, **changes) -> tuple[SqlTarget, str]:
    parsed = sa.make_url(url)
    dialect = "mysql" if parsed.drivername.startswith("mysql") else "postgresql"
    target = SqlTarget(dialect, parsed.host or "127.0.0.1", parsed.database or "", parsed.username or "",
                       parsed.port)
    return SqlTarget(**{**target.__dict__, **changes}), parsed.password or ""


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A port whose kernel completes the TCP handshake but no program ever answers: the case a timeout is for."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


@pytest.fixture(params=["mariadb", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue("scratch_mariadb" if request.param == "mariadb" else "scratch_postgres")


# --- SQL ---------------------------------------------------------------------------------------------

def test_sql_good_password_is_reachable(database_url: str) -> None:
    target, password = sql_target(database_url)
    result = probe_sql(target, password)
    assert (result.ok, result.reason) == (True, "Reachable")


def test_sql_wrong_password_is_authentication_failed(database_url: str) -> None:
    target, _ = sql_target(database_url)
    result = probe_sql(target, WRONG_PASSWORD)
    assert (result.ok, result.reason) == (False, "AuthenticationFailed")
    assert WRONG_PASSWORD not in result.message
    assert "Traceback" not in result.message and "\n" not in result.message


def test_sql_closed_port_is_unreachable_within_timeout(database_url: str) -> None:
    target, _ = sql_target(database_url, port=free_port())
    began = time.monotonic()
    result = probe_sql(target, WRONG_PASSWORD, timeout=2)
    assert (result.ok, result.reason) == (False, "DatabaseUnreachable")
    assert time.monotonic() - began < 2 + SLACK
    assert WRONG_PASSWORD not in result.message


@pytest.mark.parametrize("dialect", ["mysql", "postgresql"])
def test_sql_silent_server_times_out(dialect: str) -> None:
    with silent_server() as port:
        began = time.monotonic()
        result = probe_sql(SqlTarget(dialect, "127.0.0.1", "metastore", "hive", port), "secret-pw", timeout=2)
        elapsed = time.monotonic() - began
    assert (result.ok, result.reason) == (False, "DatabaseUnreachable")
    assert elapsed < 2 + SLACK
    assert "secret-pw" not in result.message


# --- Thrift ------------------------------------------------------------------------------------------

def test_thrift_metastore_is_reachable(hive_metastore) -> None:
    result = probe_thrift("127.0.0.1", hive_metastore.port)
    assert (result.ok, result.reason) == (True, "Reachable")


def test_thrift_closed_port_is_unreachable() -> None:
    result = probe_thrift("127.0.0.1", free_port(), timeout=2)
    assert (result.ok, result.reason) == (False, "MetastoreUnreachable")
    assert "Traceback" not in result.message


def test_thrift_port_that_accepts_but_does_not_answer_is_unreachable_within_timeout() -> None:
    """A bare TCP connect would call this reachable; the Thrift call does not."""
    with silent_server() as port:
        began = time.monotonic()
        result = probe_thrift("127.0.0.1", port, timeout=2)
        elapsed = time.monotonic() - began
    assert (result.ok, result.reason) == (False, "MetastoreUnreachable")
    assert elapsed < 2 + SLACK


# --- Glue (moto) -------------------------------------------------------------------------------------

def credentials(key: str = "testing", secret: str = "testing") -> dict[str, str]:
    return {"aws_access_key_id": key, "aws_secret_access_key": secret}


def test_glue_probe_reachable(moto) -> None:
    result = probe_glue(credentials(), moto.region, None, moto.endpoint, timeout=5)
    assert (result.ok, result.reason) == (True, "Reachable")


def test_glue_probe_closed_endpoint_is_unreachable_within_timeout(moto) -> None:
    began = time.monotonic()
    result = probe_glue(credentials(), moto.region, None, f"http://127.0.0.1:{free_port()}", timeout=2)
    assert (result.ok, result.reason) == (False, "GlueUnreachable")
    assert time.monotonic() - began < 2 + SLACK


def test_glue_probe_bad_credentials_moto_does_not_check(moto) -> None:
    """moto's server accepts any credentials (it checks them only when started with IAM authentication, which
    the fixture does not do): bogus keys are Reachable here. The classification of AccessDenied,
    UnrecognizedClientException and InvalidClientTokenId is tested with a botocore Stubber in
    tests/unit/test_probes.py."""
    result = probe_glue(credentials("AKIABOGUSBOGUSBOGUS1", "bogus-secret-key-0123456789"), moto.region, None,
                        moto.endpoint)
    assert (result.ok, result.reason) == (True, "Reachable")
    assert "bogus-secret-key-0123456789" not in result.message


def test_default_database_created_with_location_then_left_alone(moto) -> None:
    client = glue_client(moto.region, moto.endpoint, "testing", "testing", timeout=5)
    location = "s3://lake/warehouse"

    first = ensure_default_database(client, None, location)
    assert (first.kind, first.location) == ("Created", location)
    created = client.get_database(Name="default")["Database"]
    assert created["LocationUri"] == location

    time.sleep(1.1)  # a second create would carry a later CreateTime
    again = ensure_default_database(client, None, "s3://elsewhere/warehouse")
    assert (again.kind, again.location) == ("Present", location)
    assert client.get_database(Name="default")["Database"] == created


def test_default_database_without_location_is_reported_not_changed(moto) -> None:
    client = glue_client(moto.region, moto.endpoint, "testing", "testing", timeout=5)
    client.create_database(DatabaseInput={"Name": "default", "Description": "made by someone else"})
    before = client.get_database(Name="default")["Database"]

    outcome = ensure_default_database(client, None, "s3://lake/warehouse")
    assert (outcome.kind, outcome.location) == ("MissingLocation", None)
    assert "location" in outcome.message and "s3://lake/warehouse" in outcome.message
    assert client.get_database(Name="default")["Database"] == before
    assert "LocationUri" not in before or not before["LocationUri"]


def test_default_database_with_catalog_id(moto) -> None:
    client = glue_client(moto.region, moto.endpoint, "testing", "testing", timeout=5)
    outcome = ensure_default_database(client, "123456789012", "s3://lake/warehouse")
    assert outcome.kind == "Created"
    assert client.get_database(CatalogId="123456789012", Name="default")["Database"]["LocationUri"] == \
        "s3://lake/warehouse"


def test_create_database_always_sets_location(moto) -> None:
    client = glue_client(moto.region, moto.endpoint, "testing", "testing", timeout=5)
    create_database(client, None, "sales", "s3://lake/warehouse/sales.db")
    assert client.get_database(Name="sales")["Database"]["LocationUri"] == "s3://lake/warehouse/sales.db"
    with pytest.raises(ValueError):
        create_database(client, None, "nowhere", " ")
    with pytest.raises(client.exceptions.AlreadyExistsException):
        create_database(client, None, "sales", "s3://lake/other")
