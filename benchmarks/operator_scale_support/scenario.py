"""The resources of one scenario at N, and the Glue tables and S3 objects behind them.

N resources over T team namespaces (T = 2% of N, at least 2), each namespace with its CatalogPolicy grant (its
own S3 prefix, moto's Glue, every compute type, second-long minimums: support.policy.lab), a Secret `aws` with
moto's keys, and:
- one HiveCatalog `lake` in Glue mode on moto (2% of N in all), its Glue database `team_NN`;
- ClusterStorages `cNN` (20% of N in all, spread evenly): filesystem s3://BUCKET/<namespace>/cNN, the
  namespace's Secret as credentials, repair Off, scanInterval 30m, compute Local;
- TableReplicas `tNNN` (the rest): table `team_NN.tNNN`, partitioned by dt with no partition at all, located
  on cluster c(k mod S); primary that cluster, one secondary, the next one; schedule 1h. A sync plans zero
  units, checks nothing, copies nothing, records nothing (and housekeeping lists an empty prefix on the
  secondary): Ready=True (ActiveAvailable) as soon as the catalog, the table and both clusters are there.

The copies that wait for ever (the "pending" phase): per namespace, round robin, a ClusterStorage `cjobs`
(s3://BUCKET/<namespace>/jobs) whose copies run as Kubernetes Jobs asking for 1000 CPUs, and TableReplicas
`pNN` of tables on c00 with one partition in Glue and one object in S3 under it: their sync finds the unit
missing on `cjobs`, writes the plan there and creates a Job that the kwok node can never fit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from support.kube_resources import FACTORY, GLUE_FACTORY, aws_secret
from support.policy import catalog_policy, lab

GROUP_PATH = "/apis/hivecatalog.io/v1alpha1"
BUCKET = "hivecat-bench"
DEFAULT_LOCATION = f"s3://{BUCKET}/warehouse"  # Glue's `default` database, made before the operator starts
SCAN_INTERVALS = ("30m", "31m")     # ClusterStorage spec.scanInterval: what a change toggles
SYNC_INTERVALS = ("1h", "61m")      # TableReplica spec.schedule.interval
JOB_IMAGE = "registry.example.com/hivecat:1.0"  # the operator's allow-list (HIVECAT_ALLOWED_IMAGES) admits it
JOB_RESOURCES = {"requests": {"cpu": "1000", "memory": "1Gi"}}  # more than the kwok node has


@dataclass(frozen=True)
class Layout:
    n: int
    namespaces: int
    catalogs: int
    storages: int
    replicas: int

    @classmethod
    def of(cls, n: int) -> Layout:
        catalogs = max(2, round(n * 0.02))
        storages = max(catalogs * 2, round(n * 0.2))
        replicas = n - catalogs - storages
        if replicas < catalogs:
            raise SystemExit(f"N={n} is too small for this scenario (at least {catalogs * 4} resources)")
        return cls(n, catalogs, catalogs, storages, replicas)

    def namespace(self, i: int) -> str:
        return f"bench-{i:02d}"

    def database(self, i: int) -> str:
        return f"team_{i:02d}"

    def storages_in(self, i: int) -> int:
        """ClusterStorages of namespace i (spread as evenly as the count allows)."""
        return self.storages // self.namespaces + (1 if i < self.storages % self.namespaces else 0)

    def replicas_in(self, i: int) -> int:
        return self.replicas // self.namespaces + (1 if i < self.replicas % self.namespaces else 0)


def filesystem(layout: Layout, i: int, cluster: str) -> str:
    return f"s3://{BUCKET}/{layout.namespace(i)}/{cluster}"


def cluster_name(j: int) -> str:
    return f"c{j:02d}"


def table_location(layout: Layout, i: int, cluster: str, table: str) -> str:
    return f"{filesystem(layout, i, cluster)}/warehouse/{layout.database(i)}.db/{table}"


def _meta(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, **more}


def hive_catalog(endpoint: str, region: str) -> dict[str, Any]:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "metadata": _meta("lake"),
            "spec": {"configurations": [{"classification": c, "properties": {FACTORY: GLUE_FACTORY}}
                                        for c in ("hive-site", "spark-hive-site")],
                     "glue": {"region": region, "endpoint": endpoint, "relocateFunctions": False,
                              "credentialsSecretRef": {"name": "aws"},
                              "defaultDatabaseLocation": DEFAULT_LOCATION}}}


def cluster_storage(name: str, fs: str, compute: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"catalogRef": {"name": "lake"}, "filesystem": fs, "repair": "Off",
                            "credentialsSecretRef": {"name": "aws"}, "scanInterval": SCAN_INTERVALS[0]}
    if compute:
        spec["compute"] = compute
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": _meta(name), "spec": spec}


def table_replica(name: str, database: str, table: str, primary: str, secondary: str) -> dict[str, Any]:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "TableReplica", "metadata": _meta(name),
            "spec": {"catalogRef": {"name": "lake"}, "database": database, "table": table, "primary": primary,
                     "secondaries": [secondary], "schedule": {"interval": SYNC_INTERVALS[0]}}}


def grants(layout: Layout, i: int, endpoint: str, region: str) -> dict[str, Any]:
    return lab(storage=[{"prefix": f"s3://{BUCKET}/{layout.namespace(i)}"}],
               glue=[{"region": region, "endpoint": endpoint}])


# --- what the API server gets -------------------------------------------------------------------------------

def namespaces_and_grants(layout: Layout, endpoint: str, region: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for i in range(layout.namespaces):
        ns = layout.namespace(i)
        yield "/api/v1/namespaces", {"metadata": {"name": ns}}
        yield f"{GROUP_PATH}/catalogpolicies", catalog_policy(f"{ns}-lab", ns, **grants(layout, i, endpoint, region))


def secrets(layout: Layout) -> Iterator[tuple[str, dict[str, Any]]]:
    for i in range(layout.namespaces):
        yield f"/api/v1/namespaces/{layout.namespace(i)}/secrets", aws_secret()


@dataclass(frozen=True)
class Replica:
    namespace: str
    name: str
    database: str
    table: str
    primary: str
    secondary: str
    location: str


def replicas(layout: Layout) -> list[Replica]:
    found = []
    number = 0
    for i in range(layout.namespaces):
        clusters = layout.storages_in(i)
        for k in range(layout.replicas_in(i)):
            primary, secondary = cluster_name(k % clusters), cluster_name((k + 1) % clusters)
            table = f"t{number:03d}"
            found.append(Replica(layout.namespace(i), table, layout.database(i), table, primary, secondary,
                                 table_location(layout, i, primary, table)))
            number += 1
    return found


def resources(layout: Layout, endpoint: str, region: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every HiveCatalog, ClusterStorage and TableReplica of the scenario (N in all)."""
    for i in range(layout.namespaces):
        ns = layout.namespace(i)
        yield f"{GROUP_PATH}/namespaces/{ns}/hivecatalogs", hive_catalog(endpoint, region)
        for j in range(layout.storages_in(i)):
            yield (f"{GROUP_PATH}/namespaces/{ns}/clusterstorages",
                   cluster_storage(cluster_name(j), filesystem(layout, i, cluster_name(j))))
    for r in replicas(layout):
        yield (f"{GROUP_PATH}/namespaces/{r.namespace}/tablereplicas",
               table_replica(r.name, r.database, r.table, r.primary, r.secondary))


# --- Glue and S3 on moto --------------------------------------------------------------------------------------

def _storage_descriptor(location: str) -> dict[str, Any]:
    return {"Location": location, "Columns": [{"Name": "v", "Type": "string"}],
            "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
            "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
            "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"}}


def _table_input(name: str, location: str) -> dict[str, Any]:
    return {"Name": name, "TableType": "EXTERNAL_TABLE", "PartitionKeys": [{"Name": "dt", "Type": "string"}],
            "StorageDescriptor": _storage_descriptor(location), "Parameters": {"EXTERNAL": "TRUE"}}


def seed(layout: Layout, glue: Any, s3: Any, threads: int = 8) -> None:
    """The bucket, Glue's `default` database (with a location, so no catalog needs to make it), one database per
    namespace and one empty partitioned table per TableReplica."""
    from concurrent.futures import ThreadPoolExecutor

    s3.create_bucket(Bucket=BUCKET)
    glue.create_database(DatabaseInput={"Name": "default", "LocationUri": DEFAULT_LOCATION})
    for i in range(layout.namespaces):
        glue.create_database(DatabaseInput={"Name": layout.database(i),
                                            "LocationUri": f"s3://{BUCKET}/{layout.namespace(i)}/warehouse"})
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda r: glue.create_table(DatabaseName=r.database,
                                                  TableInput=_table_input(r.table, r.location)), replicas(layout)))


def pending_resources(layout: Layout, count: int, glue: Any, s3: Any
                      ) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str]]]:
    """The `cjobs` ClusterStorages and `count` TableReplicas with one partition to copy each, their tables and
    data made in Glue and S3 first. Returns (what to POST, [(namespace, TableReplica name)])."""
    objects: list[tuple[str, dict[str, Any]]] = []
    made: list[tuple[str, str]] = []
    used = sorted({k % layout.namespaces for k in range(count)})
    compute = {"type": "KubernetesJob", "job": {"image": JOB_IMAGE, "resources": JOB_RESOURCES}}
    for i in used:
        ns = layout.namespace(i)
        objects.append((f"{GROUP_PATH}/namespaces/{ns}/clusterstorages",
                        cluster_storage("cjobs", f"s3://{BUCKET}/{ns}/jobs", compute)))
    for k in range(count):
        i = k % layout.namespaces
        ns, database, table = layout.namespace(i), layout.database(i), f"p{k:02d}"
        location = table_location(layout, i, cluster_name(0), table)
        glue.create_table(DatabaseName=database, TableInput=_table_input(table, location))
        day = "2026-01-01"
        glue.create_partition(DatabaseName=database, TableName=table, PartitionInput={
            "Values": [day], "StorageDescriptor": _storage_descriptor(f"{location}/dt={day}")})
        key = f"{location.removeprefix(f's3://{BUCKET}/')}/dt={day}/part-00000.parquet"
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x" * 4096)
        objects.append((f"{GROUP_PATH}/namespaces/{ns}/tablereplicas",
                        table_replica(table, database, table, cluster_name(0), "cjobs")))
        made.append((ns, table))
    return objects, made
