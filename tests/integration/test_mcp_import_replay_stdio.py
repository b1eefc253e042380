"""A stdio session in mcp-cassette's format, imported, is replayed by the mcp SDK's own
stdio client: no process spawned, progress notifications delivered during the call, and a
server's sampling request answered by the client before the tool's result.

The session is the SDK's own traffic with a FastMCP server (captured between the two
streams of the in-memory transport), written as mcp-cassette writes a stdio recording;
``pytest-agentctx mcp import --server orders_server`` turns it into the cassette the test's
``python orders_server.py`` replays from.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import SamplingMessage, TextContent

from pytest_agentctx.cli.main import main
from pytest_agentctx.traffic.cassettes import Cassette

pytestmark = pytest.mark.integration

ORDER = {"order_id": "A-1", "status": "shipped"}


def _server() -> FastMCP:
    mcp = FastMCP("orders", log_level="WARNING")

    @mcp.tool()
    async def get_order(order_id: str, ctx: Context) -> dict[str, str]:  # type: ignore[type-arg]
        """An order, found in two steps."""
        await ctx.report_progress(1, 2)
        await ctx.report_progress(2, 2)
        return {"order_id": order_id, "status": "shipped"}

    @mcp.tool()
    async def summarise(order_id: str, ctx: Context) -> str:  # type: ignore[type-arg]
        """A summary the client's model writes."""
        asked = SamplingMessage(role="user", content=TextContent(type="text", text=order_id))
        reply = await ctx.session.create_message(messages=[asked], max_tokens=20)
        assert isinstance(reply.content, TextContent)
        return reply.content.text

    return mcp


async def _sampled(context: Any, params: Any) -> Any:
    from mcp.types import CreateMessageResult

    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="one order"), model="m"
    )


async def _session(session: Any) -> tuple[list[float], Any, Any]:
    """The calls every way makes: progress seen, the order, the summary."""
    seen: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)

    await session.initialize()
    order = await session.call_tool("get_order", {"order_id": "A-1"}, progress_callback=progress)
    summary = await session.call_tool("summarise", {"order_id": "A-1"})
    return seen, order, summary


async def _captured() -> list[tuple[str, dict[str, Any]]]:
    """The messages of one session with the server, each with who wrote it, in order."""
    import anyio
    from mcp.shared.message import SessionMessage

    server = _server()._mcp_server
    stream: list[tuple[str, dict[str, Any]]] = []
    to_relay, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](1)

    ends = (to_relay, from_client, to_server, server_reads, server_writes, from_server)
    async with contextlib.AsyncExitStack() as stack:
        for end in (*ends, to_client, client_reads):
            await stack.enter_async_context(end)
        await _run(server, stream, ends, (to_client, client_reads))
    return stream


async def _run(
    server: Any, stream: list[Any], ends: tuple[Any, ...], client: tuple[Any, ...]
) -> None:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.shared.message import SessionMessage

    to_relay, from_client, to_server, server_reads, server_writes, from_server = ends
    to_client, client_reads = client

    async def relay(source: Any, sink: Any, sender: str) -> None:
        async for message in source:
            if isinstance(message, SessionMessage):
                wire = message.message.model_dump(by_alias=True, mode="json", exclude_none=True)
                stream.append((sender, wire))
            await sink.send(message)

    async with anyio.create_task_group() as group:
        group.start_soon(relay, from_client, to_server, "client")
        group.start_soon(relay, from_server, to_client, "server")
        group.start_soon(
            lambda: server.run(server_reads, server_writes, server.create_initialization_options())
        )
        async with ClientSession(client_reads, to_relay, sampling_callback=_sampled) as session:
            await _session(session)
        group.cancel_scope.cancel()


def _as_mcp_cassette(stream: list[tuple[str, dict[str, Any]]]) -> str:
    """The session as mcp-cassette (format 2) writes a stdio recording."""
    rows = [
        {
            "seq": seq,
            "t_offset_ms": 0,
            "sender": sender,
            "kind": "notification" if "id" not in message else "request",
            "method": message.get("method"),
            "msg_id": message.get("id"),
            "payload": message,
            "redacted": False,
            "exchange": None,
            "channel": None,
        }
        for seq, (sender, message) in enumerate(stream)
    ]
    document = {
        "format_version": 2,
        "recorded_at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC).isoformat(),
        "transport": "stdio",
        "server_info": {"name": "orders", "version": "1"},
        "messages": rows,
    }
    return json.dumps(document)


async def test_an_imported_stdio_session_replays_through_the_sdk(tmp_path: Path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    foreign = tmp_path / "orders.mcp.json"
    foreign.write_text(_as_mcp_cassette(await _captured()))
    imported = tmp_path / "imported.json"
    args = ["mcp", "import", str(foreign), "--out", str(imported), "--server", "orders_server"]
    assert main(args) == 0

    cassette = Cassette(imported)
    cassette.start()
    try:
        server = StdioServerParameters(command="python", args=[str(tmp_path / "orders_server.py")])
        async with (
            stdio_client(server) as (read, write),
            ClientSession(read, write, sampling_callback=_sampled) as session,
        ):
            seen, order, summary = await _session(session)
    finally:
        cassette.stop()
    cassette.check()

    assert seen == [1, 2]
    assert order.structuredContent == ORDER
    assert summary.content[0].text == "one order"
