"""Unit tests of pytest_agentctx.traffic.clients.botocore: botocore's requests answered
above urllib3 (``URLLib3Session.send``), as httpx2 requests; httpx2 responses as botocore's;
live requests offered once; ignored hosts and the network guard; the patch's life.

Requests a handler answers go to ``http://127.0.0.1:9`` (the discard port): had one passed
through, it would fail to connect. A live request goes to a loopback server the test starts
and stops.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import httpx2
import pytest
from botocore.awsrequest import AWSRequest, HeadersDict
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError
from botocore.httpsession import URLLib3Session
from hypothesis import given, strategies as st
from urllib3.connectionpool import HTTPConnectionPool

from pytest_agentctx.traffic import ignore
from pytest_agentctx.traffic.cassettes.network import NetworkGuard
from pytest_agentctx.traffic.clients import PATCHERS, botocore as client
from pytest_agentctx.traffic.codecs.eventstream import encode_message, event
from pytest_agentctx.traffic.errors import NetworkBlocked
from pytest_agentctx.traffic.transport import (
    CLIENT_EXTENSION,
    Interceptor,
    WireRequest,
    WireResponse,
    make_response,
)

UNREACHABLE = "http://127.0.0.1:9"
MODEL = "us.anthropic.claude-3-5-sonnet-20240620-v1:0"
MESSAGES = [{"role": "user", "content": [{"text": "Hi"}]}]


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTFAKEKEY00001")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testFakeSecretAccessKey/0123456789")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def _bedrock(endpoint: str = UNREACHABLE) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=endpoint,
        config=Config(retries={"total_max_attempts": 1}),
    )


def _converse(endpoint: str = UNREACHABLE) -> Any:
    return _bedrock(endpoint).converse(modelId=MODEL, messages=MESSAGES)


ANSWER = {
    "output": {"message": {"role": "assistant", "content": [{"text": "Hello"}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
    "metrics": {"latencyMs": 1},
}


# -- requests, botocore's to httpx2's -----------------------------------------------------


CASES = [
    ("POST", "http://127.0.0.1:9/model/m/converse", {"Content-Type": b"application/json"}, b"{}"),
    ("POST", "https://bedrock.example/model/m/invoke", {}, None),
    ("GET", "http://127.0.0.1:9/x?a=1", {"User-Agent": b"Boto3/1.44 Botocore/1.44"}, None),
    ("PUT", "http://127.0.0.1:9/b/k", {"Content-Length": "3", "Host": "s3.example"}, b"abc"),
    ("POST", "http://127.0.0.1:9/", {"Transfer-Encoding": "chunked"}, b"abc"),
    ("POST", "http://127.0.0.1:9/", {"X-Meta": b"caf\xe9"}, b"x"),
    ("POST", "http://127.0.0.1:9/", {"X-Meta": "café".encode()}, b"x"),
]


@pytest.mark.parametrize(("method", "url", "headers", "content"), CASES)
def test_a_request_is_the_httpx2_request_the_urllib3_interceptor_makes(
    method: str, url: str, headers: dict[str, Any], content: bytes | None
) -> None:
    from pytest_agentctx.traffic.clients.urllib3 import request_of

    expected = request_of(None, method, url, list(headers.items()), content)

    request = client.request_of(method.lower(), url, HeadersDict(headers), content)

    assert (request.method, request.url, request.content) == (
        expected.method,
        expected.url,
        expected.content,
    )
    assert request.headers.raw == expected.headers.raw
    assert request.headers.encoding == expected.headers.encoding
    assert list(request.headers.items()) == list(expected.headers.items())
    assert request.extensions == expected.extensions


_HEADER_NAMES = st.sampled_from(
    ["Content-Type", "User-Agent", "X-Amz-Date", "Host", "Content-Length", "X-Meta"]
)
_HEADER_VALUES = st.one_of(
    st.binary(max_size=8).filter(lambda value: b"\r" not in value and b"\n" not in value),
    st.sampled_from(["3", "Boto3/1.44 Botocore/1.44", "text/plain"]),
)


@given(
    st.sampled_from(["post", "GET", "PUT", "DELETE"]),
    st.dictionaries(_HEADER_NAMES, _HEADER_VALUES, max_size=4),
    st.one_of(st.none(), st.binary(max_size=8)),
)
def test_any_request_is_the_httpx2_request_the_urllib3_interceptor_makes(
    method: str, headers: dict[str, Any], content: bytes | None
) -> None:
    from pytest_agentctx.traffic.clients.urllib3 import request_of

    url = "http://127.0.0.1:9/model/m/converse"
    expected = request_of(None, method.upper(), url, list(headers.items()), content)

    request = client.request_of(method, url, HeadersDict(headers), content)

    assert (request.method, request.url, request.content) == (
        expected.method,
        expected.url,
        expected.content,
    )
    assert request.headers._list == expected.headers._list
    assert request.headers.encoding == expected.headers.encoding
    assert request.extensions == expected.extensions


def test_bytes_header_names_and_values_are_read_as_botocore_sends_them() -> None:
    headers = HeadersDict({"X-Amz-Date": b"20260101T000000Z", "Content-Type": "text/plain"})

    request = client.request_of("POST", UNREACHABLE + "/", headers, b"hi")

    assert request.headers["x-amz-date"] == "20260101T000000Z"
    assert request.headers["content-type"] == "text/plain"


def test_a_request_of_boto3_is_named_botocore_for_miss_messages() -> None:
    headers = HeadersDict({"User-Agent": b"Boto3/1.44.8 md/Botocore#1.44.8"})

    request = client.request_of("POST", UNREACHABLE + "/", headers, b"")

    assert request.extensions[CLIENT_EXTENSION] == "botocore"


def test_a_streamed_body_is_read_whole_for_the_handlers() -> None:
    seen: list[bytes] = []

    def handler(request: WireRequest) -> WireResponse:
        seen.append(request.content)
        return make_response(200, content=b"")

    prepared = AWSRequest(
        method="PUT", url=UNREACHABLE + "/bucket/key", data=io.BytesIO(b"file bytes")
    ).prepare()
    with Interceptor(handler):
        response = URLLib3Session().send(prepared)

    assert (response.status_code, seen) == (200, [b"file bytes"])


# -- replay -------------------------------------------------------------------------------


def _json_answer(request: WireRequest) -> WireResponse:
    return httpx2.Response(200, json=ANSWER)


def test_a_handler_answers_boto3() -> None:
    with Interceptor(_json_answer):
        reply = _converse()

    assert reply["output"]["message"]["content"] == [{"text": "Hello"}]


def test_a_replayed_event_stream_is_read_event_by_event() -> None:
    events = [
        event("messageStart", {"role": "assistant"}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "lo"}}),
        event("messageStop", {"stopReason": "end_turn"}),
    ]

    def handler(request: WireRequest) -> WireResponse:
        return make_response(
            200,
            headers={"content-type": "application/vnd.amazon.eventstream"},
            chunks=[encode_message(message) for message in events],
        )

    with Interceptor(handler):
        reply = _bedrock().converse_stream(modelId=MODEL, messages=MESSAGES)
        texts = [
            e["contentBlockDelta"]["delta"]["text"]
            for e in reply["stream"]
            if "contentBlockDelta" in e
        ]

    assert texts == ["Hel", "lo"]


def _aws_headers(response: httpx2.Response, method: str = "POST") -> list[tuple[str, str]]:
    answer = client.to_aws(response, method=method, url=UNREACHABLE, live=False)
    return list(answer.raw.headers.items())


def test_a_replayed_stream_has_the_headers_of_the_urllib3_interceptor() -> None:
    stream = httpx2.Response(200, headers={"Content-Type": "a/b"}, stream=httpx2.ByteStream(b""))

    assert _aws_headers(stream) == [("Content-Type", "a/b"), ("Transfer-Encoding", "chunked")]


def test_the_same_headers_answering_a_head_are_not_marked_chunked() -> None:
    def replayed() -> httpx2.Response:
        return httpx2.Response(200, headers={"Content-Type": "a/b"}, stream=httpx2.ByteStream(b""))

    _aws_headers(replayed())

    assert _aws_headers(replayed(), method="HEAD") == [("Content-Type", "a/b")]


def test_a_repeated_response_header_keeps_each_value() -> None:
    headers = [("Set-Cookie", "a=1"), ("set-cookie", "b=2"), ("Content-Length", "0")]
    response = httpx2.Response(200, headers=headers, content=b"")

    cookies = client.to_aws(response, method="GET", url=UNREACHABLE, live=False).raw.headers

    assert cookies.getlist("set-cookie") == ["a=1", "b=2"]


def test_a_stream_cut_short_still_fails_where_it_stops() -> None:
    class Cut(Exception):
        pass

    def cut() -> None:
        raise Cut("no more recorded")

    def handler(request: WireRequest) -> WireResponse:
        message = encode_message(event("messageStart", {"role": "assistant"}))
        return make_response(
            200,
            headers={"content-type": "application/vnd.amazon.eventstream"},
            chunks=[message],
            on_end=cut,
        )

    with Interceptor(handler):
        reply = _bedrock().converse_stream(modelId=MODEL, messages=MESSAGES)
        with pytest.raises(Cut, match="no more recorded"):
            list(reply["stream"])


def test_an_answered_request_never_reaches_urllib3(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(*args: object, **kwargs: object) -> None:
        raise AssertionError("urllib3 was asked to send an answered request")

    with Interceptor(_json_answer):
        monkeypatch.setattr(HTTPConnectionPool, "urlopen", unreachable)
        _converse()


# -- live requests ------------------------------------------------------------------------


class _Bedrock(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        import json

        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps(ANSWER).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def loopback() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Bedrock)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_live_request_is_offered_to_the_handlers_once(loopback: str) -> None:
    seen: list[str] = []

    def handler(request: WireRequest) -> None:
        seen.append(f"{request.method} {request.url.path}")

    with Interceptor(handler):
        reply = _converse(loopback)

    assert reply["stopReason"] == "end_turn"
    assert seen == [f"POST /model/{MODEL}/converse"]


def test_a_live_response_is_recorded_once(loopback: str, tmp_path: Any) -> None:
    from pytest_agentctx.traffic.cassettes import Cassette, RecordMode

    cassette = Cassette(tmp_path / "c.json", mode=RecordMode.REWRITE)
    cassette.start()
    try:
        _converse(loopback)
    finally:
        cassette.stop()

    assert len(cassette.new_interactions) == 1


# -- ignored hosts and the network guard -----------------------------------------------------


@pytest.fixture
def ignoring() -> Iterator[None]:
    before = ignore.use_session(["bedrock.example"])
    try:
        yield
    finally:
        ignore.restore_session(before)
        ignore.take_not_sent()


def _refused_by_the_handler(request: WireRequest) -> WireResponse:
    raise AssertionError(f"the handler was offered {request.url}")


@pytest.mark.usefixtures("ignoring")
def test_an_ignored_host_the_guard_blocks_gets_botocores_connection_error() -> None:
    with (
        NetworkGuard(),
        Interceptor(_refused_by_the_handler),
        pytest.raises(EndpointConnectionError) as raised,
    ):
        _converse("https://bedrock.example")

    assert isinstance(raised.value.__cause__, NetworkBlocked)


def test_the_network_guard_refuses_a_request_no_handler_answers() -> None:
    with (
        NetworkGuard() as guard,
        Interceptor(lambda request: None),
        pytest.raises(EndpointConnectionError),
    ):
        _converse("https://bedrock-runtime.us-east-1.amazonaws.com")

    assert guard.blocked


# -- the patch ------------------------------------------------------------------------------


def test_botocore_is_patched_only_while_an_interceptor_is_active() -> None:
    original = URLLib3Session.send

    with Interceptor(lambda request: None):
        patched = URLLib3Session.send

    assert patched is not original
    assert URLLib3Session.send is original


def test_botocore_is_not_patched_when_nothing_imported_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = URLLib3Session.send
    monkeypatch.delitem(sys.modules, "botocore.httpsession")

    with Interceptor(lambda request: None):
        patched = URLLib3Session.send

    assert patched is original


def test_botocore_has_its_patcher() -> None:
    names = [(install.__name__, uninstall.__name__) for install, uninstall in PATCHERS]

    assert ("_install_botocore", "_uninstall_botocore") in names


def test_a_replayed_response_has_its_statuss_reason() -> None:
    client.to_aws(httpx2.Response(200, content=b""), method="GET", url=UNREACHABLE, live=False)

    answer = client.to_aws(
        httpx2.Response(404, content=b""), method="GET", url=UNREACHABLE, live=False
    )

    assert answer.raw.reason == "Not Found"


def test_a_response_keeps_the_reason_it_came_with() -> None:
    response = httpx2.Response(200, content=b"", extensions={"reason_phrase": b"Fine"})

    answer = client.to_aws(response, method="GET", url=UNREACHABLE, live=False)

    assert answer.raw.reason == "Fine"


@pytest.mark.parametrize(
    "extensions", [{}, {"http_version": b"HTTP/1.0"}, {"http_version": b"HTTP/1.1"}]
)
def test_a_response_has_the_http_version_httpx2_gives_it(extensions: dict[str, bytes]) -> None:
    response = httpx2.Response(200, content=b"", extensions=extensions)

    raw = client.to_aws(response, method="GET", url=UNREACHABLE, live=False).raw

    assert raw.version_string == response.http_version
    assert raw.version == (10 if response.http_version == "HTTP/1.0" else 11)
