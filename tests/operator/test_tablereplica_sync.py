"""TableReplica syncs for real: Spark creates a partitioned Parquet table through a Hive Metastore 3.1.3 on
MariaDB (tests/support/thrift_catalog.py), its data in a local directory registered as ClusterStorage `main`;
the operator copies it to two other registered directories with the copy engine (the Local launcher: a child
process of the operator), checks every unit's manifest against the source, records the copies in the
metastore's partition parameters and reports them in status. A partition added by Spark is the only unit the
next sync copies. A partition dropped on the primary leaves copies that a sync marks and a sync after
spec.housekeeping.delay removes. A secondary whose copies run as Kubernetes Jobs gets a Job that kwok completes without
copying: nothing is recorded for it, and a failover to it is refused; likewise a SparkApplication that the
test completes as spark-operator would. A failover to a verified secondary
moves every location, and Spark reads every row from there with the primary's directory gone; Spark then
writes a new partition and a row into a copied one on the secondary. Deleting the TableReplica while failed
over waits for the failback, which copies those two units into new directories on the primary (the originals
untouched) and points the rest back at the originals; then it removes its bookkeeping and leaves the data
alone, and Spark reads every row, old and new.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.local.net import free_port
from hivecat.kinds import ANNOTATION_SYNC_NOW
from hivecat.replication.bookkeeping import REPLICA_PREFIX, replica_key
from hivecat.replication.housekeeping import MARK_NAME
from hivecat.workloads.copy_job import ANNOTATION_RUN, copy_name
from hmsclient import hmsclient
from kube.clients import Client
from support.crds import declared_status
from support.hive_metastores import HIVE3, release_home
from support.kube_resources import apply, events, get, status_of, wait_for, wait_reason
from support.location_dump import dump_locations
from support.notification_log import EventReader
from support.sales_orders import spark_script
from support.scrape import sample, scrape
from support.spark_crd import CRD_NAME as SPARK_CRD
from support.spark_crd import spark_application_crd
from support.thrift_catalog import served_catalog

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")
IMAGE = "registry.example.com/hivecat:1.0"
SPARK = spark_script("create", "/warehouse/sales.db", branches="""
    elif sys.argv[1] == "add":
        spark.sql("INSERT INTO sales.orders PARTITION (dt='2026-11-04') VALUES (5, 'e')")
    elif sys.argv[1] == "write-while-failed-over":  # a new partition, and a row into one that was copied
        spark.sql("INSERT INTO sales.orders PARTITION (dt) VALUES (6, 'f', '2026-11-05'), (7, 'g', '2026-11-02')")
""")


def storage(name: str, root: Path, job_image: str | None = None, spark_image: str | None = None) -> dict:
    spec: dict = {"catalogRef": {"name": "sales"}, "filesystem": f"file://{root}", "repair": "Off"}
    if job_image:
        spec["compute"] = {"type": "KubernetesJob", "job": {"image": job_image}}
    if spark_image:
        spec["compute"] = {"type": "SparkApplication", "sparkApplication": {"image": spark_image}}
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": name},
            "spec": spec}


def replica(sync: str | None = None, secondaries: list[str] | None = None, active: str | None = None,
            housekeeping: str | None = None) -> dict:
    metadata: dict = {"name": "orders"}
    if sync:
        metadata["annotations"] = {ANNOTATION_SYNC_NOW: sync}
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "TableReplica", "metadata": metadata,
            "spec": {"catalogRef": {"name": "sales"}, "database": "sales", "table": "orders", "primary": "main",
                     "secondaries": secondaries or ["dr1", "dr2"], "schedule": {"interval": "1h"},
                     **({"active": active} if active else {}),
                     **({"housekeeping": {"delay": housekeeping}} if housekeeping else {})}}


def sync_now(kubectl: Client, namespace: str, sync: str, what: str, **spec) -> dict:
    """Ask for a sync now and wait for its status."""
    before = status_of(kubectl, namespace, "orders", "tablereplica").get("lastRunId")
    apply(kubectl, namespace, replica(sync=sync, **spec))
    return wait_for(what, lambda: (s := status_of(kubectl, namespace, "orders", "tablereplica"))
                    .get("lastRunId") != before and s, timeout=120)


def path_of(location: str) -> str:
    """The path of a file: location, however spelt (Hive writes file:/p; the location engine keeps the form)."""
    assert location.startswith("file:"), location
    return "/" + location.removeprefix("file:").lstrip("/")


def table_parameters(port: int) -> dict[str, str]:
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        return dict(client.get_table("sales", "orders").parameters)


def partitions(port: int) -> dict[str, tuple[str, dict[str, str]]]:
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        return {p.values[0]: (p.sd.location, dict(p.parameters)) for p in client.get_partitions("sales", "orders", -1)}


def test_copies_recorded_in_the_metastore_new_partitions_only_and_bookkeeping_released(
        kubectl: Client, namespace: str, run_operator, metastore_db: str, journal: str, tmp_path: Path) -> None:
    roots = {name: tmp_path / "clusters" / name for name in ("main", "dr1", "dr2", "dr3", "dr4")}
    for root in roots.values():
        root.mkdir(parents=True)
    metrics_port = free_port()
    kubectl("apply", "-f", str(spark_application_crd()))
    kubectl("wait", "--for=condition=Established", "--timeout=30s", f"crd/{SPARK_CRD}")
    run_operator(namespace, env={"HIVECAT_ALLOWED_IMAGES": "registry.example.com/hivecat:*",
                                 "HIVECAT_JOURNAL_SCHEMA": journal,  # failovers are journaled there
                                 "HIVECAT_METRICS_PORT": str(metrics_port)},
                 grants={"storage": [{"prefix": f"file://{tmp_path / 'clusters'}"}]})
    with served_catalog(kubectl, namespace, metastore_db, tmp_path) as served:
        created = served.spark(SPARK, "create", f"file://{roots['main']}")
        assert "ROWS [(1, 'a', '2026-11-01'), (2, 'b', '2026-11-01'), (3, 'c', '2026-11-02'), (4, 'd', " \
               "'2026-11-03')]" in created.stdout
        apply(kubectl, namespace, *(storage(name, roots[name]) for name in ("main", "dr1", "dr2")))
        for name in ("main", "dr1", "dr2"):
            wait_reason(kubectl, namespace, name, "Registered", kind="clusterstorage", timeout=60)
        before = partitions(served.port)
        table_dir = roots["main"] / "warehouse" / "sales.db" / "orders"
        # Hive spells local locations file:/path (Hadoop's Path); the registry's filesystem is file:///path
        assert {location for location, _ in before.values()} == {f"file:{table_dir}/dt={d}" for d in DAYS}

        # The first sync: every unit copied to both secondaries, verified, recorded.
        apply(kubectl, namespace, replica())
        # in sync, and the copy runs' outcomes in (a pass may find every unit in sync while a copy's process still
        # exits; its outcome is the next pass's)
        status = wait_for("both copies in sync", lambda: (s := status_of(kubectl, namespace, "orders",
                                                                         "tablereplica")).get("inSync") == "2/2"
                          and all("lastOutcome" in r for r in s["replicas"] if r["role"] == "Secondary") and s,
                          timeout=120)
        first_run = status["lastRunId"]
        assert status["phase"] == "InSync" and status["active"] == "main" and status["lag"] == "0s"
        secondaries = {r["cluster"]: r for r in status["replicas"] if r["role"] == "Secondary"}
        for name in ("dr1", "dr2"):
            entry = secondaries[name]
            copy_dir = roots[name] / "warehouse" / "sales.db" / "orders"
            assert (entry["state"], entry["units"], entry["unitsTotal"], entry["lastOutcome"]) == (
                "InSync", 3, 3, "Succeeded")
            assert entry["location"] == f"file://{copy_dir}" and entry["bytes"] == entry["bytesCopied"] > 0
            for day in DAYS:
                source, copy = table_dir / f"dt={day}", copy_dir / f"dt={day}"
                assert (copy / MANIFEST_NAME).is_file()
                assert sorted(p.name for p in source.iterdir()) == sorted(
                    p.name for p in copy.iterdir() if p.name != MANIFEST_NAME)
                for data in source.iterdir():
                    assert (copy / data.name).read_bytes() == data.read_bytes()
        recorded = partitions(served.port)
        for day in DAYS:
            location, parameters = recorded[day]
            assert location == before[day][0]  # SDS.LOCATION stays on the active cluster
            for name in ("dr1", "dr2"):
                assert parameters[replica_key(name, "location")] == \
                    f"file://{roots[name]}/warehouse/sales.db/orders/dt={day}"
                assert parameters[replica_key(name, "checksum")].startswith("sha256:")
                assert parameters[replica_key(name, "syncedAt")].endswith("Z")
        synced = wait_for("the Synced Event", lambda: events(kubectl, namespace, "Synced"))
        assert first_run in synced[0]["message"] and "dr1: 3/3 units in sync, 3 recorded" in synced[0]["message"]
        conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
        assert conditions == {"Ready": ("True", "ActiveAvailable"), "InSync": ("True", "AllUnitsVerified"),
                              "Degraded": ("False", "NoProblems")}
        # Every status field the operator writes is declared in the CRD, and the printer columns show it.
        assert set(status) - {"kopf"} <= declared_status("tablereplicas.yaml")
        assert all(set(r) <= declared_status("tablereplicas.yaml", "replicas") for r in status["replicas"])
        table = kubectl("get", "-n", namespace, "tablereplica", "orders").stdout
        assert "2/2" in table and "InSync" in table and "0s" in table
        # The operator's /metrics says the same as status.
        samples = scrape(metrics_port)
        for name in ("dr1", "dr2"):
            labels = {"namespace": namespace, "tablereplica": "orders", "cluster": name}
            assert sample(samples, "hivecat_copy_bytes_total", **labels) == secondaries[name]["bytesCopied"]
            assert sample(samples, "hivecat_copy_files_total", **labels) == sum(
                len(list((table_dir / f"dt={day}").iterdir())) for day in DAYS)
            assert sample(samples, "hivecat_replica_in_sync_ratio", **labels) == 1.0
            assert sample(samples, "hivecat_replica_lag_seconds", **labels) == 0.0
        assert sample(samples, "hivecat_run_duration_seconds_count", kind="TableReplica", run="sync") >= 1

        # A partition added on the primary: the next sync (asked for now) copies it and nothing else.
        manifests = {(name, day): (roots[name] / "warehouse/sales.db/orders" / f"dt={day}" / MANIFEST_NAME
                                   ).read_bytes() for name in ("dr1", "dr2") for day in DAYS}
        served.spark(SPARK, "add")
        apply(kubectl, namespace, replica(sync="1"))
        status = wait_for("the new partition in sync", lambda: (s := status_of(kubectl, namespace, "orders",
                                                                               "tablereplica"))
                          .get("lastRunId") != first_run and s.get("inSync") == "2/2" and s, timeout=120)
        assert [(r["units"], r["unitsTotal"]) for r in status["replicas"] if r["role"] == "Secondary"] == [(4, 4)] * 2
        for (name, day), manifest in manifests.items():  # the units in sync before were not rewritten
            assert (roots[name] / "warehouse/sales.db/orders" / f"dt={day}" / MANIFEST_NAME).read_bytes() == manifest
        recorded = partitions(served.port)
        assert replica_key("dr2", "location") in recorded["2026-11-04"][1]

        # Housekeeping: a partition dropped on the primary (its data kept there) leaves copies on dr1 and dr2,
        # which the next sync marks and a sync after spec.housekeeping.delay removes.
        scratch = table_dir / "dt=2026-10-31"
        scratch.mkdir()
        for data in (table_dir / "dt=2026-11-01").iterdir():
            (scratch / data.name).write_bytes(data.read_bytes())
        with hmsclient.HMSClient(host="127.0.0.1", port=served.port) as client:
            template = client.get_partition("sales", "orders", ["2026-11-01"])
            template.sd.location, template.values, template.parameters = f"file:{scratch}", ["2026-10-31"], {}
            client.add_partitions([template])
        status = sync_now(kubectl, namespace, "h1", "the scratch partition copied", housekeeping="1s")
        copies = [roots[name] / "warehouse/sales.db/orders/dt=2026-10-31" for name in ("dr1", "dr2")]
        assert status.get("inSync") == "2/2" and all((copy / MANIFEST_NAME).is_file() for copy in copies)
        with hmsclient.HMSClient(host="127.0.0.1", port=served.port) as client:
            assert client.drop_partition("sales", "orders", ["2026-10-31"], False)
        status = sync_now(kubectl, namespace, "h2", "the dropped partition's copies marked", housekeeping="1s")
        assert [(r["unitsDropped"], r["unitsRemoved"]) for r in status["replicas"] if r["role"] == "Secondary"] \
            == [(1, 0)] * 2
        assert all((copy / MARK_NAME).is_file() and (copy / MANIFEST_NAME).is_file() for copy in copies)
        time.sleep(1)
        status = sync_now(kubectl, namespace, "h3", "the dropped partition's copies removed", housekeeping="1s")
        assert [(r["unitsDropped"], r["unitsRemoved"]) for r in status["replicas"] if r["role"] == "Secondary"] \
            == [(0, 1)] * 2
        assert not any(copy.exists() for copy in copies) and (scratch / data.name).is_file()  # main's data stays
        assert all((roots[name] / "warehouse/sales.db/orders/dt=2026-11-01" / MANIFEST_NAME).is_file()
                   for name in ("dr1", "dr2"))
        shutil.rmtree(scratch)

        # A secondary whose copies run as Kubernetes Jobs: kwok completes the Job without copying anything
        # (it runs no containers), so nothing may be recorded for that secondary, and status says why.
        apply(kubectl, namespace, storage("dr3", roots["dr3"], job_image=IMAGE))
        wait_reason(kubectl, namespace, "dr3", "Registered", kind="clusterstorage", timeout=60)
        synced_before = status["lastRunId"]
        apply(kubectl, namespace, replica(sync="2", secondaries=["dr1", "dr2", "dr3"]))
        status = wait_for("the Job's sync", lambda: (s := status_of(kubectl, namespace, "orders", "tablereplica"))
                          .get("lastRunId") != synced_before and s.get("inSync") == "2/3" and s, timeout=180)
        dr3 = next(r for r in status["replicas"] if r["cluster"] == "dr3")
        assert (dr3["units"], dr3["unitsTotal"], dr3["state"], dr3["lastOutcome"]) == (0, 4, "Stale", "Unverified")
        degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
        assert degraded["status"] == "True"
        assert "dr3: the copy ended without error, but 4 units are not verified" in degraded["message"]
        assert not [k for _, parameters in partitions(served.port).values() for k in parameters
                    if k.startswith(replica_key("dr3", ""))]
        jobs = kubectl.json("get", "-n", namespace, "jobs", "-l", "hivecatalog.io/tablereplica=orders")["items"]
        assert len(jobs) == 1 and jobs[0]["metadata"]["ownerReferences"][0]["name"] == "orders"
        plan_uri = jobs[0]["metadata"]["annotations"]["hivecatalog.io/copy-plan"]
        assert plan_uri.startswith(f"file://{roots['dr3']}/.hivecat/plans/{namespace}/orders/")
        container = jobs[0]["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == IMAGE and plan_uri in container["command"]
        plan = json.loads(Path(plan_uri.removeprefix("file://")).read_text())  # the plan the Job was given
        assert len(plan["units"]) == 4 and all(u["target"].startswith(f"file://{roots['dr3']}/") for u in plan["units"])
        recorded = partitions(served.port)

        # Failover to dr3, where nothing is verified: refused, and not one location in the metastore changes.
        dump = dump_locations(metastore_db)
        apply(kubectl, namespace, replica(sync="3", secondaries=["dr1", "dr2", "dr3"], active="dr3"))
        refused = wait_reason(kubectl, namespace, "orders", "FailoverRefused", kind="tablereplica", timeout=120)
        assert "failover to dr3 refused, nothing was changed: 4 of 4 units not whole and current on dr3" \
            in refused["message"]
        assert dump_locations(metastore_db) == dump

        # A secondary whose copies run as SparkApplications: spark-operator's CRD is installed (before the
        # operator started, so kopf watches them) but no spark-operator runs, so the test completes the
        # application as it would, without any copy: nothing is recorded for dr4 either.
        apply(kubectl, namespace, storage("dr4", roots["dr4"], spark_image=IMAGE))
        wait_reason(kubectl, namespace, "dr4", "Registered", kind="clusterstorage", timeout=60)
        synced_before = ended_sync(kubectl, namespace, "orders")
        apply(kubectl, namespace, replica(sync="5", secondaries=["dr1", "dr2", "dr4"]))
        app_name = copy_name("orders", "dr4")
        app = wait_for("the SparkApplication", lambda: get(kubectl, namespace, SPARK_CRD, app_name), timeout=120)
        assert app["spec"]["type"] == "Python" and app["spec"]["image"] == IMAGE
        assert app["metadata"]["ownerReferences"][0]["name"] == "orders"
        assert "--plan-digest" in app["spec"]["arguments"]
        # While it runs, status names the run in flight: the run the next pass reads back (never another).
        run_id = app["metadata"]["annotations"][ANNOTATION_RUN]
        copying = wait_for("dr4 Copying with the application's run", lambda: next(
            (r for r in status_of(kubectl, namespace, "orders", "tablereplica").get("replicas") or ()
             if r["cluster"] == "dr4" and r.get("state") == "Copying"), None), timeout=60)
        assert copying["copyRunId"] == run_id
        kubectl("patch", "-n", namespace, SPARK_CRD, app_name, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": {"applicationState": {"state": "COMPLETED"}}}))
        status = wait_for("the SparkApplication's sync", lambda: (s := status_of(kubectl, namespace, "orders",
                                                                                 "tablereplica"))
                          .get("lastRunId") != synced_before and s, timeout=120)
        dr4 = next(r for r in status["replicas"] if r["cluster"] == "dr4")
        assert (dr4["units"], dr4["state"], dr4["lastOutcome"]) == (0, "Stale", "Unverified")
        assert not [k for _, parameters in partitions(served.port).values() for k in parameters
                    if k.startswith(replica_key("dr4", ""))]

        # Failover to dr1: every location moves to its verified copies, and with the primary's directory gone,
        # Spark reads every row through the metastore from dr1.
        synced_before = ended_sync(kubectl, namespace, "orders")
        reader = EventReader([str(release_home(HIVE3) / "*")])
        _, logged_before = reader.read(served.port)
        apply(kubectl, namespace, replica(sync="4", active="dr1"))
        status = wait_for("the failover", lambda: (s := status_of(kubectl, namespace, "orders", "tablereplica"))
                          .get("active") == "dr1" and s.get("lastRunId") != synced_before and s, timeout=120)
        assert status["primary"] == "main" and status["lastFailoverTime"]
        assert [(r["cluster"], r["role"]) for r in status["replicas"]][:2] == [("dr1", "Active"), ("main", "Primary")]
        failed_over = wait_for("the FailedOver Event", lambda: events(kubectl, namespace, "FailedOver"))
        assert "4 units verified, 5 locations rewritten" in failed_over[0]["message"]
        samples = scrape(metrics_port)
        assert sample(samples, "hivecat_locations_rewritten_total", kind="partition", outcome="rewritten") == 4
        assert sample(samples, "hivecat_locations_rewritten_total", kind="table", outcome="rewritten") == 1
        assert sample(samples, "hivecat_reconcile_errors_total", kind="TableReplica", reason="FailoverRefused") >= 1
        dr1_table = roots["dr1"] / "warehouse" / "sales.db" / "orders"
        assert {path_of(location) for location, _ in partitions(served.port).values()} == {
            f"{dr1_table}/dt={day}" for day in (*DAYS, "2026-11-04")}
        assert table_parameters(served.port)[replica_key("main", "readOnly")] == "true"  # for cooperating writers
        # The switch, written straight into the metastore's database, is in its notification log as the alters it
        # made (what Impala or Hive replication read), decoded by Hive's own deserializer through Thrift.
        logged, _ = reader.read(served.port, logged_before)
        switched = {e["afterValues"] for e in logged if e["type"] == "ALTER_PARTITION" and e["after"]
                    and path_of(e["after"]).startswith(str(dr1_table))}
        assert switched == {f"[{day}]" for day in (*DAYS, "2026-11-04")}, logged
        assert [e for e in logged if e["type"] == "ALTER_TABLE" and path_of(e["after"] or "") == str(dr1_table)]
        away = roots["main"] / "away"
        table_dir.rename(away)
        try:
            read = served.spark(SPARK, "read")
            assert "ROWS [(1, 'a', '2026-11-01'), (2, 'b', '2026-11-01'), (3, 'c', '2026-11-02'), (4, 'd', " \
                   "'2026-11-03'), (5, 'e', '2026-11-04')]" in read.stdout
        finally:
            away.rename(table_dir)

        # Written while failed over: a new partition and a row in a copied one, both on dr1.
        originals = {p: p.read_bytes() for p in table_dir.rglob("*") if p.is_file()}
        served.spark(SPARK, "write-while-failed-over")

        # Deleting while failed over waits for a failback; spec.active back on the primary fails back: the two
        # units written on dr1 are copied to new directories on main, the others go back to their originals,
        # which are never written; then the deletion goes on.
        kubectl("delete", "-n", namespace, "tablereplica", "orders", "--wait=false")
        wait_reason(kubectl, namespace, "orders", "DeletionBlocked", kind="tablereplica", timeout=60)
        assert {path_of(location) for location, _ in partitions(served.port).values()} == {
            f"{dr1_table}/dt={day}" for day in (*DAYS, "2026-11-04", "2026-11-05")}
        apply(kubectl, namespace, replica())
        wait_for("the TableReplica gone", lambda: get(kubectl, namespace, "tablereplica", "orders") is None,
                 timeout=120)
        failed_back = events(kubectl, namespace, "FailedBack")
        assert "2 units changed while failed over were copied to new directories" in failed_back[0]["message"]
        after = partitions(served.port)
        home = roots["main"] / ".hivecat" / "failback" / namespace / "orders" / "g1" / "warehouse/sales.db/orders"
        assert {day: path_of(location) for day, (location, _) in after.items()} == {
            **{day: f"{table_dir}/dt={day}" for day in ("2026-11-01", "2026-11-03", "2026-11-04")},
            **{day: f"{home}/dt={day}" for day in ("2026-11-02", "2026-11-05")}}
        assert {p: p.read_bytes() for p in table_dir.rglob("*") if p.is_file()} == originals
        assert (home / "dt=2026-11-05" / MANIFEST_NAME).is_file()
        assert not [k for _, parameters in after.values() for k in parameters if k.startswith(REPLICA_PREFIX)]
        assert not [k for k in table_parameters(served.port) if k.startswith(REPLICA_PREFIX)]
        for name in ("dr1", "dr2"):
            assert (roots[name] / "warehouse/sales.db/orders/dt=2026-11-04" / MANIFEST_NAME).is_file()
        read = served.spark(SPARK, "read")
        assert "ROWS [(1, 'a', '2026-11-01'), (2, 'b', '2026-11-01'), (3, 'c', '2026-11-02'), (4, 'd', " \
               "'2026-11-03'), (5, 'e', '2026-11-04'), (6, 'f', '2026-11-05'), (7, 'g', '2026-11-02')]" in read.stdout


def ended_sync(kubectl: Client, namespace: str, name: str) -> str:
    """The run id of the last sync once none is in flight: a sync spans passes while a copy runs, and its end
    changes lastRunId; a test that waits for lastRunId to change must not be answered by the previous sync."""
    status = wait_for("the sync in flight to end", lambda: (s := status_of(kubectl, namespace, name, "tablereplica"))
                      and not any(r.get("state") == "Copying" for r in s.get("replicas") or ()) and s, timeout=120)
    return status["lastRunId"]
