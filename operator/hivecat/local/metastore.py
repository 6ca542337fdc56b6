"""A real Hive Metastore 2.3 Thrift server, started from the pyspark wheel's jars.

The JDBC backend is embedded Derby (the demo's default) or a MariaDB/MySQL/PostgreSQL database that
the caller created (latin1 on MySQL: utf8mb4 overflows HMS's index key limits).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from hivecat.catalog.hive_site import (JdbcConnection, connection_properties, hive_site_xml, mariadb_jdbc,
                                       postgresql_jdbc)
from hivecat.local.java import java_command
from hivecat.local.net import free_port, port_open, wait_for_port
from hivecat.local.processes import stop_process_group

HMS_MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
MARIADB_JDBC_JAR = "/usr/share/java/mariadb-java-client.jar"
POSTGRESQL_JDBC_JAR = "/usr/share/java/postgresql.jar"


@dataclass(frozen=True)
class MetastoreDatabase:
    """Where HMS keeps its schema, as JDBC sees it. The password goes into a 0600 hive-site.xml."""

    jdbc_url: str
    driver: str
    user: str = ""
    password: str = field(default="", repr=False)
    driver_jar: str | None = None
    sqlalchemy_url: str | None = field(default=None, repr=False)  # same database, for Python-side DDL

    @classmethod
    def derby(cls, directory: Path) -> "MetastoreDatabase":
        return cls(f"jdbc:derby:;databaseName={directory};create=true", "org.apache.derby.jdbc.EmbeddedDriver")

    @classmethod
    def mariadb(cls, host: str, port: int, name: str, user: str, password: str) -> "MetastoreDatabase":
        jdbc = mariadb_jdbc(host, port, name)
        return cls(jdbc.url, jdbc.driver, user, password, MARIADB_JDBC_JAR,
                   _url("mysql+pymysql", host, port, name, user, password))

    @classmethod
    def postgresql(cls, host: str, port: int, name: str, user: str, password: str) -> "MetastoreDatabase":
        jdbc = postgresql_jdbc(host, port, name)
        return cls(jdbc.url, jdbc.driver, user, password, POSTGRESQL_JDBC_JAR,
                   _url("postgresql+psycopg", host, port, name, user, password))


def _url(driver: str, host: str, port: int, name: str, user: str, password: str) -> str:
    url = sa.URL.create(driver, username=user, password=password, host=host, port=port, database=name)
    return url.render_as_string(hide_password=False)


LOG4J2_PROPERTIES = """\
status = WARN
name = hivecat-local-hms
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{ISO8601}} %-5p [%t] %c{{2}}: %m%n
rootLogger.level = INFO
rootLogger.appenderRefs = file
rootLogger.appenderRef.file.ref = file
logger.datanucleus.name = DataNucleus
logger.datanucleus.level = WARN
"""


class MetastoreServer:
    """One HMS process on 127.0.0.1. Use as a context manager, or call start()/stop()."""

    def __init__(self, database: MetastoreDatabase, workdir: Path, warehouse_dir: str,
                 port: int | None = None, heap: str = "1g", extra_conf: dict[str, str] | None = None,
                 extra_jars: list[str] | None = None):
        self.database = database
        self.extra_jars = extra_jars or []
        self.workdir = Path(workdir)
        self.warehouse_dir = warehouse_dir
        self.port = port or free_port()
        self.heap = heap
        self.extra_conf = extra_conf or {}
        self.process: subprocess.Popen[bytes] | None = None
        self.start_seconds: float | None = None

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "hms.log"

    def conf(self) -> dict[str, str]:
        db = self.database
        return {
            **connection_properties(JdbcConnection(db.jdbc_url, db.driver), db.user, db.password),
            "hive.metastore.warehouse.dir": self.warehouse_dir,
            "hive.metastore.schema.verification": "false",
            "datanucleus.schema.autoCreateAll": "true",
            # Without these two the first CREATE TABLE deadlocks while DataNucleus discovers classes.
            "datanucleus.autoStartMechanism": "MetaData",
            "datanucleus.autoStartMetaDataFiles": "package.jdo",
            "hive.async.log.enabled": "false",
            # The default pool (BoneCP) is not among Spark's jars; HikariCP is. Without this, ACID
            # listeners (e.g. on DROP DATABASE) fail with NoClassDefFoundError.
            "datanucleus.connectionPoolingType": "HikariCP",
            "hive.metastore.event.db.notification.api.auth": "false",
            **self.extra_conf,
        }

    def write_conf_dir(self) -> Path:
        conf_dir = self.workdir / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        site = conf_dir / "hive-site.xml"
        site.touch(mode=0o600)  # holds the JDBC password
        site.write_text(hive_site_xml(self.conf()))
        (conf_dir / "hive-log4j2.properties").write_text(LOG4J2_PROPERTIES.format(log=self.workdir / "hms-log4j.log"))
        return conf_dir

    def command(self, main_class: str = HMS_MAIN_CLASS, args: list[str] | None = None) -> list[str]:
        jars = ([self.database.driver_jar] if self.database.driver_jar else []) + self.extra_jars
        args = ["-p", str(self.port)] if args is None else args
        return java_command(main_class, args, self.write_conf_dir(), jars, heap=self.heap,
                            system_properties={"derby.stream.error.file": str(self.workdir / "derby.log")})

    def prepare_transaction_tables(self) -> None:
        """Create Hive's transaction tables before HMS starts (see txn_tables.py for why)."""
        if self.database.sqlalchemy_url:
            from hivecat.local.txn_tables import create_transaction_tables

            create_transaction_tables(self.database.sqlalchemy_url)
            return
        # Embedded Derby: Hive's own TxnDbUtil speaks its dialect; it runs before HMS because
        # embedded Derby admits one JVM at a time.
        source = Path(__file__).with_name("PrepareTxnTables.java")
        result = subprocess.run(self.command(str(source), []), capture_output=True, text=True, cwd=self.workdir)
        if result.returncode != 0:
            raise RuntimeError(f"creating Hive's transaction tables failed:\n{result.stderr[-3000:]}")

    def start(self, timeout: float = 120.0) -> "MetastoreServer":
        if self.database.driver_jar and not Path(self.database.driver_jar).exists():
            raise FileNotFoundError(f"JDBC driver {self.database.driver_jar} is missing: run `make setup`")
        if port_open(self.port):
            raise RuntimeError(f"port {self.port} is already in use")
        self.workdir.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        self.prepare_transaction_tables()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, cwd=self.workdir, start_new_session=True)
        try:
            wait_for_port(self.port, timeout=timeout, alive=lambda: self.process.poll() is None)
            self._wait_until_serving(deadline=began + timeout)
        except Exception as exc:
            self.stop()
            raise RuntimeError(f"Hive Metastore did not start ({exc}); log tail:\n{self.log_tail()}") from exc
        self.start_seconds = time.monotonic() - began
        return self

    def _wait_until_serving(self, deadline: float) -> None:
        """The port opens before the schema exists; a Thrift call proves HMS answers."""
        from hmsclient import hmsclient

        while True:
            try:
                with hmsclient.HMSClient(host="127.0.0.1", port=self.port) as client:
                    client.get_all_databases()
                return
            except Exception:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.2)

    def stop(self, grace: float = 15.0) -> None:
        stop_process_group(self.process, grace)

    def log_tail(self, lines: int = 40) -> str:
        text = ""
        for path in (self.log_path, self.workdir / "hms-log4j.log"):
            if path.exists():
                text += "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])
        return text

    def __enter__(self) -> "MetastoreServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
