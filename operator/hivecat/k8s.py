"""The Kubernetes API calls kopf does not make for us: server-side apply of children, reads of Secrets,
Jobs and Deployments, deletes, and listing the resources that reference a catalog.

Blocking (the official client); handlers call it from kopf's sync-handler threads. Every write is a
server-side apply with one field manager, so reapplying an unchanged object is a no-op on the server (no
new resourceVersion) and fields other managers own (e.g. an HPA's replicas) are left to them.

hivecat writes and deletes only objects it created for the resource that owns them: a child is created with a
plain create (which fails if the name is taken meanwhile), and applied or deleted afterwards only while it
carries hivecat's label and an owner reference to that resource, with the object's resourceVersion (apply) or
uid (delete) as a precondition, so nothing swapped in between is touched. An object of that name that hivecat
did not create is NameTaken, never taken over or deleted.
"""

from __future__ import annotations

import base64
import functools
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from hivecat import reasons
from hivecat.apierrors import NamespaceTerminating, NameTaken, SecretUnavailable
from hivecat.config import config as hivecat_config
from hivecat.kinds import LABEL_MANAGED_BY, MANAGED_BY
from hivecat.timestamps import rfc3339

__all__ = ["NameTaken", "NamespaceTerminating", "SecretUnavailable", "SecretValue", "apply", "delete", "get",
           "list_all", "list_labelled", "owned_by", "owner_uid", "patch_status", "read_secret", "read_secret_keys",
           "resource", "write_status"]

FIELD_MANAGER = "hivecat"
# Kinds hivecat creates and never changes (a Job's template cannot change; a run is deleted, then made anew).
CREATED_ONCE = frozenset({"Job", "SparkApplication"})
THROTTLED_ATTEMPTS = 5  # retries of a request the API server answered 429 (after its Retry-After)
KOPF_THREADS = 16  # kopf runs synchronous handlers on the event loop's default executor (min(32, CPUs + 4))


@dataclass(frozen=True)
class SecretValue:
    value: str = field(repr=False)
    resource_version: str


@dataclass(frozen=True)
class SecretBytes:
    value: bytes = field(repr=False)
    resource_version: str


_making_client = threading.Lock()


def _dynamic() -> Any:
    """The one client of this process. Made under a lock: the threads of a start asked at once, and each made
    its own, reading the discovery cache file while another wrote it ("load cache error" in the log)."""
    with _making_client:
        return _made_dynamic()


@functools.lru_cache(maxsize=1)
def _made_dynamic() -> Any:
    from kubernetes import client, config, dynamic
    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()  # KUBECONFIG or ~/.kube/config, as kopf found it
    settings = client.Configuration.get_default_copy()
    # One kept connection per thread that may call at once (every kind's pool, kopf's handler threads): the
    # default (5 per CPU) made the operator open, and TLS-handshake, a new connection for most requests.
    settings.connection_pool_maxsize = 3 * hivecat_config().workers + KOPF_THREADS
    settings.retries = throttled_retries()
    return dynamic.DynamicClient(client.ApiClient(settings))


def throttled_retries() -> Any:
    """Requests the API server throttled (429: its priority and fairness did not run them) are sent again
    after the Retry-After it names, whatever the verb; nothing else is retried here (a timeout or a refused
    connection says something the caller must hear, and a write that may have happened is not repeated)."""
    from urllib3.util.retry import Retry

    return Retry(total=THROTTLED_ATTEMPTS, connect=0, read=0, redirect=0, other=0, status=THROTTLED_ATTEMPTS,
                 status_forcelist=(429,), allowed_methods=None, backoff_factor=0.5,
                 respect_retry_after_header=True, raise_on_status=False)


def _resource(api_version: str, kind: str) -> Any:
    return _dynamic().resources.get(api_version=api_version, kind=kind)


def resource(api_version: str, kind: str) -> Any:
    """The dynamic client's resource, for callers with calls of their own (the leader Lease)."""
    return _resource(api_version, kind)


def _not_found(error: Exception) -> bool:
    return getattr(error, "status", None) == 404


def _terminating(error: Exception) -> bool:
    return getattr(error, "status", None) == 403 and "being terminated" in str(getattr(error, "body", "") or "")


def owner_uid(manifest: Mapping[str, Any]) -> str:
    """The uid of the resource that owns `manifest` (its controller reference, as kopf.adopt sets it)."""
    for ref in (manifest.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref["uid"])
    raise ValueError(f"{manifest.get('kind')} {manifest['metadata'].get('name')} has no owner: adopt it first")


def owned_by(found: Mapping[str, Any], uid: str) -> bool:
    """Whether hivecat created `found` for the resource with this uid: its label and its owner reference."""
    meta = found.get("metadata") or {}
    labelled = (meta.get("labels") or {}).get(LABEL_MANAGED_BY) == MANAGED_BY
    return labelled and any(ref.get("uid") == uid for ref in meta.get("ownerReferences") or ())


APPLY_ATTEMPTS = 6  # of a pinned apply that meets a newer version
# Seconds before the second attempt, doubling after each: a Deployment's controller writes a new one's status
# several times in its first second, and three attempts in 0.2 s all met a newer version under load.
APPLY_PAUSE = 0.05
_pause = time.sleep  # pinned applies run on the kinds' pools, never on the event loop


def apply(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Create `manifest` (which names its namespace and owner), or server-side apply it over the object hivecat
    created for that owner; return the object as stored. NameTaken when the name is someone else's."""
    from kubernetes.client.exceptions import ApiException
    meta = manifest["metadata"]
    namespace, name = meta.get("namespace"), meta["name"]
    uid = owner_uid(manifest)
    resource = _resource(manifest["apiVersion"], manifest["kind"])
    try:
        found = get(manifest["apiVersion"], manifest["kind"], namespace, name)
        if found is None:
            try:
                # A plain create fails if the name was taken meanwhile. The apply below then takes the fields
                # over as server-side apply's (a create records them as an update): once, now, so the next
                # pass's apply of the same manifest changes nothing (no new resourceVersion).
                found = resource.create(body=dict(manifest), namespace=namespace,
                                        field_manager=FIELD_MANAGER).to_dict()
            except ApiException as error:
                if error.status != 409:  # AlreadyExists: created meanwhile, judged below
                    raise
                found = get(manifest["apiVersion"], manifest["kind"], namespace, name)
        if found is None or not owned_by(found, uid):
            raise NameTaken(manifest["kind"], namespace, name)
        if manifest["kind"] in CREATED_ONCE:
            return found
        for attempt in range(APPLY_ATTEMPTS):
            # Pinned to the version judged ours: a 409 says it changed since (a controller writing its status,
            # say), so it is read and judged again, never applied over unseen.
            pinned = {**manifest, "metadata": {**meta, "resourceVersion": found["metadata"]["resourceVersion"]}}
            try:
                result = resource.server_side_apply(body=pinned, name=name, namespace=namespace,
                                                    field_manager=FIELD_MANAGER, force_conflicts=True)
                break
            except ApiException as error:
                if error.status != 409 or attempt == APPLY_ATTEMPTS - 1:
                    raise
            _pause(APPLY_PAUSE * 2 ** attempt)
            found = get(manifest["apiVersion"], manifest["kind"], namespace, name)
            if found is None or not owned_by(found, uid):
                raise NameTaken(manifest["kind"], namespace, name)
    except ApiException as error:
        if _terminating(error):
            raise NamespaceTerminating(f"namespace {namespace} is being deleted") from None
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


def delete(api_version: str, kind: str, namespace: str, name: str, owner: str) -> bool:
    """Delete the object hivecat created for the resource with uid `owner`, with foreground propagation (a
    Deployment's pods go first); False if it was already gone. NameTaken when it is someone else's."""
    from kubernetes.client.exceptions import ApiException
    found = get(api_version, kind, namespace, name)
    if found is None:
        return False
    if not owned_by(found, owner):
        raise NameTaken(kind, namespace, name)
    try:
        _resource(api_version, kind).delete(name=name, namespace=namespace, body={
            "propagationPolicy": "Foreground", "preconditions": {"uid": found["metadata"]["uid"]}})
        return True
    except ApiException as error:
        if _not_found(error):
            return False
        if error.status == 409:  # the uid precondition: replaced meanwhile by an object hivecat did not make
            raise NameTaken(kind, namespace, name) from None
        raise


def timestamp() -> str:
    """Now, as the API's time fields read (a condition's lastTransitionTime): RFC 3339, UTC, whole seconds."""
    return rfc3339(datetime.now(timezone.utc))


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


STATUS_ATTEMPTS = 5  # of a pinned status write that meets a newer version


def write_status(kind: Any, body: Mapping[str, Any],
                 render: Callable[[Mapping[str, Any]], Mapping[str, Any]]) -> None:
    """Merge-patch the status `render(current status)`, compare-and-set: pinned to the resourceVersion of the
    body the status was read from. A daemon's body lags the watch, so a status rendered from it may put back
    what another writer (or the daemon's own last write) has changed since; the API server answers 409, and
    the status is read again and rendered anew."""
    from kubernetes.client.exceptions import ApiException
    resource = _resource(kind.api_version, kind.kind).subresources["status"]
    meta = body["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    current: Mapping[str, Any] = body
    for attempt in range(STATUS_ATTEMPTS):
        patch = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                 "status": dict(render(current.get("status") or {}))}
        try:
            _dynamic().patch(resource, name=name, namespace=namespace, body=patch,
                             content_type="application/merge-patch+json")
            return
        except ApiException as error:
            if _not_found(error):
                return  # deleted meanwhile: nothing to report on
            if error.status != 409 or attempt == STATUS_ATTEMPTS - 1:
                raise
        found = get(kind.api_version, kind.kind, namespace, name)
        if found is None:
            return
        current = found


def _secret(namespace: str, name: str) -> dict[str, Any]:
    from kubernetes.client.exceptions import ApiException
    try:
        return _resource("v1", "Secret").get(name=name, namespace=namespace).to_dict()
    except ApiException as error:
        if _not_found(error):
            raise SecretUnavailable(reasons.SECRET_NOT_FOUND, f"Secret {namespace}/{name} does not exist") from None
        if error.status == 403:
            raise SecretUnavailable(reasons.SECRET_FORBIDDEN, f"the operator may not read Secret {namespace}/{name}: "
                                    "grant it get on secrets in this namespace") from None
        raise


def _decoded(namespace: str, name: str, key: str, data: Mapping[str, str]) -> str:
    try:
        return base64.b64decode(data[key]).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise SecretUnavailable(reasons.SECRET_KEY_NOT_FOUND,
                                f"key {key!r} of Secret {namespace}/{name} is not UTF-8 text") from None


def read_secret(namespace: str, name: str, key: str) -> SecretValue:
    """One key of a Secret in `namespace`. Messages name the Secret and key, never a value."""
    secret = _secret(namespace, name)
    data = secret.get("data") or {}
    if key not in data:
        raise SecretUnavailable(reasons.SECRET_KEY_NOT_FOUND, f"Secret {namespace}/{name} has no key {key!r}")
    return SecretValue(_decoded(namespace, name, key, data), secret["metadata"]["resourceVersion"])


def read_secret_bytes(namespace: str, name: str, key: str) -> SecretBytes:
    """One key of a Secret as bytes (a keytab is binary). Messages name the Secret and key, never a value."""
    secret = _secret(namespace, name)
    data = secret.get("data") or {}
    if key not in data:
        raise SecretUnavailable(reasons.SECRET_KEY_NOT_FOUND, f"Secret {namespace}/{name} has no key {key!r}")
    try:
        return SecretBytes(base64.b64decode(data[key]), secret["metadata"]["resourceVersion"])
    except ValueError:
        raise SecretUnavailable(reasons.SECRET_KEY_NOT_FOUND,
                                f"key {key!r} of Secret {namespace}/{name} is not base64") from None


def read_secret_keys(namespace: str, name: str, keys: tuple[str, ...]) -> dict[str, str]:
    """Those of `keys` the Secret holds (one read), e.g. a storage's optional session token."""
    data = _secret(namespace, name).get("data") or {}
    return {key: _decoded(namespace, name, key, data) for key in keys if key in data}
