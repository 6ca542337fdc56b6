"""End to end on this machine's real control plane: `helm install` the chart, apply the examples through a
GitOps-style overlay, replicate a table from HDFS to S3, fail over, fail back.

Where the kind flow (test_kind.py) runs the built image, this one runs what each pod would run, because kwok runs no
containers:
- the operator: the chart's Deployment container (its args, its env with the Secret and downward-API values
  resolved as the kubelet would) started from the venv, authenticated as the release's ServiceAccount;
- the `analytics` metastore: its schema Job's and Deployment's commands in the stand-in image
  (tests/support/hive_image.py), Hive Metastore 3.1.3 on MariaDB;
- the copy Job: kwok completes it without copying; the test then runs the Job's container command
  (`hivecat distcp --plan ...`) with the Job's env and its credentials Secret as files, and asks for a sync.

The overlay (written here, as a GitOps repo would keep it) points the examples at this machine's services: the
metastore database, a MiniDFSCluster as `hdfs-prod`, a local directory as `local-dev`; `s3-dr` stays
s3://acme-analytics-dr/warehouse, served by moto. The examples' CatalogPolicy grants the namespace exactly what
they use, with the same addresses patched in (and where the operator, outside the cluster's network, reaches
the `analytics` metastore). The catalogs whose backends do not run here (`dev`'s Derby pod,
`finance`'s image, Glue `lake`, Hybrid `migration`) are applied unchanged and must say why they are not Ready.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import sqlalchemy as sa
import yaml
from pyarrow import fs as pafs

from kube.fixtures import EXAMPLES_DIR, TIMINGS, control_plane, crds, helm, kubectl  # noqa: F401  (fixtures by name)
from kube.clients import Client
from kube.controlplane import ControlPlane
from kube.identity import CHART, service_account_kubeconfig
from kube.operator import HIVECAT, OperatorProcess
from support.catalog_db import journal, metastore_db  # noqa: F401
from support.hdfs import HdfsCluster, hadoop_jar_dir, hdfs_cluster  # noqa: F401
from support.kube_resources import aws_secret, container_env, events, secret_values, status_of, wait_for
from support.sales_orders import ROWS, spark_script
from support.scrape import sample, scrape
from support.services import MotoServer, mariadb_server, moto, moto_server, scratch_mariadb  # noqa: F401
from support.thrift_catalog import serving

from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.storage import CREDENTIALS_DIR_ENV, S3Settings, Storage, WebHdfsSettings, parse_uri
from hivecat.kinds import ANNOTATION_SYNC_NOW
from hivecat.local.net import free_port
from hmsclient import hmsclient

RELEASE, RELEASE_NS, NS = "hivecat", "hivecat-system", "data-platform"
FULLNAME = RELEASE  # the chart names its objects after a release that holds its name
BUCKET, DR = "acme-analytics-dr", "s3://acme-analytics-dr/warehouse"  # as examples/clusterstorage-s3-dr.yaml has it
DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")
SPARK = spark_script("create", "/user/hive/warehouse/sales.db")
# The examples whose backends this test does not provide, and the reason each one states.
NOT_HERE = {
    "dev": "MetastoreUnreachable",  # its Derby metastore pod is not run here; the operator cannot reach it
    "finance": "ImageNotAllowed",   # names apache/hive:4.0.1, which this release's allowedImages leaves out
    "lake": "GlueUnreachable",      # AWS Glue in eu-west-1 (no network here)
    "migration": "SecretNotFound",  # its Glue keys' Secret is not in the examples (each file says what it needs)
}


def overlay(root: Path, db_url: str, metastore_port: int, hdfs: str, local_dev: Path) -> Path:
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
    here = {"hdfs://namenode-prod.hadoop.svc:8020": hdfs, "file:///data": f"file://{local_dev}"}
    storage = [{**grant, "prefix": here.get(grant["prefix"], grant["prefix"])} for grant in policy["storage"]]
    databases = [{"host": url.host, "port": url.port or 3306, "names": [url.database]}
                 if grant["host"].startswith("mariadb.") else grant for grant in policy["databases"]]

    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(EXAMPLES_DIR, root), "s3-dr-aws.yaml"],
        "patches": [
            patch("Secret", "analytics-metastore-db", {"stringData": {"password": url.password}}),
            patch("CatalogPolicy", "data-platform", {"spec": {
                "storage": storage, "databases": databases,
                # the operator runs outside the cluster network: it reaches the metastore here
                "metastoreAddresses": [{"catalog": "analytics", "address": f"127.0.0.1:{metastore_port}"}]}}),
            patch("HiveCatalog", "analytics", {
                "spec": {"metastore": {"warehouseDir": f"{hdfs}/user/hive/warehouse"},
                         "database": {"host": url.host, "port": url.port or 3306, "name": url.database,
                                      "user": url.username}}}),
            patch("ClusterStorage", "hdfs-prod", {"spec": {"filesystem": hdfs}}),
            patch("ClusterStorage", "local-dev", {"spec": {"filesystem": f"file://{local_dev}"}}),
        ],
    }
    (root / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return root


def install_chart(helm: Client, kubectl: Client, values: dict, path: Path) -> dict:
    """`helm install --wait` (kwok runs the pod: Ready, no process); the Deployment the chart rendered."""
    path.write_text(yaml.safe_dump(values))
    began = time.monotonic()
    helm("install", RELEASE, str(CHART), "-n", RELEASE_NS, "-f", str(path), "--wait=watcher", "--timeout=120s")
    TIMINGS["helm install --wait"] = time.monotonic() - began
    kubectl("wait", "-n", RELEASE_NS, f"deployment/{FULLNAME}", "--for=condition=Available", "--timeout=60s")
    return kubectl.json("get", "-n", RELEASE_NS, "deployment", FULLNAME)


def start_operator(kubectl: Client, control_plane: ControlPlane, deployment: dict, tmp_path: Path) -> OperatorProcess:
    """The chart's operator container, started as the kubelet would start it in the pod kwok runs."""
    [pod] = [p for p in kubectl.json("get", "-n", RELEASE_NS, "pods", "-l",
                                     f"app.kubernetes.io/instance={RELEASE}")["items"]
             if not p["metadata"].get("deletionTimestamp")]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = container_env(container, lambda name, key: secret_values(kubectl, RELEASE_NS, name)[key], pod)
    pod_tmp = tmp_path / "pod-tmp"  # the pod's /tmp emptyDir (HOME points there)
    pod_tmp.mkdir()
    env = {key: str(pod_tmp) if value == "/tmp" else value for key, value in env.items()}
    env |= {"PATH": f"{HIVECAT.parent}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(pod_tmp)}  # the image's PATH
    assert control_plane.pki is not None
    identity = service_account_kubeconfig(kubectl, control_plane.url, control_plane.pki.ca_cert,
                                          tmp_path / "pod.kubeconfig", pod["spec"]["serviceAccountName"], RELEASE_NS)
    operator = OperatorProcess(identity, tmp_path / "operator.log", NS, env=env, inherit_env=False,
                               command=(str(HIVECAT), *container["args"]))
    operator.start(lambda: operator.watching("tablereplicas.v1alpha1.hivecatalog.io"), timeout=60)
    TIMINGS["operator start until watching"] = operator.ready_seconds
    return operator


def run_copy_job(kubectl: Client, job: dict, tmp_path: Path) -> str:
    """What the copy Job's pod would do: its container's command with its env, the Secret mounted as files."""
    [container] = job["spec"]["template"]["spec"]["containers"]
    env = container_env(container, lambda name, key: secret_values(kubectl, NS, name)[key], job)
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    for mount in container["volumeMounts"]:
        local = tmp_path / "copy-pod" / mount["name"]
        local.mkdir(parents=True)
        if "secret" in volumes[mount["name"]]:
            for key, value in secret_values(kubectl, NS, volumes[mount["name"]]["secret"]["secretName"]).items():
                (local / key).write_text(value)
        env = {key: str(local) if value == mount["mountPath"] else value for key, value in env.items()}
    assert CREDENTIALS_DIR_ENV in env  # the keys reach the copy as files, never as env values
    argv = [str(HIVECAT), *container["command"][1:], *(container.get("args") or ())]
    done = subprocess.run(argv, env={**env, "PATH": os.environ["PATH"], "HOME": str(tmp_path / "copy-pod")},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def partitions(port: int) -> dict[str, str]:
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        return {p.values[0]: p.sd.location for p in client.get_partitions("sales", "orders", -1)}


def conditions(item: dict) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in item.get("status", {}).get("conditions", [])}


def sync_now(kubectl: Client, value: str) -> None:
    kubectl("annotate", "-n", NS, "tablereplica", "sales-orders", f"{ANNOTATION_SYNC_NOW}={value}", "--overwrite")


def test_helm_install_examples_replicate_fail_over_and_back(
        control_plane: ControlPlane, kubectl: Client, helm: Client, crds: None, metastore_db: str, journal: str,
        moto: MotoServer, hdfs_cluster: HdfsCluster, tmp_path: Path) -> None:  # noqa: F811
    began = time.monotonic()
    moto.client("s3").create_bucket(Bucket=BUCKET)
    webhdfs = f"{hdfs_cluster.authority}=http://127.0.0.1:{hdfs_cluster.http_port}"
    kubectl("create", "namespace", NS)
    kubectl("create", "namespace", RELEASE_NS)
    # The operator's own AWS keys (moto's), from a Secret as a cluster without pod identity would give them.
    kubectl("create", "secret", "generic", "operator-aws", "-n", RELEASE_NS,
            "--from-literal=AWS_ACCESS_KEY_ID=testing", "--from-literal=AWS_SECRET_ACCESS_KEY=testing")
    health, metrics = free_port(), free_port()
    aws_key = [{"name": key, "valueFrom": {"secretKeyRef": {"name": "operator-aws", "key": key}}}
               for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")]
    deployment = install_chart(helm, kubectl, {
        "image": {"repository": "registry.invalid/hivecat", "tag": "e2e"},
        "watchNamespaces": [NS], "logLevel": "verbose",
        "allowedImages": ["registry.example.com/data/*"],  # the examples' copy images
        "allowedServiceAccounts": ["hivecat-copy", "spark"],
        "health": {"port": health}, "metrics": {"port": metrics}, "journal": {"schema": journal},
        "env": [*aws_key, {"name": "AWS_REGION", "value": moto.region},
                {"name": "HIVECAT_S3_ENDPOINT", "value": moto.endpoint},
                {"name": "HIVECAT_WEBHDFS_ENDPOINTS", "value": webhdfs}]}, tmp_path / "values.yaml")
    operator = start_operator(kubectl, control_plane, deployment, tmp_path)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{health}/healthz", timeout=10) as answer:  # the probes' URL
            assert answer.status == 200
        metastore_port = free_port()
        root = overlay(tmp_path / "gitops", metastore_db, metastore_port, hdfs_cluster.uri, tmp_path / "local-dev")
        rendered = list(yaml.safe_load_all(kubectl("kustomize", str(root)).stdout))
        [analytics] = [d for d in rendered if d["kind"] == "HiveCatalog" and d["metadata"]["name"] == "analytics"]
        secrets = {("analytics-metastore-db", "password"): sa.make_url(metastore_db).password}
        with serving(kubectl, NS, analytics, secrets, metastore_port, tmp_path / "analytics",
                     lambda: kubectl("apply", "-n", NS, "-k", str(root))) as served:
            run_flow(kubectl, served, hdfs_cluster, webhdfs, moto.endpoint, metrics, tmp_path)
        kubectl("delete", "-n", NS, "-k", str(root), "--wait", "--timeout=120s")  # finalizers released
    except BaseException:
        print(f"---- operator log ----\n{operator.log()[-20000:]}", file=sys.stderr)
        raise
    finally:
        code = operator.stop()
        helm("uninstall", RELEASE, "-n", RELEASE_NS, "--wait", "--timeout=60s", check=False)
    assert code in (0, -15), operator.log()[-5000:]
    TIMINGS["e2e flow"] = time.monotonic() - began


def run_flow(kubectl: Client, served, hdfs_cluster: HdfsCluster, webhdfs: str, moto_endpoint: str, metrics: int,
             tmp_path: Path) -> None:
    created = served.spark(SPARK, "create", hdfs_cluster.uri)
    assert ROWS in created.stdout
    primary = partitions(served.port)
    table = f"{hdfs_cluster.uri}/user/hive/warehouse/sales.db/orders"
    assert primary == {day: f"{table}/dt={day}" for day in DAYS}

    # Replicate: the table exists now; the sync plans a copy to s3-dr, which runs as a Kubernetes Job.
    sync_now(kubectl, "1")
    job = wait_for("the copy Job", lambda: next(iter(kubectl.json(
        "get", "-n", NS, "jobs", "-l", "hivecatalog.io/tablereplica=sales-orders")["items"]), None), timeout=180)
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/data/hadoop-tools:3.4.0"
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "hivecat-copy"
    job_env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (job_env["HIVECAT_S3_ENDPOINT"], job_env["HIVECAT_WEBHDFS_ENDPOINTS"]) == (moto_endpoint, webhdfs)
    # kwok completes the Job without copying; the copy is the test's to run, and then a sync finds it verified.
    run_copy_job(kubectl, job, tmp_path)
    sync_now(kubectl, "2")
    status = wait_for("s3-dr in sync", lambda: (s := status_of(kubectl, NS, "sales-orders", "tablereplica"))
                      .get("inSync") == "1/1" and s, timeout=180)
    [copy] = [r for r in status["replicas"] if r["cluster"] == "s3-dr"]
    assert (copy["state"], copy["units"], copy["unitsTotal"]) == ("InSync", 3, 3), copy
    files = Storage(S3Settings.from_environment(), WebHdfsSettings.from_environment(
        {"HIVECAT_WEBHDFS_ENDPOINTS": webhdfs}))
    for day in DAYS:  # every copied file is the primary's, byte for byte
        source, target = parse_uri(f"{table}/dt={day}"), parse_uri(f"{DR}/user/hive/warehouse/sales.db/orders/dt={day}")
        names = [info.base_name for info in files.filesystem(source).get_file_info(
            pafs.FileSelector(source.path)) if not info.base_name.startswith((".", "_"))]
        assert names
        for name in names:
            with files.filesystem(source).open_input_stream(source.child(name).path) as a, \
                    files.filesystem(target).open_input_stream(target.child(name).path) as b:
                assert a.read() == b.read()
        assert files.filesystem(target).get_file_info(target.child(MANIFEST_NAME).path).size > 0
    assert sample(scrape(metrics), "hivecat_replica_in_sync_ratio", namespace=NS, tablereplica="sales-orders",
                  cluster="s3-dr") == 1.0

    # Fail over to s3-dr: every location moves to its verified copy.
    kubectl("patch", "-n", NS, "tablereplica", "sales-orders", "--type=merge", "-p", '{"spec":{"active":"s3-dr"}}')
    wait_for("the failover", lambda: status_of(kubectl, NS, "sales-orders", "tablereplica").get("active") == "s3-dr",
             timeout=120)
    assert partitions(served.port) == {day: f"{DR}/user/hive/warehouse/sales.db/orders/dt={day}" for day in DAYS}
    assert wait_for("the FailedOver Event", lambda: events(kubectl, NS, "FailedOver"))

    # Fail back: nothing was written while failed over, so every location returns to the primary's own
    # directories, and Spark reads every row there.
    kubectl("patch", "-n", NS, "tablereplica", "sales-orders", "--type=merge", "-p", '{"spec":{"active":"hdfs-prod"}}')
    wait_for("the failback", lambda: status_of(kubectl, NS, "sales-orders", "tablereplica").get("active")
             == "hdfs-prod", timeout=120)
    assert partitions(served.port) == primary
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
