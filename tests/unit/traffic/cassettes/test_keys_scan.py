"""What a request's match key reads of it: in one pass over its header pairs
(:func:`keys._scan`), its ``content-type`` and ``content-encoding`` as
``httpx2.Headers.get`` reads them, repeated and mixed-case names included; its URL's
text, kept for the next request to the same URL object."""

from __future__ import annotations

import httpx2
from hypothesis import given, strategies as st

from pytest_agentctx.traffic.cassettes.keys import RequestKeys, _scan
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.transport.wire import prebuilt_request

_NAMES = st.sampled_from(
    [
        b"Content-Type",
        b"content-type",
        b"CONTENT-ENCODING",
        b"X-Note",
        b"X-Amz-Date",
        b"Authorization",
    ]
)
_VALUES = st.one_of(
    st.just(b"AWS4-HMAC-SHA256 Credential=k/d, Signature=ab"), st.binary(max_size=10)
).filter(lambda value: b"\r" not in value and b"\n" not in value)


@given(st.lists(st.tuples(_NAMES, _VALUES), max_size=4))
def test_the_body_headers_are_read_as_httpx2_reads_them(pairs: list[tuple[bytes, bytes]]):
    headers = httpx2.Headers(pairs)

    scan = _scan(headers, frozenset())

    assert scan is not None
    assert scan[1:] == (headers.get("content-encoding"), headers.get("content-type", ""))


class _PairsOnly:
    """Headers that show only their byte pairs and encoding."""

    def __init__(self, headers: httpx2.Headers) -> None:
        self.raw, self.encoding = headers.raw, headers.encoding


@given(st.lists(st.tuples(_NAMES, _VALUES), max_size=4))
def test_headers_with_only_byte_pairs_are_read_alike(pairs: list[tuple[bytes, bytes]]):
    headers = httpx2.Headers(pairs)

    assert _scan(_PairsOnly(headers), {"x-note"}) == _scan(headers, {"x-note"})  # type: ignore[arg-type]


def test_each_request_is_keyed_by_its_own_url():
    keys = RequestKeys(Redactor(env=()), [], None)
    first = httpx2.URL("https://api.example.com/v1/a")
    keys.of_request(prebuilt_request("POST", first, [], b"{}"))

    key = keys.of_request(prebuilt_request("POST", first.copy_with(path="/v1/b"), [], b"{}"))[0]

    assert key.path == "/v1/b"
