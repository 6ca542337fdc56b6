"""kubectl's reads that tests poll, over one HTTP session per kubeconfig instead of a process per call.

A wait polls every fraction of a second; as a kubectl process each read cost ~0.07 CPU-s, its kubeconfig parse and
a TLS handshake (2,593 of them in one `make test`: ~170 CPU-s of a CPU-bound run). Same API server, same identity
(the kubeconfig's client certificate or token), same JSON. Only plain reads of known kinds go this way; anything
else, and any answer but 200, stays with kubectl (whose error message the test then sees).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import requests
import yaml

from hivecat.kinds import GROUP, KINDS, VERSION

# kubectl's names for a kind (singular, plural, short) → its API path prefix and plural
_CORE = {"configmap": "configmaps", "secret": "secrets", "service": "services", "svc": "services", "pod": "pods",
         "event": "events", "serviceaccount": "serviceaccounts", "sa": "serviceaccounts"}
_PATHS: dict[str, tuple[str, str]] = {
    **{name: ("/api/v1", plural) for name, plural in _CORE.items()},
    **{plural: ("/api/v1", plural) for plural in _CORE.values()},
    **{name: ("/apis/apps/v1", "deployments") for name in ("deployment", "deployments", "deploy")},
    **{name: ("/apis/apps/v1", "replicasets") for name in ("replicaset", "replicasets", "rs")},
    "job": ("/apis/batch/v1", "jobs"), "jobs": ("/apis/batch/v1", "jobs"),
    **{name: (f"/apis/{GROUP}/{VERSION}", kind.plural) for kind in KINDS if kind.namespaced
       for name in (kind.kind.lower(), kind.plural)},
}
_SELECTORS = {"-l": "labelSelector", "--field-selector": "fieldSelector"}


def read(kubeconfig: Path, args: tuple[str, ...]) -> Any | None:
    """What `kubectl get ARGS -o json` prints, for `get -n NS KIND [NAME] [-l SEL] [--field-selector SEL]`;
    None when the call is not such a read or the server did not answer 200 (then kubectl runs)."""
    found = _request(args)
    if found is None:
        return None
    response = _get(kubeconfig, *found)
    if response.status_code != 200:
        return None
    answer = response.json()
    if "items" in answer:  # kubectl's List: each item names its kind, as a single GET's answer does
        kind, api_version = answer.get("kind", "").removesuffix("List"), answer.get("apiVersion", "v1")
        answer = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                  "items": [{"apiVersion": api_version, "kind": kind, **item} for item in answer["items"]]}
    return answer


def read_one(kubeconfig: Path, namespace: str, kind: str, name: str) -> tuple[bool, Any]:
    """(True, the object or None when it does not exist) when the server answered 200 or 404 NotFound for a
    known kind; (False, None) when kubectl must be asked."""
    found = _request(("get", "-n", namespace, kind, name))
    if found is None:
        return False, None
    response = _get(kubeconfig, *found)
    if response.status_code == 404 and _status_reason(response) == "NotFound":
        return True, None
    return (True, response.json()) if response.status_code == 200 else (False, None)


def _get(kubeconfig: Path, path: str, params: dict[str, str]) -> requests.Response:
    base_url, session = _session(kubeconfig, kubeconfig.stat().st_mtime_ns)
    return session.get(base_url + path, params=params or None, timeout=30)


def _status_reason(response: requests.Response) -> str | None:
    """The reason of the server's Status answer; None for anything else (e.g. "404 page not found", a path the
    server does not serve)."""
    try:
        answer = response.json()
    except ValueError:
        return None
    return answer.get("reason") if isinstance(answer, dict) and answer.get("kind") == "Status" else None


def _request(args: tuple[str, ...]) -> tuple[str, dict[str, str]] | None:
    if len(args) < 4 or args[0] != "get" or args[1] != "-n" or args[3] not in _PATHS:
        return None
    namespace, (prefix, plural), rest = args[2], _PATHS[args[3]], list(args[4:])
    name = rest.pop(0) if rest and not rest[0].startswith("-") else None
    params: dict[str, str] = {}
    while rest:
        if len(rest) < 2 or rest[0] not in _SELECTORS or name is not None:
            return None
        flag, selector, rest = rest[0], rest[1], rest[2:]
        params[_SELECTORS[flag]] = selector
    return f"{prefix}/namespaces/{namespace}/{plural}" + (f"/{name}" if name else ""), params


@lru_cache(maxsize=16)
def _session(kubeconfig: Path, _mtime_ns: int) -> tuple[str, requests.Session]:
    """The kubeconfig's current context as an HTTP session (a rewritten file: a new session)."""
    config = yaml.safe_load(kubeconfig.read_text())
    context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    session = requests.Session()
    session.trust_env = False  # no proxy, no REQUESTS_CA_BUNDLE: only the kubeconfig's CA
    session.verify = cluster["certificate-authority"]
    if "token" in user:
        session.headers["Authorization"] = f"Bearer {user['token']}"
    else:
        session.cert = (user["client-certificate"], user["client-key"])
    return cluster["server"].rstrip("/"), session
