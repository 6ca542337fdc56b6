"""AWS clients for the whole process. botocore reads each service's model (several MB of JSON) per Session; a
Session per client, as boto3 advises for threads, made every pass of every resource spend most of its CPU
there (issue 27: 44% of the operator's samples at 1,000 resources). Here all Sessions share one loader, so
each model is read once, and a client for the same service, endpoint, settings and credentials is made once
and shared: botocore clients are thread-safe.

Credentials key the cache only through a SHA-256 of them, so different keys never share a client and a rotated
Secret gets a new one; the least recently used clients beyond MAX_CLIENTS are dropped."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

MAX_CLIENTS = 64

_lock = threading.Lock()
_clients: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_loader: Any = None


@dataclass(frozen=True)
class ClientSettings:
    """How a client waits and retries. `attempts`: in all, the first included (None: botocore's default);
    `timeout`: seconds to connect and to read (None: botocore's 60 s)."""

    attempts: int | None = None
    timeout: float | None = None
    path_style: bool = False  # S3 addressing for endpoints other than AWS's (MinIO, moto)
    connections: int | None = None  # kept open per client (None: botocore's 10)


def client(service: str, region: str | None, endpoint: str | None = None,
           credentials: tuple[str | None, ...] | None = None, settings: ClientSettings = ClientSettings()) -> Any:
    """A botocore client of `service`. `credentials`: (access key, secret key[, session token]); None or empty
    keys: boto3's usual chain (environment, web identity for IRSA, instance role), refreshed by botocore."""
    keys = tuple(credentials or ()) + (None, None, None)
    access, secret, token = (k or None for k in keys[:3])
    fingerprint = hashlib.sha256("\0".join(k or "" for k in (access, secret, token)).encode()).hexdigest()
    key = (service, region, endpoint or None, fingerprint, settings)
    with _lock:
        found = _clients.get(key)
        if found is not None:
            _clients.move_to_end(key)
            return found
    made = _session().create_client(service, region_name=region, endpoint_url=endpoint or None,
                                    config=_config(settings), aws_access_key_id=access,
                                    aws_secret_access_key=secret, aws_session_token=token)
    with _lock:
        made = _clients.setdefault(key, made)  # a thread that made the same one first wins
        _clients.move_to_end(key)
        while len(_clients) > MAX_CLIENTS:
            _clients.popitem(last=False)
    return made


def forget() -> None:
    """Drop every shared client (tests; nothing else needs to)."""
    with _lock:
        _clients.clear()


def _config(settings: ClientSettings) -> Any:
    from botocore.config import Config

    options: dict[str, Any] = {}
    if settings.attempts is not None:
        options["retries"] = {"mode": "standard", "total_max_attempts": max(1, settings.attempts)}
    if settings.timeout is not None:
        options.update(connect_timeout=settings.timeout, read_timeout=settings.timeout)
    if settings.path_style:
        options["s3"] = {"addressing_style": "path"}
    if settings.connections is not None:
        options["max_pool_connections"] = settings.connections
    return Config(**options)


def _session() -> Any:
    """A botocore Session of its own (a shared one is not for threads) over the shared loader. botocore, not
    boto3: boto3's Session appends its data path to the loader each time, and hivecat uses no boto3 extra."""
    import botocore.session

    global _loader
    session = botocore.session.Session()
    with _lock:
        if _loader is None:
            _loader = session.get_component("data_loader")
        loader = _loader
    session.register_component("data_loader", loader)
    return session
