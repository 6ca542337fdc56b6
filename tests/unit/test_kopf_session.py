"""kopf's session (handlers/session.py): at most `limit` requests in flight besides watches, so a burst of
patches reuses a few connections rather than opening one each; watches, however many, never take a permit.
A real aiohttp server on a loopback port counts what arrives at once."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

from hivecat.handlers.session import bounded_requests

LIMIT = 4


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


def test_requests_are_bounded_and_watches_are_not() -> None:
    async def scenario() -> tuple[int, int, set[int]]:
        in_flight, peak, release = [0], [0], asyncio.Event()
        peers: set[int] = set()

        async def patch(request: web.Request) -> web.Response:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
            peers.add(request.transport.get_extra_info("peername")[1])  # type: ignore[union-attr]
            await asyncio.sleep(0.01)
            in_flight[0] -= 1
            return web.json_response({})

        async def watch(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse()
            await response.prepare(request)
            await release.wait()  # a stream that stays open while the patches run
            return response

        app = web.Application()
        app.router.add_patch("/x", patch)
        app.router.add_get("/w", watch)
        runner, url = await serve(app)
        try:
            async with aiohttp.ClientSession(trace_configs=[bounded_requests(LIMIT)]) as session:
                async def streamed() -> None:
                    async with session.get(f"{url}/w", params={"watch": "true"}) as response:
                        await response.read()
                watches = [asyncio.create_task(streamed()) for _ in range(LIMIT * 2)]  # more than the permits

                async def patched() -> None:
                    async with session.patch(f"{url}/x") as response:
                        await response.read()
                await asyncio.wait_for(asyncio.gather(*(patched() for _ in range(100))), 60)
                release.set()
                await asyncio.gather(*watches)
                return peak[0], len(peers), peers
        finally:
            await runner.cleanup()

    peak, connections, _ = asyncio.run(scenario())
    assert 1 <= peak <= LIMIT  # the watches, holding more connections than there are permits, blocked nothing
    assert connections <= 2 * LIMIT  # kept and reused: a permit is returned as the headers arrive


def test_a_failed_request_returns_its_permit() -> None:
    async def scenario() -> None:
        async with aiohttp.ClientSession(trace_configs=[bounded_requests(1)]) as session:
            for _ in range(3):  # with the one permit kept by a failure, the second would wait for ever
                try:
                    await asyncio.wait_for(session.get("http://127.0.0.1:9/refused"), 10)
                except aiohttp.ClientConnectionError:
                    pass
    asyncio.run(scenario())
