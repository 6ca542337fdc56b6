"""The kinds the local API server serves: the built-ins the operator uses, plus CRDs created through the API."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    subresources: tuple[str, ...] = ()  # only "status" is emulated
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    custom: bool = False  # served because a CRD says so (stricter PUT rules, like the real server)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.group, self.version, self.plural)

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def describe(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _builtin(group: str, version: str, plural: str, kind: str, namespaced: bool = True,
             status: bool = False, short: tuple[str, ...] = ()) -> ResourceType:
    return ResourceType(group, version, plural, kind, namespaced, singular=kind.lower(),
                        subresources=("status",) if status else (), short_names=short)


# What the operator issues need; anything else answers 404 like an API server without that group.
BUILTINS: tuple[ResourceType, ...] = (
    _builtin("", "v1", "namespaces", "Namespace", namespaced=False, status=True, short=("ns",)),
    _builtin("", "v1", "configmaps", "ConfigMap", short=("cm",)),
    _builtin("", "v1", "secrets", "Secret"),
    _builtin("", "v1", "services", "Service", status=True, short=("svc",)),
    _builtin("", "v1", "serviceaccounts", "ServiceAccount", short=("sa",)),
    _builtin("", "v1", "events", "Event", short=("ev",)),
    _builtin("events.k8s.io", "v1", "events", "Event", short=("ev",)),
    _builtin("apps", "v1", "deployments", "Deployment", status=True, short=("deploy",)),
    _builtin("batch", "v1", "jobs", "Job", status=True),
    _builtin("coordination.k8s.io", "v1", "leases", "Lease"),
    _builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
             namespaced=False, status=True, short=("crd", "crds")),
)

CRD_KEY = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")
NAMESPACE_KEY = ("", "v1", "namespaces")


@dataclass
class CrdProblem(Exception):
    message: str


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """One ResourceType per served version of a CustomResourceDefinition; CrdProblem if it is malformed."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    if not group or not plural or not kind:
        raise CrdProblem("spec.group, spec.names.plural and spec.names.kind are required")
    if crd.get("metadata", {}).get("name") != f"{plural}.{group}":
        raise CrdProblem(f"metadata.name must be spec.names.plural+\".\"+spec.group: {plural}.{group}")
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        raise CrdProblem("spec.scope must be Namespaced or Cluster")
    versions = [v for v in spec.get("versions") or [] if v.get("served")]
    if not versions:
        raise CrdProblem("spec.versions must contain at least one served version")
    return [
        ResourceType(
            group, v["name"], plural, kind, namespaced=spec["scope"] == "Namespaced",
            singular=names.get("singular") or kind.lower(),
            subresources=tuple(sorted((v.get("subresources") or {}).keys() & {"status"})),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            custom=True,
        )
        for v in versions
    ]


@dataclass
class Registry:
    """Resource types by (group, version, plural); CRDs add and remove entries at run time."""

    types: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)

    @classmethod
    def with_builtins(cls) -> Registry:
        return cls({t.key: t for t in BUILTINS})

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.types.get((group, version, plural))

    def add(self, types: list[ResourceType]) -> None:
        for t in types:
            self.types[t.key] = t

    def remove_group_plural(self, group: str, plural: str) -> list[ResourceType]:
        gone = [t for t in self.types.values() if t.group == group and t.plural == plural]
        for t in gone:
            del self.types[t.key]
        return gone
