"""MCP over stdio: server labels, what the redactor learns of a server, the ids a replay
rewrites, and a local server answering the real SDK in-process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from pytest_agentctx import CassetteMiss
from pytest_agentctx.testing import Interaction, write_cassette
from pytest_agentctx.traffic.cassettes import Cassette, RecordMode
from pytest_agentctx.traffic.mcp import stdio
from pytest_agentctx.traffic.mcp.process import McpProcess
from pytest_agentctx.traffic.mcp.stdio import (
    _rewrite,
    _unique_label,
    local_server,
    secrets_of,
    server_label,
    shown_command,
)
from pytest_agentctx.traffic.mcp.wire import RECORDED_EXTENSION, stdio_url
from pytest_agentctx.traffic.transport import Interceptor, make_response
from pytest_agentctx.traffic.transport.wire import WireRequest


@pytest.mark.parametrize(
    ("command", "args", "label"),
    [
        ("python", ["servers/orders_server.py", "stdio"], "orders_server"),
        ("python", ["-m", "mcp_server_time"], "mcp_server_time"),
        ("uvx", ["mcp-server-time", "--local-timezone", "UTC"], "mcp-server-time"),
        ("npx", ["-y", "@modelcontextprotocol/server-github"], "server-github"),
        ("/usr/local/bin/My Server", [], "my-server"),
    ],
)
def test_a_server_is_labelled_by_what_it_runs(command: str, args: list[str], label: str) -> None:
    assert server_label(command, args) == label


def test_a_stored_command_line_names_no_path_of_the_recording_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    server = tmp_path / "servers" / "orders.py"

    shown = shown_command("/home/alice/.venv/bin/python", [str(server), "--port", "8"])

    assert shown == "python servers/orders.py --port 8"


def test_another_command_with_the_same_label_in_one_test_gets_a_number() -> None:
    class Owner:
        pass

    owner = Owner()
    assert _unique_label(owner, "orders", "python a/orders.py") == "orders"
    assert _unique_label(owner, "orders", "python b/orders.py") == "orders-2"
    assert _unique_label(owner, "orders", "python a/orders.py") == "orders"


def test_the_server_s_own_environment_is_learned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    env = {"HOME": "/home/someone", "GITHUB_TOKEN": "ghp_0123456789abcdef", "REGION": "eu"}
    learned = [value for _, value in secrets_of("server", [], env)]
    assert learned == ["ghp_0123456789abcdef", "eu"]


def test_secret_options_of_the_command_line_are_learned() -> None:
    args = ["--api-key=k-123456789", "--token", "t-123456789", "--port", "8080", "X_SECRET=s-1"]
    learned = [value for _, value in secrets_of("server", args, None)]
    assert learned == ["k-123456789", "t-123456789", "s-1"]


def test_a_replayed_response_gets_the_live_request_id() -> None:
    response = {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert _rewrite(response, {stdio._key(7): 2}, {}) == {**response, "id": 2}


def test_a_server_request_keeps_its_own_id() -> None:
    request = {"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}}
    assert _rewrite(request, {stdio._key(7): 2}, {}) is request


def test_a_replayed_progress_notification_gets_the_live_token() -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 7}}
    rewritten = _rewrite(note, {}, {stdio._key(7): 2})
    assert rewritten == {**note, "params": {"progressToken": 2}}


def test_a_string_id_is_not_an_integer_id() -> None:
    response = {"jsonrpc": "2.0", "id": "7", "result": {}}
    assert _rewrite(response, {stdio._key(7): 2}, {}) is response


async def _answer(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A tiny server: initialize and tools/list."""
    if message.get("method") == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "local", "version": "1"},
        }
        return [{"jsonrpc": "2.0", "id": message["id"], "result": result}]
    if message.get("method") == "tools/list":
        tool = {"name": "get_order", "inputSchema": {"type": "object"}}
        return [{"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [tool]}}]
    return []


async def _tool_names(command: str) -> list[str]:
    params = StdioServerParameters(command=command, args=["--serve"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [tool.name for tool in (await session.list_tools()).tools]


async def test_a_local_server_answers_the_sdk_without_a_process() -> None:
    with local_server("no-such-orders-server", _answer):
        assert await _tool_names("no-such-orders-server") == ["get_order"]


async def test_a_local_server_s_traffic_is_offered_to_witnesses_only() -> None:
    seen: list[str] = []

    def answering(request: WireRequest) -> None:
        seen.append("answering")

    def witness(request: WireRequest) -> None:
        seen.append(json.loads(request.content).get("method", "?"))

    with (
        Interceptor(answering),
        Interceptor(witness, witness=True),
        local_server("no-such-orders-server", _answer),
    ):
        await _tool_names("no-such-orders-server")
    assert seen == ["initialize", "notifications/initialized", "tools/list"]


async def test_the_seam_is_the_sdk_s_own_once_the_local_server_exits() -> None:
    import mcp.client.stdio

    own = mcp.client.stdio._create_platform_compatible_process
    with local_server("no-such-orders-server", _answer):
        assert mcp.client.stdio._create_platform_compatible_process is not own
    assert mcp.client.stdio._create_platform_compatible_process is own


def _replaying(recorded_ids: dict[str, int]) -> Any:
    """A handler that answers as a cassette replays, under the recorded ids."""

    def handle(request: WireRequest) -> Any:
        assert str(request.url) == stdio_url("orders")
        message = json.loads(request.content)
        method = message.get("method")
        if method not in recorded_ids:
            return make_response(200, content=b"")
        recorded = {**message, "id": recorded_ids[method]}
        result: dict[str, Any] = {
            "tools": [{"name": "get_order", "inputSchema": {"type": "object"}}]
        }
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "orders", "version": "1"},
            }
        line = {"jsonrpc": "2.0", "id": recorded_ids[method], "result": result}
        response = make_response(200, content=json.dumps(line).encode() + b"\n")
        response.extensions[RECORDED_EXTENSION] = recorded  # type: ignore[index]
        return response

    return handle


async def test_a_replayed_session_answers_under_the_live_ids_and_starts_nothing(
    tmp_path: Any,
) -> None:
    missing = str(tmp_path / "no-such-python")
    handler = _replaying({"initialize": 10, "tools/list": 11})
    with Interceptor(handler):
        params = StdioServerParameters(command=missing, args=[f"{tmp_path}/orders.py"])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
    assert [tool.name for tool in tools] == ["get_order"]


async def test_without_an_interceptor_the_sdk_starts_the_server() -> None:
    with local_server("some-other-command", _answer):  # the seam replaced, not for this one
        process = await stdio._create(sys.executable, ["-c", "pass"])
        async with process:
            assert await process.wait() == 0
    assert not isinstance(process, McpProcess)


async def _recorded_start(path: Path) -> None:
    """A cassette holding only a session's start (initialize, then initialized), as the
    SDK sends it (a local server sees what it sends)."""
    sent: list[dict[str, Any]] = []

    async def answer(message: dict[str, Any]) -> list[dict[str, Any]]:
        sent.append(message)
        return await _answer(message)

    with local_server("orders-start", answer):
        params = StdioServerParameters(command="orders-start")
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
    interactions = []
    for message in sent:
        received = await _answer(message)
        interactions.append(
            Interaction(
                method="POST",
                url=stdio_url("orders"),
                request_headers={"content-type": "application/json"},
                request_body={"json": message},
                status=200,
                response_headers={"content-type": "application/x-ndjson"},
                response_body={"json": received[0]} if received else None,
            )
        )
    write_cassette(path, interactions)


async def test_a_later_miss_in_a_replayed_session_fails_even_when_recording_new(
    tmp_path: Path,
) -> None:
    path = tmp_path / "orders.json"
    await _recorded_start(path)
    params = StdioServerParameters(command=str(tmp_path / "no-such-python"), args=["orders.py"])
    cassette = Cassette(path, mode=RecordMode.NEW)
    told: list[BaseException] = []

    async def session_run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            try:
                await session.list_tools()
            except McpError as error:
                told.append(error)

    cassette.start()
    try:
        with pytest.raises(BaseExceptionGroup) as raised:
            await session_run()
    finally:
        cassette.stop()
    assert "tools/list to server orders has no recording" in str(told[0])
    assert raised.group_contains(CassetteMiss, match="a stdio session is replayed or recorded")


def test_a_client_line_s_request_is_the_one_httpx2_makes_of_it() -> None:
    async def spawn() -> Any:
        raise AssertionError("nothing is started")

    session = stdio.StdioSession("orders", "python orders.py --name é", spawn=spawn)
    line = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    headers = [
        (b"content-type", b"application/json"),
        (b"mcp-transport", b"stdio"),
        (b"mcp-command", "python orders.py --name é".encode()),
    ]

    built = session._request(line)
    made = httpx2.Request("POST", "mcp+stdio://orders/", headers=headers, content=line)

    assert (built.method, str(built.url), built.content) == ("POST", str(made.url), line)
    assert list(built.headers.multi_items()) == list(made.headers.multi_items())
