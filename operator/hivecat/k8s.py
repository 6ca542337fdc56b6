"""The Kubernetes API calls kopf does not make for us: server-side apply of children, reads of Secrets,
Jobs and Deployments, deletes, and listing the resources that reference a catalog.

Blocking (the official client); handlers call it from kopf's sync-handler threads. Every write is a
server-side apply with one field manager, so reapplying an unchanged object is a no-op on the server (no
new resourceVersion) and fields other managers own (e.g. an HPA's replicas) are left to them.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

FIELD_MANAGER = "hivecat"


class SecretUnavailable(Exception):
    """A referenced Secret or key is missing or unreadable; `reason` is a stable condition reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class SecretValue:
    value: str = field(repr=False)
    resource_version: str


@functools.lru_cache(maxsize=1)
def _dynamic() -> Any:
    from kubernetes import client, config, dynamic
    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()  # KUBECONFIG or ~/.kube/config, as kopf found it
    return dynamic.DynamicClient(client.ApiClient())


def _resource(api_version: str, kind: str) -> Any:
    return _dynamic().resources.get(api_version=api_version, kind=kind)


def resource(api_version: str, kind: str) -> Any:
    """The dynamic client's resource, for callers with calls of their own (the leader Lease)."""
    return _resource(api_version, kind)


def _not_found(error: Exception) -> bool:
    return getattr(error, "status", None) == 404


class NamespaceTerminating(Exception):
    """The namespace is being deleted: the API server creates nothing new in it (everything there goes)."""


def _terminating(error: Exception) -> bool:
    return getattr(error, "status", None) == 403 and "being terminated" in str(getattr(error, "body", "") or "")


def apply(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Server-side apply `manifest` (which names its namespace) and return the object as stored."""
    from kubernetes.client.exceptions import ApiException
    meta = manifest["metadata"]
    try:
        result = _resource(manifest["apiVersion"], manifest["kind"]).server_side_apply(
            body=dict(manifest), name=meta["name"], namespace=meta.get("namespace"),
            field_manager=FIELD_MANAGER, force_conflicts=True)
    except ApiException as error:
        if _terminating(error):
            raise NamespaceTerminating(f"namespace {meta.get('namespace')} is being deleted") from None
        raise
    return result.to_dict()


def get(api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    from kubernetes.client.exceptions import ApiException
    try:
        return _resource(api_version, kind).get(name=name, namespace=namespace).to_dict()
    except ApiException as error:
        if _not_found(error):
            return None
        raise


def list_labelled(api_version: str, kind: str, namespace: str, selector: Mapping[str, str]) -> list[dict[str, Any]]:
    text = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    found = _resource(api_version, kind).get(namespace=namespace, label_selector=text)
    return [item.to_dict() for item in found.items]


def list_all(api_version: str, kind: str, namespace: str) -> Iterator[dict[str, Any]]:
    for item in _resource(api_version, kind).get(namespace=namespace).items:
        yield item.to_dict()


def delete(api_version: str, kind: str, namespace: str, name: str) -> bool:
    """Delete with foreground propagation (a Deployment's pods go first); False if it was already gone."""
    from kubernetes.client.exceptions import ApiException
    try:
        _resource(api_version, kind).delete(name=name, namespace=namespace,
                                            body={"propagationPolicy": "Foreground"})
        return True
    except ApiException as error:
        if _not_found(error):
            return False
        raise


def patch_status(kind: Any, namespace: str, name: str, status: Mapping[str, Any]) -> None:
    """Merge-patch the status subresource of one of our resources (`kind`: a hivecat.kinds.Kind)."""
    from kubernetes.client.exceptions import ApiException
    resource = _resource(kind.api_version, kind.kind).subresources["status"]
    try:
        _dynamic().patch(resource, name=name, namespace=namespace, body={"status": dict(status)},
                         content_type="application/merge-patch+json")
    except ApiException as error:
        if not _not_found(error):  # deleted meanwhile: nothing to report on
            raise


def read_secret(namespace: str, name: str, key: str) -> SecretValue:
    """One key of a Secret in `namespace`. Messages name the Secret and key, never a value."""
    from kubernetes.client.exceptions import ApiException
    try:
        secret = _resource("v1", "Secret").get(name=name, namespace=namespace).to_dict()
    except ApiException as error:
        if _not_found(error):
            raise SecretUnavailable("SecretNotFound", f"Secret {namespace}/{name} does not exist") from None
        if error.status == 403:
            raise SecretUnavailable("SecretForbidden", f"the operator may not read Secret {namespace}/{name}: "
                                    "grant it get on secrets in this namespace") from None
        raise
    data = secret.get("data") or {}
    if key not in data:
        raise SecretUnavailable("SecretKeyNotFound", f"Secret {namespace}/{name} has no key {key!r}")
    try:
        value = base64.b64decode(data[key]).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise SecretUnavailable("SecretKeyNotFound",
                                f"key {key!r} of Secret {namespace}/{name} is not UTF-8 text") from None
    return SecretValue(value, secret["metadata"]["resourceVersion"])
