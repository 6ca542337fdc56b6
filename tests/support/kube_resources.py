"""What the operator-tier tests do with hivecat's resources through kubectl: apply, read back, wait for a
status, list the children the operator made. One copy for every test file of the tier."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import yaml
from kube.clients import Client

GLUE_FACTORY = "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"
FACTORY = "hive.metastore.client.factory.class"


def apply(kubectl: Client, namespace: str, *objects: dict) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump_all(objects))


def get(kubectl: Client, namespace: str, *what: str) -> dict | None:
    """The object as JSON, or None when it does not exist."""
    return kubectl.get(namespace, *what)


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 90) -> Any:
    """probe()'s first truthy value, polled every 0.1 s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def status_of(kubectl: Client, namespace: str, name: str, kind: str = "hivecatalog") -> dict:
    return (get(kubectl, namespace, kind, name) or {}).get("status") or {}


def condition(kubectl: Client, namespace: str, name: str, type_: str = "Ready", kind: str = "hivecatalog") -> dict:
    return next((c for c in status_of(kubectl, namespace, name, kind).get("conditions") or ()
                 if c["type"] == type_), {})


def wait_taken(kubectl: Client, namespace: str, name: str, kind: str = "hivecatalog", timeout: float = 60) -> dict:
    """The Ready condition once the operator has stated one for the resource's current generation, whatever it
    says (a hostile test then looks at what happened before asking why)."""
    def stated() -> dict | None:
        found = get(kubectl, namespace, kind, name) or {}
        ready = next((c for c in (found.get("status") or {}).get("conditions") or () if c["type"] == "Ready"), None)
        current = (found.get("metadata") or {}).get("generation")
        return ready if ready and ready.get("observedGeneration") == current else None
    return wait_for(f"{kind} {name} taken up", stated, timeout)


def wait_reason(kubectl: Client, namespace: str, name: str, reason: str, type_: str = "Ready",
                timeout: float = 60, kind: str = "hivecatalog") -> dict:
    """The condition `type_` once its reason is `reason`; on timeout the whole status is in the error."""
    try:
        return wait_for(f"{type_} reason {reason}",
                        lambda: condition(kubectl, namespace, name, type_, kind).get("reason") == reason
                        and condition(kubectl, namespace, name, type_, kind), timeout)
    except AssertionError:
        raise AssertionError(f"{kind} {name}: {type_} never got reason {reason}: "
                             f"{json.dumps(status_of(kubectl, namespace, name, kind), indent=1)}") from None


def children(kubectl: Client, namespace: str) -> dict[str, str]:
    """kind/name → resourceVersion of everything hivecat made in the namespace."""
    found = kubectl.json("get", "-n", namespace, "configmaps,services,deployments,jobs",
                         "-l", "app.kubernetes.io/managed-by=hivecat")
    return {f"{i['kind']}/{i['metadata']['name']}": i["metadata"]["resourceVersion"] for i in found["items"]}


def events(kubectl: Client, namespace: str, reason: str) -> list[dict]:
    return kubectl.json("get", "-n", namespace, "events", "--field-selector", f"reason={reason}")["items"]


def aws_secret(name: str = "aws") -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "stringData": {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}}


def password_secret(name: str, password: str, key: str = "password") -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {key: password}}


def secret_values(kubectl: Client, namespace: str, name: str) -> dict[str, str]:
    """A Secret's keys and decoded values."""
    data = kubectl.json("get", "-n", namespace, "secret", name)["data"]
    return {key: base64.b64decode(value).decode() for key, value in data.items()}


def container_env(container: dict, secret_value: Callable[[str, str], str], pod: dict | None = None) -> dict[str, str]:
    """A container's env as the kubelet resolves it: plain values, Secret keys (secret_value(name, key)) and
    the pod's namespace and name (the downward API; `pod` holds its metadata)."""
    env = {}
    for item in container.get("env") or ():
        if "value" in item:
            env[item["name"]] = item["value"]
        elif "fieldRef" in item["valueFrom"]:
            assert pod is not None, f"{item['name']} comes from the downward API: pass the pod"
            field = item["valueFrom"]["fieldRef"]["fieldPath"]
            env[item["name"]] = {"metadata.namespace": pod["metadata"]["namespace"],
                                 "metadata.name": pod["metadata"]["name"]}[field]
        else:
            ref = item["valueFrom"]["secretKeyRef"]
            env[item["name"]] = secret_value(ref["name"], ref["key"])
    return env
