"""A CatalogPolicy as frozen dataclasses: the cluster administrator's grant of storage, metastores, Glue
catalogs, roles, compute and schedules to the namespaces it selects. Cluster-scoped, so a namespace's own
users cannot write one (the model of external-secrets' ClusterSecretStore and cert-manager's ClusterIssuer).

Parsed from the body kopf gives (a Mapping), with the CRD's rules checked again: a policy that reaches the
operator malformed grants nothing (reason PolicyInvalid), never more than it says. No I/O.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from hivecat import reasons
from hivecat.kinds import CATALOG_POLICY
from hivecat.locations.prefix import InvalidLocation, LocationPrefix, parse_prefix
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.fields import flag, mapping, opt_str, whole
from hivecat.specs.schema import check_spec
from hivecat.specs.tablereplica import parse_duration

COMPUTE_TYPES: Final = ("Local", "KubernetesJob", "SparkApplication")
DEFAULT_COMPUTE: Final = ("KubernetesJob", "SparkApplication")  # Local runs inside the operator: granted explicitly
SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")
_HOST: Final = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]")
_ADDRESS: Final = re.compile(r"(?P<host>[^\s:/]+|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})")
_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class StorageGrant:
    """Locations under `prefix` may be registered by ClusterStorages and read and written by hivecat."""

    prefix: LocationPrefix
    shared: bool = False               # several namespaces may register it (each TableReplica still owns its copies)
    ambient_credentials: bool = False  # without a credentialsSecretRef, the operator's own identity may be used


@dataclass(frozen=True)
class DatabaseGrant:
    host: str                   # lower case
    port: int | None = None     # None: any port
    names: tuple[str, ...] = ()  # database names; empty: any


@dataclass(frozen=True)
class GlueGrant:
    region: str
    catalog_ids: tuple[str, ...] = ()  # empty: any catalog of the account the credentials reach
    endpoint: str | None = None        # a catalog that names an endpoint needs it granted exactly
    role_arns: tuple[str, ...] = ()    # roles the operator may assume for the namespace
    ambient_credentials: bool = False  # without credentials or a role, the operator's own identity


@dataclass(frozen=True)
class MetastoreAddress:
    """Where the operator reaches the metastore of `catalog` (in a selected namespace) when Service DNS does not
    resolve where it runs: an administrator's setting, never a CR author's."""

    catalog: str
    host: str
    port: int


@dataclass(frozen=True)
class KerberosGrant:
    """Kerberos logins a namespace's resources may use: principals (exact names with their realm, or patterns in
    which * stands for any characters) and the Secrets, of the namespace, their keytabs may come from."""

    principals: tuple[str, ...] = ()
    keytab_secrets: tuple[str, ...] = ()

    def allows(self, principal: str, secret: str) -> bool:
        return secret in self.keytab_secrets and any(fnmatch.fnmatchcase(principal, p) for p in self.principals)


@dataclass(frozen=True)
class Minimums:
    """Seconds; None: the operator's default (chart values) applies."""

    sync_interval: float | None = None
    housekeeping_delay: float | None = None
    scan_interval: float | None = None


@dataclass(frozen=True)
class SelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class CatalogPolicySpec:
    name: str
    namespaces: tuple[str, ...] = ()
    match_labels: Mapping[str, str] | None = field(default=None, hash=False)  # None: no namespaceSelector
    match_expressions: tuple[SelectorRequirement, ...] = ()
    storage: tuple[StorageGrant, ...] = ()
    compute: tuple[str, ...] = DEFAULT_COMPUTE
    images: tuple[str, ...] = ()
    service_accounts: tuple[str, ...] = ()
    databases: tuple[DatabaseGrant, ...] = ()
    glue: tuple[GlueGrant, ...] = ()
    metastore_addresses: tuple[MetastoreAddress, ...] = ()
    minimums: Minimums = Minimums()
    kerberos: KerberosGrant = KerberosGrant()

    @property
    def uses_selector(self) -> bool:
        return self.match_labels is not None

    def selects(self, namespace: str, labels: Mapping[str, str] | None) -> bool:
        """Whether this policy grants to `namespace` (`labels`: its labels, needed only with a selector)."""
        if namespace in self.namespaces:
            return True
        if self.match_labels is None or labels is None:
            return False
        if any(labels.get(key) != value for key, value in self.match_labels.items()):
            return False
        return all(_requirement_holds(r, labels) for r in self.match_expressions)


def _requirement_holds(requirement: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    present = requirement.key in labels
    if requirement.operator == "Exists":
        return present
    if requirement.operator == "DoesNotExist":
        return not present
    inside = present and labels[requirement.key] in requirement.values
    return inside if requirement.operator == "In" else not inside


def parse_catalog_policy(body: Mapping[str, Any]) -> CatalogPolicySpec:
    """The typed policy, or SpecInvalid("PolicyInvalid", ...) naming the first problem."""
    name = str((body.get("metadata") or {}).get("name") or "")
    try:
        parsed = _parse(name, mapping(body.get("spec"), "spec"))
        check_spec(CATALOG_POLICY.kind, body)  # what the checks above leave to the CRD's schema
        return parsed
    except SpecInvalid as invalid:
        raise SpecInvalid(reasons.POLICY_INVALID, f"CatalogPolicy {name}: {invalid.message}") from None


def _parse(name: str, spec: Mapping[str, Any]) -> CatalogPolicySpec:
    namespaces = tuple(_names(spec.get("namespaces"), "spec.namespaces"))
    labels, expressions = _selector(spec.get("namespaceSelector"))
    if not namespaces and labels is None:
        raise SpecInvalid(reasons.INVALID_FIELD, "name the namespaces it grants to: spec.namespaces or "
                                          "spec.namespaceSelector")
    compute = spec.get("compute")
    return CatalogPolicySpec(
        name=name, namespaces=namespaces, match_labels=labels, match_expressions=expressions,
        storage=tuple(_storage(item, f"spec.storage[{i}]") for i, item in enumerate(_list(spec, "storage"))),
        compute=DEFAULT_COMPUTE if compute is None else tuple(_choices(compute, "spec.compute", COMPUTE_TYPES)),
        images=tuple(_strings(spec.get("images"), "spec.images")),
        service_accounts=tuple(_strings(spec.get("serviceAccounts"), "spec.serviceAccounts")),
        databases=tuple(_database(item, f"spec.databases[{i}]") for i, item in enumerate(_list(spec, "databases"))),
        glue=tuple(_glue(item, f"spec.glue[{i}]") for i, item in enumerate(_list(spec, "glue"))),
        metastore_addresses=tuple(_address(item, f"spec.metastoreAddresses[{i}]")
                                  for i, item in enumerate(_list(spec, "metastoreAddresses"))),
        minimums=_minimums(mapping(spec.get("minimums"), "spec.minimums")),
        kerberos=_kerberos(mapping(spec.get("kerberos"), "spec.kerberos")),
    )


def _list(spec: Mapping[str, Any], key: str) -> Sequence[Any]:
    value = spec.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SpecInvalid(reasons.INVALID_FIELD, f"spec.{key} must be a list")
    return value


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where} must be a list of non-empty strings")
    return [v.strip() for v in value]


def _names(value: Any, where: str) -> list[str]:
    names = _strings(value, where)
    for item in names:
        if len(item) > 63 or not _NAME.fullmatch(item) or "." in item:
            raise SpecInvalid(reasons.INVALID_FIELD, f"{where}: {item[:70]!r} is not a namespace name")
    return names


def _choices(value: Any, where: str, allowed: Sequence[str]) -> list[str]:
    items = _strings(value, where)
    wrong = [item for item in items if item not in allowed]
    if wrong:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}: {wrong[0]!r} is not one of {', '.join(allowed)}")
    return items


def _selector(value: Any) -> tuple[dict[str, str] | None, tuple[SelectorRequirement, ...]]:
    if value is None:
        return None, ()
    raw = mapping(value, "spec.namespaceSelector")
    labels = mapping(raw.get("matchLabels"), "spec.namespaceSelector.matchLabels")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise SpecInvalid(reasons.INVALID_FIELD, "spec.namespaceSelector.matchLabels must map strings to strings")
    expressions = []
    for i, item in enumerate(_list(raw, "matchExpressions")):
        where = f"spec.namespaceSelector.matchExpressions[{i}]"
        item = mapping(item, where)
        key, operator = opt_str(item, "key", where), opt_str(item, "operator", where)
        if not key or operator not in SELECTOR_OPERATORS:
            raise SpecInvalid(reasons.INVALID_FIELD, f"{where} needs a key and an operator of "
                                              f"{', '.join(SELECTOR_OPERATORS)}")
        values = tuple(_strings(item.get("values"), f"{where}.values"))
        if (operator in ("In", "NotIn")) != bool(values):
            raise SpecInvalid(reasons.INVALID_FIELD, f"{where}: {operator} takes values only with In and NotIn, and "
                                              "needs at least one there")
        expressions.append(SelectorRequirement(key, operator, values))
    if not labels and not expressions:
        raise SpecInvalid(reasons.INVALID_FIELD, "spec.namespaceSelector selects every namespace; name matchLabels or "
                                          "matchExpressions (an empty selector would grant to all teams)")
    return dict(labels), tuple(expressions)


def _storage(value: Any, where: str) -> StorageGrant:
    raw = mapping(value, where)
    prefix = opt_str(raw, "prefix", where)
    if not prefix:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.prefix is required, e.g. s3://team-a-dr/warehouse")
    try:
        parsed = parse_prefix(prefix)
    except InvalidLocation as exc:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.prefix: {exc}") from None
    return StorageGrant(parsed, shared=flag(raw, "shared", where, False),
                        ambient_credentials=flag(raw, "ambientCredentials", where, False))


def _host(raw: Mapping[str, Any], where: str) -> str:
    host = opt_str(raw, "host", where)
    if not host or not _HOST.fullmatch(host):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.host must be a host name or address")
    return host.lower()


def _database(value: Any, where: str) -> DatabaseGrant:
    raw = mapping(value, where)
    port = whole(raw, "port", where, 0, 1, 65535) or None
    return DatabaseGrant(_host(raw, where), port, tuple(_strings(raw.get("names"), f"{where}.names")))


def _glue(value: Any, where: str) -> GlueGrant:
    raw = mapping(value, where)
    region = opt_str(raw, "region", where)
    if not region:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.region is required")
    return GlueGrant(region, tuple(_strings(raw.get("catalogIds"), f"{where}.catalogIds")),
                     opt_str(raw, "endpoint", where) or None,
                     tuple(_strings(raw.get("roleArns"), f"{where}.roleArns")),
                     flag(raw, "ambientCredentials", where, False))


def _address(value: Any, where: str) -> MetastoreAddress:
    raw = mapping(value, where)
    catalog, address = opt_str(raw, "catalog", where), opt_str(raw, "address", where)
    match = _ADDRESS.fullmatch(address or "")
    if not catalog or match is None or not 0 < int(match["port"]) < 65536:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where} needs a catalog name and an address host:port")
    return MetastoreAddress(catalog, match["host"].strip("[]"), int(match["port"]))


def _kerberos(raw: Mapping[str, Any]) -> KerberosGrant:
    principals = tuple(_strings(raw.get("principals"), "spec.kerberos.principals"))
    for pattern in principals:
        if "@" not in pattern or any(c.isspace() for c in pattern):
            raise SpecInvalid(reasons.INVALID_FIELD, f"spec.kerberos.principals: {pattern[:80]!r} must name its realm, "
                                                     "e.g. etl-team-a@CORP.EXAMPLE.COM or *@TEAM-A.CORP.EXAMPLE.COM")
    secrets = tuple(_strings(raw.get("keytabSecrets"), "spec.kerberos.keytabSecrets"))
    if bool(principals) != bool(secrets):
        raise SpecInvalid(reasons.INVALID_FIELD, "spec.kerberos grants principals and the keytab Secrets they come "
                                                 "from together: name both principals and keytabSecrets")
    return KerberosGrant(principals, secrets)


def _minimums(raw: Mapping[str, Any]) -> Minimums:
    def seconds(key: str) -> float | None:
        value = raw.get(key)
        return None if value is None else parse_duration(value, f"spec.minimums.{key}", reasons.INVALID_FIELD)
    return Minimums(seconds("syncInterval"), seconds("housekeepingDelay"), seconds("scanInterval"))
