"""A kubeconfig file pointing kubectl, kopf and the `kubernetes` client at the local API server."""

from __future__ import annotations

from pathlib import Path

import yaml

CONTEXT = "hivecat-local"


def write_kubeconfig(path: Path, server_url: str, namespace: str = "default") -> Path:
    """Plain HTTP and no credentials: the local server has no TLS and no authentication (see README)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server_url}}],
        "users": [{"name": CONTEXT, "user": {}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
