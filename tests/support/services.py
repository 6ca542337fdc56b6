"""Real services for the integration tier, as pytest fixtures.

Each fixture starts what it needs on 127.0.0.1, stops what it started, and fails loudly (with the
concrete reason and the fix) when a service cannot be had. conftest.py files import these fixtures.

Connection URLs can be overridden with HIVECAT_TEST_MYSQL_URL / HIVECAT_TEST_POSTGRES_URL (server
URLs without a database part); the defaults are the users that `make setup` creates.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from hivecat.local.metastore import MetastoreDatabase, MetastoreServer
from hivecat.local.moto import moto_server as start_moto
from hivecat.local.net import port_open, wait_for_port
from hivecat.local.scratch_db import create_database, drop_database

MYSQL_URL = os.environ.get("HIVECAT_TEST_MYSQL_URL", "mysql+pymysql://hivecat:hivecat@127.0.0.1:3306")
POSTGRES_URL = os.environ.get("HIVECAT_TEST_POSTGRES_URL", "postgresql+psycopg://hivecat:hivecat@127.0.0.1:5432")

# How long each service took to start, reported at the end of the run (tests/conftest.py).
START_SECONDS: dict[str, float] = {}


def _timed(name: str, began: float) -> None:
    START_SECONDS[name] = round(time.monotonic() - began, 2)


def unique_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# --- database servers --------------------------------------------------------------------------

def _start_command(kind: str) -> list[str] | None:
    """How this machine starts the server when it is installed but stopped (None: not installed)."""
    if kind == "mariadb" and Path("/usr/sbin/mariadbd").exists():
        return ["sh", "-c", "install -d -o mysql -g mysql /run/mysqld && start-stop-daemon --start --oknodo "
                            "--background --exec /usr/sbin/mariadbd -- --user=mysql"]
    if kind == "postgresql" and Path("/etc/postgresql").is_dir():
        versions = sorted(os.listdir("/etc/postgresql"), key=lambda v: [int(x) for x in re.findall(r"\d+", v)])
        if versions:
            return ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "start"]
    return None


def _stop_command(kind: str) -> list[str]:
    if kind == "mariadb":
        return ["start-stop-daemon", "--stop", "--oknodo", "--retry", "60", "--exec", "/usr/sbin/mariadbd"]  # waits
    versions = sorted(os.listdir("/etc/postgresql"))
    return ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "stop"]


def _database_server(kind: str, url: str) -> Iterator[str]:
    """Yield a server URL that answers; start the server first if it is installed but stopped.

    `make test` runs several pytest processes that share the machine's server: each holds a shared lock on
    a usage file while it uses the server, and only the last one out stops a server that a test process
    started (the marker file says so), never one that was running before. A second lock serialises starting
    and stopping: nobody waits for the usage lock exclusively (that would wait for every other user to end)."""
    parsed = sa.make_url(url)
    port = parsed.port or (3306 if kind == "mariadb" else 5432)
    began = time.monotonic()
    base = f"/tmp/hivecat-test-{kind}-{port}"
    marker = Path(f"{base}.started")
    turns, usage = open(f"{base}.turns", "a"), open(f"{base}.lock", "a")  # noqa: SIM115 - held all session
    fcntl.flock(turns, fcntl.LOCK_EX)  # no one stops it meanwhile (the stopper holds this too)
    try:
        fcntl.flock(usage, fcntl.LOCK_SH)  # granted at once: only a holder of `turns` ever locks it exclusively
        if not port_open(port):
            _start_server(kind, port)
            marker.touch()
    finally:
        fcntl.flock(turns, fcntl.LOCK_UN)
    engine = sa.create_engine(parsed.set(database="postgres") if kind == "postgresql" else parsed)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.OperationalError as exc:
        pytest.fail(f"{kind} on 127.0.0.1:{port} refused {parsed.username!r} ({exc.orig}): "
                    "`make setup` creates that user")
    finally:
        engine.dispose()
    if kind == "mariadb" and os.geteuid() == 0:
        # make test runs seven pytest processes at once, each with metastores (a connection pool each) and
        # catalogs: the default 151 connections are not enough. Raised on the running server, whoever started it.
        subprocess.run(["mariadb", "-uroot", "-e", "SET GLOBAL max_connections = GREATEST(@@max_connections, 1000)"],
                       check=False, capture_output=True)
    _timed(kind, began)
    try:
        yield url
    finally:
        fcntl.flock(usage, fcntl.LOCK_UN)
        fcntl.flock(turns, fcntl.LOCK_EX)
        try:
            fcntl.flock(usage, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the last one out
            if marker.exists():
                subprocess.run(_stop_command(kind), check=False, capture_output=True)
                marker.unlink()
        except BlockingIOError:
            pass  # another process still uses it
        finally:
            usage.close()
            turns.close()


def _start_server(kind: str, port: int) -> None:
    command = _start_command(kind)
    if command is None:
        pytest.fail(f"{kind} is not listening on 127.0.0.1:{port} and is not installed: run `make setup`")
    if os.geteuid() != 0:
        pytest.fail(f"{kind} is not listening on 127.0.0.1:{port}; starting it needs root: run `make setup`")
    subprocess.run(command, check=True, capture_output=True)
    try:
        wait_for_port(port, timeout=60)
    except TimeoutError:
        pytest.fail(f"started {kind}, but nothing listens on 127.0.0.1:{port} after 60s")


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[str]:
    """SQLAlchemy URL (no database) of the MariaDB server, as the `hivecat` user."""
    yield from _database_server("mariadb", MYSQL_URL)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """SQLAlchemy URL (no database) of the PostgreSQL server, as the `hivecat` role."""
    yield from _database_server("postgresql", POSTGRES_URL)


@pytest.fixture
def scratch_mariadb(mariadb_server: str) -> Iterator[str]:
    """A new empty latin1 database (no HMS behind it) for tests that need a synthetic schema."""
    name = unique_name("hc_scratch")
    yield create_database(mariadb_server, name, latin1=True)
    drop_database(mariadb_server, name)


@pytest.fixture
def scratch_postgres(postgres_server: str) -> Iterator[str]:
    name = unique_name("hc_scratch")
    yield create_database(postgres_server, name)
    drop_database(postgres_server, name)


# --- Hive Metastore -----------------------------------------------------------------------------

@dataclass(frozen=True)
class HiveMetastore:
    """The session's real HMS: its Thrift endpoint, the MariaDB database behind it, its warehouse."""

    uri: str
    port: int
    sql_url: str  # SQLAlchemy URL of the HMS schema in MariaDB
    warehouse: Path

    def client(self):
        """A Thrift client; use as a context manager."""
        from hmsclient import hmsclient

        return hmsclient.HMSClient(host="127.0.0.1", port=self.port)


@pytest.fixture(scope="session")
def hive_metastore(mariadb_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HiveMetastore]:
    """One real Hive Metastore 2.3.10 Thrift server per test session, on its own latin1 database."""
    began = time.monotonic()
    name = unique_name("hc_hms")
    sql_url = create_database(mariadb_server, name, latin1=True)
    url = sa.make_url(sql_url)
    root = tmp_path_factory.mktemp("hms")
    warehouse = root / "warehouse"
    warehouse.mkdir()
    server = MetastoreServer(
        MetastoreDatabase.mariadb(url.host, url.port or 3306, name, url.username, url.password),
        root / "hms", warehouse.as_uri(),
    )
    try:
        server.start()
    except (RuntimeError, FileNotFoundError) as exc:
        drop_database(mariadb_server, name)
        pytest.fail(f"the Hive Metastore fixture could not start: {exc}")
    _timed("hive-metastore", began)
    try:
        yield HiveMetastore(server.uri, server.port, sql_url, warehouse)
    finally:
        server.stop()
        drop_database(mariadb_server, name)


@pytest.fixture(scope="session")
def spark(hive_metastore: HiveMetastore):
    """One local[2] Spark session per test session, with Hive support on the HMS fixture."""
    from hivecat.spark import local_spark_session

    began = time.monotonic()
    session = local_spark_session(hive_metastore.uri, hive_metastore.warehouse.as_uri(), app_name="hivecat-tests")
    session.sparkContext.setLogLevel("ERROR")
    _timed("spark", began)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def hive_database(request: pytest.FixtureRequest, spark) -> Iterator[str]:
    """A Hive database of the test module's own (dropped with its tables at the end)."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    name = re.sub(r"[^a-z0-9_]", "_", f"t_{module}".lower())[:100]
    spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")
    spark.sql(f"CREATE DATABASE {name}")
    yield name
    spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")


def refresh_table(spark, qualified_name: str) -> None:
    """Spark caches table metadata and file listings: call after anything written outside Spark."""
    spark.sql(f"REFRESH TABLE {qualified_name}")


# --- moto (Glue + S3) ---------------------------------------------------------------------------

@dataclass(frozen=True)
class MotoServer:
    endpoint: str
    region: str = "us-east-1"

    def client(self, service: str):
        import boto3

        return boto3.client(service, endpoint_url=self.endpoint, region_name=self.region,
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """moto in server mode (its own process) on a free loopback port."""
    began = time.monotonic()
    with contextlib.ExitStack() as stack:
        try:
            endpoint = stack.enter_context(start_moto(tmp_path_factory.mktemp("moto") / "moto.log"))
        except RuntimeError as exc:
            pytest.fail(str(exc))
        _timed("moto", began)
        yield MotoServer(endpoint)


@pytest.fixture
def moto(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """moto with empty state, and AWS variables that can only ever reach it."""
    moto_server.reset()
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": moto_server.region, "AWS_ENDPOINT_URL": moto_server.endpoint}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return moto_server
