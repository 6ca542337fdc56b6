"""Leader election over a Lease, against an in-memory store that enforces resourceVersions as the API server
does, and a fake clock: a free lease is taken at once; a renewed one never; an abandoned one after its
duration on the candidate's own clock; of two candidates only one wins; a holder that loses the lease or
cannot renew stops; a release hands over at once."""

from __future__ import annotations

import threading

import pytest

from hivecat.config import OperatorConfig
from hivecat.leader import LeaderLease, Record


class Store:
    namespace, name = "hivecat-system", "hivecat-leader"

    def __init__(self) -> None:
        self.record: Record | None = None
        self.version = 0
        self.failing = False
        self.lock = threading.Lock()

    def read(self) -> Record | None:
        if self.failing:
            raise OSError("the API server is unreachable")
        return self.record

    def write(self, holder, seconds, previous, transitions) -> bool:
        with self.lock:
            if self.failing:
                raise OSError("the API server is unreachable")
            if (previous is None) != (self.record is None) or (
                    previous is not None and previous.resource_version != self.record.resource_version):
                return False  # 409: somebody wrote first
            self.version += 1
            self.record = Record(holder, str(self.version), f"t{self.version}")
            return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def candidate(store: Store, me: str, clock: Clock, **kw) -> LeaderLease:
    return LeaderLease(store, me, 15, clock=clock, sleep=clock.sleep, **kw)


def test_a_free_lease_is_taken_at_once() -> None:
    store, clock = Store(), Clock()
    candidate(store, "a", clock).acquire()
    assert store.record.holder == "a" and clock.now == 0


def test_a_standby_waits_while_the_holder_renews_and_takes_over_after_the_duration() -> None:
    store, clock = Store(), Clock()
    candidate(store, "a", clock).acquire()

    def renewing_sleep(seconds: float) -> None:  # the holder renews while the standby sleeps, until t=40
        clock.now += seconds
        if clock.now < 40:
            store.write("a", 15, store.record, transitions=False)

    b = LeaderLease(store, "b", 15, clock=clock, sleep=renewing_sleep)
    b.acquire()
    assert store.record.holder == "b"
    assert 38 + 15 <= clock.now <= 38 + 15 + 2  # the last renewal seen at 38, then a whole duration on b's clock


def test_of_two_candidates_only_one_wins_a_race() -> None:
    store, clock = Store(), Clock()
    store.write("gone", 15, None, transitions=True)
    stale = store.record
    clock.now = 100  # both have watched the record unchanged for longer than the duration
    assert store.write("a", 15, stale, transitions=True)
    assert not store.write("b", 15, stale, transitions=True)  # b read the same version: its replace conflicts
    assert store.record.holder == "a"


def test_a_holder_whose_lease_is_taken_stops() -> None:
    store, clock = Store(), Clock()
    stopped = threading.Event()
    a = LeaderLease(store, "a", 1, lost=stopped.set)
    a.acquire()
    store.write("b", 1, store.record, transitions=True)
    a.keep()
    assert stopped.wait(5)


def test_a_holder_that_cannot_renew_for_the_duration_stops() -> None:
    store = Store()
    stopped = threading.Event()
    a = LeaderLease(store, "a", 1, lost=stopped.set)
    a.acquire()
    store.failing = True
    a.keep()
    assert stopped.wait(5)


def test_release_hands_the_lease_over_at_once() -> None:
    store, clock = Store(), Clock()
    a = LeaderLease(store, "a", 1, lost=lambda: pytest.fail("lost"))
    a.acquire()
    a.keep()
    a.release()
    assert store.record.holder is None
    candidate(store, "b", clock).acquire()
    assert store.record.holder == "b" and clock.now == 0


def test_the_lease_settings_come_from_the_environment() -> None:
    settings = OperatorConfig.from_environ({"HIVECAT_LEADER_LEASE": "hivecat-leader", "POD_NAMESPACE": "ops",
                                            "HIVECAT_LEADER_LEASE_SECONDS": "4"})
    assert (settings.leader_lease, settings.pod_namespace, settings.leader_lease_seconds) == ("hivecat-leader", "ops", 4)
    assert OperatorConfig.from_environ({}).leader_lease is None
    assert OperatorConfig.from_environ({}).leader_lease_seconds == 15
