"""The "Wrong FS" scenario on a kerberized cluster, through the operator, for real.

A real MIT KDC (support.kdc); a MiniDFSCluster secured as production secures it (support.secure_hdfs); and the
HiveCatalog's own metastore kerberized by its spec.kerberos: the operator's Deployment command, with the ConfigMap
the operator made (hive-site.xml with SASL and the metastore's principal, core-site.xml, the operator's krb5.conf)
and the keytab Secret's one key where the pod would mount it, runs Hive Metastore 3.1.3 in the stand-in image
(tests/support/hive_image.py; kwok runs no containers). The operator reaches that metastore over SASL GSSAPI as the
catalog's login (spec.kerberos.principal, from its own Secret), never with its default ticket cache, which holds
another principal's ticket. Spark SQL, configured from the catalog's client ConfigMap and logged in with its keytab,
writes a partitioned table to the kerberized HDFS through the metastore.

The namenode then comes back under a new address: Spark fails on every stale location until the ClusterStorage's
scan through the metastore's Thrift API (metastoreAccess Thrift, over SASL) finds the drift and repairs it, after
which Spark reads every row again. Before that, a keytab Secret without the key the catalog names is a condition
and nothing is deployed.
"""

from __future__ import annotations

import base64
from pathlib import Path

import sqlalchemy as sa
from kube.clients import Client

from hivecat.catalog.thrift.transport import metastore_client
from hivecat.local.net import free_port
from hivecat.local.scratch_db import drop_database
from support.hdfs import HdfsCluster, hadoop_jar_dir  # noqa: F401  (fixtures by name)
from support.kdc import Kdc, kdc  # noqa: F401  (fixture by name)
from support.kube_resources import apply, get, password_secret, status_of, wait_for, wait_reason
from support.policy import grant
from support.procs import processes
from support.sales_orders import spark_script
from support.secure_catalog import LOGIN_SECRET, METASTORE_PRINCIPAL, METASTORE_SECRET, KerberizedCatalog, keytab_secret
from support.secure_hdfs import kerberized_hdfs  # noqa: F401  (fixture by name)
from support.thrift_catalog import SECRET, catalog_manifest, serving

ROWS = "ROWS [(1, 'a', '2026-11-01'), (2, 'b', '2026-11-01'), (3, 'c', '2026-11-02'), (4, 'd', '2026-11-03')]"
SPARK_CLIENT = spark_script("write", "/warehouse/sales.db", before_read='spark.sql("REFRESH TABLE sales.orders")')
# A dead namenode must fail fast: Hadoop's IPC client retries a refused connection 10 times, 1 s apart.
FAST_FAIL = {"spark.hadoop.ipc.client.connect.max.retries": "0",
             "spark.hadoop.ipc.client.connect.max.retries.on.timeouts": "0",
             "spark.hadoop.ipc.client.connect.timeout": "2000"}


def storage(filesystem: str, repair: str) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": "main"},
            "spec": {"catalogRef": {"name": "sales"}, "filesystem": filesystem, "repair": repair,
                     "metastoreAccess": "Thrift"}}


def drift(kubectl: Client, namespace: str) -> dict:
    return status_of(kubectl, namespace, "main", "clusterstorage").get("drift") or {}


def rows(done) -> str:
    return next(line for line in done.stdout.splitlines() if line.startswith("ROWS"))


def test_wrong_fs_on_a_kerberized_cluster_is_found_and_repaired_over_sasl(
        kubectl: Client, namespace: str, run_operator, metastore_db: str, mariadb_server: str, kdc: Kdc,  # noqa: F811
        kerberized_hdfs: HdfsCluster, tmp_path: Path) -> None:  # noqa: F811
    hdfs = kerberized_hdfs
    security = hdfs.security
    assert security is not None
    url = sa.make_url(metastore_db)
    journal = f"{url.database}_journal"
    admin = sa.create_engine(mariadb_server)
    with admin.begin() as conn:  # repairs through Thrift are journaled in a database of the operator's
        conn.execute(sa.text(f"CREATE DATABASE `{journal}`"))
        for host in ("localhost", "127.0.0.1", "%"):
            conn.execute(sa.text(f"GRANT ALL PRIVILEGES ON `{journal}`.* TO '{url.username}'@'{host}'"))
    admin.dispose()
    try:
        login = KerberizedCatalog.made(kdc, f"etl-{namespace}", tmp_path)
        etl = login.principal
        intruder = kdc.principal(f"intruder-{namespace}")
        operator_cache = f"FILE:{tmp_path}/operator.cc"
        kdc.kinit(intruder, kdc.keytab(intruder, tmp_path / "intruder.keytab"), operator_cache)
        since = len(kdc.log.read_bytes())
        port = free_port()
        manifest = catalog_manifest("sales", metastore_db)
        manifest["spec"]["kerberos"] = login.spec
        # the metastore's own HDFS client (it makes the table's directories) needs the namenode's principal
        manifest["spec"]["configurations"] = [{"classification": "hive-site", "properties": {
            "dfs.namenode.kerberos.principal": security.service,
            "dfs.data.transfer.protection": security.protection}}]
        journal_url = url.set(database=journal).render_as_string(hide_password=False)
        operator = run_operator(namespace, env={**kdc.env, "KRB5CCNAME": operator_cache, "HIVECAT_JOURNAL_URL": journal_url,
                                     "HIVECAT_RECHECK_SECONDS": "2"},
                     grants={"metastoreAddresses": [{"catalog": "sales", "address": f"localhost:{port}"}],
                             "databases": [{"host": url.host}], "storage": [{"prefix": hdfs.uri}],
                             "kerberos": login.grants})

        # The metastore's keytab Secret without the key the catalog names: a condition, and no metastore.
        apply(kubectl, namespace, password_secret(SECRET, url.password), keytab_secret(LOGIN_SECRET, login.keytab),
              keytab_secret(METASTORE_SECRET, login.metastore_keytab, key="hive.keytab"), manifest)
        refused = wait_reason(kubectl, namespace, "sales", "SecretKeyNotFound")
        assert METASTORE_SECRET in refused["message"] and "'keytab'" in refused["message"]
        assert get(kubectl, namespace, "deployment", "sales-metastore") is None
        assert get(kubectl, namespace, "configmap", "sales-metastore-config") is None

        spark_kerberos = {**security.spark_conf(etl, login.keytab), **FAST_FAIL}
        with serving(kubectl, namespace, manifest, {(SECRET, "password"): url.password}, port, tmp_path,
                     lambda: apply(kubectl, namespace, *login.secrets()), spark_kerberos, host="localhost",
                     mounts=login.mounts, krb5_conf=kdc.krb5_conf.read_text()) as served:
            # Ready: the operator's probe got an answer over SASL, as the catalog's login (nothing else has asked
            # for the metastore's ticket yet), never as the ticket in its default cache
            wait_reason(kubectl, namespace, "sales", "Ready", timeout=120)
            assert f"{etl} for hive/localhost@HIVECAT.TEST" in kdc.issued(since)
            made = kubectl.json("get", "-n", namespace, "configmap", "sales-client")["data"]["hive-site.xml"]
            assert "hive.metastore.sasl.enabled" in made and METASTORE_PRINCIPAL in made
            (served.spark_conf / "core-site.xml").write_text(security.core_site(spark_kerberos))
            old = hdfs.uri
            assert rows(served.spark(SPARK_CLIENT, "write", old)) == ROWS

            apply(kubectl, namespace, storage(old, "DryRun"))
            wait_reason(kubectl, namespace, "main", "NoDrift", "Drifted", kind="clusterstorage", timeout=90)

            # The namenode comes back under another address; Spark fails on the stale locations.
            old_port = hdfs.rpc_port
            hdfs.stop()
            hdfs.start()
            new = hdfs.uri
            assert new != old
            grant(kubectl, namespace, "moved", storage=[{"prefix": new}])
            failed = served.spark(SPARK_CLIENT, "read", check=False)
            assert failed.returncode != 0 and f":{old_port}" in failed.stderr, failed.stderr[-3000:]

            # The operator finds the drift and repairs it through the metastore's Thrift API, over SASL.
            apply(kubectl, namespace, storage(new, "Auto"))
            repaired = wait_for("the repair", lambda: drift(kubectl, namespace).get("lastRepairRunId")
                                and drift(kubectl, namespace).get("driftedLocations") == 0
                                and drift(kubectl, namespace), timeout=120)
            assert repaired["lastRepairRewritten"] >= 4, repaired  # the table and its three partitions at least
            assert rows(served.spark(SPARK_CLIENT, "read")) == ROWS
            with metastore_client("localhost", port, login.sasl) as client:
                assert client.get_table("sales", "orders").sd.location == f"{new}/warehouse/sales.db/orders"
                assert all(p.sd.location.startswith(f"{new}/") for p in client.get_partitions("sales", "orders", -1))
            assert not [line for line in kdc.issued(since) if line.startswith(intruder)]
            # No keytab's bytes anywhere but its Secret: objects, status, Events, the operator's log, any command line.
            seen = [kubectl("get", "-n", namespace, "configmaps,events,hivecatalogs,clusterstorages,deployments,jobs",
                            "-o", "json").stdout.encode(), operator.log_path.read_bytes(),
                    b"\n".join(process.cmdline for process in processes())]
            for keytab in (login.keytab, login.metastore_keytab):
                data = keytab.read_bytes()
                for form in (base64.b64encode(data), data[-32:], data[-32:].hex().encode()):
                    assert not any(form in text for text in seen), keytab.name
    finally:
        drop_database(mariadb_server, journal)
