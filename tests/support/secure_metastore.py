"""A Hive Metastore 3.1.3 kerberized as production runs it: SASL GSSAPI on its Thrift port, logged in from a keytab.

    hms = kerberized_metastore(kdc, database, workdir, fs_root)  # StandaloneMetastore, not started
    hms.start()                                                   # its own checks connect with SASL
    hms.sasl_uri                                                  # thrift://localhost:PORT (its principal's host)

The metastore's principal is hive/localhost@HIVECAT.TEST (`hive.metastore.kerberos.principal`, with Hadoop's
_HOST pattern the clients complete with the host they dial: localhost). The SASL quality of protection
follows `hadoop.rpc.protection` (authentication unless `protection` says otherwise).
"""

from __future__ import annotations

from pathlib import Path

from hivecat.catalog.thrift.transport import ThriftSasl
from hivecat.kerberos.login import KerberosLogin
from hivecat.local.metastore import MetastoreDatabase
from support.hive_metastores import HIVE3, StandaloneMetastore
from support.kdc import Kdc

METASTORE_PRINCIPAL = "hive/_HOST@HIVECAT.TEST"


def kerberized_metastore(kdc: Kdc, database: MetastoreDatabase, workdir: Path, fs_root: Path,
                         protection: str = "authentication", **kwargs) -> StandaloneMetastore:
    workdir.mkdir(parents=True, exist_ok=True)
    service = kdc.qualified("hive/localhost")
    keytab = workdir / "hive.keytab"
    if not keytab.exists():
        try:
            kdc.principal(service)
        except RuntimeError as exc:  # a second metastore of the session: the principal is there already
            if "already exists" not in str(exc):
                raise
        kdc.keytab(service, keytab)
    security = {"hadoop.security.authentication": "kerberos", "hadoop.rpc.protection": protection}
    server = StandaloneMetastore(HIVE3, database, workdir, fs_root, jvm_options=kdc.jvm_options, core_conf=security,
                                 extra_conf={**security, "metastore.sasl.enabled": "true",
                                             "metastore.kerberos.principal": METASTORE_PRINCIPAL,
                                             "metastore.kerberos.keytab.file": str(keytab)}, **kwargs)
    admin = kdc.keytab(kdc.principal(f"hms-admin-{workdir.name}"), workdir / "admin.keytab")
    server.sasl = ThriftSasl(KerberosLogin(kdc.qualified(f"hms-admin-{workdir.name}"), str(admin)),
                             METASTORE_PRINCIPAL)
    server.sasl_uri = f"thrift://localhost:{server.port}"
    return server
