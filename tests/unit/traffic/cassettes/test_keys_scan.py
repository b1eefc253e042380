"""The one pass over a request's header pairs that the match key makes
(:func:`keys._scan`) reads its ``content-type`` and ``content-encoding`` as
``httpx2.Headers.get`` reads them, repeated and mixed-case names included."""

from __future__ import annotations

import httpx2
from hypothesis import given, strategies as st

from pytest_agentctx.traffic.cassettes.keys import _scan

_NAMES = st.sampled_from([b"Content-Type", b"content-type", b"CONTENT-ENCODING", b"X-Note"])
_VALUES = st.binary(max_size=10).filter(lambda value: b"\r" not in value and b"\n" not in value)


@given(st.lists(st.tuples(_NAMES, _VALUES), max_size=4))
def test_the_body_headers_are_read_as_httpx2_reads_them(pairs: list[tuple[bytes, bytes]]):
    headers = httpx2.Headers(pairs)

    scan = _scan(headers, frozenset())

    assert scan is not None
    assert scan[1:] == (headers.get("content-encoding"), headers.get("content-type", ""))
