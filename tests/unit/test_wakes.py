"""Daemons sleep until woken (handlers/wakes.py): a wake from a handler's thread ends the sleep at once, a wake
while the daemon works ends its next sleep, the daemon's stop ends it, and nothing else does."""

from __future__ import annotations

import asyncio
import threading
import time

from hivecat.handlers import wakes

KEY = ("TableReplica", "team-a", "sales")


class Stopped:
    """What the daemon needs of kopf's DaemonStopped: an awaitable wait()."""

    def __init__(self) -> None:
        self.flag = asyncio.Event()

    async def wait(self) -> None:
        await self.flag.wait()


async def _slept(sleeper: wakes.Sleeper, seconds: float) -> float:
    start = time.monotonic()
    await sleeper.sleep(seconds)
    return time.monotonic() - start


def test_a_wake_from_another_thread_ends_the_sleep() -> None:
    async def scenario() -> tuple[float, float, float]:
        async with wakes.Sleeper(KEY, Stopped()) as sleeper:  # type: ignore[arg-type]
            untouched = await _slept(sleeper, 0.2)
            threading.Timer(0.1, wakes.wake, KEY).start()
            woken = await _slept(sleeper, 30)
            wakes.wake("TableReplica", "team-b", "sales")  # another resource's wake
            other = await _slept(sleeper, 0.2)
        return untouched, woken, other
    untouched, woken, other = asyncio.run(scenario())
    assert untouched >= 0.19 and other >= 0.19
    assert woken < 5


def test_a_wake_while_working_ends_the_next_sleep_and_only_that_one() -> None:
    async def scenario() -> tuple[float, float]:
        async with wakes.Sleeper(KEY, Stopped()) as sleeper:  # type: ignore[arg-type]
            wakes.wake_namespace("TableReplica", "team-a", lambda name: name == KEY[2])
            first = await _slept(sleeper, 30)
            second = await _slept(sleeper, 0.2)
        return first, second
    first, second = asyncio.run(scenario())
    assert first < 1 and second >= 0.19


def test_the_daemons_stop_ends_the_sleep_and_it_leaves_no_trace() -> None:
    async def scenario() -> float:
        stopped = Stopped()
        async with wakes.Sleeper(KEY, stopped) as sleeper:  # type: ignore[arg-type]
            asyncio.get_running_loop().call_later(0.1, stopped.flag.set)
            return await _slept(sleeper, 30)
    assert asyncio.run(scenario()) < 5
    assert (KEY[0], KEY[1]) not in wakes._events
    wakes.wake(*KEY)  # nobody sleeps: nothing happens


def test_a_namespaces_wake_reaches_only_that_namespace_and_a_kinds_wake_reaches_all() -> None:
    async def scenario() -> tuple[float, float, float]:
        async with wakes.Sleeper(KEY, Stopped()) as sleeper:  # type: ignore[arg-type]
            wakes.wake_namespace("TableReplica", "team-b")  # another namespace's daemons
            wakes.wake_namespace("ClusterStorage", "team-a")  # another kind's
            wakes.wake_namespace("TableReplica", "team-a", lambda name: name != KEY[2])  # another name
            untouched = await _slept(sleeper, 0.2)
            assert wakes.names("TableReplica", "team-a") == [KEY[2]] and wakes.names("TableReplica", "team-b") == []
            threading.Timer(0.1, wakes.wake_kind, ("TableReplica",)).start()
            by_kind = await _slept(sleeper, 30)
            threading.Timer(0.1, wakes.wake_namespace, ("TableReplica", "team-a")).start()
            by_namespace = await _slept(sleeper, 30)
        return untouched, by_kind, by_namespace
    untouched, by_kind, by_namespace = asyncio.run(scenario())
    assert untouched >= 0.19
    assert by_kind < 5 and by_namespace < 5
    assert not wakes._events  # the last sleeper left: no empty namespace stays behind
