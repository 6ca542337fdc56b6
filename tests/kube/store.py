"""The realism layer's object store: what etcd plus the API server's generic registry do to every write.

Runs inside the server's event loop only (no awaits inside a write, so every write is atomic). Every
write gets the next resourceVersion and appends one watch event to the log that watches resume from.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime
import random
import re
import uuid
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kube import errors
from kube.patching import PatchError, apply_patch
from kube.resources import CRD_KEY, NAMESPACE_KEY, CrdProblem, Registry, ResourceType, types_from_crd

Obj = dict[str, Any]
ObjKey = tuple[str, str, str, str]  # group, plural, namespace ("" when cluster-scoped), name

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the real server's: no vowels, no look-alikes
NAMESPACES = ("", "namespaces")  # the (group, plural) part of an ObjKey
_SERVER_OWNED = ("uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds")


@dataclass(frozen=True)
class WatchEvent:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    group: str
    plural: str
    namespace: str
    obj: Obj
    old: Obj | None  # the previous state, so selector watches can turn MODIFIED into ADDED/DELETED


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(obj: Obj) -> dict[str, Any]:
    return obj.setdefault("metadata", {})


def _desired(obj: Obj) -> Obj:
    """Everything but metadata and status: what metadata.generation counts changes of."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


@dataclass
class ObjectStore:
    registry: Registry = field(default_factory=Registry.with_builtins)
    on_types_changed: Callable[[], None] = lambda: None
    objects: dict[ObjKey, Obj] = field(default_factory=dict)
    log: list[WatchEvent] = field(default_factory=list)
    rv: int = 1
    compacted_rv: int = 0  # watches from a resourceVersion below this get 410 Gone
    closed: bool = False
    _orphaning: set[str] = field(default_factory=set)  # uids deleted with propagationPolicy=Orphan
    _changed: asyncio.Event | None = None

    # --- reading --------------------------------------------------------------------------------
    def key(self, rt: ResourceType, namespace: str | None, name: str) -> ObjKey:
        return (rt.group, rt.plural, (namespace or "") if rt.namespaced else "", name)

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        obj = self.objects.get(self.key(rt, namespace, name))
        if obj is None:
            raise errors.not_found(rt, name)
        return self.present(rt, obj)

    def list(self, rt: ResourceType, namespace: str | None,
             matches: Callable[[Obj], bool]) -> tuple[list[Obj], int]:
        items = [self.present(rt, obj) for (g, p, ns, _), obj in sorted(self.objects.items())
                 if (g, p) == (rt.group, rt.plural) and (namespace is None or ns == namespace) and matches(obj)]
        return items, self.rv

    def present(self, rt: ResourceType, obj: Obj) -> Obj:
        """A copy as served at the requested version (versions share storage: no conversion emulated)."""
        shown = copy.deepcopy(obj)
        shown["apiVersion"], shown["kind"] = rt.api_version, rt.kind
        return shown

    def changed(self) -> asyncio.Event:
        """An event set at the next write: grab it before reading the log, then wait on it."""
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def events_after(self, rv: int) -> list[WatchEvent]:
        if rv < self.compacted_rv:
            raise errors.gone(f"too old resource version: {rv} ({self.compacted_rv})")
        return self.log[bisect_right(self.log, rv, key=lambda e: e.rv):]

    def compact(self) -> None:
        """Forget the watch history, as etcd compaction does every few minutes on a real cluster."""
        self.log.clear()
        self.compacted_rv = self.rv

    def close(self) -> None:
        self.closed = True
        self._notify()

    # --- writing --------------------------------------------------------------------------------
    def create(self, rt: ResourceType, namespace: str | None, body: Any) -> Obj:
        obj = self._checked_body(rt, body)
        meta = _meta(obj)
        if rt.namespaced:
            if not namespace:
                raise errors.api_error(405, "MethodNotAllowed", f"create {rt.describe()} needs a namespace in the URL")
            if meta.get("namespace") not in (None, "", namespace):
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            self._require_live_namespace(rt, namespace, meta.get("name") or meta.get("generateName") or "")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise errors.invalid(rt, None, "metadata.name: Required value: name or generateName is required")
            meta["name"] = self._generated_name(rt, namespace, meta["generateName"])
        self._validate_name(rt, meta["name"])
        key = self.key(rt, namespace, meta["name"])
        if key in self.objects:
            raise errors.already_exists(rt, meta["name"])
        for owned in _SERVER_OWNED:
            meta.pop(owned, None)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(), generation=1)
        if rt.has_status:
            obj.pop("status", None)  # a create never sets status when status is a subresource
        self._kind_rules(rt, obj, None)
        return self._commit(rt, key, obj, None)

    def replace(self, rt: ResourceType, namespace: str | None, name: str, body: Any, subresource: str | None) -> Obj:
        new = self._checked_body(rt, body)
        meta = _meta(new)
        if meta.get("name") != name:
            raise errors.bad_request(f"the name of the object ({meta.get('name')}) does not match the name on "
                                     f"the URL ({name})")
        if rt.namespaced and meta.get("namespace") not in (None, "", namespace):
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent "
                                     "on the request")
        if not meta.get("resourceVersion") and rt.custom:
            raise errors.invalid(rt, name, "metadata.resourceVersion: Invalid value: 0x0: must be specified "
                                           "for an update")
        return self._update(rt, namespace, name, lambda old: new, subresource)

    def patch(self, rt: ResourceType, namespace: str | None, name: str, content_type: str, patch: Any,
              subresource: str | None) -> Obj:
        def patched(old: Obj) -> Obj:
            try:
                return apply_patch(content_type, old, patch)
            except PatchError as e:
                raise errors.api_error(e.status, {415: "UnsupportedMediaType", 422: "Invalid"}.get(
                    e.status, "BadRequest"), e.message, rt, name)
        return self._update(rt, namespace, name, patched, subresource)

    def delete(self, rt: ResourceType, namespace: str | None, name: str, options: dict[str, Any]) -> Obj:
        key = self.key(rt, namespace, name)
        old = self.objects.get(key)
        if old is None:
            raise errors.not_found(rt, name)
        preconditions = options.get("preconditions") or {}
        for field_name in ("uid", "resourceVersion"):
            wanted = preconditions.get(field_name)
            if wanted and wanted != old["metadata"].get(field_name):
                raise errors.api_error(409, "Conflict", f"Precondition failed: {field_name} in precondition: "
                                                        f"{wanted}, {field_name} in object meta: "
                                                        f"{old['metadata'].get(field_name)}", rt, name)
        if options.get("propagationPolicy") == "Orphan" or options.get("orphanDependents"):
            self._orphaning.add(old["metadata"]["uid"])
        if old["metadata"].get("deletionTimestamp"):
            return self.present(rt, old)  # already terminating: nothing changes
        if old["metadata"].get("finalizers") or key[:2] == NAMESPACES:
            new = copy.deepcopy(old)
            new["metadata"].update(deletionTimestamp=now_rfc3339(), deletionGracePeriodSeconds=0)
            if key[:2] == NAMESPACES:
                new.setdefault("status", {})["phase"] = "Terminating"
            shown = self._commit(rt, key, new, old)
            if key[:2] == NAMESPACES:
                self._empty_namespace(name)
            return shown
        return self._remove(rt, key)

    # --- the rules every write goes through --------------------------------------------------------
    def _update(self, rt: ResourceType, namespace: str | None, name: str, change: Callable[[Obj], Obj],
                subresource: str | None) -> Obj:
        if subresource not in (None, "status") or (subresource == "status" and not rt.has_status):
            raise errors.not_found(rt, f"{name}/{subresource}")
        key = self.key(rt, namespace, name)
        old = self.objects.get(key)
        if old is None:
            raise errors.not_found(rt, name)
        changed = change(copy.deepcopy(old))
        if not isinstance(changed, dict) or not isinstance(changed.get("metadata", {}), dict):
            raise errors.bad_request("the object must be a JSON object with metadata")
        sent_rv = _meta(changed).get("resourceVersion")
        if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt, name)
        if subresource == "status":  # a /status write changes status and nothing else
            new = copy.deepcopy(old)
            new.pop("status", None)
            if "status" in changed:
                new["status"] = changed["status"]
        else:
            new = changed
            if rt.has_status:  # a main write never changes status
                new.pop("status", None)
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
            self._check_identity(rt, old, new)
        meta = _meta(new)
        for owned in _SERVER_OWNED:
            meta.pop(owned, None)
            if owned in old["metadata"]:
                meta[owned] = old["metadata"][owned]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        if old["metadata"].get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old["metadata"].get("finalizers") or [])
            if added:
                raise errors.invalid(rt, name, f"metadata.finalizers: Forbidden: no new finalizers can be added "
                                               f"if the object is being deleted, found new finalizers {sorted(added)}")
        if _desired(new) != _desired(old):
            meta["generation"] = old["metadata"].get("generation", 0) + 1
        self._kind_rules(rt, new, old)
        if new == old:
            return self.present(rt, old)  # a no-op write: no new resourceVersion, no watch event
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self.objects[key] = new
            return self._remove(rt, key)
        return self._commit(rt, key, new, old)

    def _checked_body(self, rt: ResourceType, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        obj = copy.deepcopy(body)
        if obj.get("kind") not in (None, rt.kind):
            raise errors.bad_request(f"the kind in the data ({obj['kind']}) does not match the expected kind "
                                     f"({rt.kind})")
        if obj.get("apiVersion") not in (None, rt.api_version):
            raise errors.bad_request(f"the API version in the data ({obj['apiVersion']}) does not match the "
                                     f"expected API version ({rt.api_version})")
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        if not isinstance(obj.get("metadata", {}), dict):
            raise errors.bad_request("metadata must be a JSON object")
        return obj

    def _check_identity(self, rt: ResourceType, old: Obj, new: Obj) -> None:
        for field_name in ("name", "namespace"):
            if new["metadata"].get(field_name, old["metadata"].get(field_name)) != old["metadata"].get(field_name):
                raise errors.invalid(rt, old["metadata"]["name"], f"metadata.{field_name}: Invalid value: field "
                                                                  "is immutable")
        new["metadata"]["name"] = old["metadata"]["name"]
        if "namespace" in old["metadata"]:
            new["metadata"]["namespace"] = old["metadata"]["namespace"]

    def _validate_name(self, rt: ResourceType, name: str) -> None:
        pattern, limit = (_DNS_LABEL, 63) if rt.key == NAMESPACE_KEY else (_DNS_SUBDOMAIN, 253)
        if not pattern.match(name) or len(name) > limit:
            raise errors.invalid(rt, name, f"metadata.name: Invalid value: {name!r}: a lowercase RFC 1123 "
                                           f"{'label' if limit == 63 else 'subdomain'} must consist of lower case "
                                           "alphanumeric characters, '-' or '.'")

    def _generated_name(self, rt: ResourceType, namespace: str | None, prefix: str) -> str:
        for _ in range(100):
            name = prefix[:58] + "".join(random.choices(_GENERATE_ALPHABET, k=5))
            if self.key(rt, namespace, name) not in self.objects:
                return name
        raise errors.api_error(409, "AlreadyExists", f"no free name for generateName {prefix!r}", rt)

    def _require_live_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        ns = self.objects.get(("", "namespaces", "", namespace))
        if ns is None:
            raise errors.api_error(404, "NotFound", f'namespaces "{namespace}" not found', None, namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(rt, name, f"unable to create new content in namespace {namespace} because "
                                             "it is being terminated")

    def _kind_rules(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        """What specific registries add on top of the generic rules (for the kinds tests rely on)."""
        if rt.key == ("", "v1", "secrets") and "stringData" in obj:  # stringData is write-only
            data = obj.setdefault("data", {}) or {}
            for k, v in (obj.pop("stringData") or {}).items():
                data[k] = base64.b64encode(str(v).encode()).decode()
            obj["data"] = data
        elif rt.key == NAMESPACE_KEY and old is None:
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
        elif rt.key == CRD_KEY:
            try:
                types = types_from_crd(obj)
            except CrdProblem as e:
                raise errors.invalid(rt, obj["metadata"].get("name"), e.message)
            # What the apiextensions controller writes once the names are accepted.
            obj["status"] = {
                "acceptedNames": copy.deepcopy(obj["spec"]["names"]),
                "storedVersions": [v["name"] for v in obj["spec"]["versions"] if v.get("storage")],
                "conditions": [
                    {"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": now_rfc3339()}
                    for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                    ("Established", "InitialNamesAccepted", "the initial names have been accepted"))
                ],
            }
            if old is not None:
                obj["status"]["conditions"] = copy.deepcopy(old.get("status", {}).get("conditions"))
                self.registry.remove_group_plural(old["spec"]["group"], old["spec"]["names"]["plural"])
            self.registry.add(types)
            self.on_types_changed()

    def _commit(self, rt: ResourceType, key: ObjKey, new: Obj, old: Obj | None) -> Obj:
        self.rv += 1
        new["metadata"]["resourceVersion"] = str(self.rv)
        self.objects[key] = new
        self.log.append(WatchEvent(self.rv, "ADDED" if old is None else "MODIFIED", key[0], key[1], key[2],
                                   copy.deepcopy(new), copy.deepcopy(old)))
        self._notify()
        return self.present(rt, new)

    def _remove(self, rt: ResourceType, key: ObjKey) -> Obj:
        obj = self.objects.pop(key)
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.log.append(WatchEvent(self.rv, "DELETED", key[0], key[1], key[2], copy.deepcopy(obj), None))
        self._notify()
        shown = self.present(rt, obj)
        if rt.key == CRD_KEY:
            self._drop_custom_kind(obj)
        self._collect_dependents(obj["metadata"]["uid"])
        if key[2] and key[:2] != NAMESPACES:
            self._reap_namespace(key[2])
        return shown

    def _collect_dependents(self, owner_uid: str) -> None:
        """The garbage collector: dependents whose owners are all gone get deleted (background policy)."""
        orphan = owner_uid in self._orphaning
        self._orphaning.discard(owner_uid)
        live_uids = {o["metadata"]["uid"] for o in self.objects.values()}
        for key, obj in list(self.objects.items()):
            refs = obj["metadata"].get("ownerReferences") or []
            if key not in self.objects or not any(r.get("uid") == owner_uid for r in refs):
                continue
            rt = self._type_of(key, obj)
            if orphan:
                kept = [r for r in refs if r.get("uid") != owner_uid]
                self._update(rt, key[2], key[3], lambda o, k=kept: {**o, "metadata": {**o["metadata"],
                                                                    "ownerReferences": k}}, None)
            elif not any(r.get("uid") in live_uids for r in refs):
                self.delete(rt, key[2], key[3], {})

    def _empty_namespace(self, namespace: str) -> None:
        """The namespace controller: delete everything inside, then the namespace itself."""
        for key, obj in list(self.objects.items()):
            if key[2] == namespace and key in self.objects and not obj["metadata"].get("deletionTimestamp"):
                self.delete(self._type_of(key, obj), key[2], key[3], {})
        self._reap_namespace(namespace)

    def _reap_namespace(self, namespace: str) -> None:
        ns_key = ("", "namespaces", "", namespace)
        ns = self.objects.get(ns_key)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        if not any(k[2] == namespace for k in self.objects if k[:2] != NAMESPACES):
            self._remove(self.registry.get(*NAMESPACE_KEY), ns_key)

    def _drop_custom_kind(self, crd: Obj) -> None:
        # The real server deletes the instances first (honouring their finalizers); here they vanish at once.
        group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
        for rt in self.registry.remove_group_plural(group, plural)[:1]:
            for key in [k for k in self.objects if k[:2] == (group, plural)]:
                self._remove(rt, key)
        self.on_types_changed()

    def _type_of(self, key: ObjKey, obj: Obj) -> ResourceType:
        group_version = obj["apiVersion"]
        version = group_version.rsplit("/", 1)[-1]
        rt = self.registry.get(key[0], version, key[1])
        assert rt is not None, f"stored object of an unregistered kind: {key}"
        return rt

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None
