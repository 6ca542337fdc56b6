"""`hivecat relocate` on a kerberized Hive Metastore 3.1.3 (SASL GSSAPI, a real MIT KDC), on MariaDB.

Over Thrift, as a principal with its keytab (or a ticket cache) through SASL; by SQL on the same metastore's
database, read back through SASL. Each is undone. Every check reads the metastore through its SASL Thrift API as
an administrator principal (support.secure_metastore), never through the run under test. Logins that cannot
work are one line (exit 2) and change nothing."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from hmsclient.genthrift.hive_metastore.ttypes import Database, FieldSchema, Partition
from support.hive_metastores import StandaloneMetastore
from support.hms_tables import hive_table, storage_descriptor
from support.kdc import Kdc, kdc  # noqa: F401,F811  (fixture by name)
from support.secure_metastore import METASTORE_PRINCIPAL, kerberized_metastore
from support.services import unique_name

from hivecat.local.metastore import MetastoreDatabase
from hivecat.local.scratch_db import create_database, drop_database

OLD, NEW = "hdfs://nn:8020/warehouse", "hdfs://nn2:8020/warehouse"
DAYS = [f"2026-11-{d:02d}" for d in range(1, 21)]


@dataclass
class Secured:
    kdc: Kdc
    hms: StandaloneMetastore
    sql_url: str
    keytab: Path          # alice's
    work: Path

    def relocate(self, *args: str, catalog: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        login = [] if catalog else ["--metastore-principal", METASTORE_PRINCIPAL]
        return subprocess.run(
            [sys.executable, "-m", "hivecat", "relocate", "--catalog", catalog or self.hms.sasl_uri, *login, *args],
            capture_output=True, text=True, timeout=180,
            env={**os.environ, **self.kdc.env, "KRB5CCNAME": f"FILE:{self.work}/none.cc", **env})

    def as_alice(self) -> list[str]:
        return ["--principal", "alice", "--keytab", str(self.keytab)]

    def locations(self, db: str) -> dict[str, str]:
        with self.hms.client() as hms:
            found = {db: hms.get_database(db).locationUri}
            for name in hms.get_all_tables(db):
                found[name] = hms.get_table(db, name).sd.location
                for part in hms.get_partitions(db, name, -1):
                    found[f"{name}/{part.values[0]}"] = part.sd.location
        return found


@pytest.fixture(scope="module")
def secured(kdc: Kdc, mariadb_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    work = tmp_path_factory.mktemp("kerberized-hms")
    name = unique_name("hc_krb")
    sql_url = create_database(mariadb_server, name, latin1=True)
    url = sa.make_url(sql_url)
    database = MetastoreDatabase.mariadb(url.host, url.port or 3306, name, url.username, url.password)
    hms = kerberized_metastore(kdc, database, work / "hms", work / "fs")
    try:
        hms.start()
    except (RuntimeError, FileNotFoundError) as exc:
        drop_database(mariadb_server, name)
        pytest.fail(f"the kerberized metastore could not start: {exc}")
    print(f"kerberized HMS 3.1.3 timings: {hms.timings}")
    if not (work / "alice.keytab").exists():
        try:
            kdc.principal("alice")
        except RuntimeError as exc:
            if "already exists" not in str(exc):
                raise
    keytab = kdc.keytab("alice", work / "alice.keytab")
    try:
        yield Secured(kdc, hms, sql_url, keytab, work)
    finally:
        hms.stop()
        drop_database(mariadb_server, name)
        drop_database(mariadb_server, name + "_j")


@pytest.fixture
def lake(secured: Secured) -> Iterator[str]:
    db = unique_name("sales")
    with secured.hms.client() as hms:
        hms.create_database(Database(name=db, locationUri=f"{OLD}/{db}.db", parameters={}))
        hms.create_table(hive_table(db, "orders", f"{OLD}/{db}.db/orders", keys=[FieldSchema("dt", "string", "")]))
        hms.add_partitions([Partition(values=[day], dbName=db, tableName="orders",
                                      sd=storage_descriptor(f"{OLD}/{db}.db/orders/dt={day}")) for day in DAYS])
    yield db
    with secured.hms.client() as hms:
        hms.drop_database(db, True, True)


def moved(before: dict[str, str]) -> dict[str, str]:
    return {key: value.replace(OLD, NEW, 1) for key, value in before.items()}


def test_relocate_over_sasl_as_a_keytab_login_and_undo(secured: Secured, lake: str) -> None:
    before = secured.locations(lake)
    assert len(before) == 2 + len(DAYS)
    scope = ["--from", f"{OLD}/{lake}.db", "--to", f"{NEW}/{lake}.db", "--database", lake,
             "--journal-url", f"sqlite:///{secured.work}/journal-{lake}.db"]
    done = secured.relocate(*scope, *secured.as_alice(), "--output", "json")
    assert done.returncode == 0, done.stderr
    assert secured.locations(lake) == {k: v.replace(f"{OLD}/{lake}.db", f"{NEW}/{lake}.db") for k, v in before.items()}
    undone = secured.relocate("--undo", json.loads(done.stdout)["run_id"], "--journal-url",
                              f"sqlite:///{secured.work}/journal-{lake}.db", *secured.as_alice())
    assert undone.returncode == 0, undone.stderr
    assert secured.locations(lake) == before


def test_relocate_over_sasl_as_the_ticket_cache(secured: Secured, lake: str) -> None:
    cache = f"FILE:{secured.work}/alice-{lake}.cc"
    secured.kdc.kinit("alice", secured.keytab, cache)
    before = secured.locations(lake)
    done = secured.relocate("--from", f"{OLD}/{lake}.db", "--to", f"{NEW}/{lake}.db", "--database", lake,
                            "--journal-url", f"sqlite:///{secured.work}/journal-{lake}.db", KRB5CCNAME=cache)
    assert done.returncode == 0, done.stderr
    assert secured.locations(lake) == {k: v.replace(f"{OLD}/{lake}.db", f"{NEW}/{lake}.db") for k, v in before.items()}


def test_relocate_by_sql_is_served_by_the_kerberized_metastore(secured: Secured, lake: str) -> None:
    url = sa.make_url(secured.sql_url)
    catalog = f"mysql://{url.username}@{url.host}:{url.port or 3306}/{url.database}"
    before = secured.locations(lake)
    scope = ["--from", f"{OLD}/{lake}.db", "--to", f"{NEW}/{lake}.db", "--database", lake]
    done = secured.relocate(*scope, "--output", "json", catalog=catalog, HIVECAT_CATALOG_PASSWORD=url.password)
    assert done.returncode == 0, done.stderr
    assert secured.locations(lake) == {k: v.replace(f"{OLD}/{lake}.db", f"{NEW}/{lake}.db") for k, v in before.items()}
    undone = secured.relocate("--undo", json.loads(done.stdout)["run_id"], catalog=catalog,
                              HIVECAT_CATALOG_PASSWORD=url.password)
    assert undone.returncode == 0, undone.stderr
    assert secured.locations(lake) == before


# libfaketime (Debian's faketime, which setup installs): a process whose clock runs an hour ahead of the KDC's
FAKETIME = next(iter(glob.glob("/usr/lib/*/faketime/libfaketime.so.1")), None)


@pytest.mark.parametrize("case", ["no ticket", "unknown metastore principal", "wrong keytab", "plain thrift",
                                  "no metastore principal", "clock skew"])
def test_a_login_that_cannot_work_is_one_line_and_changes_nothing(secured: Secured, lake: str, case: str) -> None:
    before = secured.locations(lake)
    scope = ["--from", f"{OLD}/{lake}.db", "--to", f"{NEW}/{lake}.db", "--database", lake,
             "--journal-url", f"sqlite:///{secured.work}/journal-{lake}.db"]
    bob = secured.work / "bob-stale.keytab"
    if case == "wrong keytab" and not bob.exists():
        secured.kdc.keytab(secured.kdc.principal("bob-stale"), bob)
        secured.kdc.keytab("bob-stale", secured.work / "bob-newer.keytab")
    if case == "no ticket":
        done = secured.relocate(*scope)
        words = "there is no ticket"
    elif case == "unknown metastore principal":
        done = secured.relocate(*scope, *secured.as_alice(), "--metastore-principal", "hive/elsewhere@HIVECAT.TEST")
        words = "hive/elsewhere@HIVECAT.TEST: the service's principal is unknown to the KDC"
    elif case == "wrong keytab":
        done = secured.relocate(*scope, "--principal", "bob-stale", "--keytab", str(bob))
        words = "not the principal's current keys"
    elif case == "clock skew":
        if FAKETIME is None:
            pytest.skip("libfaketime is not installed (scripts/setup-system.sh installs Debian's faketime)")
        # MIT's clients learn the KDC's time from its first answer (kdc_timesync, on by default) and then work an
        # hour off; without it the login is refused
        lenient = secured.relocate(*scope, *secured.as_alice(), "--dry-run", LD_PRELOAD=FAKETIME, FAKETIME="+1h")
        assert lenient.returncode == 0, lenient.stderr
        strict = secured.work / "krb5-strict.conf"
        strict.write_text(secured.kdc.krb5_conf.read_text().replace("[libdefaults]\n", "[libdefaults]\n kdc_timesync = 0\n"))
        done = secured.relocate(*scope, *secured.as_alice(), LD_PRELOAD=FAKETIME, FAKETIME="+1h",
                                KRB5_CONFIG=str(strict))
        words = "this machine's clock and the KDC's differ by more than the allowed skew"
    elif case == "plain thrift":
        done = secured.relocate(*scope, catalog=secured.hms.sasl_uri)
        words = "cannot connect to the metastore at thrift://localhost"
    else:
        done = secured.relocate(*scope, *secured.as_alice(), catalog=secured.hms.sasl_uri)
        words = "needs --metastore-principal"
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], done.stderr
    assert secured.locations(lake) == before


def test_route_over_sasl(secured: Secured, lake: str) -> None:
    from hivecat.replication.registry import ClusterEntry, registry_document

    registry = secured.work / f"clusters-{lake}.json"
    registry.write_text(registry_document({"main": ClusterEntry("main", OLD), "dr": ClusterEntry("dr", NEW)}))
    done = subprocess.run(
        [sys.executable, "-m", "hivecat", "route", f"{lake}.orders", "--catalog", secured.hms.sasl_uri,
         "--metastore-principal", METASTORE_PRINCIPAL, *secured.as_alice(), "--clusters", str(registry)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, **secured.kdc.env, "KRB5CCNAME": f"FILE:{secured.work}/none.cc"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("main: main holds every input"), done.stdout


def test_a_keytab_login_outlives_its_tickets(secured: Secured) -> None:
    """A keytab login in a long-running process (the operator, a long copy) gets new tickets from its keytab once
    the old ones expired: the same login's probe works before and after, the KDC issuing it a new TGT. (Before
    `credentials` re-acquired expiring credentials, the second probe failed with krb5's "Ticket expired".)"""
    from hivecat.catalog.probes import probe_thrift
    from hivecat.catalog.targets import ThriftSasl
    from hivecat.kerberos.login import KerberosLogin

    kdc = secured.kdc
    principal = kdc.principal(unique_name("brief"))
    kdc.kadmin(f'modprinc -maxlife "3 seconds" {principal}')  # every ticket of it lives 3 s at most
    keytab = kdc.keytab(principal, secured.work / f"{principal.split('@')[0]}.keytab")
    login = ThriftSasl(KerberosLogin(principal, str(keytab)), METASTORE_PRINCIPAL)
    assert probe_thrift("localhost", secured.hms.port, sasl=login).ok
    time.sleep(4.5)  # every ticket of the first login has expired
    since = len(kdc.log.read_bytes())
    later = probe_thrift("localhost", secured.hms.port, sasl=login)
    assert later.ok, later.message
    assert [line for line in kdc.log.read_bytes()[since:].decode().splitlines()
            if "AS_REQ" in line and "ISSUE" in line and f"{principal} for krbtgt/" in line], "no new login"
