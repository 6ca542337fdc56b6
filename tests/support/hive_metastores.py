"""Real standalone Hive Metastores 3.1.3 and 4.0.1 as Thrift servers, on MariaDB or PostgreSQL.

The jars and Hive's own schema scripts come from Maven Central through scripts/fetch-hive-metastores.sh
into $HIVECAT_CACHE/maven (default ~/.cache/hivecat/maven); `release_home` runs that script once per
process (once the release is fetched it only compares a stamp: milliseconds). The schema is made by
Hive's schematool (`MetastoreSchemaTool -initSchema`) from the release's scripts, never by DataNucleus.

Locations are real `hdfs://nn:8020/...` URIs: Hadoop's ViewFileSystemOverloadScheme serves the `hdfs`
scheme of authority `nn` from a local directory (`fs.viewfs.mounttable.nn.linkMergeSlash`), so the
metastore's own directory checks and mkdirs succeed without a NameNode, and the stored strings are
exactly what a real HDFS deployment would hold.

Thrift: the `hmsclient` package speaks the Hive 2.x IDL. Hive 4 removed `get_table` (`get_table` here
calls `get_table_req`, present since 2.x). What Hive 3/4 added and the tests need is declared at the
end of this file: Database.catalogName/managedLocationUri, Table.catName, GetTableRequest.catName and
the create_catalog call. (hmsclient cannot read skewed-value location maps back: their keys are lists.)
"""

from __future__ import annotations

import functools
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from hivecat.catalog.hive_site import hive_site_xml
from hivecat.local.java import java_executable
from hivecat.local.metastore import LOG4J2_PROPERTIES, MetastoreDatabase
from hivecat.local.net import free_port, port_open, wait_for_port
from hivecat.local.processes import stop_process_group

REPO = Path(__file__).resolve().parents[2]
FETCH_SCRIPT = REPO / "scripts" / "fetch-hive-metastores.sh"
HMS_MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"


@dataclass(frozen=True)
class HiveRelease:
    key: str             # argument of scripts/fetch-hive-metastores.sh
    version: str
    directory: str       # under $HIVECAT_CACHE/maven
    schema_tool: str     # main class of schematool
    schema_version: str  # VERSION.SCHEMA_VERSION that -initSchema records
    conf: dict[str, str] = field(default_factory=dict)  # release-specific metastore-site.xml settings

    def __str__(self) -> str:
        return f"Hive Metastore {self.version}"


HIVE3 = HiveRelease(
    "hive3", "3.1.3", "hive-standalone-metastore-3.1.3",
    "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool", "3.1.0",
    # The default list names org.apache.hadoop.hive.metastore.repl.DumpDirCleanerTask, which lives in
    # hive-exec, not in the standalone metastore: HMS 3.1 then dies at start with "class not found".
    {"metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask,"
                                      "org.apache.hadoop.hive.metastore.RuntimeStatsCleanerTask"},
)
HIVE4 = HiveRelease(
    "hive4", "4.0.1", "hive-standalone-metastore-server-4.0.1",
    "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool", "4.0.0",
)
RELEASES = {r.key: r for r in (HIVE3, HIVE4)}


def cache_root() -> Path:
    return Path(os.environ.get("HIVECAT_CACHE") or Path.home() / ".cache" / "hivecat") / "maven"


def release_home(release: HiveRelease) -> Path:
    """The directory holding the release's jars and scripts/metastore/upgrade/, fetched or refreshed first."""
    _fetch(release.key)
    return cache_root() / release.directory


@functools.cache
def _fetch(key: str) -> None:
    """Once per process: the script compares its stamp with the pom (milliseconds) and fetches only when
    the cache lacks the release or the pom changed (about a minute from Maven Central)."""
    release = RELEASES[key]
    home = cache_root() / release.directory
    result = subprocess.run(["bash", str(FETCH_SCRIPT), key], capture_output=True, text=True)
    if result.returncode != 0 or not (home / ".fetched").exists():
        raise FileNotFoundError(f"{release} is not in {home} and `scripts/fetch-hive-metastores.sh {key}` failed:\n"
                                f"{(result.stdout + result.stderr)[-2000:]}")




class StandaloneMetastore:
    """One standalone HMS on 127.0.0.1 whose `hdfs://{authority}/` is the local directory `fs_root`."""

    def __init__(self, release: HiveRelease, database: MetastoreDatabase, workdir: Path, fs_root: Path,
                 authority: str = "nn:8020", port: int | None = None, heap: str = "768m",
                 extra_conf: dict[str, str] | None = None, extra_classpath: list[str] | None = None,
                 jvm_options: list[str] | None = None, core_conf: dict[str, str] | None = None):
        self.release = release
        self.jvm_options = jvm_options or []  # e.g. -Djava.security.krb5.conf (support.kdc)
        self.core_conf = core_conf or {}      # core-site.xml beside the filesystem's (hadoop.security.*)
        self.sasl = None                      # a ThriftSasl: how client() connects to a kerberized metastore
        self.extra_conf = extra_conf or {}
        self.extra_classpath = extra_classpath or []
        self.database = database
        self.workdir = Path(workdir)
        self.fs_root = Path(fs_root)
        self.authority = authority
        self.port = port or free_port()
        self.heap = heap
        self.process: subprocess.Popen[bytes] | None = None
        self.timings: dict[str, float] = {}

    @property
    def warehouse(self) -> str:
        return f"hdfs://{self.authority}/warehouse"

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def db_type(self) -> str:
        """schematool's name for the database (-dbType)."""
        return "postgres" if "postgresql" in self.database.driver else "mysql"

    def filesystem_conf(self) -> dict[str, str]:
        host = self.authority.split(":")[0]
        return {
            "fs.hdfs.impl": "org.apache.hadoop.fs.viewfs.ViewFileSystemOverloadScheme",
            f"fs.viewfs.mounttable.{host}.linkMergeSlash": self.fs_root.as_uri(),
            "fs.hdfs.impl.disable.cache": "true",
        }

    def conf(self) -> dict[str, str]:
        db = self.database
        return {
            "javax.jdo.option.ConnectionURL": db.jdbc_url,
            "javax.jdo.option.ConnectionDriverName": db.driver,
            "javax.jdo.option.ConnectionUserName": db.user,
            "javax.jdo.option.ConnectionPassword": db.password,
            "metastore.warehouse.dir": self.warehouse,
            "metastore.thrift.port": str(self.port),
            # The schema comes from schematool: HMS checks it, and never creates tables of its own.
            "metastore.schema.verification": "true",
            "datanucleus.schema.autoCreateAll": "false",
            # The standalone default names a hive-exec class (PartitionExpressionForMetastore).
            "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
            "metastore.event.db.notification.api.auth": "false",
            # With a metastore-log4j2.properties, async logging would need the LMAX disruptor (not a dependency).
            "metastore.async.log.enabled": "false",
            "hive.metastore.event.db.notification.api.auth": "false",
            **self.filesystem_conf(),
            **self.release.conf,
            **self.extra_conf,
        }

    def write_conf_dir(self) -> Path:
        conf_dir = self.workdir / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        site = conf_dir / "metastore-site.xml"
        site.touch(mode=0o600)  # holds the JDBC password
        site.write_text(hive_site_xml(self.conf()))
        # FileSystem instances made from a fresh Configuration (not the metastore's) see core-site.xml.
        (conf_dir / "core-site.xml").write_text(hive_site_xml({**self.filesystem_conf(), **self.core_conf}))
        (conf_dir / "metastore-log4j2.properties").write_text(
            LOG4J2_PROPERTIES.format(log=self.workdir / "hms-log4j.log"))
        return conf_dir

    def command(self, main_class: str, args: list[str]) -> list[str]:
        home = release_home(self.release)
        jars = [str(self.write_conf_dir()), str(home / "*")]
        if self.database.driver_jar:
            jars.append(self.database.driver_jar)
        jars += self.extra_classpath
        # No --add-opens: neither release needs them on JDK 17 for what the tests do (hivecat.jvm's set is
        # for Spark).
        return [java_executable(), f"-Xmx{self.heap}", *self.jvm_options, "-cp", os.pathsep.join(jars), main_class,
                *args]

    def _env(self) -> dict[str, str]:
        # schematool finds the scripts under $METASTORE_HOME/scripts/metastore/upgrade/<dbType>/.
        return {**os.environ, "METASTORE_HOME": str(release_home(self.release))}

    def init_schema(self) -> None:
        """Hive's own schematool creates the schema from the release's scripts."""
        began = time.monotonic()
        log = self.workdir / "schematool.log"
        with open(log, "wb") as out:
            result = subprocess.run(self.command(self.release.schema_tool, ["-initSchema", "-dbType", self.db_type]),
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    cwd=self.workdir, env=self._env(), timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"schematool -initSchema failed for {self.release} ({self.db_type}); log tail:\n"
                               f"{_tail(log)}")
        self.timings["schematool"] = round(time.monotonic() - began, 2)

    def run_schema_tool(self, args: list[str], log_name: str = "schematool-extra.log") -> str:
        """Run the release's schematool with `args` (plus -dbType); return its output, raise if it fails."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = self.workdir / log_name
        with open(log, "wb") as out:
            result = subprocess.run(self.command(self.release.schema_tool, [*args, "-dbType", self.db_type]),
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    cwd=self.workdir, env=self._env(), timeout=300)
        text = log.read_text(errors="replace")
        if result.returncode != 0:
            raise RuntimeError(f"schematool {' '.join(args)} failed for {self.release} ({self.db_type}); "
                               f"log tail:\n{_tail(log)}")
        return text

    def start(self, timeout: float = 180.0, init_schema: bool = True) -> "StandaloneMetastore":
        if self.database.driver_jar and not Path(self.database.driver_jar).exists():
            raise FileNotFoundError(f"JDBC driver {self.database.driver_jar} is missing: run `make setup`")
        if port_open(self.port):
            raise RuntimeError(f"port {self.port} is already in use")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.fs_root.mkdir(parents=True, exist_ok=True)
        release_home(self.release)
        if init_schema:  # False: serve a schema made (or upgraded) beforehand
            self.init_schema()
        began = time.monotonic()
        with open(self.workdir / "hms.log", "wb") as log:
            self.process = subprocess.Popen(self.command(HMS_MAIN_CLASS, ["-p", str(self.port)]), stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir,
                                            env=self._env(), start_new_session=True)
        try:
            wait_for_port(self.port, timeout=timeout, alive=lambda: self.process.poll() is None)
            self._wait_until_serving(deadline=began + timeout)
        except Exception as exc:
            self.stop()
            raise RuntimeError(f"{self.release} did not start ({exc}); log tail:\n{self.log_tail()}") from exc
        self.timings["start"] = round(time.monotonic() - began, 2)
        return self

    def _wait_until_serving(self, deadline: float) -> None:
        """The port can open before the handler is ready; a Thrift call proves HMS answers."""
        while True:
            try:
                with self.client() as client:
                    client.get_all_databases()
                return
            except Exception:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.2)

    def client(self):
        """A Thrift client (hmsclient, Hive 2.x IDL); use as a context manager."""
        from hivecat.catalog.thrift.transport import metastore_client

        return metastore_client("localhost" if self.sasl else "127.0.0.1", self.port, self.sasl)

    def stop(self, grace: float = 15.0) -> None:
        stop_process_group(self.process, grace)

    def log_tail(self, lines: int = 40) -> str:
        return "".join(_tail(p, lines) for p in (self.workdir / "hms.log", self.workdir / "hms-log4j.log"))

    def __enter__(self) -> "StandaloneMetastore":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_mysql_scripts(release: HiveRelease, scripts: list[str], host: str, port: int, database: str, user: str,
                      password: str) -> str:
    """Run some of the release's own MySQL schema scripts (e.g. upgrade-2.2.0-to-2.3.0.mysql.sql) with the
    `mysql` client from their directory, as Hive's manual upgrade instructions do (they SOURCE siblings)."""
    import shutil

    client = shutil.which("mysql") or shutil.which("mariadb")
    if client is None:
        raise FileNotFoundError("no `mysql`/`mariadb` command-line client on PATH")
    directory = release_home(release) / "scripts" / "metastore" / "upgrade" / "mysql"
    output = []
    for script in scripts:
        with open(directory / script, "rb") as sql:
            result = subprocess.run([client, "-h", host, "-P", str(port), "-u", user, database], stdin=sql,
                                    capture_output=True, text=True, cwd=directory, timeout=300,
                                    env={**os.environ, "MYSQL_PWD": password})
        output.append(result.stdout + result.stderr)
        if result.returncode != 0:
            raise RuntimeError(f"{client} < {script} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return "".join(output)


def _tail(path: Path, lines: int = 40) -> str:
    if not path.exists():
        return ""
    return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])


# --- Thrift beyond the Hive 2.x IDL of hmsclient -----------------------------------------------------
# Structs and calls that Hive 3/4 added, declared by their thrift_spec and (de)serialised by thrift's
# generic spec-driven readStruct/writeStruct: field ids and types follow hive_metastore.thrift.

class _Struct:
    thrift_spec: tuple = ()

    def __init__(self, **fields):
        for spec in self.thrift_spec:
            if spec is not None:
                setattr(self, spec[2], None)
        for name, value in fields.items():
            setattr(self, name, value)

    def read(self, iprot):
        iprot.readStruct(self, self.thrift_spec)

    def write(self, oprot):
        oprot.writeStruct(self, self.thrift_spec)

    def __repr__(self) -> str:
        fields = ", ".join(f"{s[2]}={getattr(self, s[2])!r}" for s in self.thrift_spec if s is not None)
        return f"{type(self).__name__}({fields})"


def _spec(*fields: tuple) -> tuple:
    """A thrift_spec tuple: position = field id, None for unused ids."""
    spec: list = [None] * (max(f[0] for f in fields) + 1)
    for f in fields:
        spec[f[0]] = f
    return tuple(spec)


@functools.cache
def _v3_types() -> dict[str, type]:
    from hmsclient.genthrift.hive_metastore import ttypes
    from thrift.Thrift import TType

    def extend(base, *fields):
        spec = list(base.thrift_spec)
        for f in fields:
            spec += [None] * (f[0] + 1 - len(spec))
            spec[f[0]] = f
        names = [f[2] for f in fields]

        def __init__(self, **kwargs):
            extra = {n: kwargs.pop(n, None) for n in names}
            base.__init__(self, **kwargs)
            self.__dict__.update(extra)

        return type(f"{base.__name__}V3", (base,), {
            "thrift_spec": tuple(spec), "__init__": __init__,
            "read": lambda self, iprot: iprot.readStruct(self, self.thrift_spec),
            "write": lambda self, oprot: oprot.writeStruct(self, self.thrift_spec)})

    database = extend(ttypes.Database, (8, TType.STRING, "catalogName", "UTF8", None),
                      (9, TType.I32, "createTime", None, None),
                      (10, TType.STRING, "managedLocationUri", "UTF8", None))
    table = extend(ttypes.Table, (17, TType.STRING, "catName", "UTF8", None))
    catalog = type("Catalog", (_Struct,), {"thrift_spec": _spec(
        (1, TType.STRING, "name", "UTF8", None), (2, TType.STRING, "description", "UTF8", None),
        (3, TType.STRING, "locationUri", "UTF8", None))})
    create_catalog_request = type("CreateCatalogRequest", (_Struct,), {"thrift_spec": _spec(
        (1, TType.STRUCT, "catalog", [catalog, None], None))})
    get_table_request = type("GetTableRequest", (_Struct,), {"thrift_spec": _spec(
        (1, TType.STRING, "dbName", "UTF8", None), (2, TType.STRING, "tblName", "UTF8", None),
        (4, TType.STRING, "catName", "UTF8", None))})
    return {
        "Database": database, "Table": table, "Catalog": catalog, "CreateCatalogRequest": create_catalog_request,
        "GetTableRequest": get_table_request,
        "create_catalog_args": type("create_catalog_args", (_Struct,), {"thrift_spec": _spec(
            (1, TType.STRUCT, "catalog", [create_catalog_request, None], None))}),
        "create_catalog_result": type("create_catalog_result", (_Struct,), {"thrift_spec": _spec(
            (1, TType.STRUCT, "o1", [ttypes.AlreadyExistsException, None], None),
            (2, TType.STRUCT, "o2", [ttypes.InvalidObjectException, None], None),
            (3, TType.STRUCT, "o3", [ttypes.MetaException, None], None))}),
        "get_database_args": type("get_database_args", (_Struct,), {"thrift_spec": _spec(
            (1, TType.STRING, "name", "UTF8", None))}),
        "get_database_result": type("get_database_result", (_Struct,), {"thrift_spec": _spec(
            (0, TType.STRUCT, "success", [database, None], None),
            (1, TType.STRUCT, "o1", [ttypes.NoSuchObjectException, None], None),
            (2, TType.STRUCT, "o2", [ttypes.MetaException, None], None))}),
        "get_table_req_args": type("get_table_req_args", (_Struct,), {"thrift_spec": _spec(
            (1, TType.STRUCT, "req", [get_table_request, None], None))}),
        "get_table_req_result": type("get_table_req_result", (_Struct,), {"thrift_spec": _spec(
            (0, TType.STRUCT, "success", [type("GetTableResult", (_Struct,), {"thrift_spec": _spec(
                (1, TType.STRUCT, "table", [table, None], None))}), None], None),
            (1, TType.STRUCT, "o1", [ttypes.MetaException, None], None),
            (2, TType.STRUCT, "o2", [ttypes.NoSuchObjectException, None], None))}),
    }


def _call(client, method: str, args, result):
    """One Thrift call with hand-declared argument and result structs; returns result.success (or None)."""
    from thrift.Thrift import TApplicationException, TMessageType

    client._oprot.writeMessageBegin(method, TMessageType.CALL, client._seqid)
    args.write(client._oprot)
    client._oprot.writeMessageEnd()
    client._oprot.trans.flush()
    iprot = client._iprot
    _, mtype, _ = iprot.readMessageBegin()
    if mtype == TMessageType.EXCEPTION:
        error = TApplicationException()
        error.read(iprot)
        iprot.readMessageEnd()
        raise error
    result.read(iprot)
    iprot.readMessageEnd()
    for spec in result.thrift_spec:
        if spec is not None and spec[0] > 0 and getattr(result, spec[2]) is not None:
            raise getattr(result, spec[2])
    return getattr(result, "success", None)


def database_v3(**fields):
    """A Database struct that also carries catalogName (Hive 3+) and managedLocationUri (Hive 4)."""
    return _v3_types()["Database"](**fields)


def table_v3(**fields):
    """A Table struct that also carries catName (Hive 3+)."""
    return _v3_types()["Table"](**fields)


def create_catalog(client, name: str, location: str, description: str | None = None) -> None:
    types = _v3_types()
    catalog = types["Catalog"](name=name, description=description, locationUri=location)
    request = types["CreateCatalogRequest"](catalog=catalog)
    _call(client, "create_catalog", types["create_catalog_args"](catalog=request), types["create_catalog_result"]())


def get_database_v3(client, name: str, catalog: str | None = None):
    """get_database with the Hive 3/4 fields (the stock client drops managedLocationUri); another catalog's
    database is named `@catalog#name`, as Hive 3+ parses it."""
    types = _v3_types()
    if catalog:
        name = f"@{catalog}#{name}"
    return _call(client, "get_database", types["get_database_args"](name=name), types["get_database_result"]())


def get_table(client, database: str, table: str, catalog: str | None = None):
    """get_table_req (from Hive 2.x on; Hive 4 removed get_table), with catName for Hive 3+ catalogs."""
    types = _v3_types()
    request = types["GetTableRequest"](dbName=database, tblName=table, catName=catalog)
    return _call(client, "get_table_req", types["get_table_req_args"](req=request),
                 types["get_table_req_result"]()).table
