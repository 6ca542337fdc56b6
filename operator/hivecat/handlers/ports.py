"""The live `Ports` of a reconcile pass: the Kubernetes API (children adopted by the CR, so garbage
collection removes them with it), the catalog's database, its metastore and Glue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf
from botocore.exceptions import BotoCoreError, ClientError

from hivecat import k8s
from hivecat.catalog.base import Catalog
from hivecat.catalog.connect import JournalSettings, open_catalog
from hivecat.catalog.glue.defaults import ensure_default_database, glue_client
from hivecat.catalog.probes import ProbeResult, glue_failure, probe_glue, probe_sql, probe_thrift
from hivecat.catalog.schema_version import SchemaState, read_schema_state
from hivecat.catalog.targets import SqlTarget
from hivecat.config import config
from hivecat.kinds import ANNOTATION_METASTORE_ADDRESS, ANNOTATION_SYNC_NOW
from hivecat.reconcile.clusterstorage import Backend
from hivecat.specs.hivecatalog import HiveCatalogSpec


def run_asked(body: kopf.Body, memo: kopf.Memo, flag: str) -> bool:
    """Whether a pass was asked for: `memo[flag]` set by an event handler (a new spec, a restart), or the
    `hivecatalog.io/sync-now` annotation changed since the daemon last looked. Consumes the request."""
    sync_now = (body.meta.annotations or {}).get(ANNOTATION_SYNC_NOW)
    if sync_now != memo.get("sync_now_seen", sync_now):
        memo[flag] = True
    memo["sync_now_seen"] = sync_now
    return bool(memo.pop(flag, False))


def open_backend(namespace: str, backend: Backend) -> Catalog:
    """A catalog backend opened with the HiveCatalog's Secrets (read now, never kept) and the operator's
    journal settings. Raises CatalogUnavailable or k8s.SecretUnavailable."""
    settings = config()
    password = glue = None
    if backend.password is not None:
        password = k8s.read_secret(namespace, backend.password.name, backend.password.key).value
    if backend.glue_credentials is not None:
        ref = backend.glue_credentials
        glue = (k8s.read_secret(namespace, ref.name, ref.access_key_id_key).value,
                k8s.read_secret(namespace, ref.name, ref.secret_access_key_key).value)
    journal = JournalSettings(schema=settings.journal_schema, url=settings.journal_url)
    return open_catalog(backend.target, password=password, journal=journal, glue_credentials=glue)


class LivePorts:
    def __init__(self, owner: kopf.Body, spec: HiveCatalogSpec) -> None:
        self.owner, self.spec, self.namespace = owner, spec, spec.namespace

    def read_secret(self, name: str, key: str) -> tuple[str, str]:
        secret = k8s.read_secret(self.namespace, name, key)
        return secret.value, secret.resource_version

    def probe_sql(self, target: SqlTarget, password: str) -> ProbeResult:
        return probe_sql(target, password)

    def read_schema(self, target: SqlTarget, password: str) -> SchemaState:
        return read_schema_state(target, password)

    def probe_thrift(self, spec: HiveCatalogSpec, service: Mapping[str, Any]) -> ProbeResult:
        # Service DNS resolves only inside the cluster; the annotation says where an operator outside reaches it.
        address = (self.owner.meta.annotations or {}).get(ANNOTATION_METASTORE_ADDRESS)
        if address:
            host, _, port = address.rpartition(":")
            return probe_thrift(host, int(port))
        return probe_thrift(f"{service['metadata']['name']}.{self.namespace}.svc", spec.metastore.port)

    def _glue(self, credentials: tuple[str, str] | None) -> Any:
        glue = self.spec.glue
        assert glue is not None
        access, secret = credentials if credentials else (None, None)
        return glue_client(glue.region, glue.endpoint, access, secret)

    def probe_glue(self, spec: HiveCatalogSpec, credentials: tuple[str, str] | None) -> ProbeResult:
        glue = spec.glue
        assert glue is not None
        keys = ({"aws_access_key_id": credentials[0], "aws_secret_access_key": credentials[1]}
                if credentials else None)
        return probe_glue(keys, glue.region, glue.catalog_id, glue.endpoint)

    def ensure_glue_default(self, spec: HiveCatalogSpec, credentials: tuple[str, str] | None) -> ProbeResult:
        assert spec.glue is not None
        location = spec.glue.default_database_location or spec.metastore.warehouse_dir
        if not location:
            return ProbeResult(False, "DefaultLocationMissing",
                               "Glue needs a location for the default database: set spec.glue.defaultDatabaseLocation "
                               "or spec.metastore.warehouseDir")
        try:
            outcome = ensure_default_database(self._glue(credentials), spec.glue.catalog_id, location)
        except (BotoCoreError, ClientError) as error:  # classified into a reason, secrets masked
            return glue_failure(error, "Glue", credentials or ())
        if outcome.kind == "MissingLocation":
            return ProbeResult(False, "DefaultDatabaseWithoutLocation", outcome.message)
        return ProbeResult(True, outcome.kind, outcome.message)

    def get(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        return k8s.get(api_version, kind, self.namespace, name)

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        manifest.setdefault("metadata", {})["namespace"] = self.namespace
        kopf.adopt(manifest, owner=self.owner)
        return k8s.apply(manifest)

    def delete(self, api_version: str, kind: str, name: str) -> bool:
        return k8s.delete(api_version, kind, self.namespace, name)
