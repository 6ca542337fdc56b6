"""A kerberized HiveCatalog in the operator tier: its two logins made on the session's KDC, as its spec.kerberos,
its Secrets and the CatalogPolicy's grants name them, and how the stand-in image serves its metastore.

    login = KerberizedCatalog.made(kdc, f"etl-{namespace}", tmp_path)
    with served_catalog(kubectl, namespace, metastore_db, tmp_path, kerberos=login) as served: ...
    metastore_client("localhost", served.port, login.sasl)   # as the catalog's login, over SASL

The metastore runs as hive/localhost (spec.kerberos.metastorePrincipal hive/_HOST@HIVECAT.TEST: clients dial
localhost); the operator connects as the catalog's principal with the keys from Secret `etl-keytab`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from hivecat.catalog.targets import ThriftSasl
from hivecat.kerberos.login import KerberosLogin
from hivecat.workloads.metastore import KEYTAB_DIR, KEYTAB_FILE
from support.kdc import Kdc

METASTORE_PRINCIPAL = "hive/_HOST@HIVECAT.TEST"
LOGIN_SECRET, METASTORE_SECRET = "etl-keytab", "hive-keytab"


def keytab_secret(name: str, keytab: Path, key: str = "keytab") -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque",
            "data": {key: base64.b64encode(keytab.read_bytes()).decode()}}


@dataclass(frozen=True)
class KerberizedCatalog:
    kdc: Kdc
    principal: str       # the catalog's login, name@HIVECAT.TEST
    keytab: Path
    metastore_keytab: Path  # hive/localhost's keys, as the pod's Secret volume holds them (KEYTAB_FILE)

    @classmethod
    def made(cls, kdc: Kdc, name: str, workdir: Path) -> KerberizedCatalog:
        """`name`'s principal and keytab, and hive/localhost's keys (the principal is made once per session; each
        export draws new keys, so the metastore of an earlier test keeps running on stale ones only)."""
        principal = kdc.principal(name)
        keytab = kdc.keytab(principal, workdir / f"{name}.keytab")
        (workdir / "hive-keytab").mkdir(parents=True, exist_ok=True)
        try:
            kdc.principal("hive/localhost")
        except RuntimeError as exc:
            if "already exists" not in str(exc):
                raise
        return cls(kdc, principal, keytab, kdc.keytab("hive/localhost", workdir / "hive-keytab" / KEYTAB_FILE))

    @property
    def spec(self) -> dict:
        return {"principal": self.principal, "keytabSecretRef": {"name": LOGIN_SECRET},
                "metastorePrincipal": METASTORE_PRINCIPAL, "metastoreKeytabSecretRef": {"name": METASTORE_SECRET}}

    @property
    def grants(self) -> dict:
        return {"principals": [self.principal, METASTORE_PRINCIPAL], "keytabSecrets": [LOGIN_SECRET, METASTORE_SECRET]}

    def secrets(self) -> list[dict]:
        return [keytab_secret(LOGIN_SECRET, self.keytab), keytab_secret(METASTORE_SECRET, self.metastore_keytab)]

    @property
    def mounts(self) -> dict[str, Path]:
        return {KEYTAB_DIR: self.metastore_keytab.parent}

    @property
    def sasl(self) -> ThriftSasl:
        return ThriftSasl(KerberosLogin(self.principal, str(self.keytab)), METASTORE_PRINCIPAL)
