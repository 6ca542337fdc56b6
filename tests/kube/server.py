"""The local Kubernetes API server: kmock (HTTP server, request log, discovery, Status errors, DSL for
injected faults) plus our realism layer (kube.store) serving every resource URL.

kmock 0.8 on its own answers 500 to /api/v1/namespaces, has no resourceVersions and no PUT, and merges
patches naively; so requests are parsed here, and resource requests are served by `_serve_resource`,
a reaction just above kmock's own fallbacks. A test can still put a reaction in front of it:
`server.kmock['patch', kmock.resource('hivecatalog.io/v1alpha1/hivecatalogs')] << 500`.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import logging
import re
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal import rendering  # kmock 0.8 keeps StreamingError here (version pinned)

from kube import errors, openapi
from kube.resources import ALL_VERBS, NAMESPACE_KEY, ResourceType
from kube.selectors import SelectorError, field_selector, label_selector
from kube.store import Obj, ObjectStore, WatchEvent

log = logging.getLogger(__name__)

JSON = "application/json"
_WATCH_HEADERS = {"Content-Type": JSON}  # what a real server sends for JSON watches; kubectl accepts it


@dataclass(frozen=True)
class ApiPath:
    group: str
    version: str | None
    plural: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse_api_path(path: str) -> ApiPath | None:
    """/api/v1/..., /apis/GROUP[/VERSION/...]; None for anything else (/version, /openapi/...)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 2 and parts[0] == "apis":
        group, version, rest = parts[1], (parts[2] if len(parts) > 2 else None), parts[3:]
    else:
        return None
    namespace = None
    # /namespaces/NS/PLURAL/... is namespaced; /namespaces/NAME[/status|/finalize] is the namespace itself.
    if rest[:1] == ["namespaces"] and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    return ApiPath(group, version, rest[0] if rest else None, namespace,
                   rest[1] if len(rest) > 1 else None, "/".join(rest[2:]) or None)


def _action(method: str, path: ApiPath, query: dict[str, str]) -> kmock.action | None:
    if path.plural is None:
        return None
    if method == "GET":
        return kmock.action.WATCH if query.get("watch") in ("true", "1") else (
            kmock.action.FETCH if path.name else kmock.action.LIST)
    return {"POST": kmock.action.CREATE, "PATCH": kmock.action.UPDATE, "PUT": kmock.action.UPDATE,
            "DELETE": kmock.action.DELETE}.get(method) if (method == "POST") != bool(path.name) else None


def _is_resource_request(request: kmock.Request) -> bool:
    return request.resource is not None and request.resource.plural is not None


@attrs.define(kw_only=True)
class KubeApiServer(kmock.KubernetesScaffold):
    bookmark_seconds: float = 1.0  # real servers send one about every minute; tests cannot wait that long
    request_log_limit: int = 500  # kmock scans its log on every request: keep it short
    store: ObjectStore = attrs.field(init=False)
    faults: list[str] = attrs.field(factory=list, init=False)  # harness bugs: tests fail on any
    # Open watches by (group, plural, namespace or None): how tests know the operator is listening.
    watches: collections.Counter[tuple[str, str, str | None]] = attrs.field(factory=collections.Counter,
                                                                           init=False)
    _ids: Any = attrs.field(factory=itertools.count, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.store = ObjectStore(on_types_changed=self._publish_types)
        self._publish_types()
        self.store.create(self.store.registry.get(*NAMESPACE_KEY), None, {"metadata": {"name": "default"}})
        (self.fallback ** 1)[_is_resource_request] << self._serve_resource
        (self.fallback ** 1)["get", re.compile(r"^/openapi/v3(/.*)?$")] << self._serve_openapi

    # --- HTTP entry: our parsing, then kmock's reactions ------------------------------------------------
    async def __call__(self, raw: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        body = await raw.read()
        path = parse_api_path(raw.path)
        query = dict(raw.query)
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        request = kmock.Request(
            id=next(self._ids), raw_request=raw, url=raw.url, method=raw.method, params=query,
            headers=dict(raw.headers), cookies=dict(raw.cookies), body=body, text=body.decode(errors="replace"),
            data=data, action=_action(raw.method, path, query) if path else None,
            resource=kmock.resource(group=path.group, version=path.version, plural=path.plural) if path else None,
            namespace=path.namespace if path else None, name=path.name if path else None,
            subresource=path.subresource if path else None,
        )
        self._requests.append(request)
        del self._requests[:-self.request_log_limit]
        try:
            return await self._handle(request)
        except kmock.KubernetesError as e:  # an API answer, not a fault
            return await self._render_error(e)
        except rendering.StreamingError as e:  # a watch broke after its headers went out
            self._fault(raw, e.__cause__ or e)
            response = e.args[0]
            await self._stream_error(e.__cause__ or e, response)
            return response
        except Exception as e:
            self._fault(raw, e)
            return await self._render_error(e)

    def _fault(self, raw: aiohttp.web.BaseRequest, exc: BaseException) -> None:
        text = f"{raw.method} {raw.path_qs}: " + "".join(traceback.format_exception(exc))
        log.error("local API server fault: %s", text)
        self.faults.append(text)

    # --- discovery: kmock serves it from its resources array --------------------------------------------
    def _publish_types(self) -> None:
        self.resources.clear()
        for rt in self.store.registry.types.values():
            self.resources[kmock.resource(rt.group, rt.version, rt.plural)] = kmock.ResourceInfo(
                namespaced=rt.namespaced, kind=rt.kind, singular=rt.singular,
                verbs=set(ALL_VERBS),
                shortnames=set(rt.short_names), categories=set(rt.categories), subresources=set(rt.subresources))

    async def _serve_server_version(self, request: kmock.Request) -> Any:
        return {"major": "1", "minor": "35", "gitVersion": "v1.35.0-hivecat-local", "platform": "linux/amd64"}

    async def _serve_version(self, request: kmock.Request) -> Any:
        listing = await super()._serve_version(request)
        assert request.resource is not None
        if request.resource.group == "":  # kmock says "/v1"; the core group's groupVersion is "v1"
            listing["groupVersion"] = request.resource.version
        for entry in listing["resources"]:
            if "/" in entry["name"]:  # kmock copies names onto subresources; kubectl then warns on "hc"
                entry.update(shortNames=[], categories=[], verbs=["get", "patch", "update"])
        return listing

    async def _serve_openapi(self, request: kmock.Request) -> kmock.Response:
        documents = self._openapi_documents()
        wanted = request.url.path.removeprefix("/openapi/v3").strip("/")
        if not wanted:
            return _ok(openapi.root(documents))
        if wanted not in documents:
            raise errors.api_error(404, "NotFound", f"no OpenAPI document for {wanted}")
        return _ok(documents[wanted])

    def _openapi_documents(self) -> dict[str, dict[str, Any]]:
        schemas = {}
        for crd in self.store.objects.values():
            if crd["kind"] == "CustomResourceDefinition":
                spec = crd["spec"]
                for v in spec["versions"]:
                    schema = (v.get("schema") or {}).get("openAPIV3Schema")
                    if schema:
                        schemas[(spec["group"], v["name"], spec["names"]["plural"])] = schema
        by_path: dict[str, list[ResourceType]] = collections.defaultdict(list)
        for rt in self.store.registry.types.values():
            by_path[openapi.gv_path(rt)].append(rt)
        return {path: openapi.document(types, schemas) for path, types in by_path.items()}

    # --- resources ----------------------------------------------------------------------------------------
    async def _serve_resource(self, request: kmock.Request) -> kmock.Response:
        res = request.resource
        assert res is not None and res.plural is not None
        rt = self.store.registry.get(res.group or "", res.version or "", res.plural)
        if rt is None or (request.namespace is not None and not rt.namespaced):
            raise errors.api_error(404, "NotFound", "the server could not find the requested resource")
        if request.subresource not in (None, "status"):
            raise errors.api_error(404, "NotFound", f"subresource {request.subresource!r} is not emulated")
        method, ns, name = request.method.value, request.namespace, request.name
        if method in ("POST", "PUT") and "protobuf" in request.headers.get("Content-Type", ""):
            raise errors.api_error(415, "UnsupportedMediaType", "protobuf is not emulated: send JSON")
        if method == "GET" and request.params.get("watch") in ("true", "1"):
            return kmock.Response(status=200, headers=_WATCH_HEADERS, payload=self._watch(rt, request))
        if method == "GET" and name is None:
            return _ok(self._list(rt, ns, request.params))
        if method == "GET":
            return _ok(self.store.get(rt, ns, name))
        if method == "POST" and name is None:
            return _ok(self.store.create(rt, ns, request.data), status=201)
        if method == "PUT" and name is not None:
            return _ok(self.store.replace(rt, ns, name, request.data, request.subresource))
        if method == "PATCH" and name is not None:
            content_type = request.headers.get("Content-Type", "")
            return _ok(self.store.patch(rt, ns, name, content_type, request.data, request.subresource))
        if method == "DELETE" and name is not None:
            options = dict(request.data or {}) if isinstance(request.data, dict) else {}
            options.setdefault("propagationPolicy", request.params.get("propagationPolicy"))
            return _ok(self.store.delete(rt, ns, name, options))
        raise errors.api_error(405, "MethodNotAllowed", f"{method} is not supported on {request.url.path}")

    def _list(self, rt: ResourceType, namespace: str | None, params: dict[str, str]) -> Obj:
        items, rv = self.store.list(rt, namespace, _matcher(params))
        return {"apiVersion": rt.api_version, "kind": f"{rt.kind}List",
                "metadata": {"resourceVersion": str(rv)}, "items": items}

    def _watch(self, rt: ResourceType, request: kmock.Request) -> AsyncIterator[Any]:
        # Bad parameters are plain 400 answers, so they are checked before the stream starts.
        params = request.params
        matches = _matcher(params, name=request.name)
        since = params.get("resourceVersion") or "0"
        if not since.isdigit():
            raise errors.bad_request(f"invalid resourceVersion for a watch: {since!r}")
        timeout = float(params["timeoutSeconds"]) if params.get("timeoutSeconds") else None
        deadline = None if timeout is None else time.monotonic() + timeout
        bookmarks = params.get("allowWatchBookmarks") in ("true", "1")
        return self._stream(rt, request, matches, int(since), deadline, bookmarks)

    async def _stream(self, rt: ResourceType, request: kmock.Request, matches: Callable[[Obj], bool],
                      cursor: int, deadline: float | None, bookmarks: bool) -> AsyncIterator[Any]:
        yield b""  # send the headers now, even if no event comes for a while
        opened = (rt.group, rt.plural, request.namespace)
        self.watches[opened] += 1
        try:
            async for event in self._events(rt, request, matches, cursor, deadline, bookmarks):
                yield event
        finally:
            self.watches[opened] -= 1

    async def _events(self, rt: ResourceType, request: kmock.Request, matches: Callable[[Obj], bool],
                      cursor: int, deadline: float | None, bookmarks: bool) -> AsyncIterator[Any]:
        params = request.params
        if cursor == 0:  # "any"/unset: the current state as synthetic ADDED events, then changes
            items, cursor = self.store.list(rt, request.namespace, matches)
            for item in items:
                yield {"type": "ADDED", "object": item}
            if params.get("sendInitialEvents") in ("true", "1"):
                yield _bookmark(rt, cursor, initial_end=True)
        next_bookmark = time.monotonic() + self.bookmark_seconds
        while not self.store.closed:
            changed = self.store.changed()
            try:
                events = self.store.events_after(cursor)
            except kmock.KubernetesError as e:
                yield {"type": "ERROR", "object": _status_of(e)}
                return
            for event in events:
                cursor = event.rv
                shown = _as_seen_by(event, rt, request.namespace, matches, self.store.present)
                if shown is not None:
                    yield shown
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return
            if bookmarks and now >= next_bookmark:
                yield _bookmark(rt, cursor)
                next_bookmark = now + self.bookmark_seconds
            waits = [next_bookmark - now if bookmarks else 5.0] + ([deadline - now] if deadline else [])
            try:
                await asyncio.wait_for(changed.wait(), timeout=max(0.0, min(waits)))
            except asyncio.TimeoutError:
                pass


def _ok(obj: Obj, status: int = 200) -> kmock.Response:
    # Every answer names its status: kmock keeps a reaction's last status for the next answer.
    return kmock.Response(status=status, headers={"Content-Type": JSON}, payload=obj)


def _matcher(params: dict[str, str], name: str | None = None) -> Callable[[Obj], bool]:
    try:
        labels = label_selector(params.get("labelSelector"))
        fields = field_selector(params.get("fieldSelector"))
    except SelectorError as e:
        raise errors.bad_request(str(e))
    return lambda obj: labels(obj) and fields(obj) and (name is None or obj["metadata"]["name"] == name)


def _as_seen_by(event: WatchEvent, rt: ResourceType, namespace: str | None, matches: Callable[[Obj], bool],
                present: Callable[[ResourceType, Obj], Obj]) -> dict[str, Any] | None:
    """The event as one watch sees it: entering or leaving its selector turns MODIFIED into ADDED/DELETED."""
    if (event.group, event.plural) != (rt.group, rt.plural) or (namespace and event.namespace != namespace):
        return None
    now_in = matches(event.obj)
    was_in = event.old is not None and matches(event.old)
    if event.type == "MODIFIED" and now_in != was_in:
        kind = "ADDED" if now_in else "DELETED"
    elif now_in or (event.type == "DELETED" and was_in):
        kind = event.type
    else:
        return None
    return {"type": kind, "object": present(rt, event.obj)}


def _bookmark(rt: ResourceType, rv: int, initial_end: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"type": "BOOKMARK", "object": {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": meta}}


def _status_of(e: kmock.KubernetesError) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure", "code": e.status,
            "reason": e.reason, "message": e.message}


class RunningServer:
    """KubeApiServer on 127.0.0.1:<free port>, in a thread with its own event loop (tests stay sync)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.kmock: KubeApiServer
        self.url = ""
        self.start_seconds = 0.0

    def __enter__(self) -> RunningServer:
        started = time.monotonic()
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), name="kube-api", daemon=True)
        self._thread.start()
        if not self._ready.wait(10) or self._error is not None:
            raise RuntimeError(f"the local API server did not start: {self._error!r}")
        self.start_seconds = time.monotonic() - started
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)

    async def _serve(self) -> None:
        try:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            async with KubeApiServer(**self._options) as handler, kmock.Server(handler) as server:
                self.kmock, self.url = handler, str(server.url).rstrip("/")
                self._ready.set()
                await self._stop.wait()
                handler.store.close()  # ends every open watch, so the HTTP server can shut down
                await asyncio.sleep(0)
        except BaseException as e:  # report start failures to the waiting thread
            self._error = e
            self._ready.set()
            raise

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run fn in the server's loop (e.g. `server.call(server.kmock.store.compact)`) and return its result."""
        assert self._loop is not None

        async def run() -> Any:
            return fn()
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)
