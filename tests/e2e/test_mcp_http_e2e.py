"""End-to-end: an MCP client on the official ``mcp`` SDK talking to a real MCP server over
streamable HTTP and over the legacy SSE transport, recorded with ``--agent-record``, then
replayed with the server stopped.

The server is ``tests/support/mcp_orders_server.py``, run as a child process on a free
loopback port by the inner project's fixture while the test records (killed when the test
ends, whatever its outcome) and never started while it replays. The inner test runs a whole
session: ``initialize``, ``tools/list``, ``get_order``, ``summarise_order`` (the server asks
the client to sample a model: a server-initiated ``sampling/createMessage`` answered by the
client's ``sampling_callback``), ``slow_count`` (progress notifications) and
``cancel_order`` (an ``isError`` result), and checks that everything came in order. While
it replays it also checks that no socket was opened and that the session took less than
the SDK's one-second reconnection delay (a replayed stream that ended early, or one that
waited on a timeout, would show there). The SDK's in-memory transport is checked to be
passed through: a test using it with a cassette active records nothing.
"""

from __future__ import annotations

import socket
from pathlib import Path

import mcp  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_orders_server.py"

CONFTEST = f"""
import os
import socket
import subprocess
import sys

import pytest

SERVER = {str(SERVER)!r}


def _accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture
def mcp_url(agent_cassette):
    transport, port = os.environ["MCP_TRANSPORT"], int(os.environ["MCP_PORT"])
    url = f"http://127.0.0.1:{{port}}/" + ("mcp" if transport == "streamable-http" else "sse")
    if not agent_cassette.records:  # replaying: no server at all
        yield url
        return
    server = subprocess.Popen([sys.executable, SERVER, transport, str(port)])
    try:
        for _ in range(400):  # up to 20 s for it to listen
            if _accepts(port):
                break
            try:
                server.wait(timeout=0.05)  # a server that exits at start fails the test
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(f"the MCP server exited with {{server.returncode}}")
        else:
            raise AssertionError(f"the MCP server did not listen on port {{port}}")
        yield url
    finally:
        server.kill()
        server.wait()


@pytest.fixture
def connections(monkeypatch):
    \"\"\"Every socket connection the test opens.\"\"\"
    opened = []
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def noted(original):
        def patched(self, address):
            opened.append(address)
            return original(self, address)

        return patched

    monkeypatch.setattr(socket.socket, "connect", noted(connect))
    monkeypatch.setattr(socket.socket, "connect_ex", noted(connect_ex))
    return opened
"""

TESTS = """
import os
import time

import anyio
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CreateMessageResult, TextContent

ORDER = int(os.environ.get("ORDER", "42"))
SWAP = bool(os.environ.get("SWAP"))  # cancel_order first


def transport(url):
    if os.environ["MCP_TRANSPORT"] == "sse":
        return sse_client(url)
    return streamable_http_client(url)


@pytest.mark.agent
async def test_orders(mcp_url, agent_cassette, connections):
    seen = []

    async def sample(context, params):
        seen.append(("sampling", params.messages[0].content.text))
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text="a blue mug, shipped"),
            model="stand-in",
        )

    async def progress(done, total, message):
        seen.append(("progress", done, total))

    started = time.perf_counter()
    with anyio.fail_after(20):  # a replay that hangs fails instead
        async with transport(mcp_url) as streams:
            async with ClientSession(streams[0], streams[1], sampling_callback=sample) as session:
                init = await session.initialize()
                seen.append(("server", init.serverInfo.name))
                tools = await session.list_tools()
                seen.append(("tools", sorted(tool.name for tool in tools.tools)))
                if SWAP:
                    cancelled = await session.call_tool("cancel_order", {"order_id": 7})
                got = await session.call_tool("get_order", {"order_id": ORDER})
                seen.append(("get_order", got.structuredContent))
                summary = await session.call_tool("summarise_order", {"order_id": 42})
                seen.append(("summarise_order", summary.content[0].text))
                counted = await session.call_tool(
                    "slow_count", {"n": 3}, progress_callback=progress
                )
                seen.append(("slow_count", counted.structuredContent))
                if not SWAP:
                    cancelled = await session.call_tool("cancel_order", {"order_id": 7})
                seen.append(("cancel_order", cancelled.isError, cancelled.content[0].text))
    elapsed = time.perf_counter() - started

    assert seen == [
        ("server", "orders"),
        ("tools", ["cancel_order", "get_order", "slow_count", "summarise_order"]),
        ("get_order", {"order_id": 42, "item": "blue mug", "status": "shipped"}),
        ("sampling", "Summarise {'order_id': 42, 'item': 'blue mug', 'status': 'shipped'}"),
        ("summarise_order", "a blue mug, shipped"),
        ("progress", 1.0, 3.0),
        ("progress", 2.0, 3.0),
        ("progress", 3.0, 3.0),
        ("slow_count", {"result": 3}),
        ("cancel_order", True, "Error executing tool cancel_order: no order 7"),
    ]
    if agent_cassette.replays_only:
        assert connections == []
        assert elapsed < 1.0, f"the replayed session took {elapsed:.2f} s"
"""

IN_MEMORY = """
import pytest
from mcp.shared.memory import create_connected_server_and_client_session

from mcp_orders_server import build


@pytest.mark.agent
async def test_in_memory(agent_cassette):
    server = build()
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        got = await session.call_tool("get_order", {"order_id": 42})
    assert got.structuredContent == {"order_id": 42, "item": "blue mug", "status": "shipped"}
    assert agent_cassette.new_interactions == []
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def project(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """An inner project with the MCP client's test, the server's port chosen and the
    servers it starts counted."""
    agent_pytester.makeconftest(CONFTEST)
    agent_pytester.makepyfile(test_orders=TESTS)
    monkeypatch.setenv("MCP_PORT", str(_free_port()))
    monkeypatch.setenv("MCP_ORDERS_STARTED", str(agent_pytester.path / "started.txt"))
    return agent_pytester


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_a_session_replays_with_the_server_stopped(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    monkeypatch.setenv("MCP_TRANSPORT", transport)

    project.runpytest("--agent-record").assert_outcomes(passed=1)
    replayed = project.runpytest()

    replayed.assert_outcomes(passed=1)
    assert "1 replayed" in replayed.stdout.str()
    started = (project.path / "started.txt").read_text().splitlines()
    assert [line.split()[0] for line in started] == [transport]  # the recording's only


def test_the_order_of_the_events_is_kept_in_a_vcrpy_cassette(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TRANSPORT", "sse")
    vcr = ("-o", "agent_cassette_format=vcr")
    project.runpytest("--agent-record", *vcr).assert_outcomes(passed=1)

    (cassette,) = (project.path / "cassettes").rglob("*.yaml")

    assert "mcp_stream:" in cassette.read_text()  # when each event of GET /sse came
    project.runpytest(*vcr).assert_outcomes(passed=1)


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_requests_sent_in_another_order_get_their_own_answers(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    monkeypatch.setenv("MCP_TRANSPORT", transport)
    project.runpytest("--agent-record").assert_outcomes(passed=1)
    monkeypatch.setenv("SWAP", "1")  # cancel_order called first now: other ids

    project.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_a_changed_argument_fails_with_a_miss(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    monkeypatch.setenv("MCP_TRANSPORT", transport)
    project.runpytest("--agent-record").assert_outcomes(passed=1)
    monkeypatch.setenv("ORDER", "43")

    replayed = project.runpytest()

    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(
        ["*CassetteMiss*", "*params.arguments.order_id: recorded 42 != now 43*"]
    )


@pytest.mark.parametrize("args", [["--agent-record"], []], ids=["recording", "replaying"])
def test_the_in_memory_transport_is_passed_through(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.syspath_prepend(str(SERVER.parent))
    agent_pytester.makepyfile(test_in_memory=IN_MEMORY)

    result = agent_pytester.runpytest(*args)

    result.assert_outcomes(passed=1)
    assert not (agent_pytester.path / "cassettes").exists()
