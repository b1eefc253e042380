"""The mcp SDK's in-memory streams connected to a :class:`FakeMcp` (the SDK is imported
here, on first use).

Each client message is also shown to the transport's witnesses (the exchange log of a
cassette or of ``agent_context``) as a ``POST mcp+stdio://<label>/`` answered by another
tool, as the stdio seam shows a local server's: the test's context sees the exchange, and
no cassette records it.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import AsyncIterable, AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx2

from pytest_agentctx.traffic import scopes
from pytest_agentctx.traffic.mcp.wire import NDJSON, TRANSPORT_HEADER
from pytest_agentctx.traffic.respx_routes import RespxRoute
from pytest_agentctx.traffic.transport import WireRequest, WireResponse, dispatch_async

if TYPE_CHECKING:
    from pytest_agentctx.doubles.fake_mcp.server import FakeMcp


@contextlib.asynccontextmanager
async def connected_streams(fake: FakeMcp) -> AsyncIterator[tuple[Any, Any]]:
    """The client's ``(read, write)`` streams, each client message answered by
    :meth:`FakeMcp.answer` in the order sent, until the context ends."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCMessage

    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)

    async def serve() -> None:
        async with from_client, to_client:
            async for item in from_client:
                if isinstance(item, Exception):
                    continue
                message = item.message.model_dump(by_alias=True, mode="json", exclude_none=True)
                for reply in await answered(fake, message):
                    await to_client.send(SessionMessage(JSONRPCMessage.model_validate(reply)))

    async with anyio.create_task_group() as tasks, from_server, to_server:
        tasks.start_soon(serve)
        try:
            yield from_server, to_server
        finally:
            tasks.cancel_scope.cancel()


async def answered(fake: FakeMcp, message: dict[str, Any]) -> list[dict[str, Any]]:
    """:meth:`FakeMcp.answer`, the exchange offered to the witnesses of the test's scope."""
    offered = scopes.offered()
    if not (isinstance(offered, tuple) and any(member.witness for member in offered)):
        return await fake.answer(message)
    replies: list[dict[str, Any]] = []

    async def send(_: WireRequest) -> WireResponse:
        replies.extend(await fake.answer(message))
        content = b"".join(json.dumps(reply).encode() + b"\n" for reply in replies)
        return httpx2.Response(200, headers=[("content-type", NDJSON)], content=content)

    request = httpx2.Request(
        "POST",
        fake.stdio_url,
        headers=[("content-type", "application/json"), (TRANSPORT_HEADER, "memory")],
        content=json.dumps(message).encode(),
    )
    response = await dispatch_async(request, send, route=RespxRoute(None, None, None))
    # read to its end and closed: a witness keeps its copy then
    stream = response.stream
    if isinstance(stream, AsyncIterable):
        async for _ in stream:
            pass
    aclose = getattr(response, "aclose", None)
    if aclose is not None:
        await aclose()
    return replies
