"""A CR's Kerberos login (spec.kerberos of a ClusterStorage): a principal, and the Secret of the CR's own namespace
whose key holds its keytab. Realms and KDCs are never a CR's: they are the operator's krb5 configuration (chart
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
    ref = mapping(raw.get("keytabSecretRef"), f"{where}.keytabSecretRef")
    secret = opt_str(ref, "name", f"{where}.keytabSecretRef")
    if not secret:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.keytabSecretRef.name is required: the Secret, in the same "
                                                 "namespace, that holds the principal's keytab")
    key = opt_str(ref, "key", f"{where}.keytabSecretRef") or DEFAULT_KEYTAB_KEY
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
