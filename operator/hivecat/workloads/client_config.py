"""ConfigMap <catalog>-client: what a Hive or Spark client mounts to use the catalog, complete for its mode.

- hive-site.xml: Hive's side (the hive-site classification).
- spark-defaults.conf: Spark's side. Spark has no hive-site.xml of its own in this ConfigMap, so the
  spark-hive-site classification becomes spark.hadoop.* entries, which Spark hands to its Hive client.
- configurations.json: the same as EMR classifications, for EMR-style tooling.

Thrift: both sides use the Thrift URI (kerberized: with SASL and the metastore's principal). Glue: both sides use the Glue client factory (with catalog id,
region and endpoint). Hybrid: Hive uses Thrift, Spark uses Glue. The user's classification properties are
merged in, and win, except for the keys that choose the catalog (OWNED_KEYS): those follow the mode.
Everything here is readable by anyone who can read ConfigMaps: no secret ever (publishable_properties).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from hivecat.catalog.hive_site import hive_site_xml, publishable_properties, refuse_control_characters
from hivecat.kinds import COMPONENT
from hivecat.specs.mode import (FACTORY_PROPERTY, GLUE, GLUE_CLIENT_FACTORY, HIVE_SITE, SPARK_DEFAULTS,
                                    SPARK_HIVE_SITE, THRIFT)
from hivecat.specs.hivecatalog import HiveCatalogSpec
from hivecat.workloads.labels import CLIENT, catalog_labels, object_name
from hivecat.workloads.metastore import PRINCIPAL_PROPERTY, SASL_PROPERTY, metastore_endpoint

HIVE_SITE_KEY: Final = "hive-site.xml"
SPARK_DEFAULTS_KEY: Final = "spark-defaults.conf"
CONFIGURATIONS_KEY: Final = "configurations.json"

URIS: Final = "hive.metastore.uris"
GLUE_CATALOG_ID: Final = "hive.metastore.glue.catalogid"
AWS_REGION: Final = "aws.region"  # read by the AWS Glue Data Catalog client for Hive
GLUE_ENDPOINT: Final = "aws.glue.endpoint"
CATALOG_IMPLEMENTATION: Final = "spark.sql.catalogImplementation"
SPARK_HADOOP: Final = "spark.hadoop."
# Keys that say which catalog a client talks to: the operator sets them from the mode, a user value is
# dropped (a leftover thrift URI in a Glue catalog would otherwise send some clients elsewhere).
OWNED_KEYS: Final = frozenset({URIS, FACTORY_PROPERTY, GLUE_CATALOG_ID, AWS_REGION, GLUE_ENDPOINT, SASL_PROPERTY,
                               PRINCIPAL_PROPERTY})


def client_config_map_name(spec: HiveCatalogSpec) -> str:
    return object_name(spec.name, CLIENT)


def _thrift_side(spec: HiveCatalogSpec, endpoint: str) -> dict[str, str]:
    """The metastore's URI and, kerberized, that it speaks SASL as its principal (clients complete _HOST)."""
    side = {URIS: endpoint}
    if spec.kerberos is not None:
        side.update({SASL_PROPERTY: "true", PRINCIPAL_PROPERTY: spec.kerberos.metastore_principal})
    return side


def _glue_side(spec: HiveCatalogSpec) -> dict[str, str]:
    if spec.glue is None:
        raise ValueError(f"a {spec.mode} catalog needs spec.glue")
    side = {FACTORY_PROPERTY: GLUE_CLIENT_FACTORY, AWS_REGION: spec.glue.region}
    if spec.glue.catalog_id:
        side[GLUE_CATALOG_ID] = spec.glue.catalog_id
    if spec.glue.endpoint:
        side[GLUE_ENDPOINT] = spec.glue.endpoint
    return side


def _merge(user: Mapping[str, str], owned: Mapping[str, str]) -> dict[str, str]:
    return publishable_properties({**{k: v for k, v in user.items() if k not in OWNED_KEYS}, **owned})


def client_properties(spec: HiveCatalogSpec, endpoint: str | None) -> dict[str, dict[str, str]]:
    """classification → properties, complete for the mode. `endpoint`: the Thrift URI clients use; None
    means the metastore Service's (metastore_endpoint); ignored in Glue mode."""
    thrift = _thrift_side(spec, endpoint or metastore_endpoint(spec)) if spec.mode != GLUE else {}
    glue = _glue_side(spec) if spec.mode != THRIFT else {}
    hive_side = glue if spec.mode == GLUE else thrift  # Hybrid: Hive keeps the metastore
    spark_side = thrift if spec.mode == THRIFT else glue
    user = spec.configurations
    spark_defaults = {k: v for k, v in user.get(SPARK_DEFAULTS, {}).items()
                      if not (k.startswith(SPARK_HADOOP) and k[len(SPARK_HADOOP):] in OWNED_KEYS)}
    return {
        HIVE_SITE: _merge(user.get(HIVE_SITE, {}), hive_side),
        SPARK_HIVE_SITE: _merge(user.get(SPARK_HIVE_SITE, {}), spark_side),
        # Without the Hive catalog implementation Spark would keep tables in memory and ignore the catalog.
        SPARK_DEFAULTS: publishable_properties({**spark_defaults, CATALOG_IMPLEMENTATION: "hive"}),
    }


def spark_defaults_conf(spark_hive_site: Mapping[str, str], spark_defaults: Mapping[str, str]) -> str:
    """spark-defaults.conf: the spark-defaults properties, then spark.hadoop.<key> for spark-hive-site,
    which win (they are where the catalog is chosen). Sorted, one `key value` line each. ValueError for a
    control character: a line break would start another property."""
    merged = {**spark_defaults, **{SPARK_HADOOP + k: v for k, v in spark_hive_site.items()}}
    refuse_control_characters(merged, "spark-defaults.conf")
    return "".join(f"{_escape(key, True)} {_escape(value, False)}\n" for key, value in sorted(merged.items()))


def _escape(text: str, key: bool) -> str:
    """Spark reads spark-defaults.conf as a java.util.Properties file: backslashes and line breaks must be
    escaped, and so must what Properties would strip from a value's start (blanks, one '=' or ':')."""
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\f", "\\f")
    if key:
        for c in " \t=:#!":
            out = out.replace(c, "\\" + c)
        return out
    stripped = out.lstrip(" \t")
    out = "".join("\\" + c for c in out[:len(out) - len(stripped)]) + stripped
    if out[:1] in ("=", ":"):
        out = "\\" + out
    return out


def configurations_json(properties: Mapping[str, Mapping[str, str]]) -> str:
    """The classifications as the EMR API takes them: [{"Classification": ..., "Properties": {...}}]."""
    items = [{"Classification": name, "Properties": dict(sorted(props.items()))}
             for name, props in properties.items() if props]
    return json.dumps(items, indent=2, sort_keys=True) + "\n"


def client_config_map(spec: HiveCatalogSpec, endpoint: str | None) -> dict[str, Any]:
    """ConfigMap <catalog>-client with hive-site.xml, spark-defaults.conf and configurations.json."""
    props = client_properties(spec, endpoint)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": client_config_map_name(spec), "namespace": spec.namespace,
                     "labels": catalog_labels(spec.name, COMPONENT.client_config)},
        "data": {
            HIVE_SITE_KEY: hive_site_xml(props[HIVE_SITE]),
            SPARK_DEFAULTS_KEY: spark_defaults_conf(props[SPARK_HIVE_SITE], props[SPARK_DEFAULTS]),
            CONFIGURATIONS_KEY: configurations_json(props),
        },
    }
