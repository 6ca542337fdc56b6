"""The discovery ConfigMap: named exactly like the catalog, holding where clients find it, the way other
operators (e.g. Stackable's hive-operator) publish theirs, so clients and other operators can reference a
catalog by its name alone.

Keys: MODE always; HIVE (the Thrift URI) when a metastore runs (Thrift, Hybrid), and HIVE_KERBEROS_PRINCIPAL
(the principal its SASL clients ask for) when it is kerberized; GLUE_REGION and, when set,
GLUE_CATALOG_ID when Glue is used (Glue, Hybrid). Nothing secret."""

from __future__ import annotations

from typing import Any

from hivecat.kinds import COMPONENT
from hivecat.specs.mode import GLUE, THRIFT
from hivecat.specs.hivecatalog import HiveCatalogSpec
from hivecat.workloads.labels import catalog_labels, object_name
from hivecat.workloads.metastore import metastore_endpoint


def discovery_config_map_name(spec: HiveCatalogSpec) -> str:
    return object_name(spec.name, None)


def discovery_config_map(spec: HiveCatalogSpec, endpoint: str | None) -> dict[str, Any]:
    """`endpoint`: the Thrift URI to publish; None means the metastore Service's (metastore_endpoint)."""
    data = {"MODE": spec.mode}
    if spec.mode != GLUE:
        data["HIVE"] = endpoint or metastore_endpoint(spec)
        if spec.kerberos is not None:
            data["HIVE_KERBEROS_PRINCIPAL"] = spec.kerberos.metastore_principal
    if spec.mode != THRIFT:
        if spec.glue is None:
            raise ValueError(f"a {spec.mode} catalog needs spec.glue")
        data["GLUE_REGION"] = spec.glue.region
        if spec.glue.catalog_id:
            data["GLUE_CATALOG_ID"] = spec.glue.catalog_id
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": discovery_config_map_name(spec), "namespace": spec.namespace,
                     "labels": catalog_labels(spec.name, COMPONENT.client_config)},
        "data": data,
    }
