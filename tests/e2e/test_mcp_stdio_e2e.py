"""End-to-end tests of MCP over stdio with the real mcp SDK (``ClientSession`` over
``stdio_client``) and a real server, tests/support/mcp_orders_server.py, started as a child
process with this interpreter.

Each case records the inner test with ``--agent-record`` (the server runs), then replays
it with the server's command replaced by one that does not exist: the cassette answers
every message, no server starts (``MCP_ORDERS_STARTED`` counts the starts).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_orders_server.py"
#: A secret in the server's environment, and in its command line under a name that says so.
ENV_SECRET = "orders-env-secret-7f3a9c2e"
ARG_SECRET = "orders-arg-secret-b81d44f0"

CASE = """
import json
import os

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CreateMessageResult, TextContent

ORDER_ID = 42


def params():
    return StdioServerParameters(
        command=os.environ["ORDERS_COMMAND"],
        args=[
            "-X", "orders_config=" + os.environ["ORDERS_ENV_VALUE"],
            "-X", "orders_token=" + os.environ["ORDERS_ARG_VALUE"],
            os.environ["ORDERS_SERVER"],
            "stdio",
        ],
        env={
            "MCP_ORDERS_STARTED": os.environ["MCP_ORDERS_STARTED"],
            "ORDERS_CONFIG": os.environ["ORDERS_ENV_VALUE"],
        },
    )


async def sampling(context, request):
    asked = request.messages[0].content.text
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="model saw: " + asked),
        model="fake-model",
    )


async def run_orders():
    progress = []

    async def on_progress(done, total, message):
        progress.append([done, total])

    async with stdio_client(params()) as (read, write):
        async with ClientSession(read, write, sampling_callback=sampling) as session:
            await session.initialize()
            order = await session.call_tool("get_order", {"order_id": ORDER_ID})
            cancelled = await session.call_tool("cancel_order", {"order_id": 7})
            summary = await session.call_tool("summarise_order", {"order_id": 42})
            counted = await session.call_tool(
                "slow_count", {"n": 3}, progress_callback=on_progress
            )
    results = {
        "order": order.structuredContent,
        "cancelled": [cancelled.isError, cancelled.content[0].text],
        "summary": summary.content[0].text,
        "counted": counted.structuredContent,
        "progress": progress,
    }
    with open(os.environ["ORDERS_RESULTS"], "a") as out:
        out.write(json.dumps(results, sort_keys=True) + "\\n")


@pytest.mark.agent
async def test_orders():
    await run_orders()
"""


@pytest.fixture
def orders(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> pytest.Pytester:
    """The inner test, with the server's command, its start log and the results file."""
    monkeypatch.setenv("ORDERS_COMMAND", sys.executable)
    monkeypatch.setenv("ORDERS_SERVER", str(SERVER))
    monkeypatch.setenv("MCP_ORDERS_STARTED", str(tmp_path / "started.log"))
    monkeypatch.setenv("ORDERS_RESULTS", str(tmp_path / "results.jsonl"))
    monkeypatch.setenv("ORDERS_ENV_VALUE", ENV_SECRET)
    monkeypatch.setenv("ORDERS_ARG_VALUE", ARG_SECRET)
    agent_pytester.makepyfile(test_orders=CASE)
    return agent_pytester


def _starts(tmp_path: Path) -> int:
    log = tmp_path / "started.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def _results(tmp_path: Path) -> list[dict[str, object]]:
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _cassette(tester: pytest.Pytester) -> str:
    return (tester.path / "cassettes" / "test_orders" / "test_orders.json").read_text()


def _record_then_go_offline(
    tester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> pytest.RunResult:
    """Record the inner test, then replay it with a server command that does not exist."""
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    monkeypatch.setenv("ORDERS_COMMAND", str(tester.path / "no-such-python"))
    return tester.runpytest()


def test_a_replayed_session_starts_no_server(orders, monkeypatch, tmp_path):
    replayed = _record_then_go_offline(orders, monkeypatch)

    replayed.assert_outcomes(passed=1)
    assert _starts(tmp_path) == 1  # the recording's only


def test_a_replayed_session_gives_the_recorded_tool_results(orders, monkeypatch, tmp_path):
    _record_then_go_offline(orders, monkeypatch)

    recorded, replayed = _results(tmp_path)
    assert replayed == recorded
    assert recorded["order"] == {"order_id": 42, "item": "blue mug", "status": "shipped"}


def test_an_iserror_result_replays(orders, monkeypatch, tmp_path):
    _record_then_go_offline(orders, monkeypatch)

    assert _results(tmp_path)[1]["cancelled"] == [
        True,
        "Error executing tool cancel_order: no order 7",
    ]


def test_a_server_initiated_sampling_request_replays_in_order(orders, monkeypatch, tmp_path):
    _record_then_go_offline(orders, monkeypatch)

    summary = str(_results(tmp_path)[1]["summary"])
    assert summary.startswith("model saw: Summarise {")
    assert "blue mug" in summary


def test_progress_notifications_replay(orders, monkeypatch, tmp_path):
    _record_then_go_offline(orders, monkeypatch)

    assert _results(tmp_path)[1]["progress"] == [[1.0, 3.0], [2.0, 3.0], [3.0, 3.0]]


def test_a_changed_tool_argument_fails_naming_the_method_tool_and_field(
    orders, monkeypatch, tmp_path
):
    orders.runpytest("--agent-record").assert_outcomes(passed=1)
    orders.makepyfile(test_orders=CASE.replace("ORDER_ID = 42", "ORDER_ID = 43"))
    monkeypatch.setenv("ORDERS_COMMAND", str(orders.path / "no-such-python"))

    result = orders.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*cannot answer MCP request tools/call get_order to server mcp_orders_server*",
            "*params.arguments.order_id: recorded 42 != now 43*",
            '*re-record this test: pytest --agent-record "test_orders.py::test_orders"*',
        ]
    )
    assert _starts(tmp_path) == 1


def test_the_server_s_environment_and_command_line_secrets_stay_out_of_the_cassette(
    orders, tmp_path
):
    orders.runpytest("--agent-record").assert_outcomes(passed=1)

    text = _cassette(orders)
    assert "mcp-command" in text
    assert [secret for secret in (ENV_SECRET, ARG_SECRET) if secret in text] == []


def test_without_a_cassette_the_server_is_started_as_usual(orders, tmp_path):
    orders.makepyfile(test_orders=CASE.replace("@pytest.mark.agent\n", ""))

    orders.runpytest().assert_outcomes(passed=1)

    assert _starts(tmp_path) == 1
    assert _results(tmp_path)[0]["counted"] == {"result": 3}
