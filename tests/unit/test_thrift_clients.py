"""The Thrift catalog's connection pool (issue 17): every call runs on a client no other thread is using, at
most `size` clients are open (the first at once, the others when needed), a client whose call broke off
mid-message is closed and replaced while one that got an answer (an HMS exception) is kept; and the
`connections` bound is checked before anything is contacted."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hmsclient.genthrift.hive_metastore.ttypes import NoSuchObjectException
from thrift.transport.TTransport import TTransportException

from hivecat.catalog.thrift import ThriftCatalog
from hivecat.catalog.thrift.backend import ThriftBackend
from hivecat.catalog.thrift.clients import ClientPool


class FakeClient:
    """Fails the test if two threads ever use it at once."""

    def __init__(self, number: int):
        self.number = number
        self.users = 0
        self.closed = False
        self.lock = threading.Lock()

    def get_table(self, database: str, name: str, error: Exception | None = None) -> tuple[str, str, int]:
        with self.lock:
            self.users += 1
            assert self.users == 1, "two threads on one client"
        try:
            time.sleep(0.002)
            if error is not None:
                raise error
            return database, name, self.number
        finally:
            with self.lock:
                self.users -= 1

    def close(self) -> None:
        self.closed = True


class Opener:
    def __init__(self) -> None:
        self.clients: list[FakeClient] = []

    def __call__(self) -> FakeClient:
        client = FakeClient(len(self.clients))
        self.clients.append(client)
        return client


def test_calls_from_many_threads_share_at_most_size_clients_one_call_each() -> None:
    opener = Opener()
    pool = ClientPool(opener, 3)
    assert len(opener.clients) == 1  # the first at once, the others when needed
    with ThreadPoolExecutor(8) as threads:
        answers = list(threads.map(lambda n: pool.get_table("db", f"t{n}"), range(200)))
    assert [answer[:2] for answer in answers] == [("db", f"t{n}") for n in range(200)]
    assert len(opener.clients) == 3 and {answer[2] for answer in answers} == {0, 1, 2}


def test_an_answered_error_keeps_the_client_a_broken_one_is_replaced() -> None:
    opener = Opener()
    pool = ClientPool(opener, 2)
    with pytest.raises(NoSuchObjectException):
        pool.get_table("db", "gone", NoSuchObjectException("no such table"))
    assert pool.get_table("db", "t")[2] == 0 and not opener.clients[0].closed
    with pytest.raises(TTransportException):
        pool.get_table("db", "t", TTransportException(message="connection reset"))
    assert opener.clients[0].closed
    assert pool.get_table("db", "t")[2] == 1  # a fresh connection in its place


def test_close_closes_every_client() -> None:
    opener = Opener()
    pool = ClientPool(opener, 4)
    with ThreadPoolExecutor(4) as threads:
        list(threads.map(lambda n: pool.get_table("db", "t"), range(40)))
    pool.close()
    assert opener.clients and all(client.closed for client in opener.clients)


def test_a_failed_open_frees_its_slot() -> None:
    attempts = []

    def flaky() -> FakeClient:
        attempts.append(1)
        if len(attempts) == 2:
            raise TTransportException(message="refused")
        return FakeClient(len(attempts))
    pool = ClientPool(flaky, 2)
    first = pool._take()  # keep the first busy, so the next call must open one
    with pytest.raises(TTransportException):
        pool.get_table("db", "t")
    assert pool.get_table("db", "t")[2] == 3
    pool._give_back(first)


def test_an_unreachable_metastore_fails_when_the_pool_is_made() -> None:
    def refused() -> FakeClient:
        raise TTransportException(message="Could not connect")
    with pytest.raises(TTransportException):
        ClientPool(refused, 4)


@pytest.mark.parametrize("connections", [0, 33])
def test_connections_outside_1_to_32_are_refused_before_connecting(connections: int) -> None:
    with pytest.raises(ValueError, match=rf"1 to 32 metastore connections, not {connections}"):
        ThriftCatalog("thrift://127.0.0.1:1", journal_url="sqlite://", connections=connections)


def test_parallel_writes_need_a_pool() -> None:
    with pytest.raises(ValueError, match="needs a ClientPool"):
        ThriftBackend(FakeClient(0), "thrift://x:9083", parallelism=2)
    assert ThriftBackend(ClientPool(Opener(), 2), "thrift://x:9083", parallelism=2).parallelism == 2
