"""The names hivecat's Kubernetes objects share: API group and version, kinds, finalizer, labels, annotations.

The one place these strings are spelled in Python; handlers, domain code and tests import them from here.
The CRDs under crds/ are YAML and spell them again (tests/unit/test_crds.py checks group and version
against these). No kopf here, so code outside the handlers can use the names without the operator framework.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

GROUP: Final = "hivecatalog.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"


@dataclass(frozen=True)
class Kind:
    """One custom resource kind of the hivecatalog.io group."""

    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return API_VERSION

    @property
    def crd_name(self) -> str:
        """The CustomResourceDefinition's metadata.name, also kubectl's fully qualified resource name."""
        return f"{self.plural}.{GROUP}"

    @property
    def label(self) -> str:
        """Label key naming the resource of this kind that owns an object: hivecatalog.io/<kind>."""
        return f"{GROUP}/{self.kind.lower()}"


HIVE_CATALOG: Final = Kind("HiveCatalog", "hivecatalogs")
CLUSTER_STORAGE: Final = Kind("ClusterStorage", "clusterstorages")
TABLE_REPLICA: Final = Kind("TableReplica", "tablereplicas")
# The cluster administrator's grants to namespaces (cluster-scoped: a namespace's users cannot write one).
CATALOG_POLICY: Final = Kind("CatalogPolicy", "catalogpolicies", namespaced=False)
KINDS: Final = (HIVE_CATALOG, CLUSTER_STORAGE, TABLE_REPLICA, CATALOG_POLICY)

FINALIZER: Final = f"{GROUP}/finalizer"

# Recommended Kubernetes labels (app.kubernetes.io/*) on every object the operator creates.
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "hivecat"  # the value of LABEL_MANAGED_BY
LABEL_PART_OF: Final = "app.kubernetes.io/part-of"
LABEL_COMPONENT: Final = "app.kubernetes.io/component"


@dataclass(frozen=True)
class Components:
    """Values of LABEL_COMPONENT: which part of a catalog an object belongs to."""

    metastore: str = "metastore"
    schema: str = "schema"
    client_config: str = "client-config"
    registry: str = "registry"
    copy: str = "copy"


COMPONENT: Final = Components()

# Annotations users (or the operator itself) set on hivecat's resources.
ANNOTATION_SYNC_NOW: Final = f"{GROUP}/sync-now"
ANNOTATION_CONFIRM_MODE_SWITCH: Final = f"{GROUP}/confirm-mode-switch"
ANNOTATION_CONFIG_HASH: Final = f"{GROUP}/config-hash"
