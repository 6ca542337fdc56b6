"""CatalogPolicies in the operator tier: the cluster administrator's grants a test's namespace works under.

Policies that select one namespace add up, so each test (and each fixture that serves something, such as a
metastore on 127.0.0.1) applies its own with what it uses. They are cluster-scoped: each carries the label
LABEL with its namespace, and the namespace fixture deletes them with it.
"""

from __future__ import annotations

from typing import Any

import yaml
from kube.clients import Client

LABEL = "hivecat-test/namespace"
COMPUTE = ["Local", "KubernetesJob", "SparkApplication"]
# The tests' schedules are seconds long; production's defaults are a minute and an hour (chart values).
FAST = {"syncInterval": "1s", "housekeepingDelay": "1s", "scanInterval": "1s"}


def catalog_policy(name: str, namespace: str, **spec: Any) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "CatalogPolicy",
            "metadata": {"name": name, "labels": {LABEL: namespace}},
            "spec": {"namespaces": [namespace], **spec}}


def grant(kubectl: Client, namespace: str, suffix: str = "grants", **spec: Any) -> str:
    """Apply a CatalogPolicy `<namespace>-<suffix>` that grants `namespace` what `spec` says; its name."""
    name = f"{namespace}-{suffix}"
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(catalog_policy(name, namespace, **spec)))
    return name


def lab(**more: Any) -> dict:
    """What most operator tests use: a database server on this machine (any port), every compute type, second
    schedules; `more` adds storage, Glue and metastore addresses (each test names its own)."""
    return {"databases": [{"host": "127.0.0.1"}], "compute": COMPUTE, "minimums": FAST, **more}


def metastore_at(catalog: str, port: int, **more: Any) -> dict:
    """Grants saying that the metastore of `catalog` is reached at 127.0.0.1:`port` (it runs on this machine,
    outside the cluster's network)."""
    return {"metastoreAddresses": [{"catalog": catalog, "address": f"127.0.0.1:{port}"}], **more}


def remove_policies(kubectl: Client, namespace: str) -> None:
    kubectl("delete", "catalogpolicies", "-l", f"{LABEL}={namespace}", "--wait=false", check=False)
