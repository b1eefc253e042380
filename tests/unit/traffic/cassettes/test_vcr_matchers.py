"""Unit tests of vcrpy's matching (pytest_agentctx.traffic.cassettes.vcr_matchers): each
built-in matcher accepts and refuses exactly the requests vcrpy's own does, on the same
requests; names resolve, and an unknown one is a loud error; a matcher refuses as vcrpy
reads its answer."""

from __future__ import annotations

from typing import Any

import pytest
import vcr.matchers
import vcr.request
from hypothesis import given, settings, strategies as st

from pytest_agentctx.traffic.cassettes import vcr_matchers
from pytest_agentctx.traffic.cassettes.vcr_matchers import (
    BUILTIN,
    VcrRequest,
    refusal,
    resolve,
)
from pytest_agentctx.traffic.errors import CassetteConfigError

METHODS = st.sampled_from(["GET", "POST", "post"])
URIS = st.builds(
    "{}://{}{}{}{}".format,
    st.sampled_from(["http", "https"]),
    st.sampled_from(["api.test", "API.test", "127.0.0.1", "other.test"]),
    st.sampled_from(["", ":80", ":443", ":8080"]),
    st.sampled_from(["", "/", "/v1/files", "/v1/files/"]),
    st.sampled_from(["", "?a=1&b=2", "?b=2&a=1", "?a=", "?a=1&a=2", "?a=2&a=1"]),
)
BODIES = st.sampled_from(
    [
        None,
        b'{"a": 1, "b": [1, 2]}',
        b'{"b": [1, 2], "a": 1}',
        b'{"a": 2}',
        b"not json {",
        b"a=1&b=2",
        b"b=2&a=1",
        b"a=1&b=3",
        b"\xff\xfe binary",
        b"5\r\nhello\r\n0\r\n\r\n",
        b"hello",
    ]
)
HEADERS = st.dictionaries(
    st.sampled_from(["Content-Type", "content-type", "Accept", "Transfer-Encoding"]),
    st.sampled_from(
        ["application/json", "application/x-www-form-urlencoded", "text/plain", "chunked", "*/*"]
    ),
    max_size=3,
)
REQUESTS = st.tuples(METHODS, URIS, BODIES, HEADERS)


def _outcome(matcher: Any, r1: Any, r2: Any) -> object:
    """Whether ``matcher`` accepts ``r1`` for ``r2``, as vcrpy reads a matcher's answer."""
    try:
        return vcr.matchers._evaluate_matcher(matcher, r1, r2)[0]
    except Exception as exc:  # vcrpy's own matcher failing on an input: ours must too
        return type(exc).__name__


def _pair(spec: tuple[str, str, bytes | None, dict[str, str]]) -> tuple[Any, VcrRequest]:
    method, uri, body, headers = spec
    return vcr.request.Request(method, uri, body, dict(headers)), VcrRequest(
        method, uri, body, headers
    )


@pytest.mark.parametrize("name", sorted(BUILTIN))
@settings(max_examples=150, deadline=None)
@given(now=REQUESTS, recorded=REQUESTS)
def test_each_builtin_matcher_decides_as_vcrpys_own(
    name: str, now: tuple[Any, ...], recorded: tuple[Any, ...]
) -> None:
    theirs_now, ours_now = _pair(now)
    theirs_recorded, ours_recorded = _pair(recorded)
    vcr_config = vcr.VCR()

    expected = _outcome(vcr_config.matchers[name], theirs_now, theirs_recorded)

    assert _outcome(BUILTIN[name], ours_now, ours_recorded) == expected


@pytest.mark.parametrize("name", sorted(BUILTIN))
@settings(max_examples=60, deadline=None)
@given(request=REQUESTS)
def test_each_builtin_matcher_accepts_a_request_for_itself(
    name: str, request: tuple[Any, ...]
) -> None:
    ours = _pair(request)[1]

    assert refusal(BUILTIN[name], ours, ours) is None


def test_the_builtin_names_are_vcrpys() -> None:
    assert set(BUILTIN) == set(vcr.VCR().matchers)


def test_a_builtin_refusal_names_the_values_recorded_and_now() -> None:
    now = VcrRequest("POST", "https://api.test/v1/files", None, {})
    recorded = VcrRequest("POST", "https://api.test/v1/uploads", None, {})

    assert refusal(vcr_matchers.path, now, recorded) == (
        "path: recorded '/v1/uploads' != now '/v1/files'"
    )


def test_a_body_refusal_is_a_short_diff_of_the_bodies() -> None:
    now = VcrRequest("POST", "https://api.test/", b"line 1\nline two", {})
    recorded = VcrRequest("POST", "https://api.test/", b"line 1\nline 2", {})

    assert refusal(vcr_matchers.body, now, recorded) == (
        "the bodies differ:\n--- recorded\n+++ now\n@@ -1,2 +1,2 @@\n line 1\n-line 2\n+line two"
    )


@pytest.mark.parametrize(
    ("answer", "refused"),
    [(None, None), (True, None), (1, None), (False, "it returned False"), (0, "it returned 0")],
)
def test_a_matcher_refuses_by_a_false_answer_but_none(answer: object, refused: str | None) -> None:
    request = VcrRequest("GET", "https://api.test/", None, {})

    assert refusal(lambda r1, r2: answer, request, request) == refused


def test_a_matcher_refuses_by_raising_assertion_error_with_its_message() -> None:
    def same_model(r1: VcrRequest, r2: VcrRequest) -> None:
        if r1.path != r2.path:
            raise AssertionError("another model")

    now = VcrRequest("GET", "https://api.test/a", None, {})

    assert refusal(same_model, now, VcrRequest("GET", "https://api.test/b", None, {})) == (
        "another model"
    )


def test_a_matcher_is_given_the_request_made_first_and_the_recorded_one_second() -> None:
    seen: list[str] = []
    now = VcrRequest("GET", "https://api.test/now", None, {})
    recorded = VcrRequest("GET", "https://api.test/recorded", None, {})

    refusal(lambda r1, r2: seen.extend([r1.path, r2.path]), now, recorded)

    assert seen == ["/now", "/recorded"]


def test_names_resolve_to_builtin_and_registered_matchers_and_functions_stay() -> None:
    def mine(r1: object, r2: object) -> bool:
        return True

    def registered(r1: object, r2: object) -> bool:
        return True

    assert resolve(["method", "own", mine], {"own": registered}) == (
        ("method", vcr_matchers.method),
        ("own", registered),
        ("mine", mine),
    )


def test_an_unknown_name_is_an_error_listing_the_builtin_names() -> None:
    with pytest.raises(CassetteConfigError) as caught:
        resolve(["method", "boddy"], where="t.py::test")

    assert str(caught.value) == (
        "t.py::test: agent_cassette_config match_on names 'boddy', which is no matcher (did "
        "you mean 'body'?); vcrpy's built-in matchers are method, uri, url, scheme, host, "
        "port, path, query, headers, raw_body, body. Put the matcher function itself in "
        "match_on (e.g. {'match_on': ['method', 'path', my_matcher]}), or fix the name."
    )


def test_headers_are_looked_up_whatever_their_case() -> None:
    request = VcrRequest("GET", "https://api.test/", None, {"Content-Type": "text/plain"})

    assert request.headers["content-type"] == "text/plain"
    assert request.headers == {"CONTENT-TYPE": "text/plain"}
