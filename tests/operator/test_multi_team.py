"""Two teams, one operator, for real: the operator process watches both namespaces with the chart's RBAC; team B
runs a Hive Metastore 3.1.3 on MariaDB (tests/support/thrift_catalog.py) and replicates a table to its DR
directory; team A, with its own namespace and CatalogPolicy, tries what a review of the operator found a CR
author could do to another team. Each test asserts at the user's level: B's files byte for byte (sha256), B's
metastore dump, a table's location pass after pass, and that no status of A names B's resources or paths.
Before owners, claims and policies, each of them failed (the closing note of issue 26 has what each showed)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore.ttypes import Database, FieldSchema, Partition
from kube.clients import Client

from hivecat import reasons
from hivecat.kinds import ANNOTATION_SYNC_NOW
from support.hms_tables import hive_table, storage_descriptor
from support.kube_resources import apply, status_of, wait_for, wait_reason, wait_taken
from support.location_dump import dump_locations
from support.policy import COMPUTE, FAST, grant
from support.thrift_catalog import served_catalog

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")


def write_table(client: hmsclient.HMSClient, database: str, table_dir: Path, content: bytes) -> None:
    """A partitioned table through the metastore, its Parquet files written here."""
    for day in DAYS:
        (table_dir / f"dt={day}").mkdir(parents=True)
        pq.write_table(pa.table({"v": [content.decode() + day]}), table_dir / f"dt={day}" / "part-0.parquet")
    client.create_database(Database(database, "", f"file://{table_dir.parent}", {}))
    client.create_table(hive_table(database, "orders", f"file://{table_dir}", keys=[FieldSchema("dt", "string", "")]))
    client.add_partitions([Partition(values=[day], dbName=database, tableName="orders", parameters={},
                                     sd=storage_descriptor(f"file://{table_dir}/dt={day}")) for day in DAYS])


def hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def storage(name: str, filesystem: str, catalog: str = "sales", **spec: object) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": name},
            "spec": {"catalogRef": {"name": catalog}, "filesystem": filesystem, "repair": "Off", **spec}}


def replica(name: str, database: str, secondaries: list[str], sync: str = "", **spec: object) -> dict:
    metadata: dict = {"name": name, **({"annotations": {ANNOTATION_SYNC_NOW: sync}} if sync else {})}
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "TableReplica", "metadata": metadata,
            "spec": {"catalogRef": {"name": "sales"}, "database": database, "table": "orders", "primary": "main",
                     "secondaries": secondaries, "schedule": {"interval": "1h"}, **spec}}


def sql_catalog(db_url: str) -> dict:
    """Team A's own HiveCatalog over the same metastore database (the administrator granted both the host)."""
    import sqlalchemy as sa
    url = sa.make_url(db_url)
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "metadata": {"name": "sales"},
            "spec": {"database": {"type": "mariadb", "host": url.host, "port": url.port or 3306,
                                  "name": url.database, "user": url.username, "passwordSecretRef": {"name": "db"}},
                     "metastore": {"warehouseDir": "file:///tmp/unused"}}}


def everything_of(kubectl: Client, namespace: str) -> str:
    """Every hivecat resource and Event of a namespace, as text (what its team can read)."""
    return json.dumps([kubectl.json("get", "-n", namespace, "hivecatalogs,clusterstorages,tablereplicas"),
                       kubectl.json("get", "-n", namespace, "events")])


def test_another_teams_copies_are_never_overwritten_and_its_storage_never_taken(
        kubectl: Client, namespace: str, run_operator, second_namespace: str, metastore_db: str,
        tmp_path: Path) -> None:
    team_b, team_a = namespace, second_namespace
    b_main, a_main, dr = tmp_path / "b-main", tmp_path / "a-main", tmp_path / "dr"
    dr.mkdir()
    run_operator(f"{team_b},{team_a}", grants=None)
    grant(kubectl, team_b, storage=[{"prefix": f"file://{b_main}"}, {"prefix": f"file://{dr}", "shared": True}],
          databases=[{"host": "127.0.0.1"}], compute=COMPUTE, minimums=FAST)
    # Team A may use its own directory and the database host, not B's DR directory (yet).
    grant(kubectl, team_a, storage=[{"prefix": f"file://{a_main}"}], databases=[{"host": "127.0.0.1"}],
          compute=COMPUTE, minimums=FAST)
    with served_catalog(kubectl, team_b, metastore_db, tmp_path) as served:
        with hmsclient.HMSClient(host="127.0.0.1", port=served.port) as client:
            write_table(client, "sales", b_main / "warehouse" / "sales.db" / "orders", b"team b's rows")
            # Team A's own table, whose copies would land exactly where B's do on the DR directory.
            write_table(client, "teama", a_main / "warehouse" / "sales.db" / "orders", b"team a's other rows")
        apply(kubectl, team_b, storage("main", f"file://{b_main}"), storage("dr", f"file://{dr}"),
              replica("orders", "sales", ["dr"]))
        wait_for("B's copies in sync", lambda: status_of(kubectl, team_b, "orders", "tablereplica")
                 .get("inSync") == "1/1", timeout=180)
        b_copies = hashes(dr)
        assert len([name for name in b_copies if name.endswith("part-0.parquet")]) == len(DAYS)
        b_dump = dump_locations(metastore_db)

        # A registers B's DR directory (not granted) and replicates its table of the same name there.
        password = kubectl.json("get", "-n", team_b, "secret", "metastore-db")["data"]["password"]
        apply(kubectl, team_a, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                                "data": {"password": password}},
              sql_catalog(metastore_db), storage("main", f"file://{a_main}"), storage("dr", f"file://{dr}"),
              replica("orders", "teama", ["dr"], sync="first", housekeeping={"delay": "1s"}))
        wait_taken(kubectl, team_a, "dr", "clusterstorage")
        wait_taken(kubectl, team_a, "orders", "tablereplica", timeout=120)
        assert hashes(dr) == b_copies, "team A's TableReplica changed team B's copies"
        wait_reason(kubectl, team_a, "dr", reasons.STORAGE_NOT_ALLOWED, kind="clusterstorage")
        # Granted, but B registered it first and A's grant does not share it.
        grant(kubectl, team_a, "dr", storage=[{"prefix": f"file://{dr}"}])
        claimed = wait_reason(kubectl, team_a, "dr", reasons.STORAGE_CLAIM_CONFLICT, kind="clusterstorage")
        assert team_b not in claimed["message"]
        # Shared by the administrator for both: A registers it, and its TableReplica of a table of the same
        # name, housekept after a second, runs pass after pass. B's copies are never overwritten or removed.
        grant(kubectl, team_a, "dr", storage=[{"prefix": f"file://{dr}", "shared": True}])
        wait_reason(kubectl, team_a, "dr", "Registered", kind="clusterstorage")
        before = None
        for attempt in range(5):
            apply(kubectl, team_a, replica("orders", "teama", ["dr"], sync=str(attempt), housekeeping={"delay": "1s"}))
            status = wait_for(f"A's pass {attempt}", lambda: (s := status_of(kubectl, team_a, "orders",
                                                                            "tablereplica")).get("lastRunId")
                              not in (None, before) and s, timeout=120)
            before = status["lastRunId"]
            assert hashes(dr) == b_copies, f"pass {attempt} of team A's TableReplica changed team B's copies"
        degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
        assert "owned by a TableReplica of another namespace" in degraded["message"], degraded
        assert status["inSync"] == "0/1"
        assert dump_locations(metastore_db) == b_dump  # A recorded nothing in B's table
        # B's own passes still find its copies whole.
        apply(kubectl, team_b, replica("orders", "sales", ["dr"], sync="again"))
        wait_for("B in sync again", lambda: status_of(kubectl, team_b, "orders", "tablereplica")
                 .get("inSync") == "1/1", timeout=120)
        assert hashes(dr) == b_copies
        assert team_b not in everything_of(kubectl, team_a) and str(b_main) not in everything_of(kubectl, team_a)


def test_a_metastore_address_annotation_no_longer_points_the_operator_at_another_teams_metastore(
        kubectl: Client, namespace: str, run_operator, second_namespace: str, metastore_db: str,
        scratch_mariadb: str, tmp_path: Path) -> None:
    team_b, team_a = namespace, second_namespace
    b_main, a_main = tmp_path / "b-main", tmp_path / "a-main"
    a_main.mkdir()
    # With a journal database, repairs through Thrift are allowed: before, A's repair rewrote B's catalog.
    run_operator(f"{team_b},{team_a}", env={"HIVECAT_JOURNAL_URL": scratch_mariadb}, grants=None)
    grant(kubectl, team_b, storage=[{"prefix": f"file://{b_main}"}], databases=[{"host": "127.0.0.1"}],
          compute=COMPUTE, minimums=FAST)
    grant(kubectl, team_a, storage=[{"prefix": f"file://{a_main}"}], compute=COMPUTE, minimums=FAST)
    with served_catalog(kubectl, team_b, metastore_db, tmp_path) as served:
        with hmsclient.HMSClient(host="127.0.0.1", port=served.port) as client:
            write_table(client, "sales", b_main / "warehouse" / "sales.db" / "orders", b"team b's rows")
        b_dump = dump_locations(metastore_db)
        # Team A's catalog names B's metastore in the old annotation; its ClusterStorage scans through Thrift,
        # repairs automatically, and calls B's location prefix an alias of its own directory.
        apply(kubectl, team_a,
              {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog",
               "metadata": {"name": "dev", "annotations": {"hivecatalog.io/metastore-address":
                                                           f"127.0.0.1:{served.port}"}},
               "spec": {"database": {"type": "derby"}}},
              storage("main", f"file://{a_main}", catalog="dev", aliases=[f"file://{b_main}"], repair="Auto",
                      metastoreAccess="Thrift"))
        drift = wait_for("A's scan", lambda: next((c for c in status_of(kubectl, team_a, "main", "clusterstorage")
                                                  .get("conditions") or () if c["type"] == "Drifted"), None),
                         timeout=120)
        assert dump_locations(metastore_db) == b_dump  # (before, the first scan rewrote B's locations)
        # nothing of B's catalog shows in A's status or Events (A named B's prefix in its spec: only there)
        statuses = json.dumps([i.get("status") for i in kubectl.json("get", "-n", team_a,
                                                                     "hivecatalogs,clusterstorages")["items"]])
        assert str(b_main) not in statuses and "sales.db" not in everything_of(kubectl, team_a)
        assert drift["status"] == "Unknown" and drift["reason"] == "MetastoreUnreachable", drift
        assert f"dev-metastore.{team_a}.svc" in drift["message"]  # its own Service, not the annotation's address


def test_a_second_table_replica_of_a_table_is_refused_and_the_location_stays(
        kubectl: Client, namespace: str, run_operator, metastore_db: str, journal: str, tmp_path: Path) -> None:
    main, dr = tmp_path / "main", tmp_path / "dr"
    dr.mkdir()
    run_operator(namespace, env={"HIVECAT_JOURNAL_SCHEMA": journal},
                 grants={"storage": [{"prefix": f"file://{tmp_path}"}]})
    with served_catalog(kubectl, namespace, metastore_db, tmp_path) as served:
        table_dir = main / "warehouse" / "sales.db" / "orders"
        with hmsclient.HMSClient(host="127.0.0.1", port=served.port) as client:
            write_table(client, "sales", table_dir, b"rows")
        apply(kubectl, namespace, storage("main", f"file://{main}"), storage("dr", f"file://{dr}"),
              replica("orders", "sales", ["dr"], active="main"))
        wait_for("the copies in sync", lambda: status_of(kubectl, namespace, "orders", "tablereplica")
                 .get("inSync") == "1/1", timeout=180)
        # A second TableReplica of the same table wants it failed over: each would switch it back and forth.
        apply(kubectl, namespace, replica("orders-dr", "sales", ["dr"], active="dr"))
        wait_taken(kubectl, namespace, "orders-dr", "tablereplica", timeout=120)

        def location() -> str:
            with hmsclient.HMSClient(host="127.0.0.1", port=served.port) as client:
                return client.get_table("sales", "orders").sd.location

        first = status_of(kubectl, namespace, "orders", "tablereplica")["lastRunId"]
        seen = {first}
        for attempt in range(5):  # five passes of each, the location after each
            apply(kubectl, namespace, replica("orders", "sales", ["dr"], active="main", sync=f"a{attempt}"),
                  replica("orders-dr", "sales", ["dr"], active="dr", sync=f"b{attempt}"))
            wait_for(f"pass {attempt}", lambda: status_of(kubectl, namespace, "orders", "tablereplica")
                     .get("lastRunId") not in seen, timeout=120)
            seen.add(status_of(kubectl, namespace, "orders", "tablereplica")["lastRunId"])
            wait_taken(kubectl, namespace, "orders-dr", "tablereplica", timeout=120)
            assert location() in (f"file:{table_dir}", f"file://{table_dir}"), f"pass {attempt}: {location()}"
        refused = wait_reason(kubectl, namespace, "orders-dr", reasons.TABLE_ALREADY_REPLICATED, kind="tablereplica")
        assert "TableReplica orders" in refused["message"]
        assert "lastFailoverRunIds" not in status_of(kubectl, namespace, "orders-dr", "tablereplica")
        # Deleting the refused one leaves the first one's bookkeeping in the catalog.
        kubectl("delete", "-n", namespace, "tablereplica", "orders-dr", "--wait", "--timeout=60s")
        with hmsclient.HMSClient(host="127.0.0.1", port=served.port) as client:
            parameters = [dict(p.parameters) for p in client.get_partitions("sales", "orders", -1)]
        assert all("hivecat.replica.dr.location" in p for p in parameters), parameters
        assert os.listdir(dr)
