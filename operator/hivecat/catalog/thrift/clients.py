"""A bounded pool of Hive Metastore Thrift connections that threads share call by call.

An hmsclient client is one socket that carries one request and its answer at a time: two threads calling
through one client would mix their messages. The pool lends each call a client no other thread is using:
an idle one, else a new one (opened lazily, on the same host and port) while fewer than `size` are open,
else the next one handed back. The metastore keeps no session state that hivecat relies on, so which
connection serves a call does not matter.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TException
from thrift.transport.TTransport import TTransportException


def _answered(error: BaseException) -> bool:
    """Whether a failed call still read its whole answer, so the connection can carry the next call: the
    metastore's own exceptions (NoSuchObjectException, MetaException, ...) and TApplicationException are
    answers; a transport or protocol error, or an interrupt, may leave half a message on the socket."""
    return isinstance(error, TException) and not isinstance(error, (TTransportException, TProtocolException))


class ClientPool:
    """Any client method, called on the pool, runs on a lent client: `pool.get_table(db, name)`.

    The first client is opened at once, so an unreachable metastore fails when the pool is made.
    """

    def __init__(self, open_client: Callable[[], Any], size: int):
        if size < 1:
            raise ValueError(f"a client pool needs at least 1 client, not {size}")
        self._open_client = open_client
        self._size = size
        self._lock = threading.Condition()  # guards the lists below; notified when a client or a slot frees up
        self._idle: list[Any] = []
        self._clients: list[Any] = []  # every open client, idle or lent
        self._opening = 0
        self._give_back(self._take())

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lent() as client:
                return getattr(client, method)(*args, **kwargs)
        return call

    def close(self) -> None:
        """Close every client (the pool is not used after)."""
        with self._lock:
            clients, self._clients, self._idle = self._clients, [], []
        for client in clients:
            _close_quietly(client)

    @contextmanager
    def _lent(self) -> Iterator[Any]:
        client = self._take()
        try:
            yield client
        except BaseException as error:
            if _answered(error):
                self._give_back(client)
            else:
                self._drop(client)
            raise
        self._give_back(client)

    def _take(self) -> Any:
        with self._lock:
            while not self._idle and len(self._clients) + self._opening >= self._size:
                self._lock.wait()
            if self._idle:
                return self._idle.pop()
            self._opening += 1
        client = None
        try:
            client = self._open_client()
        finally:
            with self._lock:
                self._opening -= 1
                if client is None:
                    self._lock.notify()  # the slot is free again
                else:
                    self._clients.append(client)
        return client

    def _give_back(self, client: Any) -> None:
        with self._lock:
            if client in self._clients:  # not closed meanwhile
                self._idle.append(client)
                self._lock.notify()

    def _drop(self, client: Any) -> None:
        with self._lock:
            if client in self._clients:
                self._clients.remove(client)
            self._lock.notify()
        _close_quietly(client)


def _close_quietly(client: Any) -> None:
    with suppress(Exception):  # closing a broken socket may fail again; it is being discarded either way
        client.close()
