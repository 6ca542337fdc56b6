"""Staging directories, and the leases that say whose they are.

A run stages the units of one parent directory in `<parent>/.hivecat-staging-<run id>/<unit name>`.
Runs into sibling units (two partitions of one table) share the parent and see each other's staging,
so a name says nothing about whether its run still works. Each run holds a lease on each of its
staging roots: LEASE_NAME inside the root names the owner (run id, host, process and the process's
start time) and when the lease expires, and the run renews it every RENEW_SECONDS while it works.
Another run removes a staging root only when its owner is dead: the lease has expired, or the owner
ran on this host, in this process namespace, and its process is gone (a pid reused by another process
has another start time). A root without a readable lease (left by an older hivecat, or whose lease is
being written) counts as dead once nothing in it has changed for a whole lease term.

On object stores the lease is an object, first written at the first renewal: most runs end before,
one request fewer per staging root, and until then the staged objects' own timestamps show the run
alive. Clocks of different hosts are trusted to within a fraction of LEASE_SECONDS.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from pyarrow import fs as pafs

from hivecat.copy.listing import STAGING_PREFIX
from hivecat.copy.storage import Location, Storage

LEASE_NAME = ".hivecat-lease.json"
LEASE_SECONDS = 600.0   # a lease not renewed for this long is dead
RENEW_SECONDS = 60.0
_MAX_LEASE_BYTES = 4096


@dataclass(frozen=True)
class Lease:
    run_id: str
    host: str
    pid_namespace: str | None  # /proc/self/ns/pid: pids of other namespaces mean nothing here
    pid: int
    started: int | None        # the process's start in clock ticks after boot (Linux /proc)
    expires_at: float          # seconds since the epoch, by the owner's clock

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Lease | None:
        """The lease, or None for anything that is not one of ours (the caller then goes by age)."""
        try:
            fields = json.loads(data)
            lease = cls(**fields)
        except (ValueError, TypeError, RecursionError):
            return None
        typed = (isinstance(lease.run_id, str) and isinstance(lease.host, str) and type(lease.pid) is int
                 and type(lease.expires_at) in (int, float) and math.isfinite(lease.expires_at)
                 and isinstance(lease.pid_namespace, (str, type(None)))
                 and (lease.started is None or type(lease.started) is int))
        return lease if typed else None


def staging_root(parent: Location, run_id: str) -> Location:
    return parent.child(f"{STAGING_PREFIX}{run_id}")


def this_process(run_id: str, seconds: float = LEASE_SECONDS) -> Lease:
    pid = os.getpid()
    return Lease(run_id, socket.gethostname(), _pid_namespace(), pid, _process_start(pid),
                 time.time() + seconds)


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _process_start(pid: int) -> int | None:
    """The start time of a live process, None when it is gone (or a zombie); raises OSError when this
    system cannot tell (no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if not os.path.isdir("/proc/self"):
            raise
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name, in parentheses, may hold spaces
    return None if fields[0] in ("Z", "X") else int(fields[19])


def owner_is_gone(lease: Lease) -> bool:
    """True only when the owner's process is known to be gone: it ran here and no longer does."""
    if lease.host != socket.gethostname() or lease.pid_namespace != _pid_namespace():
        return False  # another host or container: only the lease's expiry tells
    try:
        started = _process_start(lease.pid)
    except OSError:  # no /proc: a signal 0 tells whether the pid exists
        try:
            os.kill(lease.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            pass
        return False
    return started is None or (lease.started is not None and started != lease.started)


def write_lease(storage: Storage, root: Location, lease: Lease) -> None:
    """Written in place: a reader that meets it half-written sees no lease, and a root changed just
    now, which is alive."""
    filesystem = storage.filesystem(root)
    if not root.is_object_store:  # object stores have no directories (a marker would be one more object)
        filesystem.create_dir(root.path, recursive=True)
    with filesystem.open_output_stream(root.child(LEASE_NAME).path) as out:
        out.write(lease.to_bytes())


def read_lease(filesystem: pafs.FileSystem, root: Location) -> Lease | None:
    try:
        with filesystem.open_input_stream(root.child(LEASE_NAME).path) as stream:
            return Lease.from_bytes(stream.read(_MAX_LEASE_BYTES))
    except OSError:  # missing, or not readable: the root goes by age
        return None


def _last_change(filesystem: pafs.FileSystem, root: Location) -> float:
    """Seconds since the epoch of the newest change in the root (0 when nothing tells)."""
    infos = [filesystem.get_file_info(root.path),
             *filesystem.get_file_info(pafs.FileSelector(root.path, recursive=True, allow_not_found=True))]
    return max((info.mtime_ns for info in infos if info.mtime_ns is not None), default=0) / 1e9


def is_dead(filesystem: pafs.FileSystem, root: Location, now: float | None = None) -> bool:
    now = time.time() if now is None else now
    lease = read_lease(filesystem, root)
    if lease is None:
        return now - _last_change(filesystem, root) > LEASE_SECONDS
    return lease.expires_at < now or owner_is_gone(lease)


def dead_staging(storage: Storage, parent: Location, own_run_id: str) -> list[Location]:
    """The staging roots beside our targets whose runs are dead (never our own)."""
    filesystem = storage.filesystem(parent)
    own = staging_root(parent, own_run_id).name
    roots = [parent.child(info.base_name)
             for info in filesystem.get_file_info(pafs.FileSelector(parent.path, allow_not_found=True))
             if info.type == pafs.FileType.Directory and info.base_name.startswith(STAGING_PREFIX)
             and info.base_name != own]
    return [root for root in roots if is_dead(filesystem, root)]


class LeaseKeeper:
    """Holds a run's leases on its staging roots while the run works: written on entry (object stores:
    at the first renewal), renewed every `renew` seconds until exit. A renewal that fails is retried at
    the next; the term covers several."""

    def __init__(self, storage: Storage, roots: Iterable[Location], run_id: str,
                 seconds: float = LEASE_SECONDS, renew: float = RENEW_SECONDS) -> None:
        self.storage, self.roots, self.run_id = storage, list(roots), run_id
        self.seconds, self.renew = seconds, renew
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="hivecat-lease", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._write(root for root in self.roots if not root.is_object_store)
        self._thread.start()
        return self

    def hold(self, roots: Iterable[Location]) -> None:
        """Hold these roots too from now on (a run that copies its units window by window finds them as it goes)."""
        roots = list(roots)
        self._write(root for root in roots if not root.is_object_store)
        self.roots = [*self.roots, *roots]  # a new list: the renewal thread may be iterating the old one

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()  # no renewal may land after the caller removes the roots

    def _keep(self) -> None:
        while not self._stop.wait(self.renew):
            self._write(self.roots)

    def _write(self, roots: Iterable[Location]) -> None:
        lease = this_process(self.run_id, self.seconds)
        for root in roots:
            try:
                write_lease(self.storage, root, lease)
            except OSError:
                pass
