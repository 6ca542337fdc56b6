"""The schema Job's own command, run the way its pod would run it, against real MariaDB and PostgreSQL
databases with Hive's real schematool (standalone metastore 3.1.3 and 4.0.1 from Maven, see
tests/support/hive_metastores.py); the operator's read of VERSION before and after decides and confirms.

What stands in for the image (tests/support/hive_image.py): the pod runs `sh -c '... "$HIVE_HOME/bin/schematool"
...'` with HIVE_HOME and HIVE_CONF_DIR set. Here HIVE_HOME is a temporary directory whose bin/schematool is a
tiny wrapper script that execs java on the cached release's jars (plus the JDBC driver), with $HIVE_CONF_DIR
first on the classpath and METASTORE_HOME at the release (schematool finds its SQL scripts there), as the
image's own bin/schematool does. HIVE_CONF_DIR holds the files of the operator's own metastore ConfigMap,
as the Job's mount does: hive-site.xml refers to the password as ${env.HIVECAT_DB_PASSWORD}, and the password
arrives only as that env var, as from the Secret. Hive resolves the reference itself (Hadoop's
Configuration), so no process's command line holds the password: the last tests watch /proc while the Job's
command and then the metastore Deployment's own command run.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from hivecat.catalog.probes import probe_thrift
from hivecat.catalog.schema_version import SchemaState, SchemaStateUnavailable, read_schema_state
from hivecat.catalog.targets import DEFAULT_PORTS, SqlTarget
from hivecat.local.net import free_port
from hivecat.local.processes import stop_process_group
from hivecat.workloads.schema import Init, Ready, Refuse, Upgrade, decide_schema, schema_version_of
from hivecat.specs.hivecatalog import DatabaseSpec, HiveCatalogSpec, MetastoreSpec, SecretKeyRef
from hivecat.workloads.metastore import metastore_config_map, metastore_deployment
from hivecat.workloads.schema_job import schema_command, schema_job
from support.hive_image import STANDIN_PORT_ENV, StandInImage, watch
from support.hive_metastores import HMS_MAIN_CLASS, HIVE3, HIVE4, HiveRelease, release_home
from support.services import unique_name


@dataclass(frozen=True)
class Db:
    target: SqlTarget
    password: str
    url: str       # SQLAlchemy URL, password included (test-side DDL only)
    db_type: str   # the HiveCatalog's spec.database.type


def _db(url: str) -> Db:
    parsed = sa.make_url(url)
    dialect = "postgresql" if parsed.get_backend_name() == "postgresql" else "mysql"
    target = SqlTarget(dialect, parsed.host, parsed.database, parsed.username, parsed.port)
    return Db(target, parsed.password or "", url, "postgresql" if dialect == "postgresql" else "mariadb")


@pytest.fixture
def mariadb(scratch_mariadb: str) -> Iterator[Db]:
    """The scratch database, reached as a user of its own whose awkward password is like no other string
    in the test (so finding it in a command or an output means a leak)."""
    url = sa.make_url(scratch_mariadb)
    # No whitespace: Hive 3.1.3's schematool splits its sqlline arguments on spaces, so a password with a
    # space fails there (and a fragment of it lands in the log). Hive's bug; the pod's shell passes it intact.
    user, password = unique_name("hc_schema"), f"pw-{uuid.uuid4().hex[:8]}'\"$x;"
    hosts = ("localhost", "127.0.0.1", "%")
    quoted = password.replace("\\", "\\\\").replace("'", "\\'")
    _execute(scratch_mariadb, *(f"CREATE USER '{user}'@'{h}' IDENTIFIED BY '{quoted}'" for h in hosts),
             *(f"GRANT ALL PRIVILEGES ON `{url.database}`.* TO '{user}'@'{h}'" for h in hosts))
    try:
        yield _db(url.set(username=user, password=password).render_as_string(hide_password=False))
    finally:
        _execute(scratch_mariadb, *(f"DROP USER IF EXISTS '{user}'@'{h}'" for h in hosts))


@pytest.fixture
def postgres(scratch_postgres: str) -> Db:
    return _db(scratch_postgres)


def make_spec(db: Db, hive_version: str, warehouse: str = "file:///tmp/warehouse") -> HiveCatalogSpec:
    t = db.target
    metastore = MetastoreSpec(image=f"apache/hive:{hive_version}", image_pull_policy="IfNotPresent", replicas=1,
                              resources={}, warehouse_dir=warehouse, port=9083,
                              hive_version=hive_version, hive_home="/opt/hive")
    database = DatabaseSpec(type=db.db_type, host=t.host, port=t.port or DEFAULT_PORTS[t.dialect], name=t.database,
                            user=t.user, password=SecretKeyRef(name="metastore-db", key="password"))
    return HiveCatalogSpec(name="sales", namespace="data", uid="0", generation=1, suspend=False,
                           explicit_mode=None, mode="Thrift", spark_side_completed=False, configurations={},
                           metastore=metastore, database=database, glue=None, confirm_mode_switch=False)


def job_container(spec: HiveCatalogSpec, decision) -> dict:
    return schema_job(spec, decision)["spec"]["template"]["spec"]["containers"][0]


def pod(root: Path, release: HiveRelease, spec: HiveCatalogSpec, container: dict, password: str,
        extra: dict[str, str] = {}) -> tuple[StandInImage, dict[str, str]]:
    """The stand-in image and a container's environment as its pod would have them: HIVE_CONF_DIR holding
    exactly what the operator's metastore ConfigMap holds (no password), and the password as the Secret
    gives it."""
    image = StandInImage(root / "image", release, spec.database.dialect)
    conf_dir = StandInImage.conf_dir(root / "pod", metastore_config_map(spec)["data"])
    secret = spec.database.password
    return image, image.environment(container, {(secret.name, secret.key): password}, conf_dir, extra)


def run_job_command(root: Path, release: HiveRelease, db: Db, decision) -> str:
    """What the pod does: the Job's command, in the image's environment. Returns its output."""
    spec = make_spec(db, release.version)
    container = job_container(spec, decision)
    if db.password != db.target.user:  # the PostgreSQL test role's password is its name
        assert db.password not in json.dumps(container) + json.dumps(metastore_config_map(spec))
    image, env = pod(root, release, spec, container, db.password)
    output = image.run(container, env)
    if db.password != db.target.user:
        assert db.password not in output
    return output


def _execute(url: str, *statements: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
    finally:
        engine.dispose()


# --- the release -> schema version rule, against the releases' own scripts ----------------------------

@pytest.mark.parametrize("release", [HIVE3, HIVE4], ids=str)
def test_schema_version_rule_matches_the_releases_scripts(release: HiveRelease) -> None:
    scripts = release_home(release) / "scripts" / "metastore" / "upgrade"
    expected = schema_version_of(release.version)
    assert expected == release.schema_version
    for db_type in ("mysql", "postgres"):
        order = (scripts / db_type / f"upgrade.order.{db_type}").read_text().split()
        assert order[-1].endswith(f"-to-{expected}")  # the last upgrade lands on the release's schema
        assert (scripts / db_type / f"hive-schema-{expected}.{db_type}.sql").exists()


# --- MariaDB ----------------------------------------------------------------------------------------

def test_empty_database_is_initialized_by_the_job_command(mariadb: Db, tmp_path: Path) -> None:
    before = read_schema_state(mariadb.target, mariadb.password)
    assert before == SchemaState(False, None, 0)
    decision = decide_schema(before, HIVE4.version)
    assert decision == Init("4.0.0")
    output = run_job_command(tmp_path, HIVE4, mariadb, decision)
    assert "completed" in output
    after = read_schema_state(mariadb.target, mariadb.password)
    assert after == SchemaState(True, "4.0.0", 1)
    assert decide_schema(after, HIVE4.version) == Ready("4.0.0")


def test_older_schema_is_upgraded_by_the_job_command(mariadb: Db, tmp_path: Path) -> None:
    run_job_command(tmp_path / "hive3", HIVE3, mariadb, decide_schema(SchemaState(False, None, 0), HIVE3.version))
    older = read_schema_state(mariadb.target, mariadb.password)
    assert older == SchemaState(True, "3.1.0", 1)
    decision = decide_schema(older, HIVE4.version)
    assert decision == Upgrade("3.1.0", "4.0.0")
    output = run_job_command(tmp_path / "hive4", HIVE4, mariadb, decision)
    after = read_schema_state(mariadb.target, mariadb.password)
    assert after == SchemaState(True, "4.0.0", 1)
    assert decide_schema(after, HIVE4.version) == Ready("4.0.0")


def _tables(url: str) -> dict[str, list]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            names = sorted(sa.inspect(conn).get_table_names())
            return {n: [tuple(r) for r in conn.execute(sa.text(f"SELECT * FROM `{n}`")).all()] for n in names}
    finally:
        engine.dispose()


def test_newer_schema_than_the_image_is_refused_and_nothing_runs(mariadb: Db) -> None:
    _execute(mariadb.url,
             "CREATE TABLE DBS (DB_ID BIGINT PRIMARY KEY, NAME VARCHAR(128))",
             "CREATE TABLE VERSION (VER_ID BIGINT PRIMARY KEY, SCHEMA_VERSION VARCHAR(127) NOT NULL, "
             "VERSION_COMMENT VARCHAR(255))",
             "INSERT INTO VERSION VALUES (1, '4.0.0', 'Hive release version 4.0.0')")
    before = _tables(mariadb.url)
    state = read_schema_state(mariadb.target, mariadb.password)
    assert state == SchemaState(True, "4.0.0", 1)
    decision = decide_schema(state, HIVE3.version)
    assert isinstance(decision, Refuse) and decision.reason == "SchemaNewerThanImage"
    with pytest.raises(ValueError):  # there is no command, hence no Job, for a refusal
        schema_command(make_spec(mariadb, HIVE3.version), decision)
    assert _tables(mariadb.url) == before


def test_autocreate_style_schema_without_a_version_row_is_refused(mariadb: Db) -> None:
    """What DataNucleus autoCreateAll leaves: metastore tables and an empty VERSION table."""
    _execute(mariadb.url,
             "CREATE TABLE DBS (DB_ID BIGINT PRIMARY KEY, NAME VARCHAR(128))",
             "CREATE TABLE VERSION (VER_ID BIGINT PRIMARY KEY, SCHEMA_VERSION VARCHAR(127) NOT NULL, "
             "VERSION_COMMENT VARCHAR(255))")
    state = read_schema_state(mariadb.target, mariadb.password)
    assert state == SchemaState(True, None, 0)
    decision = decide_schema(state, HIVE4.version)
    assert isinstance(decision, Refuse) and decision.reason == "SchemaWithoutVersion"


def test_two_version_rows_are_ambiguous(mariadb: Db) -> None:
    _execute(mariadb.url,
             "CREATE TABLE VERSION (VER_ID BIGINT PRIMARY KEY, SCHEMA_VERSION VARCHAR(127) NOT NULL)",
             "INSERT INTO VERSION VALUES (1, '3.1.0'), (2, '4.0.0')")
    state = read_schema_state(mariadb.target, mariadb.password)
    assert state == SchemaState(True, None, 2)
    assert decide_schema(state, HIVE4.version).reason == "AmbiguousVersion"


def test_a_wrong_password_is_reported_without_the_password(mariadb: Db) -> None:
    wrong = "not-the-password-7f3a"
    with pytest.raises(SchemaStateUnavailable) as caught:
        read_schema_state(mariadb.target, wrong)
    assert caught.value.reason == "DatabaseUnreachable"
    assert wrong not in caught.value.message and mariadb.password not in caught.value.message
    assert mariadb.target.name in caught.value.message


def test_an_unreachable_server_is_reported(mariadb: Db) -> None:
    from hivecat.local.net import free_port

    target = SqlTarget("mysql", "127.0.0.1", mariadb.target.database, mariadb.target.user, free_port())
    with pytest.raises(SchemaStateUnavailable) as caught:
        read_schema_state(target, mariadb.password)
    assert caught.value.reason == "DatabaseUnreachable"
    assert mariadb.password not in caught.value.message


# --- no password on any command line: what `ps` shows in the pod, sampled from /proc while it runs ----------

def assert_no_password_in(command_lines: set[bytes], password: str, program: str) -> None:
    assert any(program.encode() in line for line in command_lines), f"never saw {program} run"
    shown = (line.replace(b"\0", b" ").decode(errors="replace") for line in command_lines if password.encode() in line)
    leaking = ["..." + text[max(0, text.index(password) - 80):].replace(password, "<PASSWORD>")[:120] + "..."
               for text in shown]
    assert leaking == [], "the password is on these command lines:\n" + "\n".join(leaking)


@pytest.mark.parametrize("release", [HIVE3, HIVE4], ids=str)
def test_the_schema_jobs_processes_never_carry_the_password(mariadb: Db, release: HiveRelease,
                                                              tmp_path: Path) -> None:
    spec = make_spec(mariadb, release.version)
    container = job_container(spec, Init(release.schema_version))
    image, env = pod(tmp_path, release, spec, container, mariadb.password)
    job = image.start(container, env, tmp_path / "job.log")
    seen = watch(job, lambda: False)
    assert job.wait() == 0, (tmp_path / "job.log").read_text()[-3000:]
    assert_no_password_in(seen, mariadb.password, release.schema_tool)
    assert mariadb.password not in (tmp_path / "job.log").read_text()
    assert read_schema_state(mariadb.target, mariadb.password) == SchemaState(True, release.schema_version, 1)


@pytest.mark.parametrize("release", [HIVE3, HIVE4], ids=str)
def test_the_metastores_processes_never_carry_the_password(mariadb: Db, release: HiveRelease,
                                                           tmp_path: Path) -> None:
    """The Deployment's own command, on the schema the Job's command made: the metastore reaches its database
    (it answers a Thrift call only after reading the schema version there) while /proc is watched."""
    spec = make_spec(mariadb, release.version, warehouse=(tmp_path / "warehouse").as_uri())
    run_job_command(tmp_path / "job", release, mariadb, Init(release.schema_version))
    [server] = metastore_deployment(spec, "hash")["spec"]["template"]["spec"]["containers"]
    port = free_port()
    image, env = pod(tmp_path / "server", release, spec, server, mariadb.password, {STANDIN_PORT_ENV: str(port)})
    metastore = image.start(server, env, tmp_path / "metastore.log")
    try:
        seen = watch(metastore, lambda: probe_thrift("127.0.0.1", port, timeout=2).ok, timeout=240)
        assert metastore.poll() is None, (tmp_path / "metastore.log").read_text()[-3000:]
    finally:
        stop_process_group(metastore)
    assert_no_password_in(seen, mariadb.password, HMS_MAIN_CLASS)
    assert mariadb.password not in (tmp_path / "metastore.log").read_text()


# --- PostgreSQL -------------------------------------------------------------------------------------

def test_postgresql_init_then_upgrade_by_the_job_command(postgres: Db, tmp_path: Path) -> None:
    assert read_schema_state(postgres.target, postgres.password) == SchemaState(False, None, 0)
    run_job_command(tmp_path / "hive3", HIVE3, postgres, Init("3.1.0"))
    older = read_schema_state(postgres.target, postgres.password)
    assert older == SchemaState(True, "3.1.0", 1)
    decision = decide_schema(older, HIVE4.version)
    assert decision == Upgrade("3.1.0", "4.0.0")
    run_job_command(tmp_path / "hive4", HIVE4, postgres, decision)
    assert read_schema_state(postgres.target, postgres.password) == SchemaState(True, "4.0.0", 1)


def test_postgresql_newer_schema_is_refused(postgres: Db) -> None:
    _execute(postgres.url,
             'CREATE TABLE "DBS" ("DB_ID" BIGINT PRIMARY KEY, "NAME" VARCHAR(128))',
             'CREATE TABLE "VERSION" ("VER_ID" BIGINT PRIMARY KEY, "SCHEMA_VERSION" VARCHAR(127) NOT NULL)',
             'INSERT INTO "VERSION" VALUES (1, \'4.1.0\')')
    state = read_schema_state(postgres.target, postgres.password)
    assert state == SchemaState(True, "4.1.0", 1)
    decision = decide_schema(state, HIVE4.version)
    assert isinstance(decision, Refuse) and decision.reason == "SchemaNewerThanImage"
