"""Shared AWS clients (hivecat/aws.py): one per service, endpoint, settings and credentials; service models read
once per process; no secret in what the cache keeps besides the client itself."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import botocore.loaders
import pytest

from hivecat import aws
from hivecat.catalog.glue.defaults import glue_client

ENDPOINT = "http://127.0.0.1:1"  # never reached: nothing here sends a request


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    aws.forget()
    yield
    aws.forget()


def test_one_client_per_service_endpoint_settings_and_keys() -> None:
    first = aws.client("glue", "eu-west-1", ENDPOINT, ("AKIA1", "secret-1"))
    assert aws.client("glue", "eu-west-1", ENDPOINT, ("AKIA1", "secret-1", None)) is first
    others = [aws.client("glue", "eu-west-1", ENDPOINT, ("AKIA1", "secret-2")),       # another secret: rotated
              aws.client("glue", "eu-west-1", ENDPOINT, ("AKIA1", "secret-1", "t")),  # a session token
              aws.client("glue", "eu-west-1", ENDPOINT),                              # boto3's chain
              aws.client("glue", "us-east-1", ENDPOINT, ("AKIA1", "secret-1")),
              aws.client("glue", "eu-west-1", None, ("AKIA1", "secret-1")),
              aws.client("glue", "eu-west-1", ENDPOINT, ("AKIA1", "secret-1"), aws.ClientSettings(attempts=1)),
              aws.client("sts", "eu-west-1", ENDPOINT, ("AKIA1", "secret-1"))]
    assert len({id(c) for c in [first, *others]}) == 8
    credentials = first._request_signer._credentials
    assert (credentials.access_key, credentials.secret_key) == ("AKIA1", "secret-1")
    assert others[0]._request_signer._credentials.secret_key == "secret-2"


def test_the_cache_keys_hold_no_secret() -> None:
    aws.client("glue", "eu-west-1", ENDPOINT, ("AKIA-key-id", "the-secret-key", "the-session-token"))
    text = repr(list(aws._clients))
    assert "the-secret-key" not in text and "the-session-token" not in text and "AKIA-key-id" not in text


def test_settings_reach_the_client() -> None:
    made = glue_client("eu-west-1", ENDPOINT, "k", "s", timeout=7, attempts=2)
    assert (made.meta.config.connect_timeout, made.meta.config.read_timeout) == (7, 7)
    assert made.meta.config.retries["total_max_attempts"] == 2
    s3 = aws.client("s3", "eu-west-1", ENDPOINT, settings=aws.ClientSettings(path_style=True))
    assert s3.meta.config.s3["addressing_style"] == "path"


def test_service_models_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old code made a boto3 Session per client, which read the service's JSON model again each time."""
    read: list[str] = []
    real = botocore.loaders.JSONFileLoader.load_file

    def counting(self: object, file_path: str) -> object:
        read.append(file_path)
        return real(self, file_path)
    monkeypatch.setattr(botocore.loaders.JSONFileLoader, "load_file", counting)
    monkeypatch.setattr(aws, "_loader", None)
    aws.client("glue", "eu-west-1", ENDPOINT, ("a", "1"))
    first = len(read)
    assert any("glue" in path for path in read)
    for n in range(5):
        aws.client("glue", "eu-west-1", ENDPOINT, ("a", f"secret-{n}"))
    assert len(read) == first, read[first:]


def test_least_recently_used_clients_go_beyond_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aws, "MAX_CLIENTS", 2)
    a = aws.client("sts", "eu-west-1", ENDPOINT, ("a", "1"))
    aws.client("sts", "eu-west-1", ENDPOINT, ("b", "1"))
    assert aws.client("sts", "eu-west-1", ENDPOINT, ("a", "1")) is a  # used: now the most recent
    aws.client("sts", "eu-west-1", ENDPOINT, ("c", "1"))
    assert len(aws._clients) == 2
    assert aws.client("sts", "eu-west-1", ENDPOINT, ("a", "1")) is a


def test_threads_asking_at_once_share_one_client() -> None:
    found: list[object] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        found.append(aws.client("glue", "eu-west-1", ENDPOINT, ("k", "s")))
    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(c) for c in found}) == 1
