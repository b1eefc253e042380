"""Unit tests of pytest_agentctx.traffic.clients.urllib3: urllib3 (and requests) requests
as httpx2 requests, httpx2 responses as urllib3 responses, and the patch's life.

Requests a handler answers go to ``http://127.0.0.1:9`` (the discard port): had one passed
through, it would fail to connect.
"""

from __future__ import annotations

import gzip
import io
from typing import Any

import httpx2
import requests
import urllib3
from urllib3.connectionpool import HTTPConnectionPool

from pytest_agentctx.traffic.clients import PATCHERS, urllib3 as client
from pytest_agentctx.traffic.transport import (
    CLIENT_EXTENSION,
    Interceptor,
    WireRequest,
    WireResponse,
    make_response,
)
from pytest_agentctx.traffic.transport.responses import as_httpx2

UNREACHABLE = "http://127.0.0.1:9"


def _pool(url: str) -> HTTPConnectionPool:
    return urllib3.PoolManager().connection_from_url(url)


# -- requests, urllib3's to httpx2's -----------------------------------------------------


def test_a_request_target_becomes_a_whole_url_of_the_pool():
    request = client.request_of(_pool("http://127.0.0.1:8080"), "GET", "/w?city=Oslo", None, None)

    assert str(request.url) == "http://127.0.0.1:8080/w?city=Oslo"


def test_a_default_port_is_left_out_of_the_url():
    request = client.request_of(_pool("https://api.example.com"), "GET", "/v1", None, None)

    assert str(request.url) == "https://api.example.com/v1"


def test_an_ipv6_host_gets_its_brackets_back():
    request = client.request_of(_pool("http://[::1]:8080"), "GET", "/", None, None)

    assert str(request.url) == "http://[::1]:8080/"


def test_a_whole_url_sent_through_a_proxy_is_kept():
    pool = _pool("http://proxy.internal:3128")

    request = client.request_of(pool, "GET", "http://api.example.com/v1", None, None)

    assert str(request.url) == "http://api.example.com/v1"


def test_a_url_is_parsed_once_for_every_request_to_it(monkeypatch):
    monkeypatch.setattr(client, "_URLS", {})
    pool = _pool("http://127.0.0.1:8080")
    first = client.request_of(pool, "GET", "/w?city=Oslo", None, None)
    kept = dict(client._URLS)

    second = client.request_of(pool, "POST", "/w?city=Oslo", None, b"{}")

    assert list(client._URLS) == [str(first.url)]
    assert client._URLS[str(first.url)] is kept[str(first.url)]
    assert second.url == first.url


def test_the_parsed_urls_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(client, "_URLS", {})
    pool = _pool("http://127.0.0.1:8080")

    for number in range(client._URLS_KEPT + 1):
        client.request_of(pool, "GET", f"/{number}", None, None)

    assert list(client._URLS) == [f"http://127.0.0.1:8080/{client._URLS_KEPT}"]


def test_the_request_keeps_its_method_headers_and_body():
    headers = {"Authorization": "Bearer k", "Content-Type": "application/json"}

    request = client.request_of(_pool(UNREACHABLE), "POST", "/v1", headers, b'{"a":1}')

    assert request.method == "POST"
    assert request.headers["authorization"] == "Bearer k"
    assert request.content == b'{"a":1}'


def test_a_request_of_requests_is_named_so_for_miss_messages():
    headers = {"User-Agent": "python-requests/2.34.2"}

    request = client.request_of(_pool(UNREACHABLE), "GET", "/", headers, None)

    assert request.extensions[CLIENT_EXTENSION] == "requests"


def test_a_request_of_urllib3_itself_is_named_urllib3():
    request = client.request_of(_pool(UNREACHABLE), "GET", "/", None, None)

    assert request.extensions[CLIENT_EXTENSION] == "urllib3"


def test_bytes_header_names_and_values_are_read_as_botocore_sends_them():
    headers: dict[str | bytes, str | bytes] = {
        b"User-Agent": b"Boto3/1.44.8 md/Botocore#1.44.8",
        "X-Amz-Date": b"20260101T000000Z",
    }

    request = client.request_of(_pool(UNREACHABLE), "GET", "/", headers, None)

    assert request.headers.get("x-amz-date") == "20260101T000000Z"
    assert request.extensions[CLIENT_EXTENSION] == "botocore"


def test_a_header_value_keeps_the_bytes_urllib3_sends_for_it():
    # http.client sends a str as latin-1
    headers: dict[str, str | bytes] = {"X-Name": "café", "X-Raw": b"caf\xe9"}

    request = client.request_of(_pool(UNREACHABLE), "GET", "/", headers, None)

    assert dict(request.headers.raw)[b"X-Name"] == dict(request.headers.raw)[b"X-Raw"]


def test_a_handler_answers_a_request_sent_with_bytes_headers():
    seen: list[str] = []

    def handler(request: WireRequest) -> WireResponse:
        seen.append(request.headers.get("user-agent", ""))
        return httpx2.Response(200, json={"ok": True})

    with Interceptor(handler):
        pool = _pool(UNREACHABLE)
        botocore_headers: dict[str, Any] = {"User-Agent": b"Boto3/1.44.8"}  # a value in bytes
        reply = pool.urlopen("GET", "/", headers=botocore_headers)

    assert (reply.json(), seen) == ({"ok": True}, ["Boto3/1.44.8"])


def test_a_text_body_is_sent_as_utf8():
    assert client.body_bytes("é") == "é".encode()


def test_a_file_body_is_read_from_where_it_stands():
    body = io.BytesIO(b"skip-rest")
    body.seek(5)

    assert client.body_bytes(body) == b"rest"


def test_an_iterable_body_is_joined():
    assert client.body_bytes(iter([b"a", "b", bytearray(b"c")])) == b"abc"


def test_no_body_stays_none():
    assert client.body_bytes(None) is None


# -- responses, httpx2's to urllib3's -----------------------------------------------------


def test_status_reason_and_headers_round_trip():
    response = httpx2.Response(
        404,
        headers=[("X-Trace", "a"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")],
        content=b"gone",
        extensions={"reason_phrase": b"Gone Fishing"},
    )

    converted = client.to_urllib3(response, method="GET", url="/", live=True)

    assert (converted.status, converted.reason) == (404, "Gone Fishing")
    assert converted.headers["x-trace"] == "a"
    assert converted.headers.getlist("set-cookie") == ["a=1", "b=2"]
    assert converted.data == b"gone"


def test_a_stream_without_a_length_is_read_chunk_by_chunk():
    response = make_response(200, chunks=[b"data: 1\n\n", b"data: 2\n\n"])

    converted = client.to_urllib3(as_httpx2(response), method="GET", url="/", preload_content=False)

    assert converted.headers["transfer-encoding"] == "chunked"
    assert list(converted.stream(None)) == [b"data: 1\n\n", b"data: 2\n\n"]


def test_a_live_response_keeps_its_framing():
    response = httpx2.Response(200, headers={"content-length": "2"}, content=b"ok")

    converted = client.to_urllib3(response, method="GET", url="/", live=True)

    assert "transfer-encoding" not in converted.headers
    assert converted.data == b"ok"


def test_a_gzip_body_is_decoded_by_urllib3_as_from_a_server():
    packed = gzip.compress(b'{"a": 1}')
    response = httpx2.Response(
        200,
        headers={"content-encoding": "gzip", "content-length": str(len(packed))},
        content=packed,
    )

    converted = client.to_urllib3(response, method="GET", url="/", live=True)

    assert converted.json() == {"a": 1}
    assert converted.headers["content-encoding"] == "gzip"


def test_a_head_response_has_no_body_to_read():
    response = httpx2.Response(200, headers={"content-length": "120"})

    converted = client.to_urllib3(response, method="HEAD", url="/")

    assert converted.data == b""


def test_reading_to_the_end_closes_the_httpx2_stream():
    closed: list[bool] = []

    class Stream(httpx2.SyncByteStream):
        def __iter__(self):
            yield b"body"

        def close(self) -> None:
            closed.append(True)

    converted = client.to_urllib3(
        httpx2.Response(200, stream=Stream()), method="GET", url="/", preload_content=False
    )

    assert converted.read() == b"body"
    assert closed == [True]


def test_requests_reads_the_cookies_of_a_converted_response():
    with Interceptor(
        lambda request: httpx2.Response(
            200, headers={"set-cookie": "session=abc; Path=/"}, content=b"{}"
        )
    ):
        reply = requests.get(UNREACHABLE + "/login", timeout=2)

    assert reply.cookies.get("session") == "abc"


# -- the patch ------------------------------------------------------------------------------


def test_urllib3_is_patched_only_while_an_interceptor_is_active():
    original = HTTPConnectionPool._make_request

    with Interceptor(lambda request: None):
        patched = HTTPConnectionPool._make_request

    assert patched is not original
    assert HTTPConnectionPool._make_request is original


def test_urllib3_has_its_patcher():
    names = [(install.__name__, uninstall.__name__) for install, uninstall in PATCHERS]

    assert ("_install_urllib3", "_uninstall_urllib3") in names


def test_the_module_named_urllib3_imports_the_real_urllib3():
    assert vars(client)["HTTPResponse"] is urllib3.response.HTTPResponse


def test_a_handler_answers_urllib3_directly():
    seen: list[str] = []

    def handler(request: WireRequest) -> WireResponse:
        seen.append(f"{request.method} {request.url}")
        return httpx2.Response(200, json={"temp": 21})

    with Interceptor(handler):
        reply = urllib3.PoolManager().request("GET", UNREACHABLE + "/weather?city=Oslo")

    assert reply.json() == {"temp": 21}
    assert seen == ["GET http://127.0.0.1:9/weather?city=Oslo"]


def test_each_retry_on_a_status_is_a_request_of_its_own():
    statuses = iter([503, 200])

    def handler(request: WireRequest) -> WireResponse:
        return httpx2.Response(next(statuses), content=b"")

    retries = urllib3.Retry(total=2, status_forcelist=[503], backoff_factor=0)
    with Interceptor(handler):
        reply = urllib3.PoolManager().request("GET", UNREACHABLE + "/", retries=retries)

    assert reply.status == 200
    assert list(statuses) == []
