"""Kubeconfig files for the test control plane: one for the admin (tests, kubectl, helm, Kubernetes'
own components) and one for the operator (a ServiceAccount token)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CONTEXT = "hivecat-test"


def write_kubeconfig(path: Path, server_url: str, ca_cert: Path, user: dict[str, Any],
                     namespace: str = "default") -> Path:
    """`user` is a kubeconfig user entry: client-certificate/client-key paths, or a bearer token."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server_url, "certificate-authority": str(ca_cert)}}],
        "users": [{"name": CONTEXT, "user": user}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
