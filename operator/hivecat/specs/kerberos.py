"""A CR's Kerberos login (spec.kerberos of a ClusterStorage, and of a HiveCatalog with its metastore's own): a
principal, and the Secret of the CR's own namespace whose key holds its keytab. Realms and KDCs are never a CR's: they are the operator's krb5 configuration (chart
value kerberos.krb5Conf), which is process-wide. No I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from hivecat import reasons
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.fields import mapping, opt_str

# name[/instance]@REALM: the realm is always written (a policy grants principals by their full name)
PRINCIPAL: Final = re.compile(r"[^\s@/]{1,128}(/[^\s@/]{1,128})?@[^\s@/]{1,128}")
SERVICE_PRINCIPAL: Final = re.compile(r"[^\s@/]{1,128}/[^\s@/]{1,255}@[^\s@/]{1,128}")
DEFAULT_KEYTAB_KEY: Final = "keytab"


@dataclass(frozen=True)
class KerberosSpec:
    principal: str
    keytab_secret: str
    keytab_key: str = DEFAULT_KEYTAB_KEY
    webhdfs_principal: str | None = None  # the namenodes' SPNEGO principal; None: HTTP/_HOST in the login's realm

    @property
    def realm(self) -> str:
        return self.principal.rsplit("@", 1)[1]

    @property
    def http_principal(self) -> str:
        return self.webhdfs_principal or f"HTTP/_HOST@{self.realm}"


def parse_kerberos(value: Any, where: str) -> KerberosSpec | None:
    if value is None:
        return None
    raw = mapping(value, where)
    principal = opt_str(raw, "principal", where)
    if not principal or not PRINCIPAL.fullmatch(principal):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.principal must be a Kerberos principal with its realm, "
                                                 "name[/instance]@REALM, e.g. etl-team-a@CORP.EXAMPLE.COM")
    secret, key = _keytab_ref(raw, "keytabSecretRef", where, "the principal's")
    service = opt_str(raw, "webhdfsPrincipal", where) or None
    if service is not None and not SERVICE_PRINCIPAL.fullmatch(service):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.webhdfsPrincipal must be a service principal such as "
                                                 "HTTP/_HOST@CORP.EXAMPLE.COM (the namenodes' "
                                                 "dfs.web.authentication.kerberos.principal)")
    return KerberosSpec(principal, secret, key, service)


def spec_kerberos(body: Mapping[str, Any]) -> KerberosSpec | None:
    """spec.kerberos of a CR body, or None (a malformed one is refused where the CR is reconciled)."""
    try:
        return parse_kerberos((body.get("spec") or {}).get("kerberos"), "spec.kerberos")
    except SpecInvalid:
        return None


@dataclass(frozen=True)
class CatalogKerberos:
    """A HiveCatalog's spec.kerberos: its metastore speaks SASL GSSAPI only. `login` is who the operator is to it
    (probes, drift scans and bookkeeping through Thrift); the metastore runs as `metastore_principal` with the
    keys of `metastore_keytab` (a Secret of the catalog's namespace, mounted into its pods only)."""

    login: KerberosSpec
    metastore_principal: str  # hive.metastore.kerberos.principal; Hadoop's _HOST allowed
    metastore_keytab_secret: str
    metastore_keytab_key: str = DEFAULT_KEYTAB_KEY

    @property
    def metastore(self) -> KerberosSpec:
        """The metastore's own login, as a policy grants it (its principal and its keytab's Secret)."""
        return KerberosSpec(self.metastore_principal, self.metastore_keytab_secret, self.metastore_keytab_key)


def parse_catalog_kerberos(value: Any, where: str) -> CatalogKerberos | None:
    if value is None:
        return None
    raw = mapping(value, where)
    if raw.get("webhdfsPrincipal") is not None:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.webhdfsPrincipal belongs to a ClusterStorage's spec.kerberos")
    login = parse_kerberos({k: v for k, v in raw.items() if not k.startswith("metastore")}, where)
    assert login is not None
    service = opt_str(raw, "metastorePrincipal", where)
    if not service or not SERVICE_PRINCIPAL.fullmatch(service):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.metastorePrincipal must be the metastore's service "
                                                 "principal, e.g. hive/sales-metastore.team-a.svc.cluster.local"
                                                 "@CORP.EXAMPLE.COM (hive.metastore.kerberos.principal)")
    secret, key = _keytab_ref(raw, "metastoreKeytabSecretRef", where, "the metastore's")
    return CatalogKerberos(login, service, secret, key)


def _keytab_ref(raw: Mapping[str, Any], field: str, where: str, whose: str) -> tuple[str, str]:
    """(Secret, key) of a keytab reference: the Secret is required, the key defaults to DEFAULT_KEYTAB_KEY."""
    ref = mapping(raw.get(field), f"{where}.{field}")
    secret = opt_str(ref, "name", f"{where}.{field}")
    if not secret:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.{field}.name is required: the Secret, in the same "
                                                 f"namespace, that holds {whose} keytab")
    return secret, opt_str(ref, "key", f"{where}.{field}") or DEFAULT_KEYTAB_KEY
