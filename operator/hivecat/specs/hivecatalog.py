"""A HiveCatalog's spec as frozen dataclasses: parsed from the CR body (a Mapping, as kopf gives it),
defaults applied as the CRD applies them, and every rule the CRD's schema and CEL rules enforce checked
again, since a body can reach the operator without them. No I/O: Secrets are references here."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from hivecat import reasons
from hivecat.catalog.hive_site import control_character, secret_properties
from hivecat.kinds import ANNOTATION_CONFIRM_MODE_SWITCH, HIVE_CATALOG
# The module, not its names: hivecat.specs.mode imports SpecInvalid from this package, so whichever of
# the two is imported first, the other may still be half-initialized here; its names are read at call time.
from hivecat.specs import mode as mode_rule
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.fields import flag, mapping, opt_str, whole
from hivecat.specs.kerberos import CatalogKerberos, parse_catalog_kerberos
from hivecat.specs.schema import check_spec

__all__ = ["DatabaseSpec", "GlueCredentialsRef", "GlueSpec", "HiveCatalogSpec", "MetastoreSpec", "SecretKeyRef",
           "SpecInvalid", "parse_hive_catalog"]

DEFAULT_PORTS: Final = {"mysql": 3306, "mariadb": 3306, "postgresql": 5432, "derby": 0}
DIALECTS: Final = {"mysql": "mysql", "mariadb": "mysql", "postgresql": "postgresql", "derby": "derby"}
DEFAULT_METASTORE_PORT: Final = 9083
DEFAULT_HIVE_VERSION: Final = "3.1.3"
DEFAULT_HIVE_HOME: Final = "/opt/hive"
DEFAULT_PASSWORD_KEY: Final = "password"
DEFAULT_ACCESS_KEY_ID_KEY: Final = "AWS_ACCESS_KEY_ID"
DEFAULT_SECRET_ACCESS_KEY_KEY: Final = "AWS_SECRET_ACCESS_KEY"
PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")

# The CRD's patterns. hive_home reaches a shell as "$HIVE_HOME" (quoted), yet stays plain path characters.
HIVE_VERSION: Final = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+(-(alpha|beta|rc)-[0-9]+)?")
HIVE_HOME: Final = re.compile(r"/[-._/a-zA-Z0-9]*")
_URI: Final = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
_KEY: Final = re.compile(r"[-._a-zA-Z0-9]+")


@dataclass(frozen=True)
class SecretKeyRef:
    name: str  # a Secret in the catalog's own namespace
    key: str


@dataclass(frozen=True)
class DatabaseSpec:
    type: str  # mysql | mariadb | postgresql | derby
    host: str | None
    port: int  # the engine's usual port when not given; 0 for derby
    name: str | None
    user: str | None
    password: SecretKeyRef | None

    @property
    def dialect(self) -> str:
        """schematool's -dbType family: mysql (MySQL and MariaDB), postgresql or derby."""
        return DIALECTS[self.type]


@dataclass(frozen=True)
class GlueCredentialsRef:
    name: str
    access_key_id_key: str
    secret_access_key_key: str


@dataclass(frozen=True)
class GlueSpec:
    region: str
    catalog_id: str | None
    endpoint: str | None
    credentials: GlueCredentialsRef | None
    role_arn: str | None
    default_database_location: str | None
    functions: bool = True  # relocations also rewrite user-defined functions' resource URIs


@dataclass(frozen=True)
class MetastoreSpec:
    image: str  # spec.metastore.image, else the operator's default image
    image_pull_policy: str | None
    replicas: int
    resources: Mapping[str, Any]  # as in a Pod spec; a copy, never kopf's body
    warehouse_dir: str | None
    port: int
    hive_version: str  # what the image runs: the operator cannot look inside an image
    hive_home: str  # Hive's install directory in the image (bin/schematool, bin/hive)


@dataclass(frozen=True)
class HiveCatalogSpec:
    name: str
    namespace: str
    uid: str
    generation: int
    suspend: bool
    explicit_mode: str | None  # spec.mode as written
    mode: str  # effective: Thrift | Glue | Hybrid (hivecat.specs.mode)
    spark_side_completed: bool  # Glue from hive-site alone: the operator added the Spark side
    configurations: Mapping[str, Mapping[str, str]]  # classification → properties (copies)
    metastore: MetastoreSpec
    database: DatabaseSpec | None
    glue: GlueSpec | None
    confirm_mode_switch: bool  # annotation hivecatalog.io/confirm-mode-switch: "true"
    notification_events: bool = True  # spec.notificationEvents: Enabled (the listener runs, rewrites log events)
    kerberos: CatalogKerberos | None = None  # spec.kerberos: the metastore speaks SASL GSSAPI only


def parse_hive_catalog(body: Mapping[str, Any], *, default_image: str) -> HiveCatalogSpec:
    """The typed spec of a HiveCatalog body, or SpecInvalid naming the first problem."""
    meta = body.get("metadata") or {}
    spec = mapping(body.get("spec"), "spec")
    configurations = _configurations(spec.get("configurations"))
    explicit_mode = opt_str(spec, "mode", "spec")
    choice = mode_rule.derive_mode(configurations, explicit_mode)
    metastore = _metastore(mapping(spec.get("metastore"), "spec.metastore"), default_image)
    database = _database(spec["database"]) if spec.get("database") is not None else None
    glue = _glue(spec["glue"]) if spec.get("glue") is not None else None
    runs_metastore = choice.mode in (mode_rule.THRIFT, mode_rule.HYBRID)
    if runs_metastore and database is None:
        raise SpecInvalid(reasons.DATABASE_MISSING, f"a {choice.mode} catalog runs a Hive Metastore, which needs "
                                             "spec.database: add the database the metastore keeps its tables in")
    if choice.mode in (mode_rule.GLUE, mode_rule.HYBRID) and glue is None:
        raise SpecInvalid(reasons.GLUE_MISSING, f"a {choice.mode} catalog uses the AWS Glue Data Catalog, which needs "
                                         "spec.glue with at least its region")
    if runs_metastore and database is not None and database.type == "derby" and metastore.replicas > 1:
        raise SpecInvalid(reasons.DERBY_REPLICAS, "an embedded Derby database lives inside one metastore pod, so "
                                           f"spec.metastore.replicas must be 0 or 1, not {metastore.replicas}; "
                                           "use MariaDB, MySQL or PostgreSQL for more replicas")
    kerberos = parse_catalog_kerberos(spec.get("kerberos"), "spec.kerberos")
    if kerberos is not None and not runs_metastore:
        raise SpecInvalid(reasons.INVALID_FIELD, "spec.kerberos kerberizes the catalog's metastore; a Glue catalog "
                                                 "runs none: remove spec.kerberos")
    annotations = meta.get("annotations") or {}
    parsed = HiveCatalogSpec(
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or "default"),  # where kubectl puts a CR without one
        uid=str(meta.get("uid") or ""),
        generation=int(meta.get("generation") or 0),
        suspend=flag(spec, "suspend", "spec", False),
        explicit_mode=explicit_mode,
        mode=choice.mode,
        spark_side_completed=choice.spark_side_completed,
        configurations=configurations,
        metastore=metastore,
        database=database,
        glue=glue,
        confirm_mode_switch=str(annotations.get(ANNOTATION_CONFIRM_MODE_SWITCH, "")).strip().lower() == "true",
        notification_events=_notification_events(spec),
        kerberos=kerberos,
    )
    check_spec(HIVE_CATALOG.kind, body)  # what the checks above leave to the CRD's schema
    return parsed


def _notification_events(spec: Mapping[str, Any]) -> bool:
    value = opt_str(spec, "notificationEvents", "spec") or "Enabled"
    if value not in ("Enabled", "Disabled"):
        raise SpecInvalid(reasons.INVALID_FIELD, f"spec.notificationEvents must be Enabled or Disabled, not "
                                                 f"{value[:40]!r}")
    return value == "Enabled"


def _configurations(items: Any) -> dict[str, dict[str, str]]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise SpecInvalid(reasons.INVALID_FIELD, "spec.configurations must be a list of classifications")
    found: dict[str, dict[str, str]] = {}
    for item in items:
        item = mapping(item, "spec.configurations[]")
        classification = item.get("classification")
        if classification not in mode_rule.CLASSIFICATIONS:
            raise SpecInvalid(reasons.UNKNOWN_CLASSIFICATION,
                              f"spec.configurations has classification {classification!r}; hivecat knows "
                              f"{', '.join(mode_rule.CLASSIFICATIONS)}")
        if classification in found:
            raise SpecInvalid(reasons.DUPLICATE_CLASSIFICATION, f"spec.configurations lists {classification} twice; "
                                                         "merge its properties into one entry")
        properties = mapping(item.get("properties"), f"spec.configurations[{classification}].properties")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
            raise SpecInvalid(reasons.INVALID_FIELD, f"the properties of classification {classification} must be "
                                              "strings; quote numbers and booleans in YAML")
        if (control := control_character(properties)) is not None:  # the CRD's rule
            raise SpecInvalid(reasons.INVALID_FIELD, f"classification {classification}: {control.describe()}; names "
                                              "and values take no tabs, line breaks or other characters below "
                                              "U+0020, nor U+007F (they would break hive-site.xml or "
                                              "spark-defaults.conf)")
        refused = secret_properties(properties)
        if refused:
            raise SpecInvalid(reasons.SECRET_IN_CONFIGURATION,
                              f"classification {classification} sets {', '.join(refused)}, which carry secrets; "
                              "configurations are published to anyone who can read ConfigMaps. Remove them and "
                              "reference a Secret instead (spec.database.passwordSecretRef, "
                              "spec.glue.credentialsSecretRef)")
        found[classification] = dict(properties)
    return found


def _metastore(raw: Mapping[str, Any], default_image: str) -> MetastoreSpec:
    where = "spec.metastore"
    image = opt_str(raw, "image", where) or default_image
    pull = opt_str(raw, "imagePullPolicy", where)
    if pull is not None and pull not in PULL_POLICIES:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.imagePullPolicy must be one of {', '.join(PULL_POLICIES)}")
    replicas = whole(raw, "replicas", where, 1, 0, 32)
    warehouse = opt_str(raw, "warehouseDir", where)
    if warehouse is not None and not _URI.fullmatch(warehouse):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.warehouseDir must be a full URI with a scheme, e.g. "
                                          "hdfs://namenode:8020/user/hive/warehouse")
    hive_version = (opt_str(raw, "hiveVersion", where) or DEFAULT_HIVE_VERSION).strip()
    if not HIVE_VERSION.fullmatch(hive_version):
        raise SpecInvalid(reasons.INVALID_HIVE_VERSION, f"{where}.hiveVersion {hive_version!r} is not a Hive release "
                                                "such as 3.1.3 or 4.0.1; set it to the Hive the image runs")
    hive_home = opt_str(raw, "hiveHome", where) or DEFAULT_HIVE_HOME
    if not HIVE_HOME.fullmatch(hive_home):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.hiveHome must be an absolute path of letters, digits, "
                                          "dots, dashes, underscores and slashes, e.g. /opt/hive")
    return MetastoreSpec(
        image=image,
        image_pull_policy=pull,
        replicas=replicas,
        resources=copy.deepcopy(dict(mapping(raw.get("resources"), f"{where}.resources"))),
        warehouse_dir=warehouse,
        port=whole(raw, "port", where, DEFAULT_METASTORE_PORT, 1, 65535),
        hive_version=hive_version,
        hive_home=hive_home.rstrip("/") or "/",
    )


def _database(value: Any) -> DatabaseSpec:
    where = "spec.database"
    raw = mapping(value, where)
    kind = raw.get("type")
    if kind not in DIALECTS:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.type must be one of {', '.join(DIALECTS)}")
    if kind == "derby":
        return DatabaseSpec("derby", None, 0, None, None, None)
    host, name, user = (opt_str(raw, field, where) for field in ("host", "name", "user"))
    ref = raw.get("passwordSecretRef")
    if not (host and name and user and ref):
        raise SpecInvalid(reasons.DATABASE_INCOMPLETE, f"a {kind} database needs {where}.host, name, user and "
                                                "passwordSecretRef")
    ref = mapping(ref, f"{where}.passwordSecretRef")
    password = SecretKeyRef(_ref_name(ref, f"{where}.passwordSecretRef"),
                            _key(ref, "key", f"{where}.passwordSecretRef", DEFAULT_PASSWORD_KEY))
    return DatabaseSpec(kind, host, whole(raw, "port", where, DEFAULT_PORTS[kind], 1, 65535), name, user, password)


def _glue(value: Any) -> GlueSpec:
    where = "spec.glue"
    raw = mapping(value, where)
    region = opt_str(raw, "region", where)
    if not region:
        raise SpecInvalid(reasons.GLUE_MISSING, f"{where}.region is required, e.g. eu-west-1")
    role_arn = opt_str(raw, "roleArn", where)
    credentials = None
    if raw.get("credentialsSecretRef") is not None:
        ref = mapping(raw["credentialsSecretRef"], f"{where}.credentialsSecretRef")
        if role_arn:
            raise SpecInvalid(reasons.GLUE_CREDENTIALS_CONFLICT, f"{where}.credentialsSecretRef and roleArn exclude each "
                                                         "other: keep the one the catalog should use")
        credentials = GlueCredentialsRef(
            _ref_name(ref, f"{where}.credentialsSecretRef"),
            _key(ref, "accessKeyIdKey", f"{where}.credentialsSecretRef", DEFAULT_ACCESS_KEY_ID_KEY),
            _key(ref, "secretAccessKeyKey", f"{where}.credentialsSecretRef", DEFAULT_SECRET_ACCESS_KEY_KEY))
    return GlueSpec(region=region, catalog_id=opt_str(raw, "catalogId", where),
                    endpoint=opt_str(raw, "endpoint", where), credentials=credentials, role_arn=role_arn,
                    default_database_location=opt_str(raw, "defaultDatabaseLocation", where),
                    functions=flag(raw, "relocateFunctions", where, True))


def _ref_name(ref: Mapping[str, Any], where: str) -> str:
    name = opt_str(ref, "name", where)
    if not name:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.name is required: the Secret in the catalog's namespace")
    return name


def _key(ref: Mapping[str, Any], field: str, where: str, default: str) -> str:
    key = opt_str(ref, field, where) or default
    if not _KEY.fullmatch(key):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.{field} must be a Secret key (letters, digits, '-', '_', '.')")
    return key
