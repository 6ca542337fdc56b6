"""kopf's HTTP session to the API server, with at most API_REQUESTS requests in flight besides the watches.

kopf's own session has no connection limit, and after a start it patches every resource at once: at 1,000
resources it opened ~1,100 TLS connections, one per concurrent request, each handshake on the event loop and
each holding its buffers (a hundred MiB at the peak). Here the credentials are kopf's own (`login_via_client`,
what kopf would use), and the same session is bounded: a request waits for one of API_REQUESTS permits, so the
connections kept stay near that number and are reused. Watches are long-lived streams, one per kind and
namespace; they are never counted, so no number of namespaces can exhaust the permits.
"""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any, Final

import aiohttp
import kopf

API_REQUESTS: Final = 32  # the API server answers in milliseconds: more in flight only add connections


def bounded_requests(limit: int) -> aiohttp.TraceConfig:
    """A trace that holds each request other than a watch to one of `limit` permits, from its start until its
    response headers arrive or it fails (aiohttp sends one of the two to every trace that saw the start)."""
    permits = asyncio.Semaphore(limit)

    async def start(_: aiohttp.ClientSession, context: SimpleNamespace,
                    params: aiohttp.TraceRequestStartParams) -> None:
        if params.url.query.get("watch") != "true":
            await permits.acquire()  # cancelled while waiting: nothing held, and no end comes
            context.held = True

    async def end(_: aiohttp.ClientSession, context: SimpleNamespace, __: Any) -> None:
        if getattr(context, "held", False):
            context.held = False
            permits.release()

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(start)
    trace.on_request_end.append(end)
    trace.on_request_exception.append(end)
    return trace


@kopf.on.login()
async def login(logger: logging.Logger, **kwargs: Any) -> kopf.AiohttpSession | None:
    info = kopf.login_via_client(logger=logger, **kwargs)
    if info is None:
        return None
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, ssl=info.as_ssl_context()),  # the permits bound it, not a pool
        headers=info.as_http_headers(), proxy=info.proxy_url, trust_env=info.trust_env,
        trace_configs=[bounded_requests(API_REQUESTS)])
    return kopf.AiohttpSession(aiohttp_session=session, server=info.server, priority=info.priority,
                               default_namespace=info.default_namespace, expiration=info.expiration)
