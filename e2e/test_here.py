"""End to end on this machine, with real pods: `helm install` the chart with the image built here, apply the
examples through a GitOps-style overlay, replicate a table from HDFS to S3, fail over, fail back.

The control plane is the test one (tests/kube) with a real node beside kwok's (tests/kube/node.py: containerd,
runc, the CNI bridge, a kubelet, kube-proxy and CoreDNS); kwok's node is cordoned, so every pod runs for real:
- the operator: the chart's Deployment with the hivecat image (scripts/build-image.sh), in-cluster
  configuration with its own ServiceAccount token through the `kubernetes` Service, its probes, the leader Lease;
- the `analytics` metastore: its schema Job runs schematool and its Deployment runs Hive Metastore 3.1.3 in
  the metastore image built here from Maven Central's jars (tests/kube/metastore-image), on MariaDB;
- the copy Job: `hivecat distcp` in the hivecat image, its S3 keys from the mounted Secret, from HDFS to S3.

Services on the host are reached by pods at the bridge's address (a pod's 127.0.0.1 is its own): MariaDB, moto
(S3) and the MiniDFSCluster listen on loopback and are exposed there (RealNode.expose). The overlay (written
here, as a GitOps repo would keep it) points the examples at them: the metastore database, the MiniDFSCluster as
`hdfs-prod`; `s3-dr` stays s3://acme-analytics-dr/warehouse, served by moto, and its copies run in the hivecat
image. Spark on the host is the client that proves the data is readable, through the metastore's Service.
The catalogs whose backends do not run here (`dev`'s Derby pod, `finance`'s image, Glue `lake`, Hybrid
`migration`) are applied unchanged and must say why they are not Ready.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from pyarrow import fs as pafs

from kube.clients import Client
from kube.controlplane import ControlPlane
from kube.fixtures import EXAMPLES_DIR, TIMINGS, crds, helm, kubectl  # noqa: F401  (fixtures by name)
from kube.identity import CHART
from kube.node import BRIDGE_ADDRESS, NODE_NAME, NODE_SELECTOR, RealNode
from support.catalog_db import journal, metastore_db  # noqa: F401
from support.hdfs import HdfsCluster, hadoop_jar_dir  # noqa: F401
from support.kube_resources import aws_secret, events, status_of, wait_for
from support.sales_orders import ROWS, spark_script
from support.scrape import sample, scrape
from support.services import MotoServer, mariadb_server, moto, moto_server, scratch_mariadb  # noqa: F401
from support.thrift_catalog import ServedCatalog

from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.storage import S3Settings, Storage, WebHdfsSettings, parse_uri
from hivecat.kinds import ANNOTATION_SYNC_NOW, HIVE_CATALOG, LABEL_COMPONENT
from hivecat.workloads.labels import METASTORE
from hmsclient import hmsclient

RELEASE, RELEASE_NS, NS = "hivecat", "hivecat-system", "data-platform"
FULLNAME = RELEASE  # the chart names its objects after a release that holds its name
BUCKET, DR = "acme-analytics-dr", "s3://acme-analytics-dr/warehouse"  # as examples/clusterstorage-s3-dr.yaml has it
DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")
SPARK = spark_script("create", "/user/hive/warehouse/sales.db")
METASTORE_PORT = 9083
# The examples whose backends this test does not provide, and the reason each one states.
NOT_HERE = {
    "dev": "MetastoreStarting",     # its metastore's image (apache/hive) cannot be pulled here: no pod gets ready
    "finance": "ImageNotAllowed",   # names apache/hive:4.0.1, which this release's allowedImages leaves out
    "lake": "GlueUnreachable",      # AWS Glue in eu-west-1 (no network here)
    "migration": "SecretNotFound",  # its Glue keys' Secret is not in the examples (each file says what it needs)
}


@pytest.fixture
def hdfs(hadoop_jar_dir: Path, real_node: RealNode, tmp_path: Path) -> Iterator[HdfsCluster]:  # noqa: F811
    """A MiniDFSCluster named by the bridge's address, its RPC, HTTP and datanode ports exposed to pods."""
    cluster = HdfsCluster(tmp_path / "hdfs", jars=hadoop_jar_dir, advertised=BRIDGE_ADDRESS)
    cluster.start(format=True)
    try:
        for port in (cluster.rpc_port, cluster.http_port, *cluster.datanode_ports()):
            real_node.expose(port)
        yield cluster
    finally:
        cluster.stop()


def overlay(root: Path, db_url: str, hdfs: str, image: str, metastore_image: str) -> Path:
    """The examples with this machine's addresses, as a kustomize overlay a GitOps repo would hold."""
    url = sa.make_url(db_url)
    root.mkdir()
    # the Secret examples/clusterstorage-s3-dr.yaml needs (moto's keys)
    (root / "s3-dr-aws.yaml").write_text(yaml.safe_dump(aws_secret("s3-dr-aws")))

    def patch(kind: str, name: str, body: dict) -> dict:
        return {"target": {"kind": kind, "name": name},
                "patch": yaml.safe_dump({"apiVersion": "v1" if kind == "Secret" else "hivecatalog.io/v1alpha1",
                                         "kind": kind, "metadata": {"name": name}, **body})}

    # The policy's lists are replaced whole by a patch: the example's own, with this machine's addresses.
    policy = yaml.safe_load((EXAMPLES_DIR / "catalogpolicy-data-platform.yaml").read_text())["spec"]
    storage = [{**grant, "prefix": hdfs} if grant["prefix"].startswith("hdfs://") else grant
               for grant in policy["storage"]]
    databases = [{"host": BRIDGE_ADDRESS, "port": 3306, "names": [url.database]}
                 if grant["host"].startswith("mariadb.") else grant for grant in policy["databases"]]
    small = {"requests": {"cpu": "200m", "memory": "512Mi"}, "limits": {"memory": "1536Mi"}}
    # The metastore pod is an HDFS client too: it reaches the datanode by the name the datanode gives
    # (the bridge's address), not by the address it registered from (the host's loopback, its own in a pod).
    [analytics] = [d for d in yaml.safe_load_all((EXAMPLES_DIR / "hivecatalog-analytics-mariadb.yaml").read_text())
                   if d and d["kind"] == "HiveCatalog"]
    configurations = [{**c, "properties": {**c["properties"], "dfs.client.use.datanode.hostname": "true"}}
                      if c["classification"] == "hive-site" else c for c in analytics["spec"]["configurations"]]

    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(EXAMPLES_DIR, root), "s3-dr-aws.yaml"],
        "patches": [
            patch("Secret", "analytics-metastore-db", {"stringData": {"password": url.password}}),
            patch("CatalogPolicy", "data-platform", {"spec": {"storage": storage, "databases": databases}}),
            # one metastore replica and small requests: this node has 2 CPUs for everything
            patch("HiveCatalog", "analytics", {"spec": {
                "metastore": {"warehouseDir": f"{hdfs}/user/hive/warehouse", "image": metastore_image,
                              "replicas": 1, "resources": small},
                "configurations": configurations,
                "database": {"host": BRIDGE_ADDRESS, "port": 3306, "name": url.database, "user": url.username}}}),
            patch("ClusterStorage", "hdfs-prod", {"spec": {"filesystem": hdfs}}),
            # the copies run in the hivecat image (the example's hadoop-tools image is not here)
            patch("ClusterStorage", "s3-dr", {"spec": {"compute": {"type": "KubernetesJob", "job": {
                "image": image, "serviceAccountName": "hivecat-copy", "resources": small}}}}),
        ],
    }
    (root / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return root


def install_chart(helm: Client, kubectl: Client, values: dict, path: Path) -> dict:
    """`helm install --wait`: the operator's pod runs on the real node and its readiness probe passes."""
    path.write_text(yaml.safe_dump(values))
    began = time.monotonic()
    helm("install", RELEASE, str(CHART), "-n", RELEASE_NS, "-f", str(path), "--wait=watcher", "--timeout=240s",
         timeout=300)
    TIMINGS["helm install --wait (real pod Ready)"] = time.monotonic() - began
    [pod] = [p for p in kubectl.json("get", "-n", RELEASE_NS, "pods", "-l",
                                     f"app.kubernetes.io/instance={RELEASE}")["items"]
             if not p["metadata"].get("deletionTimestamp")]
    return pod


def pod_logs(kubectl: Client) -> str:
    """The tail of every pod's log (the operator's first), for a failure's report."""
    shown = []
    for namespace in (RELEASE_NS, NS):
        for pod in kubectl.json("get", "-n", namespace, "pods")["items"]:
            name = pod["metadata"]["name"]
            done = kubectl("logs", "-n", namespace, name, "--all-containers", "--tail=300", check=False)
            shown.append(f"---- {namespace}/{name} ----\n{done.stdout[-15000:]}{done.stderr[-2000:]}")
    return "\n".join(shown)


def partitions(host: str) -> dict[str, str]:
    with hmsclient.HMSClient(host=host, port=METASTORE_PORT) as client:
        return {p.values[0]: p.sd.location for p in client.get_partitions("sales", "orders", -1)}


def conditions(item: dict) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in item.get("status", {}).get("conditions", [])}


def sync_now(kubectl: Client, value: str) -> None:
    kubectl("annotate", "-n", NS, "tablereplica", "sales-orders", f"{ANNOTATION_SYNC_NOW}={value}", "--overwrite")


def pods_of(kubectl: Client, namespace: str, selector: str) -> list[dict]:
    return kubectl.json("get", "-n", namespace, "pods", "-l", selector)["items"]


def test_helm_install_examples_replicate_fail_over_and_back(
        control_plane: ControlPlane, real_node: RealNode, kubectl: Client, helm: Client, crds: None,
        metastore_db: str, journal: str, moto: MotoServer, hdfs: HdfsCluster, hivecat_image: str,
        metastore_image: str, tmp_path: Path) -> None:  # noqa: F811
    began = time.monotonic()
    moto.client("s3").create_bucket(Bucket=BUCKET)
    s3_endpoint = f"http://{real_node.expose(int(moto.endpoint.rsplit(':', 1)[1]))}"
    real_node.expose(sa.make_url(metastore_db).port or 3306)
    webhdfs = f"{hdfs.authority}=http://{BRIDGE_ADDRESS}:{hdfs.http_port}"
    kubectl("create", "namespace", NS)
    kubectl("create", "namespace", RELEASE_NS)
    # The operator's own AWS keys (moto's), from a Secret as a cluster without pod identity would give them.
    kubectl("create", "secret", "generic", "operator-aws", "-n", RELEASE_NS,
            "--from-literal=AWS_ACCESS_KEY_ID=testing", "--from-literal=AWS_SECRET_ACCESS_KEY=testing")
    aws_key = [{"name": key, "valueFrom": {"secretKeyRef": {"name": "operator-aws", "key": key}}}
               for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")]
    repository, tag = hivecat_image.rsplit(":", 1)
    pod = install_chart(helm, kubectl, {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "nodeSelector": NODE_SELECTOR,
        "watchNamespaces": [NS], "logLevel": "verbose",
        "allowedImages": ["registry.example.com/data/*", "localhost/hivecat*"],  # the examples' and ours
        "allowedServiceAccounts": ["hivecat-copy", "spark"],
        "journal": {"schema": journal},
        "env": [*aws_key, {"name": "AWS_REGION", "value": moto.region},
                {"name": "HIVECAT_S3_ENDPOINT", "value": s3_endpoint},
                {"name": "HIVECAT_WEBHDFS_ENDPOINTS", "value": webhdfs}]}, tmp_path / "values.yaml")
    try:
        check_operator_pod(kubectl, control_plane, pod)
        root = overlay(tmp_path / "gitops", metastore_db, hdfs.uri, hivecat_image, metastore_image)
        kubectl("apply", "-n", NS, "-k", str(root))
        served = metastore_ready(kubectl, tmp_path)
        run_flow(kubectl, served, hdfs, webhdfs, pod, tmp_path)
        # the liveness probe has been answering all along: the operator's container never restarted
        [status] = kubectl.json("get", "-n", RELEASE_NS, "pod", pod["metadata"]["name"])["status"]["containerStatuses"]
        assert status["ready"] and status["restartCount"] == 0, status
        kubectl("delete", "-n", NS, "-k", str(root), "--wait", "--timeout=120s")  # finalizers released
    except BaseException:
        print(f"{pod_logs(kubectl)}\n---- node ----\n{real_node.logs()}", file=sys.stderr)
        raise
    finally:
        helm("uninstall", RELEASE, "-n", RELEASE_NS, "--wait", "--timeout=60s", check=False)
    TIMINGS["e2e flow"] = time.monotonic() - began


def check_operator_pod(kubectl: Client, control_plane: ControlPlane, pod: dict) -> None:
    """On the real node, Ready (its probes answer), holding the leader Lease, and talking to the API server as
    its own ServiceAccount from its own address (in-cluster configuration, the projected token)."""
    name = pod["metadata"]["name"]
    assert pod["spec"]["nodeName"] == NODE_NAME
    [status] = pod["status"]["containerStatuses"]
    assert status["ready"] and status["restartCount"] == 0, status
    lease = wait_for("the leader Lease", lambda: (kubectl.json("get", "-n", RELEASE_NS, "lease", f"{FULLNAME}-leader")
                                                  ["spec"].get("holderIdentity") or "").startswith(name) or None,
                     timeout=60)
    assert lease
    account = f"system:serviceaccount:{RELEASE_NS}:{pod['spec']['serviceAccountName']}"
    assert control_plane.audit_log is not None
    seen = [json.loads(line) for line in control_plane.audit_log.read_text().splitlines()]
    sources = {ip for event in seen if event["user"]["username"] == account for ip in event.get("sourceIPs", [])}
    assert pod["status"]["podIP"] in sources, sources


def metastore_ready(kubectl: Client, tmp_path: Path) -> ServedCatalog:
    """The analytics catalog Ready: its schema Job ran schematool in its container and its metastore pod
    serves; Spark's client files from the catalog's ConfigMap, pointed at the Service's ClusterIP (this host
    does not use the cluster's DNS)."""
    began = time.monotonic()
    wait_for("analytics Ready", lambda: conditions(kubectl.json("get", "-n", NS, "hivecatalog", "analytics"))
             .get("Ready", ("",))[0] == "True", timeout=420)
    TIMINGS["schema Job and metastore pod until Ready"] = time.monotonic() - began
    catalog = f"{HIVE_CATALOG.label}=analytics"
    [job] = kubectl.json("get", "-n", NS, "jobs", "-l", catalog)["items"]
    assert job["status"].get("succeeded") == 1, job["status"]
    for selector in (f"job-name={job['metadata']['name']}", f"{catalog},{LABEL_COMPONENT}={METASTORE}"):
        assert {p["spec"]["nodeName"] for p in pods_of(kubectl, NS, selector)} == {NODE_NAME}, selector
    cluster_ip = kubectl.json("get", "-n", NS, "service", "analytics-metastore")["spec"]["clusterIP"]
    files = kubectl.json("get", "-n", NS, "configmap", "analytics-client")["data"]
    endpoint, here = f"thrift://analytics-metastore.{NS}.svc:{METASTORE_PORT}", f"thrift://{cluster_ip}:{METASTORE_PORT}"
    spark_conf = tmp_path / "spark-conf"
    spark_conf.mkdir()
    (spark_conf / "hive-site.xml").write_text(files["hive-site.xml"].replace(endpoint, here))
    (spark_conf / "spark-defaults.conf").write_text(files["spark-defaults.conf"].replace(endpoint, here))
    return ServedCatalog("analytics", METASTORE_PORT, spark_conf, cluster_ip)


def run_flow(kubectl: Client, served: ServedCatalog, hdfs: HdfsCluster, webhdfs: str, operator_pod: dict,
             tmp_path: Path) -> None:
    created = served.spark(SPARK, "create", hdfs.uri)
    assert ROWS in created.stdout
    primary = partitions(served.host)
    table = f"{hdfs.uri}/user/hive/warehouse/sales.db/orders"
    assert primary == {day: f"{table}/dt={day}" for day in DAYS}

    # Replicate: the table exists now; the sync plans a copy to s3-dr, which runs as a Kubernetes Job: a real
    # pod running `hivecat distcp` in the hivecat image with the S3 keys from its mounted Secret.
    sync_now(kubectl, "1")
    job = wait_for("the copy Job", lambda: next(iter(kubectl.json(
        "get", "-n", NS, "jobs", "-l", "hivecatalog.io/tablereplica=sales-orders")["items"]), None), timeout=180)
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "hivecat-copy"
    name = job["metadata"]["name"]
    began = time.monotonic()
    kubectl("wait", "-n", NS, f"job/{name}", "--for=condition=Complete", "--timeout=300s", timeout=320)
    TIMINGS["copy Job pod run"] = time.monotonic() - began
    [copier] = pods_of(kubectl, NS, f"job-name={name}")
    assert copier["spec"]["nodeName"] == NODE_NAME
    sync_now(kubectl, "2")
    status = wait_for("s3-dr in sync", lambda: (s := status_of(kubectl, NS, "sales-orders", "tablereplica"))
                      .get("inSync") == "1/1" and s, timeout=180)
    [copy] = [r for r in status["replicas"] if r["cluster"] == "s3-dr"]
    assert (copy["state"], copy["units"], copy["unitsTotal"]) == ("InSync", 3, 3), copy
    here = webhdfs.replace(f"http://{BRIDGE_ADDRESS}:", "http://127.0.0.1:")
    files = Storage(S3Settings.from_environment(), WebHdfsSettings.from_environment({"HIVECAT_WEBHDFS_ENDPOINTS": here}))
    for day in DAYS:  # every copied file is the primary's, byte for byte
        source, target = parse_uri(f"{table}/dt={day}"), parse_uri(f"{DR}/user/hive/warehouse/sales.db/orders/dt={day}")
        names = [info.base_name for info in files.filesystem(source).get_file_info(
            pafs.FileSelector(source.path)) if not info.base_name.startswith((".", "_"))]
        assert names
        for file in names:
            with files.filesystem(source).open_input_stream(source.child(file).path) as a, \
                    files.filesystem(target).open_input_stream(target.child(file).path) as b:
                assert a.read() == b.read()
        assert files.filesystem(target).get_file_info(target.child(MANIFEST_NAME).path).size > 0
    # the chart's metrics port, on the pod's own address
    assert sample(scrape(9102, operator_pod["status"]["podIP"]), "hivecat_replica_in_sync_ratio", namespace=NS, tablereplica="sales-orders",
                  cluster="s3-dr") == 1.0

    # Fail over to s3-dr: every location moves to its verified copy.
    kubectl("patch", "-n", NS, "tablereplica", "sales-orders", "--type=merge", "-p", '{"spec":{"active":"s3-dr"}}')
    wait_for("the failover", lambda: status_of(kubectl, NS, "sales-orders", "tablereplica").get("active") == "s3-dr",
             timeout=120)
    assert partitions(served.host) == {day: f"{DR}/user/hive/warehouse/sales.db/orders/dt={day}" for day in DAYS}
    assert wait_for("the FailedOver Event", lambda: events(kubectl, NS, "FailedOver"))

    # Fail back: nothing was written while failed over, so every location returns to the primary's own
    # directories, and Spark reads every row there.
    kubectl("patch", "-n", NS, "tablereplica", "sales-orders", "--type=merge", "-p", '{"spec":{"active":"hdfs-prod"}}')
    wait_for("the failback", lambda: status_of(kubectl, NS, "sales-orders", "tablereplica").get("active")
             == "hdfs-prod", timeout=120)
    assert partitions(served.host) == primary
    assert ROWS in served.spark(SPARK, "read").stdout

    # Every example was taken up by the operator; those whose backends run here are Ready, the others say why.
    items = kubectl.json("get", "-n", NS, "hivecatalogs,clusterstorages,tablereplicas")["items"]
    assert len(items) == 9  # 5 HiveCatalogs, 3 ClusterStorages, a TableReplica
    policy = kubectl.json("get", "catalogpolicy", "data-platform")
    assert policy["status"]["phase"] == "Ready", policy.get("status")
    for item in items:
        name, state = item["metadata"]["name"], conditions(item)
        assert item["status"].get("observedGeneration") == item["metadata"]["generation"], name
        if name in NOT_HERE:
            assert state["Ready"][:2] == ("False", NOT_HERE[name]) and state["Ready"][2], (name, state)
        else:
            assert state["Ready"][0] == "True", (name, state)

