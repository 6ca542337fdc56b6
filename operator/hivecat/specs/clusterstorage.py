"""A ClusterStorage's spec as frozen dataclasses: parsed from the CR body (a Mapping, as kopf gives it),
defaults applied as the CRD applies them, and every rule the CRD's schema and CEL rules enforce checked
again (a body can reach the operator without them), plus the rules only the location engine can judge: a
filesystem and aliases it accepts as prefixes, aliases of the same storage family that neither overlap the
filesystem nor each other. No I/O.

Also the one rule for status.previousFilesystems: the spec is never edited by the operator (GitOps would
revert it), so the filesystems a ClusterStorage had before live in its status."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from hivecat import reasons
from hivecat.kinds import CLUSTER_STORAGE
from hivecat.locations.prefix import InvalidLocation, LocationPrefix, is_under, parse_prefix, same_family
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.fields import choice, flag, mapping, opt_str, whole
from hivecat.specs.kerberos import KerberosSpec, parse_kerberos
from hivecat.specs.schema import check_spec

__all__ = ["ComputeSpec", "SparkApplicationSettings", "ClusterStorageSpec", "SpecInvalid", "parse_cluster_storage",
           "previous_filesystems", "canonical_uri", "same_location", "overlapping", "parse_scan_interval"]

COMPUTE_TYPES: Final = ("Local", "KubernetesJob", "SparkApplication")
REPAIR_MODES: Final = ("Off", "DryRun", "Auto")
DEFAULT_REPAIR: Final = "DryRun"  # the CRD's default
METASTORE_ACCESS: Final = ("Database", "Thrift")
DEFAULT_METASTORE_ACCESS: Final = "Database"
# The shortest scan interval the spec itself takes; how often a namespace may scan is the administrator's
# policy (CatalogPolicy spec.minimums.scanInterval, chart value policy.minimums.scanInterval, 1m by default).
MIN_SCAN_INTERVAL: Final = 1.0
MAX_SCAN_INTERVAL: Final = 7 * 24 * 3600.0
MAX_PREVIOUS: Final = 16  # status.previousFilesystems maxItems
MAX_ALIASES: Final = 16  # spec.aliases maxItems
MAX_URI: Final = 1024  # maxLength of spec.filesystem and spec.aliases[*]
MAX_INT32: Final = 2**31 - 1  # the CRD's format: int32

# The CRD's patterns. A scan interval is Go-duration-like, units from largest to smallest, each at most once.
_URI: Final = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
_SCAN_INTERVAL: Final = re.compile(r"(?:([0-9]{1,9})d)?(?:([0-9]{1,9})h)?(?:([0-9]{1,9})m)?(?:([0-9]{1,9})s)?")
_UNIT_SECONDS: Final = (86400, 3600, 60, 1)
_SPARK_VERSION: Final = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?")
_JVM_MEMORY: Final = re.compile(r"[0-9]+([kKmMgGtT][bB]?)?")


@dataclass(frozen=True)
class SparkApplicationSettings:
    """spec.compute.sparkApplication: what each copy's SparkApplication runs and how large. Unset sizes are
    left to the Spark operator's and Spark's defaults."""

    image: str
    service_account: str | None = None  # the driver's (it creates the executor pods); executors run as it too
    spark_version: str | None = None
    driver_cores: int | None = None
    driver_memory: str | None = None  # JVM notation: 2g, 512m
    executor_instances: int | None = None
    executor_cores: int | None = None
    executor_memory: str | None = None


@dataclass(frozen=True)
class ComputeSpec:
    type: str = "Local"  # Local | KubernetesJob | SparkApplication
    image: str | None = None  # job.image or sparkApplication.image
    service_account: str | None = None
    # job.resources as in a Pod spec (a copy, never kopf's body); not hashed: a dict cannot be
    resources: Mapping[str, Any] | None = field(default=None, hash=False)
    spark: SparkApplicationSettings | None = None  # with type SparkApplication

    def to_registry(self) -> dict[str, Any]:
        """What clusters.json says of it: no resources or sizes, which are the launchers' business."""
        found = {"type": self.type, "image": self.image, "serviceAccountName": self.service_account}
        return {key: value for key, value in found.items() if value is not None}


@dataclass(frozen=True)
class ClusterStorageSpec:
    name: str
    namespace: str
    catalog: str  # spec.catalogRef.name, a HiveCatalog in the same namespace
    filesystem: str  # canonical_uri(): scheme and host in lower case, no trailing slash
    aliases: tuple[str, ...]  # canonical, order kept, duplicates removed
    compute: ComputeSpec
    credentials_secret: str | None
    repair: str  # Off | DryRun | Auto
    suspend: bool
    scan_interval: float  # seconds
    metastore_access: str  # Database | Thrift: how drift scans and repairs reach a Thrift-mode catalog
    kerberos: KerberosSpec | None = None  # a kerberized HDFS: SPNEGO to WebHDFS as this login


def parse_cluster_storage(body: Mapping[str, Any], *, default_scan_interval: float) -> ClusterStorageSpec:
    """The typed spec of a ClusterStorage body, or SpecInvalid naming the first problem.
    `default_scan_interval`: seconds, used when spec.scanInterval is not set (the operator's setting)."""
    meta = body.get("metadata") or {}
    spec = mapping(body.get("spec"), "spec")
    catalog_ref = mapping(spec.get("catalogRef"), "spec.catalogRef")
    catalog = opt_str(catalog_ref, "name", "spec.catalogRef")
    if not catalog:
        raise SpecInvalid(reasons.INVALID_FIELD, "spec.catalogRef.name is required: the HiveCatalog, in the same "
                                          "namespace, whose tables live on this storage")
    filesystem = _filesystem(spec.get("filesystem"))
    aliases = _aliases(spec.get("aliases"), filesystem)
    credentials = None
    if spec.get("credentialsSecretRef") is not None:
        ref = mapping(spec["credentialsSecretRef"], "spec.credentialsSecretRef")
        credentials = opt_str(ref, "name", "spec.credentialsSecretRef")
        if not credentials:
            raise SpecInvalid(reasons.INVALID_FIELD, "spec.credentialsSecretRef.name is required: the Secret, in the "
                                              "same namespace, with this storage's credentials")
    interval = spec.get("scanInterval")
    parsed = ClusterStorageSpec(
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or "default"),  # where kubectl puts a CR without one
        catalog=catalog,
        filesystem=canonical_uri(filesystem),
        aliases=tuple(canonical_uri(alias) for alias in aliases),
        compute=_compute(spec.get("compute")),
        credentials_secret=credentials,
        repair=_repair(spec.get("repair")),
        suspend=flag(spec, "suspend", "spec", False),
        scan_interval=float(default_scan_interval) if interval is None else parse_scan_interval(interval),
        metastore_access=choice(spec, "metastoreAccess", METASTORE_ACCESS, DEFAULT_METASTORE_ACCESS),
        kerberos=parse_kerberos(spec.get("kerberos"), "spec.kerberos"),
    )
    if parsed.kerberos is not None and not parsed.filesystem.startswith("hdfs://"):
        raise SpecInvalid(reasons.INVALID_FIELD, "spec.kerberos applies to hdfs:// filesystems (WebHDFS with SPNEGO); "
                                                 f"{parsed.filesystem} is not one")
    check_spec(CLUSTER_STORAGE.kind, body)  # what the checks above leave to the CRD's schema
    return parsed


# --- URIs ---------------------------------------------------------------------------------------------------

def canonical_uri(uri: str | LocationPrefix) -> str:
    """One spelling per location, in the CRD's scheme://authority/path form: scheme and host in lower case,
    no trailing slash; file:/x becomes file:///x. Raises InvalidLocation for what the location engine refuses."""
    parsed = parse_prefix(uri)
    return f"{parsed.scheme}://{parsed.authority}{parsed.path}"


def same_location(a: str | LocationPrefix, b: str | LocationPrefix) -> bool:
    """Whether two URIs name the same prefix (hdfs://NN:8020/ and hdfs://nn:8020 do). Raises InvalidLocation."""
    return parse_prefix(a) == parse_prefix(b)


def overlapping(a: str | LocationPrefix, b: str | LocationPrefix) -> bool:
    """Whether one prefix is the other or under it (anchored at a path segment). Raises InvalidLocation."""
    pa, pb = parse_prefix(a), parse_prefix(b)
    return is_under(str(pa), pb) or is_under(str(pb), pa)


def _uri(value: Any, where: str, reason: str) -> LocationPrefix:
    if not isinstance(value, str) or not value:
        raise SpecInvalid(reason, f"{where} must be a URI such as hdfs://namenode:8020, s3://bucket/prefix or "
                                  "file:///data (quote it in YAML)")
    if len(value) > MAX_URI or not _URI.fullmatch(value):
        raise SpecInvalid(reason, f"{where} {value[:100]!r} must be a full URI with a scheme and '//', e.g. "
                                  f"hdfs://namenode:8020 or file:///data, of at most {MAX_URI} characters")
    try:
        return parse_prefix(value)
    except InvalidLocation as exc:
        raise SpecInvalid(reason, f"{where} is not a usable storage URI: {exc}") from exc


def _filesystem(value: Any) -> LocationPrefix:
    if value is None:
        raise SpecInvalid(reasons.INVALID_FILESYSTEM, "spec.filesystem is required: the URI of the storage, e.g. "
                                               "hdfs://namenode:8020")
    return _uri(value, "spec.filesystem", reasons.INVALID_FILESYSTEM)


def _aliases(value: Any, filesystem: LocationPrefix) -> list[LocationPrefix]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_ALIASES:
        raise SpecInvalid(reasons.INVALID_ALIAS, f"spec.aliases must be a list of at most {MAX_ALIASES} URIs")
    fs = canonical_uri(filesystem)
    found: list[LocationPrefix] = []
    for raw in value:
        alias = _uri(raw, "spec.aliases[]", reasons.INVALID_ALIAS)
        if alias in found:
            continue  # the same location spelt twice: one drift source
        text = canonical_uri(alias)
        if not same_family(alias, filesystem):
            raise SpecInvalid(reasons.SCHEME_CHANGE, f"alias {text} is {alias.family} storage but the filesystem {fs} is "
                                              f"{filesystem.family}: an alias is another spelling of the same "
                                              "storage. Moving tables to another kind of storage is a migration, "
                                              "done with a relocation that explicitly allows a scheme change, "
                                              "not drift; remove the alias")
        if alias == filesystem:
            raise SpecInvalid(reasons.ALIAS_OVERLAP, f"alias {text} is the filesystem itself; remove it from spec.aliases")
        if overlapping(alias, filesystem):
            raise SpecInvalid(reasons.ALIAS_OVERLAP, f"alias {text} and the filesystem {fs} overlap (one is under the "
                                              "other), so repairing drift would rewrite locations that are "
                                              "already right, or again on every scan; remove the alias")
        for seen in found:
            if overlapping(alias, seen):
                raise SpecInvalid(reasons.ALIAS_OVERLAP, f"aliases {canonical_uri(seen)} and {text} overlap (one is "
                                                  "under the other), so a location would drift from both; keep "
                                                  "the shorter one")
        found.append(alias)
    return found


# --- other fields -------------------------------------------------------------------------------------------

def parse_scan_interval(value: Any) -> float:
    """Seconds of a scan interval such as 30m, 1h, 90s, 45m30s or 1d; SpecInvalid outside 1 second to 7 days
    (the policy's minimum is checked where the policy is known: reconcile.access)."""
    match = _SCAN_INTERVAL.fullmatch(value) if isinstance(value, str) and value else None
    if match is None:
        raise SpecInvalid(reasons.INVALID_SCAN_INTERVAL, f"spec.scanInterval {str(value)[:40]!r} is not a duration such "
                                                 "as 30m, 1h, 90s or 45m30s (units d, h, m, s, largest first)")
    seconds = float(sum(int(n) * unit for n, unit in zip(match.groups(), _UNIT_SECONDS) if n is not None))
    if not MIN_SCAN_INTERVAL <= seconds <= MAX_SCAN_INTERVAL:
        raise SpecInvalid(reasons.INVALID_SCAN_INTERVAL, f"spec.scanInterval {value} is outside 1s to 7d: drift left for "
                                                 "more than a week breaks queries for too long")
    return seconds


def _compute(value: Any) -> ComputeSpec:
    raw = mapping(value, "spec.compute")
    kind = choice(raw, "type", COMPUTE_TYPES, "Local", "spec.compute")
    if kind == "Local":
        return ComputeSpec()
    field = "job" if kind == "KubernetesJob" else "sparkApplication"
    where = f"spec.compute.{field}"
    settings = mapping(raw.get(field), where)
    image = opt_str(settings, "image", where)
    if not image:
        raise SpecInvalid(reasons.COMPUTE_INCOMPLETE, f"compute type {kind} needs {where}.image: the image its runs use")
    account = opt_str(settings, "serviceAccountName", where) or None
    if kind == "KubernetesJob":
        resources = mapping(settings.get("resources"), f"{where}.resources")
        return ComputeSpec(kind, image, account, resources=copy.deepcopy(dict(resources)) if resources else None)
    return ComputeSpec(kind, image, account, spark=_spark_settings(settings, where, image, account))


def _spark_settings(raw: Mapping[str, Any], where: str, image: str, account: str | None) -> SparkApplicationSettings:
    driver = mapping(raw.get("driver"), f"{where}.driver")
    executor = mapping(raw.get("executor"), f"{where}.executor")
    return SparkApplicationSettings(
        image=image, service_account=account,
        spark_version=_matching(raw, "sparkVersion", where, _SPARK_VERSION, "a version such as 3.5.1"),
        driver_cores=_count(driver, "cores", f"{where}.driver"),
        driver_memory=_matching(driver, "memory", f"{where}.driver", _JVM_MEMORY, "JVM notation, e.g. 2g or 512m"),
        executor_instances=_count(executor, "instances", f"{where}.executor"),
        executor_cores=_count(executor, "cores", f"{where}.executor"),
        executor_memory=_matching(executor, "memory", f"{where}.executor", _JVM_MEMORY,
                                  "JVM notation, e.g. 4g or 512m"))


def _count(raw: Mapping[str, Any], name: str, where: str) -> int | None:
    """An optional int32 of at least 1, as the CRD has it."""
    return None if raw.get(name) is None else whole(raw, name, where, 1, 1, MAX_INT32)


def _matching(raw: Mapping[str, Any], name: str, where: str, pattern: re.Pattern[str], form: str) -> str | None:
    value = opt_str(raw, name, where)
    if value is not None and not pattern.fullmatch(value):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.{name} must be {form}")
    return value


def _repair(value: Any) -> str:
    if value is None:
        return DEFAULT_REPAIR
    if value not in REPAIR_MODES:  # a bare Off in YAML 1.1 is the boolean false, which the API server refuses too
        raise SpecInvalid(reasons.INVALID_FIELD, f"spec.repair must be one of {', '.join(REPAIR_MODES)} (quote \"Off\" "
                                          "in YAML)")
    return str(value)


# --- previous filesystems -----------------------------------------------------------------------------------

def previous_filesystems(spec: ClusterStorageSpec, status: Mapping[str, Any]) -> tuple[str, ...]:
    """What status.previousFilesystems must hold now. status.filesystem is the filesystem the operator
    registered last: when spec.filesystem names another location, the old one joins the list. No duplicates,
    never the current filesystem, newest last, at most MAX_PREVIOUS (the oldest go). Values that are not
    usable URIs (a hand-edited status) are dropped rather than failing the reconcile."""
    current = parse_prefix(spec.filesystem)
    recorded = status.get("previousFilesystems")
    candidates = list(recorded) if isinstance(recorded, list) else []
    candidates.append(status.get("filesystem"))
    kept: list[LocationPrefix] = []
    for value in candidates:
        if not isinstance(value, str):
            continue
        try:
            prefix = parse_prefix(value)
        except InvalidLocation:
            continue
        if prefix == current:
            continue
        if prefix in kept:
            kept.remove(prefix)  # seen again later: it is newer than its first place says
        kept.append(prefix)
    return tuple(canonical_uri(prefix) for prefix in kept[-MAX_PREVIOUS:])


