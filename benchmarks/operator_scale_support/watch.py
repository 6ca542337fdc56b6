"""Timing resources from the benchmark's side: one watch per kind (every namespace, as the admin), and for each
resource the first moment (time.monotonic) it was seen with Ready=True, with each status.observedGeneration and
with each observedGeneration of its Ready condition. A watch the server ends is resumed from the last
resourceVersion; one that is too old (410 Gone) lists again."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import requests

Key = tuple[str, str, str]  # (plural, namespace, name)


class Watcher:
    def __init__(self, base_url: str, session_factory: Callable[[], requests.Session], plurals: tuple[str, ...],
                 group_path: str = "/apis/hivecatalog.io/v1alpha1") -> None:
        self.base_url, self.session_factory, self.plurals, self.group_path = (
            base_url, session_factory, plurals, group_path)
        self.cond = threading.Condition()
        self.first_ready: dict[Key, float] = {}
        self.observed: dict[Key, dict[int, float]] = {}     # status.observedGeneration -> first seen
        self.ready_observed: dict[Key, dict[int, float]] = {}  # Ready condition's observedGeneration -> first seen
        self.latest: dict[Key, dict[str, Any]] = {}         # metadata.generation, status of the last event
        self.events = 0
        self.restarts = 0
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self._responses: dict[str, requests.Response] = {}

    # --- recording ---------------------------------------------------------------------------------------------
    def _record(self, plural: str, obj: dict[str, Any], now: float) -> None:
        meta, status = obj.get("metadata") or {}, obj.get("status") or {}
        key = (plural, meta.get("namespace") or "", meta.get("name") or "")
        ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
        with self.cond:
            self.events += 1
            self.latest[key] = {"generation": meta.get("generation"), "status": status}
            observed = status.get("observedGeneration")
            if isinstance(observed, int):
                self.observed.setdefault(key, {}).setdefault(observed, now)
            if ready is not None:
                generation = ready.get("observedGeneration")
                if isinstance(generation, int):
                    self.ready_observed.setdefault(key, {}).setdefault(generation, now)
                if ready.get("status") == "True":
                    self.first_ready.setdefault(key, now)
            self.cond.notify_all()

    # --- the watches ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        """List every kind (recording what is there), then watch each from its list's resourceVersion."""
        for plural in self.plurals:
            version = self._list(plural)
            thread = threading.Thread(target=self._watch, args=(plural, version), daemon=True,
                                      name=f"watch-{plural}")
            self._threads.append(thread)
            thread.start()

    def _list(self, plural: str) -> str:
        response = self.session_factory().get(f"{self.base_url}{self.group_path}/{plural}", timeout=60)
        response.raise_for_status()
        found = response.json()
        now = time.monotonic()
        for item in found.get("items") or ():
            self._record(plural, item, now)
        return found["metadata"]["resourceVersion"]

    def _watch(self, plural: str, version: str) -> None:
        session = self.session_factory()
        while not self._stopped.is_set():
            try:
                response = session.get(f"{self.base_url}{self.group_path}/{plural}", stream=True, timeout=(10, 120),
                                       params={"watch": "true", "resourceVersion": version,
                                               "allowWatchBookmarks": "true", "timeoutSeconds": "90"})
                self._responses[plural] = response
                if response.status_code == 410:
                    version = self._list(plural)
                    continue
                response.raise_for_status()
                with response:
                    for line in response.iter_lines():
                        if self._stopped.is_set():
                            return
                        if not line:
                            continue
                        event = json.loads(line)
                        obj = event.get("object") or {}
                        if event.get("type") == "ERROR":
                            if obj.get("code") == 410:
                                version = self._list(plural)
                            break
                        version = (obj.get("metadata") or {}).get("resourceVersion") or version
                        if event.get("type") in ("ADDED", "MODIFIED"):
                            self._record(plural, obj, time.monotonic())
            except Exception:  # noqa: BLE001 - any broken stream (requests, urllib3, ssl) is resumed
                if self._stopped.is_set():
                    return
                self.restarts += 1
                time.sleep(0.5)

    def stop(self) -> None:
        """End the watches at once. Their sockets are shut down, so a read blocked in a watch thread returns now;
        the streams are not closed from here: closing a buffered stream that another thread is reading waits
        until that read ends (up to the watch's timeoutSeconds, with no event coming)."""
        self._stopped.set()
        for response in list(self._responses.values()):
            sock = getattr(getattr(response.raw, "_connection", None), "sock", None)
            if sock is None:
                continue
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's: an SSL shutdown would write
            except OSError:
                pass  # already closed
        for thread in self._threads:
            thread.join(timeout=5)

    # --- reading ----------------------------------------------------------------------------------------------------
    def wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait (under the watcher's lock) until predicate() is true; False after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 1.0))
        return True

    def observed_at(self, key: Key, generation: int) -> float | None:
        """When status.observedGeneration first showed `generation` or later (call under the lock or after)."""
        times = [t for g, t in (self.observed.get(key) or {}).items() if g >= generation]
        return min(times) if times else None

    def ready_observed_at(self, key: Key, generation: int) -> float | None:
        times = [t for g, t in (self.ready_observed.get(key) or {}).items() if g >= generation]
        return min(times) if times else None

    def ready_count(self, keys: set[Key] | None = None) -> int:
        with self.cond:
            return len(self.first_ready if keys is None else keys & set(self.first_ready))

    def generation(self, key: Key) -> int | None:
        with self.cond:
            return (self.latest.get(key) or {}).get("generation")

    def not_ready(self, keys: set[Key]) -> dict[Key, dict[str, Any]]:
        """The last status of each key never seen Ready=True."""
        with self.cond:
            return {k: (self.latest.get(k) or {}).get("status") or {} for k in keys if k not in self.first_ready}
