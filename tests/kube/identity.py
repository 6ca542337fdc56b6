"""The operator's identity in tests: the chart's own ServiceAccount and RBAC, rendered by helm and applied
to the test control plane, and a kubeconfig holding a TokenRequest token for that ServiceAccount. A call the
chart's rules do not allow fails in the operator tier as it would in a cluster."""

from __future__ import annotations

import os
import time
from pathlib import Path

import yaml

from kube.clients import REPO, Client
from kube.kubeconfig import write_kubeconfig

CHART = REPO / "charts" / "hivecat"
# The operator of another checkout (tests/kube/operator.py) runs with that checkout's RBAC: its chart.
RBAC_CHART = Path(os.environ["HIVECAT_TEST_OPERATOR_CHART"]) if os.environ.get("HIVECAT_TEST_OPERATOR_CHART") else CHART


def chart_rbac(helm: Client, release: str, namespace: str, *values: str) -> list[dict]:
    """The ServiceAccount, (Cluster)Roles and bindings the chart renders with these `--set` values."""
    rendered = helm("template", release, str(RBAC_CHART), "--namespace", namespace,
                    "--show-only", "templates/serviceaccount.yaml", "--show-only", "templates/rbac.yaml",
                    *[arg for value in values for arg in ("--set", value)]).stdout
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def operator_kubeconfig(kubectl: Client, helm: Client, server_url: str, ca_cert: Path, path: Path,
                        release: str = "hivecat", namespace: str = "hivecat-system", *values: str) -> Path:
    """Apply the chart's RBAC (rendered with these `--set` values) into the cluster and write a kubeconfig
    that authenticates as the release's ServiceAccount in `namespace`."""
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": namespace}}))
    objects = chart_rbac(helm, release, namespace, *values)
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    [account] = [o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"]
    config = service_account_kubeconfig(kubectl, server_url, ca_cert, path, account, namespace)
    # RBAC reaches the API server's authorizer through an informer, a moment after the objects are stored:
    # wait until the rules apply, as a real operator would simply retry.
    watched = [o["metadata"]["namespace"] for o in objects if o["kind"] == "RoleBinding"
               and not o["metadata"]["name"].endswith("-leader")] or ["default"]  # (the leader Lease's own Role)
    as_operator = Client(kubectl.binary, config, kubectl.extra)
    deadline = time.monotonic() + 30
    for ns in watched:
        while as_operator("auth", "can-i", "patch", "hivecatalogs.hivecatalog.io", "--subresource=status", "-n", ns,
                          check=False).stdout.strip() != "yes":
            if time.monotonic() > deadline:
                raise AssertionError(f"the chart's rules for {account} did not take effect in {ns} within 30 s")
            time.sleep(0.1)
    return config


def service_account_kubeconfig(kubectl: Client, server_url: str, ca_cert: Path, path: Path, account: str,
                               namespace: str) -> Path:
    """A kubeconfig holding a TokenRequest token of `account` in `namespace`: that ServiceAccount's rights."""
    token = kubectl("create", "token", account, "-n", namespace, "--duration=24h").stdout.strip()
    return write_kubeconfig(path, server_url, ca_cert, {"token": token}, namespace)
