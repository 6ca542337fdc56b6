"""Where blocking passes run: a thread pool per kind, bounded (the Helm value concurrency.workersPerKind), so
that one kind's slow passes -- a catalog that takes its time to answer, a long drift scan -- never hold another
kind's, and the event loop's own default pool is left to kopf. No pass waits for a copy (replication/launch),
so a pass holds its thread only while it works. How busy each pool is, and how many passes wait for it, are
metrics (hivecat_workers_busy, hivecat_work_waiting).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from hivecat import metrics
from hivecat.config import config
from hivecat.kerberos.store import KeytabStore
from hivecat.replication.launch import LocalRuns

T = TypeVar("T")
_pools: dict[str, ThreadPoolExecutor] = {}
_waiting: dict[str, int] = {}
_busy: dict[str, int] = {}
_lock = threading.Lock()


def _pool(kind: str) -> ThreadPoolExecutor:
    if kind not in _pools:
        _pools[kind] = ThreadPoolExecutor(config().workers, thread_name_prefix=f"hivecat-{kind}")
    return _pools[kind]


async def run(kind: str, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` on `kind`'s pool; the event loop goes on meanwhile."""
    began = False
    _count(metrics.WORK_WAITING, _waiting, kind, +1)

    def counted() -> T:
        nonlocal began
        began = True
        _count(metrics.WORK_WAITING, _waiting, kind, -1)
        _count(metrics.WORKERS_BUSY, _busy, kind, +1)
        try:
            return work(*args)
        finally:
            _count(metrics.WORKERS_BUSY, _busy, kind, -1)

    try:
        # in the handler's context, as asyncio.to_thread runs it: kopf.event() reads kopf's settings from it
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(_pool(kind), context.run, counted)
    finally:
        if not began:  # cancelled before a thread took it
            _count(metrics.WORK_WAITING, _waiting, kind, -1)


def _count(gauge: Any, counts: dict[str, int], kind: str, step: int) -> None:
    with _lock:
        counts[kind] = counts.get(kind, 0) + step
        gauge.labels(kind).set(counts[kind])


@functools.cache
def local_runs() -> LocalRuns:
    """The operator's Local copy processes (at most the Helm value concurrency.localCopies at once)."""
    return LocalRuns(config().local_copies)


@functools.cache
def keytabs() -> KeytabStore:
    """The namespaces' keytabs, each in a file of the operator's own (kerberos/store.py)."""
    return KeytabStore(config().keytab_dir or config().state_dir / "keytabs")


def shutdown() -> None:
    """The operator stops: its Local copies with it (the next start runs them again), then the pools."""
    local_runs().cancel()
    for pool in _pools.values():
        pool.shutdown(wait=False, cancel_futures=True)
    _pools.clear()
