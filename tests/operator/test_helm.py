"""The chart on the real control plane: `helm install` schedules the operator pod on the kwok node and it is
reported Ready; `helm upgrade` rolls it; `helm uninstall` with live HiveCatalogs leaves their namespace
Terminating until the finalizers are released the way the chart's NOTES say, and then it terminates.

No container runs here, so the operator process that holds the finalizers is `hivecat run` from the venv,
authenticated as the release's own ServiceAccount: the identity the pod would have."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import yaml

from kube.clients import TOOLS_BIN, Client
from kube.controlplane import NODE_NAME, ControlPlane
from kube.identity import CHART, service_account_kubeconfig
from kube.operator import OperatorProcess

from conftest import EXAMPLES_DIR, GROUP, HIVE_CATALOG, HIVE_CATALOG_RESOURCE, TIMINGS

RELEASE, RELEASE_NS = "hc-test", "hivecat-helm"
FULLNAME = f"{RELEASE}-hivecat"
IMAGE = ["--set", "image.repository=registry.invalid/hivecat", "--set", "image.tag=test"]


def documented_release_command() -> str:
    """The finalizer-release command exactly as NOTES.txt prints it."""
    notes = (CHART / "templates" / "NOTES.txt").read_text()
    [line] = [line.strip() for line in notes.splitlines() if "finalizers\":null" in line]
    return line


def operator_pods(kubectl: Client) -> list[dict]:
    return kubectl.json("get", "-n", RELEASE_NS, "pods", "-l", f"app.kubernetes.io/instance={RELEASE}")["items"]


def test_helm_install_upgrade_uninstall(control_plane: ControlPlane, kubectl: Client, helm: Client, crds: None,
                                        tmp_path: Path) -> None:
    live = "hc-live"  # the namespace the release watches, where the live catalogs go
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": live}}))
    scope = ["--set", f"watchNamespaces={{{live}}}"]
    began = time.monotonic()
    helm("install", RELEASE, str(CHART), "-n", RELEASE_NS, "--create-namespace", *IMAGE, *scope,
         "--wait=watcher", "--timeout=120s")
    TIMINGS["helm install --wait"] = time.monotonic() - began
    kubectl("wait", "-n", RELEASE_NS, f"deployment/{FULLNAME}", "--for=condition=Available", "--timeout=60s")
    [pod] = operator_pods(kubectl)
    assert pod["spec"]["nodeName"] == NODE_NAME
    assert pod["spec"]["serviceAccountName"] == FULLNAME
    assert f"--namespace={live}" in pod["spec"]["containers"][0]["args"]
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"

    helm("upgrade", RELEASE, str(CHART), "-n", RELEASE_NS, *IMAGE, *scope, "--set", "logLevel=verbose",
         "--wait=watcher", "--timeout=120s")
    kubectl("rollout", "status", "-n", RELEASE_NS, f"deployment/{FULLNAME}", "--timeout=60s")
    kubectl("wait", "-n", RELEASE_NS, "pods", "-l", f"app.kubernetes.io/instance={RELEASE}",
            "--for=condition=Ready", "--timeout=60s")
    pods = [p for p in operator_pods(kubectl) if not p["metadata"].get("deletionTimestamp")]
    assert [p["spec"]["containers"][0]["args"].count("--verbose") for p in pods] == [1]
    history = yaml.safe_load(helm("history", RELEASE, "-n", RELEASE_NS, "-o", "yaml").stdout)
    assert [h["revision"] for h in history] == [1, 2] and history[-1]["status"] == "deployed"

    # Live catalogs, acknowledged by an operator that runs as the release's ServiceAccount.
    assert control_plane.pki is not None
    identity = service_account_kubeconfig(kubectl, control_plane.url, control_plane.pki.ca_cert,
                                          tmp_path / "release.kubeconfig", FULLNAME, RELEASE_NS)
    operator = OperatorProcess(identity, tmp_path / "operator.log", live)
    operator.start(lambda: operator.watching(HIVE_CATALOG_RESOURCE))
    try:
        kubectl("apply", "-n", live, "-f", str(EXAMPLES_DIR / "hivecatalog-dev-derby.yaml"))
        kubectl("wait", "-n", live, "hivecatalog/dev", "--for=jsonpath={.status.observedGeneration}=1",
                "--timeout=60s")
    finally:
        assert operator.stop() in (0, -15), operator.log()
    assert f"{GROUP}/finalizer" in kubectl.json("get", "-n", live, "hivecatalog", "dev")["metadata"]["finalizers"]

    helm("uninstall", RELEASE, "-n", RELEASE_NS, "--wait", "--timeout=120s")
    kubectl("wait", "-n", RELEASE_NS, "pods", "-l", f"app.kubernetes.io/instance={RELEASE}", "--for=delete",
            "--timeout=60s")
    for kind, where in (("clusterrole", []), ("clusterrolebinding", []), ("role", ["-n", live]),
                        ("rolebinding", ["-n", live])):
        assert kubectl("get", kind, FULLNAME, *where, check=False).returncode != 0, f"{kind} survived uninstall"
    assert kubectl("get", "crd", HIVE_CATALOG.crd_name, check=False).returncode == 0  # Helm keeps CRDs

    # The namespace cannot terminate while the catalog holds the operator's finalizer ...
    kubectl("delete", "namespace", live, "--wait=false")
    kubectl("wait", "namespace", live, "--for=condition=NamespaceFinalizersRemaining", "--timeout=90s")
    assert kubectl.json("get", "namespace", live)["status"]["phase"] == "Terminating"
    # ... and does once the finalizers are released as the chart's NOTES say.
    command = documented_release_command().replace("NAMESPACE", live)
    env = {**os.environ, "KUBECONFIG": str(control_plane.admin_kubeconfig),
           "PATH": f"{TOOLS_BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and re.search(r"hivecatalog\.hivecatalog\.io/dev patched", done.stdout), \
        done.stdout + done.stderr
    kubectl("wait", "namespace", live, "--for=delete", "--timeout=90s")
