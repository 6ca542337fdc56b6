"""One active operator among several replicas: a `coordination.k8s.io/v1` Lease in the operator's own
namespace, taken before kopf starts and renewed while it runs (HIVECAT_LEADER_LEASE names it; the chart
sets it).

A standby waits until the holder stops renewing: the lease is taken over only after its record (holder,
renew time, resourceVersion) has stayed unchanged for the lease's duration as measured on this process's own
clock, so clock skew between nodes cannot shorten it (client-go's leader election does the same). Every
write is a replace at the resourceVersion read, so two candidates never both win. The holder renews every
third of the duration; one that cannot renew within the duration exits at once (the pod restarts as a
standby) rather than act without the lease, and one that stops normally gives the lease up so a standby
takes over without waiting.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

LOG = logging.getLogger("hivecat.leader")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # the API's MicroTime


def identity() -> str:
    """This process among the replicas: the pod's name (the chart sets POD_NAME), else host and pid."""
    base = os.environ.get("POD_NAME") or socket.gethostname()
    return f"{base}_{os.getpid()}_{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class Record:
    holder: str | None
    resource_version: str
    renew_time: str | None


class LeaseStore:
    """The Lease object through the API server (the dynamic client, with MicroTime written as the API wants)."""

    def __init__(self, namespace: str, name: str) -> None:
        from hivecat import k8s

        self._api = k8s.resource("coordination.k8s.io/v1", "Lease")
        self.namespace, self.name = namespace, name

    def read(self) -> Record | None:
        from kubernetes.dynamic.exceptions import NotFoundError

        try:
            lease = self._api.get(name=self.name, namespace=self.namespace).to_dict()
        except NotFoundError:
            return None
        spec = lease.get("spec") or {}
        return Record(spec.get("holderIdentity") or None, lease["metadata"]["resourceVersion"], spec.get("renewTime"))

    def write(self, holder: str | None, seconds: int, previous: Record | None, transitions: bool) -> bool:
        """Create (previous None) or replace at previous's resourceVersion; False when someone else wrote first."""
        from kubernetes.dynamic.exceptions import ConflictError

        now = datetime.now(timezone.utc).strftime(TIME_FORMAT)
        spec: dict[str, Any] = {"holderIdentity": holder, "leaseDurationSeconds": seconds, "renewTime": now}
        if transitions:
            spec["acquireTime"] = now
        body: dict[str, Any] = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                "metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}
        try:
            if previous is None:
                self._api.create(body=body, namespace=self.namespace)
            else:
                current = self._api.get(name=self.name, namespace=self.namespace).to_dict()
                if current["metadata"]["resourceVersion"] != previous.resource_version:
                    return False
                kept = current.get("spec") or {}
                spec.setdefault("acquireTime", kept.get("acquireTime"))
                spec["leaseTransitions"] = int(kept.get("leaseTransitions") or 0) + (1 if transitions else 0)
                body["metadata"]["resourceVersion"] = previous.resource_version
                self._api.replace(body=body, namespace=self.namespace)
        except ConflictError:
            return False
        return True


class LeaderLease:
    def __init__(self, store: Any, me: str, seconds: int, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, lost: Callable[[], None] | None = None) -> None:
        self.store, self.me, self.seconds = store, me, seconds
        self.clock, self.sleep = clock, sleep
        self.lost = lost or _exit_now
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> None:
        """Block until this process holds the lease."""
        seen: Record | None = None
        seen_at = self.clock()
        announced = False
        while True:
            record = self.store.read()
            if record is None:
                if self.store.write(self.me, self.seconds, None, transitions=True):
                    break
                continue
            if record != seen:  # the holder renewed (or changed): its lease runs from now, on our clock
                seen, seen_at = record, self.clock()
            free = record.holder in (None, self.me) or self.clock() - seen_at >= self.seconds
            if free and self.store.write(self.me, self.seconds, record, transitions=record.holder != self.me):
                break
            if not announced:
                LOG.info("waiting for the leader lease %s/%s, held by %s", self.store.namespace, self.store.name,
                         record.holder)
                announced = True
            self.sleep(min(2.0, self.seconds / 3))
        LOG.info("holding the leader lease %s/%s as %s", self.store.namespace, self.store.name, self.me)

    def keep(self) -> None:
        """Renew in a thread until release(); call `lost` when the lease cannot be kept."""
        self._thread = threading.Thread(target=self._renew, name="leader-lease", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        renewed = self.clock()
        while not self._stop.wait(self.seconds / 3):
            try:
                record = self.store.read()
                if record is None or record.holder != self.me:
                    LOG.error("the leader lease was taken by %s: stopping", record.holder if record else "nobody")
                    self.lost()
                    return
                if self.store.write(self.me, self.seconds, record, transitions=False):
                    renewed = self.clock()
                    continue
            except Exception as error:  # noqa: BLE001 - an API error is one missed renewal, not the end yet
                LOG.warning("renewing the leader lease failed: %s", error)
            if self.clock() - renewed >= self.seconds:
                LOG.error("the leader lease was not renewed for %ss: stopping so another replica takes over",
                          self.seconds)
                self.lost()
                return

    def release(self) -> None:
        """Stop renewing and give the lease up (if still ours), so a standby takes over at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.seconds)
        try:
            record = self.store.read()
            if record is not None and record.holder == self.me:
                self.store.write(None, self.seconds, record, transitions=False)
        except Exception as error:  # noqa: BLE001 - the lease then simply expires
            LOG.warning("giving up the leader lease failed: %s", error)


def _exit_now() -> None:
    logging.shutdown()
    os._exit(1)  # never act without the lease: no cleanup that could still write
