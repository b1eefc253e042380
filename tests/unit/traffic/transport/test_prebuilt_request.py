"""The request the clients build cheaply (:func:`prebuilt_request`) is the one
``httpx2.Request`` builds, and :func:`header_encoding` is the encoding ``httpx2.Headers``
finds for the same byte pairs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import httpx2
from hypothesis import given, strategies as st

from pytest_agentctx.traffic.transport.wire import header_encoding, prebuilt_request

_NAMES = st.sampled_from([b"X-Amz-Date", b"User-Agent", b"X-Note", b"Accept"])
_VALUES = st.binary(max_size=12).filter(lambda value: b"\r" not in value and b"\n" not in value)
_PAIRS = st.lists(st.tuples(_NAMES, _VALUES), max_size=4)


@given(_PAIRS)
def test_the_encoding_is_the_one_httpx2_finds(pairs: list[tuple[bytes, bytes]]):
    assert header_encoding(pairs) == httpx2.Headers(pairs).encoding


@given(_PAIRS, st.binary(max_size=40))
def test_the_request_is_the_one_httpx2_builds(pairs: list[tuple[bytes, bytes]], content: bytes):
    url = httpx2.URL("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse")
    built = httpx2.Request("POST", url, headers=pairs, content=content)

    cheap = prebuilt_request("POST", url, list(built.headers.raw), content)

    assert (cheap.method, cheap.url, cheap.content) == (built.method, built.url, built.content)
    assert cheap.headers.raw == built.headers.raw
    assert cheap.headers.encoding == built.headers.encoding


@given(_PAIRS)
def test_its_headers_are_looked_up_as_httpx2s_are(pairs: list[tuple[bytes, bytes]]):
    url = httpx2.URL("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse")
    built = httpx2.Request("POST", url, headers=pairs, content=b"{}")

    cheap = prebuilt_request("POST", url, list(built.headers.raw), b"{}")

    assert cheap.headers.multi_items() == built.headers.multi_items()
    assert [cheap.headers.get(n.decode()) for n, _ in pairs] == [
        built.headers.get(n.decode()) for n, _ in pairs
    ]


def test_its_body_streams_as_httpx2s_does():
    url = httpx2.URL("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse")

    cheap = prebuilt_request("POST", url, [(b"Content-Length", b"2")], b"{}")

    assert (cheap.read(), b"".join(cast("Iterable[bytes]", cheap.stream))) == (b"{}", b"{}")


def test_its_url_is_the_callers_own():
    url = httpx2.URL("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse")

    assert prebuilt_request("POST", url, [], b"").url is url


@given(_PAIRS, st.binary(max_size=40), st.sampled_from(["POST", "get"]))
def test_it_has_the_attributes_httpx2s_has(
    pairs: list[tuple[bytes, bytes]], content: bytes, method: str
):
    url = httpx2.URL("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse")
    extensions: dict[str, object] = {"agentctx_client": "botocore"}
    built = httpx2.Request(method, url, headers=pairs, content=content, extensions=extensions)

    cheap = prebuilt_request(method, url, list(built.headers.raw), content, extensions=extensions)

    assert vars(cheap).keys() == vars(built).keys()
    assert vars(cheap.headers).keys() == vars(built.headers).keys()
    assert (cheap.method, cheap.extensions) == (built.method, built.extensions)
    assert cheap.extensions is not extensions
    assert type(cheap.stream) is type(built.stream)
    assert cheap.headers == built.headers
