"""A TableReplica whose secondary is a kerberized HDFS, through the operator, for real.

A real MIT KDC (support.kdc) and a MiniDFSCluster secured as production secures it (Kerberos, SASL data transfer,
HTTPS only: support.secure_hdfs). The ClusterStorage `krbdr` names its login (spec.kerberos: a principal and the
Secret of its keytab); the CatalogPolicy grants exactly that principal and Secret; the operator is given the
realm (KRB5_CONFIG, as the chart's kerberos.krb5Conf) and the namenode's CA, and no ticket of its own: its default
ticket cache holds another principal's ticket, which must never be used. The catalog's metastore is kerberized
too (HiveCatalog spec.kerberos, support.secure_catalog): the table is registered, and Spark reads it, over SASL. The Local launcher's copy writes every
partition to HDFS; Hadoop's own client (FsShell, over RPC as the ticket of a kinit) reads each back byte for byte
and shows it owned by the ClusterStorage's principal. After a failover to krbdr, Spark SQL reads every row from
the kerberized HDFS (spark.kerberos.* with a keytab) with the primary's directory gone; it then fails back.

A second ClusterStorage naming a principal the policy does not grant is refused (KerberosNotAllowed), and its
Secret is never read.
"""

from __future__ import annotations

from pathlib import Path

from hivecat.catalog.thrift.transport import metastore_client
from kube.clients import Client
from support.hdfs import HdfsCluster, hadoop_jar_dir  # noqa: F401  (fixtures by name)
from support.clicks_table import READ, expected, register, write_table
from support.kdc import Kdc, kdc  # noqa: F401  (fixture by name)
from support.kube_resources import apply, status_of, wait_for, wait_reason
from support.secure_catalog import KerberizedCatalog
from support.secure_hdfs import fs_shell, kerberized_hdfs  # noqa: F401  (fixture by name)
from support.thrift_catalog import served_catalog

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")
ROW_CHARS = 200_000
EXPECTED = expected(DAYS, ROW_CHARS)


def storage(name: str, filesystem: str, kerberos: dict | None = None) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": name},
            "spec": {"catalogRef": {"name": "sales"}, "filesystem": filesystem, "repair": "Off",
                     **({"kerberos": kerberos} if kerberos else {})}}


def replica(secondaries: list[str], active: str | None = None) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "TableReplica", "metadata": {"name": "clicks"},
            "spec": {"catalogRef": {"name": "sales"}, "database": "sales", "table": "clicks", "primary": "main",
                     "secondaries": secondaries, "schedule": {"interval": "1h"},
                     **({"active": active} if active else {})}}


def test_a_replica_on_kerberized_hdfs_syncs_as_its_own_principal_and_fails_over(
        kubectl: Client, namespace: str, run_operator, metastore_db: str, journal: str, kdc: Kdc,  # noqa: F811
        kerberized_hdfs: HdfsCluster, tmp_path: Path) -> None:  # noqa: F811
    hdfs = kerberized_hdfs
    security = hdfs.security
    assert security is not None
    catalog_login = KerberizedCatalog.made(kdc, f"etl-{namespace}", tmp_path)  # the catalog's and the storage's
    principal, keytab = catalog_login.principal, catalog_login.keytab
    intruder = kdc.principal(f"intruder-{namespace}")
    operator_cache = f"FILE:{tmp_path}/operator.cc"
    kdc.kinit(intruder, kdc.keytab(intruder, tmp_path / "intruder.keytab"), operator_cache)
    reader = f"FILE:{tmp_path}/reader.cc"
    kdc.kinit(principal, keytab, reader)

    main = tmp_path / "clusters" / "main"
    table_dir = main / "warehouse" / "sales.db" / "clicks"
    write_table(table_dir, DAYS, ROW_CHARS)
    lake = f"{hdfs.uri}/lake"
    env = {"HIVECAT_WEBHDFS_ENDPOINTS": f"{hdfs.authority}={hdfs.http_url}",
           "HIVECAT_WEBHDFS_CA_BUNDLE": str(security.ca_bundle), "HIVECAT_JOURNAL_SCHEMA": journal,
           **kdc.env, "KRB5CCNAME": operator_cache}
    grants = {"storage": [{"prefix": f"file://{tmp_path / 'clusters'}"}, {"prefix": lake}],
              "kerberos": {"principals": [principal], "keytabSecrets": ["etl-keytab"]}}
    run_operator(namespace, env=env, grants=grants)
    spark_kerberos = security.spark_conf(principal, keytab)
    with served_catalog(kubectl, namespace, metastore_db, tmp_path, extra_spark_conf=spark_kerberos,
                        kerberos=catalog_login) as served:
        register(served.port, main / "warehouse" / "sales.db", table_dir, DAYS, sasl=catalog_login.sasl)
        login = {"principal": principal, "keytabSecretRef": {"name": "etl-keytab"},
                 "webhdfsPrincipal": "HTTP/_HOST@HIVECAT.TEST"}
        apply(kubectl, namespace, storage("main", f"file://{main}"), storage("krbdr", lake, login))
        for name in ("main", "krbdr"):
            wait_reason(kubectl, namespace, name, "Registered", kind="clusterstorage", timeout=60)
        # Another principal, not granted: refused before anything is read.
        apply(kubectl, namespace, storage("stolen", f"{hdfs.uri}/lake/other",
                                          {**login, "principal": intruder}))
        wait_reason(kubectl, namespace, "stolen", "KerberosNotAllowed", kind="clusterstorage", timeout=60)

        apply(kubectl, namespace, replica(["krbdr"]))
        status = wait_for("the copy in sync", lambda: (s := status_of(kubectl, namespace, "clicks",
                                                                      "tablereplica")).get("inSync") == "1/1"
                          and s, timeout=180)
        assert [(r["cluster"], r["units"]) for r in status["replicas"] if r["role"] == "Secondary"] == \
            [("krbdr", len(DAYS))]
        copied = tmp_path / "copied"
        fs_shell(hdfs, reader, "-get", "/lake/warehouse/sales.db/clicks", str(copied))
        for day in DAYS:
            assert (copied / f"dt={day}" / "part-00000.parquet").read_bytes() == \
                (table_dir / f"dt={day}" / "part-00000.parquet").read_bytes()
        listing = fs_shell(hdfs, reader, "-ls", "-R", "/lake")
        owners = {line.split()[2] for line in listing.splitlines() if line[:1] in "-d"}
        assert owners == {f"etl-{namespace}"}, listing  # the ClusterStorage's principal, never the intruder

        apply(kubectl, namespace, replica(["krbdr"], active="krbdr"))
        wait_for("the failover", lambda: status_of(kubectl, namespace, "clicks", "tablereplica").get("active")
                 == "krbdr", timeout=120)
        (served.spark_conf / "core-site.xml").write_text(security.core_site(spark_kerberos))
        away = main / "away"
        table_dir.rename(away)
        try:
            read = served.spark(READ, check=False)
            causes = [line for line in read.stderr.splitlines() if "Exception" in line or "Caused by" in line]
            assert read.returncode == 0 and read.stdout.count(EXPECTED) == 1, "\n".join(causes[:12])
        finally:
            away.rename(table_dir)
        # ... and back: every location on main again (a TableReplica failed over holds its deletion)
        apply(kubectl, namespace, replica(["krbdr"]))
        wait_for("the failback", lambda: status_of(kubectl, namespace, "clicks", "tablereplica").get("active")
                 == "main", timeout=120)
        with metastore_client(served.host, served.port, catalog_login.sasl) as client:
            assert {"/" + p.sd.location.removeprefix("file:").lstrip("/")
                    for p in client.get_partitions("sales", "clicks", -1)} == {
                f"{table_dir}/dt={day}" for day in DAYS}  # Hive spells it file:/p, hivecat file:///p
