"""A recording fake of a HiveCatalog pass's `Ports` (hivecat.act.hivecatalog), for the unit tests of the pass."""

from __future__ import annotations

import copy
from typing import Any

from hivecat.apierrors import SecretUnavailable
from hivecat.catalog.probes import ProbeResult
from hivecat.catalog.schema_version import SchemaState
from hivecat.catalog.targets import ThriftSasl
from hivecat.kerberos.login import KerberosLogin
from hivecat.specs import HiveCatalogSpec
from hivecat.specs.kerberos import KerberosSpec

PASSWORD = "db-Pa55-w0rd-xyz"  # the database Secret's value: it must appear nowhere
AWS_KEY, AWS_SECRET = "AKIAFAKEKEYID0001", "aws-secret-Key-0123456789"
OK = ProbeResult(True, "Reachable", "answers")
CURRENT = SchemaState(True, "3.1.0", 1)


class FakePorts:
    """Records every call; `objects` is the cluster as (kind, name) → object."""

    def __init__(self, *, secrets: dict[tuple[str, str], str] | None = None, sql: ProbeResult = OK,
                 schema: SchemaState | Exception = CURRENT, thrift: ProbeResult = OK, glue: ProbeResult = OK,
                 glue_default: ProbeResult = OK, ready_replicas: int = 1,
                 keytabs: dict[tuple[str, str], bytes] | None = None, realms: str | None = None) -> None:
        self.secrets = {("sales-db", "password"): PASSWORD, ("aws", "AWS_ACCESS_KEY_ID"): AWS_KEY,
                        ("aws", "AWS_SECRET_ACCESS_KEY"): AWS_SECRET} if secrets is None else secrets
        self.sql, self.schema, self.thrift, self.glue, self.glue_default = sql, schema, thrift, glue, glue_default
        self.ready_replicas = ready_replicas
        self.keytabs, self.realms = keytabs or {}, realms
        self.sasl: ThriftSasl | None = None
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.applied: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str]] = []
        self.calls: list[str] = []

    def read_secret(self, name: str, key: str) -> tuple[str, str]:
        self.calls.append("read_secret")
        if not any(n == name for n, _ in self.secrets):
            raise SecretUnavailable("SecretNotFound", f"Secret data/{name} does not exist")
        if (name, key) not in self.secrets:
            raise SecretUnavailable("SecretKeyNotFound", f"Secret data/{name} has no key {key!r}")
        return self.secrets[name, key], "17"

    def probe_sql(self, target: Any, password: str) -> ProbeResult:
        assert password == PASSWORD
        self.calls.append("probe_sql")
        return self.sql

    def read_schema(self, target: Any, password: str) -> SchemaState:
        self.calls.append("read_schema")
        if isinstance(self.schema, Exception):
            raise self.schema
        return self.schema

    def probe_thrift(self, spec: HiveCatalogSpec, service: Any, sasl: ThriftSasl | None) -> ProbeResult:
        self.calls.append("probe_thrift")
        self.sasl = sasl
        return self.thrift

    def read_keytab(self, name: str, key: str) -> tuple[bytes, str]:
        self.calls.append("read_keytab")
        if not any(n == name for n, _ in self.keytabs):
            raise SecretUnavailable("SecretNotFound", f"Secret data/{name} does not exist")
        if (name, key) not in self.keytabs:
            raise SecretUnavailable("SecretKeyNotFound", f"Secret data/{name} has no key {key!r}")
        return self.keytabs[name, key], "41"

    def login(self, kerberos: KerberosSpec, keytab: bytes) -> KerberosLogin:
        self.calls.append("login")
        return KerberosLogin(kerberos.principal, f"/keytabs/{kerberos.keytab_secret}")

    def krb5_conf(self) -> str | None:
        return self.realms

    def probe_glue(self, spec: HiveCatalogSpec, credentials: tuple[str, str] | None) -> ProbeResult:
        assert credentials == (AWS_KEY, AWS_SECRET)
        self.calls.append("probe_glue")
        return self.glue

    def ensure_glue_default(self, spec: HiveCatalogSpec, credentials: tuple[str, str] | None) -> ProbeResult:
        self.calls.append("ensure_glue_default")
        return self.glue_default

    def get(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        found = self.objects.get((kind, name))
        return copy.deepcopy(found) if found is not None else None

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        self.applied.append(copy.deepcopy(manifest))
        key = (manifest["kind"], manifest["metadata"]["name"])
        stored = copy.deepcopy(manifest)
        stored["status"] = (self.objects.get(key) or {}).get("status") or {}
        if manifest["kind"] == "Deployment":
            stored["status"] = {"readyReplicas": self.ready_replicas}
        self.objects[key] = stored
        return copy.deepcopy(stored)

    def delete(self, api_version: str, kind: str, name: str) -> bool:
        self.calls.append("delete")
        self.deleted.append((kind, name))
        return self.objects.pop((kind, name), None) is not None

    # -- what the tests look at --
    def made(self) -> list[tuple[str, str]]:
        return [(m["kind"], m["metadata"]["name"]) for m in self.applied]
