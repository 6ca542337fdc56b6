"""What a ClusterStorage's passes decide, with no I/O: which backends a drift scan reads, and the Ready condition a
registry decision gives one cluster. The passes themselves (register, scan and repair) run in act/clusterstorage.py.

Which backends a catalog has follows its mode: Thrift → its metastore database (or, when the
ClusterStorage asks for it, the metastore's Thrift API); Glue → Glue; Hybrid → both, since Hive clients read
the metastore and Spark clients read Glue. Each is opened from the HiveCatalog's spec and Secrets, never
from anything the ClusterStorage says about credentials.
"""

from __future__ import annotations

from dataclasses import dataclass

from hivecat import reasons
from hivecat.catalog.model import EVENTS_AUTO, EVENTS_OFF
from hivecat.catalog.targets import CatalogTarget, GlueTarget, InvalidTarget, SqlTarget, ThriftTarget
from hivecat.reconcile.conditions import Condition
from hivecat.replication.registry import RegistryDecision
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.hivecatalog import GlueCredentialsRef, HiveCatalogSpec, SecretKeyRef
from hivecat.specs.kerberos import CatalogKerberos
from hivecat.workloads.metastore import metastore_name

READY, DRIFTED = "Ready", "Drifted"
THRIFT, GLUE, HYBRID = "Thrift", "Glue", "Hybrid"


@dataclass(frozen=True)
class Backend:
    """One metastore backend of a catalog, and the Secret keys that open it."""

    label: str  # Database | Metastore | Glue: how status and Events name it
    target: CatalogTarget
    password: SecretKeyRef | None = None
    glue_credentials: GlueCredentialsRef | None = None
    glue_role: str | None = None  # spec.glue.roleArn: assumed with the operator's identity (the policy granted it)
    journaled_elsewhere: bool = False  # Glue, Thrift: the journal needs the operator's journal database
    notification_events: str = EVENTS_AUTO  # Database: whether its rewrites log notification events
    kerberos: CatalogKerberos | None = None  # Metastore of a kerberized catalog: SASL, as its spec.kerberos login


def backends_of(catalog: HiveCatalogSpec, access: str,
                metastore_address: tuple[str, int] | None) -> tuple[Backend, ...]:
    """The backends a drift scan reads: pure, from the HiveCatalog's spec. `access` is the ClusterStorage's
    metastoreAccess (Database | Thrift); `metastore_address` the administrator's (host, port) override of where
    the catalog's metastore is reached (CatalogPolicy spec.metastoreAddresses), if any."""
    found: list[Backend] = []
    if catalog.mode in (THRIFT, HYBRID):
        if access == "Thrift":
            if metastore_address:
                target: CatalogTarget = ThriftTarget(*metastore_address)
            else:
                target = ThriftTarget(f"{metastore_name(catalog)}.{catalog.namespace}.svc", catalog.metastore.port)
            found.append(Backend("Metastore", target, journaled_elsewhere=True, kerberos=catalog.kerberos))
        else:
            database = catalog.database
            if database is None or database.dialect == "derby" or not (database.host and database.name):
                raise SpecInvalid(reasons.DATABASE_NOT_SCANNABLE,
                                  f"HiveCatalog {catalog.name} keeps its metastore in an embedded Derby database "
                                  "that only the metastore pod reaches: scan it through the metastore's Thrift "
                                  "API instead (metastoreAccess Thrift)")
            found.append(Backend("Database", SqlTarget(database.dialect, database.host, database.name,
                                                       database.user or "", database.port), password=database.password,
                                 notification_events=EVENTS_AUTO if catalog.notification_events else EVENTS_OFF))
    if catalog.mode in (GLUE, HYBRID):
        glue = catalog.glue
        assert glue is not None  # parse_hive_catalog refuses Glue/Hybrid without it
        try:
            target = GlueTarget(glue.region, glue.catalog_id, glue.endpoint, functions=glue.functions)
        except InvalidTarget as error:
            raise SpecInvalid(reasons.INVALID_GLUE_TARGET, f"HiveCatalog {catalog.name}: {error}") from None
        found.append(Backend("Glue", target, glue_credentials=glue.credentials, glue_role=glue.role_arn,
                             journaled_elsewhere=True))
    return tuple(found)


def registration_of(name: str, decision: RegistryDecision) -> Condition:
    """The Ready condition one ClusterStorage gets from the registry decision."""
    rejected = decision.rejected.get(name)
    if rejected is not None:
        return Condition.of(READY, False, rejected.reason, rejected.message)
    return Condition.of(READY, True, reasons.REGISTERED, "registered in the catalog's cluster registry")
