"""ConfigMap <catalog>-clusters: the cluster registry of a catalog (clusters.json, replication/registry.py).

Written only by the ClusterStorage reconciler, so no two reconcilers fight over one object; owned by the
HiveCatalog (the handler adopts it), so it goes with the catalog. Clients mount it beside the client
ConfigMap. Nothing secret: credentials stay in the ClusterStorages' Secret references."""

from __future__ import annotations

from typing import Any, Final

from hivecat.kinds import COMPONENT
from hivecat.workloads.labels import catalog_labels, object_name

REGISTRY: Final = "clusters"  # name suffix
REGISTRY_KEY: Final = "clusters.json"


def registry_config_map_name(catalog: str) -> str:
    return object_name(catalog, REGISTRY)


def registry_config_map(catalog: str, namespace: str, document: str) -> dict[str, Any]:
    """`document`: replication.registry.registry_document(), kept byte for byte."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": registry_config_map_name(catalog), "namespace": namespace,
                     "labels": catalog_labels(catalog, COMPONENT.registry)},
        "data": {REGISTRY_KEY: document},
    }
