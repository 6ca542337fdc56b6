"""Daemons sleep until something that concerns them happens, or until their next time-based step is due.

Each resource's daemon used to wake every half second to look at its memo and the clock: at 1,000 resources,
2,000 wake-ups a second and a quarter of the event loop's time. Now a daemon sleeps on its own asyncio.Event
with a timeout (when its next step is due, bounded), and whatever changes its inputs wakes it: an event of the
resource itself (kopf has updated the daemon's live body by then), its spec handler's memo, a copy Job's end,
a CatalogPolicy, a ClusterStorage of the same catalog. `wake` may be called from any thread (kopf runs
synchronous handlers in its executor)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import kopf

Key = tuple[str, str, str]  # kind, namespace, name

# (kind, namespace) → name → its daemon's event: a wake of one namespace's daemons looks at those only, never
# at every resource the operator serves (a ClusterStorage's event wakes its catalog's others: at 1,000
# resources, scanning them all on each event was a third of a second of the event loop's start).
_events: dict[tuple[str, str], dict[str, asyncio.Event]] = {}
_loop: asyncio.AbstractEventLoop | None = None


class Sleeper:
    """One daemon's sleeps: `async with Sleeper(key, stopped) as sleeper: ... await sleeper.sleep(seconds)`.
    The daemon's stop wakes it too, so it ends at once rather than at its next timeout."""

    def __init__(self, key: Key, stopped: kopf.DaemonStopped) -> None:
        self.key, self.stopped = key, stopped
        self.event = asyncio.Event()
        self._stop: asyncio.Future[Any] | None = None

    async def __aenter__(self) -> Sleeper:
        global _loop
        _loop = asyncio.get_running_loop()
        kind, namespace, name = self.key
        _events.setdefault((kind, namespace), {})[name] = self.event
        self._stop = asyncio.ensure_future(self.stopped.wait())
        self._stop.add_done_callback(lambda _: self.event.set())
        return self

    async def __aexit__(self, *_: object) -> None:
        kind, namespace, name = self.key
        named = _events.get((kind, namespace), {})
        if named.get(name) is self.event:
            del named[name]
            if not named:
                del _events[(kind, namespace)]
        if self._stop is not None and not self._stop.done():
            self._stop.cancel()

    async def sleep(self, seconds: float) -> None:
        """Until woken or `seconds` passed; a wake that came while the daemon worked ends the next sleep at once."""
        if not self.event.is_set() and seconds > 0:
            try:
                await asyncio.wait_for(self.event.wait(), seconds)
            except TimeoutError:
                pass
        self.event.clear()


def wake(kind: str, namespace: str, name: str) -> None:
    """Wake that resource's daemon (none running: nothing happens). Any thread."""
    event = _events.get((kind, namespace), {}).get(name)
    if event is not None:
        _set(event)


def wake_namespace(kind: str, namespace: str, where: Callable[[str], bool] = lambda _: True) -> None:
    """Wake the daemons of `kind` in `namespace` whose name `where` accepts. Any thread."""
    for name, event in list(_events.get((kind, namespace), {}).items()):
        if where(name):
            _set(event)


def names(kind: str, namespace: str) -> list[str]:
    """The resources of `kind` in `namespace` whose daemons run."""
    return list(_events.get((kind, namespace), {}))


def wake_kind(kind: str) -> None:
    """Wake every daemon of `kind` (what a CatalogPolicy grants may have changed anywhere). Any thread."""
    for (each, _), named in list(_events.items()):
        if each == kind:
            for event in list(named.values()):
                _set(event)


def _set(event: asyncio.Event) -> None:
    loop = _loop
    if loop is None or loop.is_closed():
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        event.set()
    else:
        loop.call_soon_threadsafe(event.set)
