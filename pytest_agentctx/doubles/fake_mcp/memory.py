"""The mcp SDK's in-memory streams connected to a :class:`FakeMcp` (the SDK is imported
here, on first use)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

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
                for reply in await fake.answer(message):
                    await to_client.send(SessionMessage(JSONRPCMessage.model_validate(reply)))

    async with anyio.create_task_group() as tasks, from_server, to_server:
        tasks.start_soon(serve)
        try:
            yield from_server, to_server
        finally:
            tasks.cancel_scope.cancel()
