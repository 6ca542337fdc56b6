"""The live `Ports` of a reconcile pass: the Kubernetes API (children adopted by the CR, so garbage
collection removes them with it), the catalog's database, its metastore and Glue."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import kopf
from botocore.exceptions import BotoCoreError, ClientError

from hivecat import k8s, reasons
from hivecat.catalog.base import Catalog
from hivecat.catalog.connect import CatalogUnavailable, JournalSettings, open_catalog
from hivecat.catalog.glue.defaults import ensure_default_database, glue_client
from hivecat.catalog.glue.roles import assume_role
from hivecat.catalog.probes import ProbeResult, glue_failure, probe_glue, probe_sql, probe_thrift
from hivecat.catalog.schema_version import SchemaState, read_schema_state
from hivecat.catalog.targets import GlueTarget, SqlTarget, ThriftSasl, ThriftTarget
from hivecat.config import config
from hivecat.handlers import pools
from hivecat.kerberos.login import KerberosLogin
from hivecat.kinds import HIVE_CATALOG
from hivecat.reconcile.access import NamespacePolicy, check_hive_catalog, judged
from hivecat.reconcile.clusterstorage import Backend, backends_of
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.hivecatalog import HiveCatalogSpec, parse_hive_catalog
from hivecat.specs.kerberos import KerberosSpec
from hivecat.workloads.registry import REGISTRY_KEY, registry_config_map, registry_config_map_name


def catalog_backends(namespace: str, name: str, policy: NamespacePolicy,
                     access: str | None = None) -> tuple[dict[str, Any], tuple[Backend, ...]]:
    """The HiveCatalog `name` (its body) and the backends a scan or a sync of it reads, as its namespace's policy
    allows: SpecInvalid("CatalogNotFound" | a policy reason | the spec's). `access`: the ClusterStorage's
    metastoreAccess; None (a TableReplica): the database when the operator reaches it, an embedded Derby
    catalog through its metastore's Thrift API. Where the metastore is reached: its Service, or the
    administrator's override (CatalogPolicy spec.metastoreAddresses), never an address a CR author sets."""
    body = k8s.get(HIVE_CATALOG.api_version, HIVE_CATALOG.kind, namespace, name)
    if body is None:
        raise SpecInvalid(reasons.CATALOG_NOT_FOUND, f"HiveCatalog {name} does not exist in namespace {namespace}")
    catalog = parse_hive_catalog(body, default_image=config().metastore_image)
    refusal, _ = judged(check_hive_catalog(catalog, policy), policy)
    if refusal is not None:
        raise SpecInvalid(refusal.reason, f"HiveCatalog {name}: {refusal.message}")
    if access is None:
        access = "Thrift" if catalog.database is not None and catalog.database.dialect == "derby" else "Database"
    return body, backends_of(catalog, access, policy.metastore_address(name))


def registry_text(namespace: str, catalog_body: Mapping[str, Any]) -> str | None:
    """The catalog's clusters.json as hivecat wrote it (None: not yet); NameTaken when a ConfigMap of the
    registry's name was not made by hivecat for this catalog (its content is then never trusted)."""
    name = registry_config_map_name(catalog_body["metadata"]["name"])
    found = k8s.get("v1", "ConfigMap", namespace, name)
    if found is None:
        return None
    if not k8s.owned_by(found, catalog_body["metadata"]["uid"]):
        raise k8s.NameTaken("ConfigMap", namespace, name)
    return (found.get("data") or {}).get(REGISTRY_KEY)


def open_backend(namespace: str, backend: Backend) -> Catalog:
    """A catalog backend opened with the HiveCatalog's Secrets (read now, never kept) and the operator's
    journal settings. Raises CatalogUnavailable or k8s.SecretUnavailable."""
    settings = config()
    password = None
    glue: tuple[str, ...] | None = None
    if backend.password is not None:
        password = k8s.read_secret(namespace, backend.password.name, backend.password.key).value
    if backend.glue_credentials is not None:
        ref = backend.glue_credentials
        glue = (k8s.read_secret(namespace, ref.name, ref.access_key_id_key).value,
                k8s.read_secret(namespace, ref.name, ref.secret_access_key_key).value)
    elif backend.glue_role is not None and isinstance(backend.target, GlueTarget):
        try:
            glue = assume_role(backend.glue_role, backend.target.region, namespace)
        except (BotoCoreError, ClientError) as error:
            failure = glue_failure(error, f"AWS STS (role {backend.glue_role})")
            raise CatalogUnavailable(failure.reason, failure.message) from None
    target = backend.target
    if backend.kerberos is not None and isinstance(target, ThriftTarget):  # SASL, as the namespace's own login
        target = replace(target, sasl=ThriftSasl(namespace_login(namespace, backend.kerberos.login),
                                                 backend.kerberos.metastore_principal))
    journal = JournalSettings(schema=settings.journal_schema, url=settings.journal_url)
    return open_catalog(target, password=password, journal=journal, glue_credentials=glue,
                        notification_events=backend.notification_events)


def namespace_login(namespace: str, kerberos: KerberosSpec, keytab: bytes | None = None) -> KerberosLogin:
    """A namespace's Kerberos login: its keytab (read from its own Secret unless given) in the operator's keytab
    store, its tickets in a cache of its own (kerberos/store.py). SecretUnavailable when the Secret lacks it."""
    if keytab is None:
        keytab = k8s.read_secret_bytes(namespace, kerberos.keytab_secret, kerberos.keytab_key).value
    return pools.keytabs().login(namespace, kerberos.principal, keytab)


def krb5_conf() -> str | None:
    """The operator's realms and KDCs ($KRB5_CONFIG: the chart's kerberos.krb5Conf), for pods it runs; None
    without one (the image's own krb5.conf then applies)."""
    path = os.environ.get("KRB5_CONFIG")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError:
        return None


class LivePorts:
    def __init__(self, owner: kopf.Body, spec: HiveCatalogSpec, policy: NamespacePolicy) -> None:
        self.owner, self.spec, self.namespace, self.policy = owner, spec, spec.namespace, policy

    def read_secret(self, name: str, key: str) -> tuple[str, str]:
        secret = k8s.read_secret(self.namespace, name, key)
        return secret.value, secret.resource_version

    def probe_sql(self, target: SqlTarget, password: str) -> ProbeResult:
        return probe_sql(target, password)

    def read_schema(self, target: SqlTarget, password: str) -> SchemaState:
        return read_schema_state(target, password)

    def read_keytab(self, name: str, key: str) -> tuple[bytes, str]:
        secret = k8s.read_secret_bytes(self.namespace, name, key)
        return secret.value, secret.resource_version

    def login(self, kerberos: KerberosSpec, keytab: bytes) -> KerberosLogin:
        return namespace_login(self.namespace, kerberos, keytab)

    def krb5_conf(self) -> str | None:
        return krb5_conf()

    def probe_thrift(self, spec: HiveCatalogSpec, service: Mapping[str, Any], sasl: ThriftSasl | None) -> ProbeResult:
        # Service DNS resolves only inside the cluster; the administrator's policy may say where an operator
        # outside reaches it (never the CR's author: that would point the operator at any host).
        override = self.policy.metastore_address(spec.name)
        if override is not None:
            return probe_thrift(*override, sasl=sasl)
        return probe_thrift(f"{service['metadata']['name']}.{self.namespace}.svc", spec.metastore.port, sasl=sasl)

    def _glue(self, credentials: tuple[str, ...] | None) -> Any:
        glue = self.spec.glue
        assert glue is not None
        access, secret, token = (*credentials, None)[:3] if credentials else (None, None, None)
        return glue_client(glue.region, glue.endpoint, access, secret, session_token=token)

    def probe_glue(self, spec: HiveCatalogSpec, credentials: tuple[str, ...] | None) -> ProbeResult:
        glue = spec.glue
        assert glue is not None
        keys = None
        if credentials:
            names = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")
            keys = dict(zip(names, credentials))
        return probe_glue(keys, glue.region, glue.catalog_id, glue.endpoint)

    def assume_role(self, role_arn: str) -> tuple[str, ...] | ProbeResult:
        assert self.spec.glue is not None
        try:
            return assume_role(role_arn, self.spec.glue.region, self.namespace)
        except (BotoCoreError, ClientError) as error:
            return glue_failure(error, f"AWS STS (role {role_arn})")

    def ensure_glue_default(self, spec: HiveCatalogSpec, credentials: tuple[str, ...] | None) -> ProbeResult:
        assert spec.glue is not None
        location = spec.glue.default_database_location or spec.metastore.warehouse_dir
        if not location:
            return ProbeResult(False, reasons.DEFAULT_LOCATION_MISSING,
                               "Glue needs a location for the default database: set spec.glue.defaultDatabaseLocation "
                               "or spec.metastore.warehouseDir")
        try:
            outcome = ensure_default_database(self._glue(credentials), spec.glue.catalog_id, location)
        except (BotoCoreError, ClientError) as error:  # classified into a reason, secrets masked
            return glue_failure(error, "Glue", credentials or ())
        if outcome.kind == "MissingLocation":
            return ProbeResult(False, reasons.DEFAULT_DATABASE_WITHOUT_LOCATION, outcome.message)
        return ProbeResult(True, outcome.kind, outcome.message)

    def get(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        """The child of that name hivecat made for this catalog; NameTaken when the name is someone else's."""
        found = k8s.get(api_version, kind, self.namespace, name)
        if found is not None and not k8s.owned_by(found, self.owner.meta.uid):
            raise k8s.NameTaken(kind, self.namespace, name)
        return found

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        manifest.setdefault("metadata", {})["namespace"] = self.namespace
        kopf.adopt(manifest, owner=self.owner)
        return k8s.apply(manifest)

    def delete(self, api_version: str, kind: str, name: str) -> bool:
        """Delete this catalog's child; an object of that name hivecat did not make is left alone (False)."""
        try:
            return k8s.delete(api_version, kind, self.namespace, name, owner=self.owner.meta.uid)
        except k8s.NameTaken:
            return False


class LiveStoragePorts:
    """The registry ConfigMap (owned by the HiveCatalog) and the catalog's backends."""

    def __init__(self, namespace: str, catalog_body: Mapping[str, Any] | None) -> None:
        self.namespace, self.catalog_body = namespace, catalog_body

    def registry_document(self, catalog: str) -> str | None:
        assert self.catalog_body is not None
        try:
            return registry_text(self.namespace, self.catalog_body)
        except k8s.NameTaken:
            return None  # never trusted; writing it is refused the same way

    def write_registry(self, catalog: str, document: str) -> None:
        assert self.catalog_body is not None
        manifest = registry_config_map(catalog, self.namespace, document)
        kopf.adopt(manifest, owner=self.catalog_body)  # goes with the catalog
        k8s.apply(manifest)

    def open(self, backend: Backend) -> Catalog:
        return open_backend(self.namespace, backend)
