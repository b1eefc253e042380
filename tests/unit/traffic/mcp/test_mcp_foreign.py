"""Other MCP recorders' cassettes read as the package's interactions: each format detected,
each client message one interaction with the server's messages it was answered with, and a
clear error for what cannot be converted."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import given, strategies as st

from pytest_agentctx.traffic.errors import CassetteFormatError
from pytest_agentctx.traffic.mcp.foreign import (
    IMPORTED_SESSION,
    MCP_CASSETTE_NPM,
    MCP_RECORDER,
    MCP_VCR,
    detect_format,
    import_foreign,
    label_of,
    stream_to_stdio,
)
from pytest_agentctx.traffic.mcp.wire import McpExchange, mcp_exchanges

INIT: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
INIT_OK = {"jsonrpc": "2.0", "id": 1, "result": {"serverInfo": {"name": "s", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "get_order", "arguments": {"id": "A1"}},
}
CALL_OK = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "ok"}]}}
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
SAMPLE = {"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}}
SAMPLED = {"jsonrpc": "2.0", "id": "s1", "result": {"role": "assistant"}}


def _exchanges(text: str, server: str | None = None) -> list[McpExchange]:
    return mcp_exchanges(import_foreign(text, "f", server=server).interactions)


def _pairs(exchanges: list[McpExchange]) -> list[tuple[list[Any], list[Any]]]:
    return [(exchange.sent, exchange.received) for exchange in exchanges]


def _cassette(messages: list[tuple[str, Any]], **fields: Any) -> str:
    rows = [
        {"seq": seq, "t_offset_ms": 0, "sender": sender, "kind": "x", "payload": payload}
        for seq, (sender, payload) in enumerate(messages)
    ]
    return json.dumps(
        {"format_version": 2, "recorded_at": "2026-01-01T00:00:00Z", **fields, "messages": rows}
    )


def _vcr_yaml(messages: list[tuple[str, Any]], command: list[str]) -> str:
    rows = [{"t": 0, "dir": d, "payload": p} for d, p in messages]
    return yaml.safe_dump({"meta": {"version": 1, "server_command": command}, "messages": rows})


SESSION = [
    ("client", INIT),
    ("server", INIT_OK),
    ("client", INITIALIZED),
    ("client", CALL),
    ("server", PROGRESS),
    ("server", CALL_OK),
]


def test_mcp_cassette_stdio_each_client_message_with_what_followed_it():
    exchanges = _exchanges(
        _cassette(SESSION, transport="stdio", server_info={"name": "orders", "version": "1"})
    )

    assert _pairs(exchanges) == [
        ([INIT], [INIT_OK]),
        ([INITIALIZED], []),
        ([CALL], [PROGRESS, CALL_OK]),
    ]
    assert {(e.transport, e.server) for e in exchanges} == {("stdio", "orders")}


def test_a_pipelining_client_gets_each_answer_with_its_request():
    stream = [
        ("client", INIT),
        ("client", INITIALIZED),
        ("client", CALL),
        ("server", INIT_OK),
        ("server", CALL_OK),
    ]

    assert _pairs(_exchanges(_cassette(stream, transport="stdio"))) == [
        ([INIT], [INIT_OK]),
        ([INITIALIZED], []),
        ([CALL], [CALL_OK]),
    ]


def test_a_server_request_comes_with_the_call_and_the_result_after_the_clients_answer():
    stream = [("client", CALL), ("server", SAMPLE), ("client", SAMPLED), ("server", CALL_OK)]

    assert _pairs(_exchanges(_cassette(stream, transport="stdio"))) == [
        ([CALL], [SAMPLE]),
        ([SAMPLED], [CALL_OK]),
    ]


def test_mcp_cassette_http_exchanges_are_posts_sse_when_several_messages():
    rows = [
        ("client", INIT, 0, None),
        ("server", INIT_OK, 0, "post"),
        ("client", INITIALIZED, 1, None),
        ("client", CALL, 2, None),
        ("server", PROGRESS, 2, "post"),
        ("server", CALL_OK, 2, "post"),
    ]
    text = json.dumps(
        {
            "format_version": 2,
            "transport": "http",
            "server_url": "http://127.0.0.1:9/mcp",
            "messages": [
                {"seq": n, "sender": s, "kind": "x", "payload": p, "exchange": e, "channel": c}
                for n, (s, p, e, c) in enumerate(rows)
            ],
        }
    )

    interactions = import_foreign(text, "f").interactions

    assert [(i.method, i.url, i.status) for i in interactions] == [
        ("POST", "http://127.0.0.1:9/mcp", 200),
        ("POST", "http://127.0.0.1:9/mcp", 202),
        ("POST", "http://127.0.0.1:9/mcp", 200),
    ]
    assert interactions[0].response_body == {"json": INIT_OK}
    assert interactions[2].response_headers == {"content-type": "text/event-stream"}
    assert interactions[2].response_body == {
        "sse": [{"event": "message", "data": PROGRESS}, {"event": "message", "data": CALL_OK}]
    }


def test_mcp_cassette_get_channel_messages_are_one_get_stream_of_a_session():
    rows = [
        ("client", INIT, 0, None),
        ("server", INIT_OK, 0, "post"),
        ("client", INITIALIZED, 1, None),
        ("server", PROGRESS, None, "get"),
    ]
    text = json.dumps(
        {
            "format_version": 1,
            "transport": "http",
            "server_url": "http://127.0.0.1:9/mcp",
            "messages": [
                {"seq": n, "sender": s, "kind": "x", "payload": p, "exchange": e, "channel": c}
                for n, (s, p, e, c) in enumerate(rows)
            ],
        }
    )

    interactions = import_foreign(text, "f").interactions

    assert interactions[0].response_headers["mcp-session-id"] == IMPORTED_SESSION
    assert interactions[-1].method == "GET"
    assert interactions[-1].request_headers["mcp-session-id"] == IMPORTED_SESSION
    assert interactions[-1].response_body == {"sse": [{"event": "message", "data": PROGRESS}]}


def test_mcp_vcr_yaml_is_stdio_labelled_from_its_server_command():
    stream = [("c2s" if s == "client" else "s2c", p) for s, p in SESSION]
    exchanges = _exchanges(_vcr_yaml(stream, ["python", "servers/orders_server.py"]))

    assert {e.server for e in exchanges} == {"orders_server"}
    assert exchanges[2].received == [PROGRESS, CALL_OK]


def test_mcp_vcr_ndjson_reads_as_its_yaml():
    stream = [("c2s" if s == "client" else "s2c", p) for s, p in SESSION]
    lines = [{"_type": "meta", "version": 1, "server_command": ["uvx", "mcp-server-time"]}]
    lines += [{"t": 0, "dir": d, "payload": p} for d, p in stream]
    text = "\n".join(json.dumps(line) for line in lines) + "\n"

    assert detect_format(text) == MCP_VCR
    assert _pairs(_exchanges(text)) == _pairs(_exchanges(_vcr_yaml(stream, ["x"])))
    assert _exchanges(text)[0].server == "mcp-server-time"


def test_npm_mcp_cassette_jsonl_is_read_and_server_overrides_the_label():
    lines = [
        {
            "type": "header",
            "cassetteVersion": 1,
            "transport": "stdio",
            "command": ["node", "server.mjs"],
        }
    ]
    lines += [
        {"type": "frame", "t": 0, "dir": "c2s" if s == "client" else "s2c", "frame": p}
        for s, p in SESSION
    ]
    text = "\n".join(json.dumps(line) for line in lines)

    assert detect_format(text) == MCP_CASSETTE_NPM
    assert {e.server for e in _exchanges(text, server="orders_server")} == {"orders_server"}


def test_npm_mcp_cassette_over_http_is_refused_saying_why():
    text = json.dumps({"type": "header", "cassetteVersion": 2, "transport": "http"}) + "\n{}\n"

    with pytest.raises(CassetteFormatError, match="stdio recordings only"):
        import_foreign(text, "f")


def _recorder(interactions: list[dict[str, Any]], **meta: Any) -> str:
    return json.dumps({"version": "1.0", "metadata": meta, "interactions": interactions})


def test_mcp_recorder_stdio_cassette_becomes_stdio_interactions():
    text = _recorder(
        [
            {"type": "jsonrpc_request", "request": CALL, "response": CALL_OK},
            {"type": "notification", "request": INITIALIZED, "response": None},
        ],
        server_url="stdio://python -m orders.server",
        transport_type="stdio",
    )

    exchanges = _exchanges(text)

    assert detect_format(text) == MCP_RECORDER
    assert _pairs(exchanges) == [([CALL], [CALL_OK]), ([INITIALIZED], [])]
    assert exchanges[0].server == "orders.server"


def test_mcp_recorder_http_posts_to_the_recorded_url_and_sse_stays_sse():
    text = _recorder(
        [
            {
                "type": "jsonrpc_request",
                "request": CALL,
                "response": CALL_OK,
                "response_is_sse": True,
                "response_status": 200,
            }
        ],
        server_url="http://127.0.0.1:8000/api/mcp",
    )

    (interaction,) = import_foreign(text, "f").interactions

    assert interaction.url == "http://127.0.0.1:8000/api/mcp"
    assert interaction.response_body == {"sse": [{"event": "message", "data": CALL_OK}]}


def test_mcp_recorder_http_without_a_url_asks_for_server():
    text = _recorder(
        [{"type": "jsonrpc_request", "request": CALL, "response": CALL_OK}], server_url="[REDACTED]"
    )

    with pytest.raises(CassetteFormatError, match=r"--server http://127\.0\.0\.1:8000/mcp"):
        import_foreign(text, "f")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_recorder([], server_url="http://x/mcp").replace('"1.0"', '"2.0"'), "version 1.x"),
        (
            _cassette([], transport="stdio").replace('"format_version": 2', '"format_version": 3'),
            "format_version 1 and 2",
        ),
        (
            json.dumps({"cassette": "pytest-agentctx", "version": 1, "interactions": []}),
            "nothing to import",
        ),
        ("just text", "not a cassette of mcp-recorder, mcp-cassette or mcp-vcr"),
        (
            _cassette([("client", {"id": 1, "method": "x"})], transport="stdio"),
            "JSON-RPC 2.0 object",
        ),
    ],
    ids=["recorder-version", "cassette-version", "own-format", "unknown", "not-jsonrpc"],
)
def test_what_cannot_be_converted_is_refused_saying_why(text: str, expected: str):
    with pytest.raises(CassetteFormatError, match=expected):
        import_foreign(text, "f")


def test_a_label_that_cannot_be_in_a_url_is_refused():
    with pytest.raises(CassetteFormatError, match="cannot be a stdio server's label"):
        import_foreign(_cassette(SESSION, transport="stdio"), "f", server="a b/c")


@pytest.mark.parametrize(
    ("argv", "label"),
    [
        (["python", "tests/support/mcp_orders_server.py", "stdio"], "mcp_orders_server"),
        (["python", "-m", "orders.server"], "orders.server"),
        (["uvx", "mcp-server-time"], "mcp-server-time"),
        (["/usr/bin/node"], "node"),
    ],
)
def test_label_of_a_command(argv: list[str], label: str):
    assert label_of(argv) == label


def _request(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": f"t{n}"}}


def _answers(n: int, notes: int) -> list[dict[str, Any]]:
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}
    return [note] * notes + [{"jsonrpc": "2.0", "id": n, "result": {"n": n}}]


@given(st.lists(st.integers(min_value=0, max_value=3), max_size=6))
def test_a_sequential_session_keeps_every_answer_after_its_message(notes: list[int]):
    stream: list[tuple[str, dict[str, Any]]] = []
    for n, count in enumerate(notes):
        stream.append(("client", _request(n)))
        stream.extend(("server", message) for message in _answers(n, count))

    exchanges = mcp_exchanges(stream_to_stdio(stream, "s", "f"))

    assert [e.sent for e in exchanges] == [[_request(n)] for n in range(len(notes))]
    assert [e.received for e in exchanges] == [_answers(n, c) for n, c in enumerate(notes)]
