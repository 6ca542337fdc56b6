"""Requests the API server throttles (429 with Retry-After) are sent again, whatever the verb; other failures are
not retried. The operator's own status PATCHes used to fail (and crash the daemon) on the first 429 of a start
with 1,000 resources."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import urllib3

from hivecat.k8s import throttled_retries


class Server(ThreadingHTTPServer):
    answers: list[int]
    seen: list[tuple[str, float]]


class Handler(BaseHTTPRequestHandler):
    server: Server

    def do_PATCH(self) -> None:  # noqa: N802 - http.server's naming
        self.server.seen.append(("PATCH", time.monotonic()))
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        code = self.server.answers.pop(0) if self.server.answers else 200
        self.send_response(code)
        if code == 429:
            self.send_header("Retry-After", "1")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    found = Server(("127.0.0.1", 0), Handler)
    found.answers, found.seen = [], []
    thread = threading.Thread(target=found.serve_forever, daemon=True)
    thread.start()
    yield found
    found.shutdown()
    found.server_close()


def patch(server: Server) -> int:
    pool = urllib3.PoolManager(retries=throttled_retries())
    return pool.request("PATCH", f"http://127.0.0.1:{server.server_address[1]}/status", body=b"{}").status


def test_a_throttled_patch_is_sent_again_after_retry_after(server: Server) -> None:
    server.answers = [429, 429]
    assert patch(server) == 200
    assert len(server.seen) == 3
    assert server.seen[1][1] - server.seen[0][1] >= 0.9  # the server's Retry-After, not at once


def test_other_failures_are_not_retried(server: Server) -> None:
    server.answers = [500, 409]
    assert patch(server) == 500
    assert len(server.seen) == 1


def test_throttling_that_lasts_ends_in_the_servers_answer(server: Server) -> None:
    server.answers = [429] * 10
    assert patch(server) == 429  # the caller sees the 429 (ApiException), after the bounded retries
    assert len(server.seen) == throttled_retries().total + 1
