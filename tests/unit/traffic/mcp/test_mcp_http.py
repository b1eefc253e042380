"""MCP over HTTP in a cassette (``traffic/mcp/http.py`` and ``httpwire.py``): when each
event of a recorded MCP stream came, and a replayed stream releasing its events in that
order."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx2
from hypothesis import given, strategies as st

from pytest_agentctx.traffic.cassettes.body import format_sse_event, parse_sse
from pytest_agentctx.traffic.cassettes.fileformat import Interaction, McpStream
from pytest_agentctx.traffic.mcp.http import McpHttp
from pytest_agentctx.traffic.mcp.httpwire import (
    endpoint_session,
    event_ends,
    is_http,
    origin_of,
    session_of,
)

URL = "http://127.0.0.1:8000/mcp"
SESSION = {"mcp-session-id": "s1"}


def post(message: object, url: str = URL, headers: dict[str, str] | None = None) -> httpx2.Request:
    return httpx2.Request(
        "POST", url, json=message, headers=SESSION if headers is None else headers
    )


def get(url: str = URL, headers: dict[str, str] | None = None) -> httpx2.Request:
    return httpx2.Request(
        "GET",
        url,
        headers={"accept": "text/event-stream", **(SESSION if headers is None else headers)},
    )


def call(number: int, name: str = "get_order") -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {"name": name}}


def answer(number: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": number, "result": {"content": []}}


def replay_post(
    mcp: McpHttp,
    message: dict[str, object],
    recorded: dict[str, object] | None = None,
    url: str = URL,
    headers: dict[str, str] | None = None,
) -> None:
    """A POST of ``message`` the cassette replays (``202``), as recorded with ``recorded``."""
    live = post(message, url=url, headers=headers)
    mcp.sent(live)
    accepted = Interaction(
        method="POST",
        url=url,
        request_headers={},
        request_body={"json": recorded or message},
        status=202,
        response_headers={},
        response_body=None,
    )
    assert mcp.replay(live, accepted) is None  # replayed as any other


def stream_of(
    request: httpx2.Request,
    events: list[dict[str, object]],
    stream: McpStream | None,
) -> Interaction:
    body = json.loads(request.content) if request.content else None
    return Interaction(
        method=request.method,
        url=str(request.url),
        request_headers={},
        request_body={"json": body} if body is not None else None,
        status=200,
        response_headers={"content-type": "text/event-stream"},
        response_body={"sse": [{"event": "message", "data": event} for event in events]},
        mcp_stream=stream,
    )


def datas(chunks: list[bytes]) -> list[object]:
    return [event["data"] for event in parse_sse(b"".join(chunks).decode())]


# -- where events end ----------------------------------------------------------------------

LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def sse_streams(draw: st.DrawFn) -> str:
    """Server-sent events with any line ends, blank blocks between them, maybe cut."""
    text = ""
    for word in draw(st.lists(st.text("abc{} ", min_size=1, max_size=5), max_size=6)):
        end = draw(LINE_ENDS)
        text += f"event: message{end}data: {word}{end}{draw(LINE_ENDS)}"
        text += draw(LINE_ENDS) * draw(st.integers(0, 1))  # a blank block: no event
    return text + draw(st.sampled_from(["", "data: cut"]))


@given(sse_streams())
def test_event_ends_counts_the_events_the_cassette_stores(text: str) -> None:
    raw = text.encode()

    ends = event_ends(raw)

    assert len(ends) == len(parse_sse(text))
    assert ends == sorted(ends)
    assert all(0 < end <= len(raw) for end in ends)


def test_event_ends_reads_crlf_as_one_line_end() -> None:
    raw = b"event: endpoint\r\ndata: /messages/?session_id=a\r\n\r\ndata: {}\r\n\r\n"

    assert event_ends(raw) == [raw.index(b"data: {}"), len(raw)]


# -- sessions ----------------------------------------------------------------------------


def test_session_of_reads_the_streamable_http_header() -> None:
    assert session_of(post(call(1))) == "s1"


def test_session_of_reads_the_legacy_query_parameter() -> None:
    request = post(call(1), url="http://127.0.0.1:8000/messages/?session_id=abc", headers={})

    assert session_of(request) == "abc"


def test_session_of_a_request_of_no_session_is_none() -> None:
    assert session_of(get("http://127.0.0.1:8000/sse", headers={})) is None


def test_endpoint_session_reads_the_legacy_endpoint_event() -> None:
    events = [{"event": "endpoint", "data": "/messages/?session_id=abc"}]

    assert endpoint_session(events) == "abc"


def test_origin_of_keeps_scheme_host_and_port() -> None:
    assert origin_of("HTTP://127.0.0.1:8000/messages/?session_id=a") == "http://127.0.0.1:8000"


# -- recording ---------------------------------------------------------------------------


def test_a_recorded_event_counts_the_messages_sent_before_it_came() -> None:
    mcp = McpHttp()
    stream = get()
    watch = mcp.watch(stream)
    assert watch is not None
    changed: dict[str, object] = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    sampling = {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage"}
    events: list[dict[str, object]] = [changed, sampling, answer(1)]
    wire = [format_sse_event({"event": "message", "data": event}) for event in events]
    watch.note(len(wire[0]))
    mcp.sent(post(call(1)))
    mcp.sent(post(call(2), headers={"mcp-session-id": "another"}))  # not this session's
    watch.note(len(wire[1]))
    mcp.sent(post({"jsonrpc": "2.0", "id": 0, "result": {}}))  # the sampling answer
    watch.note(len(wire[2]))

    stored = watch.stored(stream_of(stream, events, None), b"".join(wire), complete=False)

    # the answer to call 1 counts no request: it waits for its own instead
    assert stored.mcp_stream == {"after": [0, 1, 1], "open": True}


def test_a_post_stream_read_to_its_end_is_not_kept_open() -> None:
    mcp = McpHttp()
    request = post(call(1))
    mcp.sent(request)
    watch = mcp.watch(request)
    assert watch is not None
    raw = format_sse_event({"event": "message", "data": answer(1)})
    watch.note(len(raw))

    stored = watch.stored(stream_of(request, [answer(1)], None), raw, complete=False)

    assert stored.mcp_stream == {"after": [0]}


def test_a_request_that_is_no_mcp_is_not_watched() -> None:
    mcp = McpHttp()
    request = httpx2.Request("POST", URL, json={"model": "gpt", "messages": []})

    assert mcp.watch(request) is None
    assert mcp.replay(request, stream_of(request, [{"choices": []}], None)) is None


# -- replaying ---------------------------------------------------------------------------


async def _let_others_run() -> None:
    """Give the event loop's other tasks their turn (no time passes)."""
    for _ in range(3):
        await asyncio.sleep(0)


async def _read(response: httpx2.Response, into: list[bytes]) -> None:
    async for chunk in response.stream:  # type: ignore[union-attr]
        into.append(chunk)


async def test_a_replayed_event_waits_for_the_message_it_came_after() -> None:
    mcp = McpHttp()
    events: list[dict[str, object]] = [
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        answer(1),
    ]
    recorded = stream_of(get(), events, {"after": [0, 0], "open": True})
    response = mcp.replay(get(), recorded)
    assert isinstance(response, httpx2.Response)
    chunks: list[bytes] = []
    reader = asyncio.create_task(_read(response, chunks))
    await _let_others_run()
    assert datas(chunks) == [events[0]]

    replay_post(mcp, call(1))
    await _let_others_run()

    assert datas(chunks) == events
    assert not reader.done()  # recorded open: open until its session ends
    reader.cancel()


async def test_an_answer_waits_for_its_own_request_and_lets_others_go_first() -> None:
    mcp = McpHttp()
    recorded = stream_of(get(), [answer(1), answer(2)], {"after": [0, 0]})
    response = mcp.replay(get(), recorded)
    assert isinstance(response, httpx2.Response)
    chunks: list[bytes] = []
    reader = asyncio.create_task(_read(response, chunks))

    replay_post(mcp, call(2))  # sent first now
    await _let_others_run()
    assert datas(chunks) == [answer(2)]
    replay_post(mcp, call(1))

    await asyncio.wait_for(reader, 5)
    assert datas(chunks) == [answer(2), answer(1)]


def test_an_event_of_the_server_s_own_holds_the_later_ones_back() -> None:
    mcp = McpHttp()
    sampling = {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage"}
    recorded = stream_of(get(), [sampling, answer(1)], {"after": [2, 0]})
    response = mcp.replay(get(), recorded)
    assert isinstance(response, httpx2.Response)

    def send_both() -> None:
        replay_post(mcp, call(1))
        replay_post(mcp, call(2))

    sender = threading.Thread(target=send_both)

    sender.start()
    chunks = list(response.stream)  # type: ignore[arg-type]
    sender.join()

    assert datas(chunks) == [sampling, answer(1)]


async def test_a_stream_recorded_open_ends_with_its_session() -> None:
    mcp = McpHttp()
    response = mcp.replay(get(), stream_of(get(), [], {"after": [], "open": True}))
    assert isinstance(response, httpx2.Response)
    reader = asyncio.create_task(_read(response, []))
    await _let_others_run()
    assert not reader.done()

    mcp.sent(httpx2.Request("DELETE", URL, headers=SESSION))

    await asyncio.wait_for(reader, 5)


async def test_every_held_stream_ends_with_the_test() -> None:
    mcp = McpHttp()
    response = mcp.replay(get(), stream_of(get(), [], {"after": [], "open": True}))
    assert isinstance(response, httpx2.Response)
    reader = asyncio.create_task(_read(response, []))
    await _let_others_run()

    mcp.close()

    await asyncio.wait_for(reader, 5)


def test_a_sync_reader_is_woken_by_a_message_from_another_thread() -> None:
    mcp = McpHttp()
    recorded = stream_of(get(), [answer(1)], {"after": [0]})
    response = mcp.replay(get(), recorded)
    assert isinstance(response, httpx2.Response)
    sender = threading.Thread(target=replay_post, args=(mcp, call(1)))

    sender.start()
    chunks = list(response.stream)  # type: ignore[arg-type]
    sender.join()

    assert datas(chunks) == [answer(1)]


async def test_a_replayed_answer_gets_the_live_request_id() -> None:
    mcp = McpHttp()
    recorded = stream_of(post(call(7)), [answer(7)], {"after": [0]})
    live = post(call(3))
    mcp.sent(live)

    response = mcp.replay(live, recorded)
    assert isinstance(response, httpx2.Response)
    chunks: list[bytes] = []
    await _read(response, chunks)

    assert datas(chunks) == [answer(3)]


async def test_a_stream_gets_the_live_ids_of_its_session_s_requests() -> None:
    mcp = McpHttp()
    url = "http://127.0.0.1:8000/messages/?session_id=abc"
    endpoint = {"event": "endpoint", "data": "/messages/?session_id=abc"}
    sse = get("http://127.0.0.1:8000/sse", headers={})
    progress: dict[str, object] = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": 7, "progress": 1},
    }
    server_request: dict[str, object] = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "sampling/createMessage",
    }
    recorded = stream_of(sse, [server_request, progress, answer(7)], {"after": [1, 1, 1]})
    recorded.response_body["sse"].insert(0, endpoint)  # type: ignore[index]
    recorded.mcp_stream = {"after": [0, 1, 0, 0]}
    response = mcp.replay(sse, recorded)
    assert isinstance(response, httpx2.Response)
    chunks: list[bytes] = []
    reader = asyncio.create_task(_read(response, chunks))
    sent = call(7)
    sent["params"] = {"name": "slow_count", "_meta": {"progressToken": 7}}
    live = dict(sent, id=3, params={"name": "slow_count", "_meta": {"progressToken": 3}})
    replay_post(mcp, live, sent, url=url, headers={})

    await asyncio.wait_for(reader, 5)

    assert datas(chunks)[1:] == [
        server_request,  # the server's own request keeps its id
        {**progress, "params": {"progressToken": 3, "progress": 1}},
        answer(3),
    ]


async def test_a_replayed_json_answer_gets_the_live_request_id() -> None:
    mcp = McpHttp()
    recorded = Interaction(
        method="POST",
        url=URL,
        request_headers={},
        request_body={"json": call(7)},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": answer(7)},
    )

    response = mcp.replay(post(call(3)), recorded)

    assert isinstance(response, httpx2.Response)
    assert json.loads(response.read()) == answer(3)


def test_a_request_is_over_http_by_its_urls_scheme():
    urls = ["http://h/mcp", "HTTPS://h/mcp", "mcp+stdio://server/0"]

    assert [is_http(httpx2.Request("POST", url)) for url in urls] == [True, True, False]
