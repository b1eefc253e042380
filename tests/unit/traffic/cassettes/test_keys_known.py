"""The key of a repeated request (:meth:`RequestKeys.known_key`): the key made of it last
time, found again without reading its body, is the key :meth:`RequestKeys.of_request`
makes of it; a change of the secrets, of the request, or a body hook makes it keyed in
full. A cassette that replays by it replays what it replays otherwise."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import httpx2
import pytest
from hypothesis import given, strategies as st

from pytest_agentctx.traffic.cassettes import Cassette, Interaction, write_cassette
from pytest_agentctx.traffic.cassettes.keys import RequestKeys
from pytest_agentctx.traffic.cassettes.matcher import RequestKey
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.errors import CassetteMiss
from pytest_agentctx.traffic.roles import model_role
from pytest_agentctx.traffic.transport.wire import prebuilt_request

URLS = [
    httpx2.URL("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream"),
    httpx2.URL("https://api.example.com/v1/chat?api_key=key-in-the-query-0001"),
]
SECRET = "sk-learned-secret-000111"
BODIES = [
    b'{"messages":[{"role":"user","content":"hi"}]}',
    json.dumps({"text": f"a secret: {SECRET}"}).encode(),
    b"plain text, not JSON",
    b"",
]
#: Headers made anew for every call (SigV4), and ones that teach the redactor a secret or
#: say how the body is read.
HEADERS = st.lists(
    st.sampled_from(
        [
            (b"X-Amz-Date", b"20260101T000000Z"),
            (b"X-Amz-Date", b"20260101T000001Z"),
            (b"amz-sdk-invocation-id", b"one"),
            (b"amz-sdk-invocation-id", b"two"),
            (b"Content-Type", b"application/json"),
            (b"Content-Type", b"text/plain"),
            (b"Authorization", f"Bearer {SECRET}".encode()),
            (b"Authorization", b"AWS4-HMAC-SHA256 Credential=AKIAKNOWNKEY0001/x, Signature=ab"),
        ]
    ),
    max_size=4,
)
REQUESTS = st.tuples(
    st.sampled_from(["POST", "GET"]),
    st.sampled_from(URLS),
    HEADERS,
    st.sampled_from(BODIES),
    st.booleans(),  # made under the judge's role
)


def _request(method: str, url: httpx2.URL, pairs: list[tuple[bytes, bytes]], body: bytes):
    return prebuilt_request(method, url, [(b"Host", b"h"), *pairs], body)


def _keyed(keys: RequestKeys, request: httpx2.Request, judge: bool) -> tuple[object, RequestKey]:
    with model_role("judge") if judge else contextlib.nullcontext():
        return keys.known_key(request), keys.of_request(request)[0]


@given(st.lists(REQUESTS, min_size=1, max_size=8))
def test_the_known_key_of_a_request_is_its_full_key(requests):
    keys = RequestKeys(Redactor(env=()), [["temperature"]], None)

    for method, url, pairs, body, judge in requests:
        request = _request(method, url, pairs, body)
        known, full = _keyed(keys, request, judge)

        assert known is None or known == full


#: How a cassette keys a request: by its known key (keyed in full when it has none), in
#: full only (``rewrite``, vcrpy's matching), or in full after its known key (its
#: recordings used up).
WAYS = st.sampled_from(["known", "full", "both"])


@given(st.lists(st.tuples(REQUESTS, WAYS), min_size=1, max_size=8))
def test_keys_found_known_first_are_the_keys_found_in_full(requests):
    asked = RequestKeys(Redactor(env=()), [], None)
    full = RequestKeys(Redactor(env=()), [], None)  # of_request only

    for (method, url, pairs, body, judge), way in requests:
        request = _request(method, url, pairs, body)
        with model_role("judge") if judge else contextlib.nullcontext():
            known = asked.known_key(request) if way != "full" else None
            if known is None or way == "both":
                known = asked.of_request(request)[0]

            assert known == full.of_request(request)[0]
        assert asked.redactor.secret_values == full.redactor.secret_values


@given(REQUESTS, st.sampled_from([b"20260101T000002Z", b"20260101T000003Z"]))
def test_a_request_repeated_with_another_signing_time_is_known(first, stamp):
    method, url, pairs, body, _ = first
    keys = RequestKeys(Redactor(env=()), [], None)
    keys.of_request(_request(method, url, pairs, body))  # (what it teaches, learned)
    keys.of_request(_request(method, url, pairs, body))
    again = [pair for pair in pairs if pair[0] != b"X-Amz-Date"] + [(b"X-Amz-Date", stamp)]

    known = keys.known_key(_request(method, url, again, body))

    assert known is not None
    assert known == keys.of_request(_request(method, url, again, body))[0]


def test_a_secret_learned_since_makes_the_request_keyed_again():
    keys = RequestKeys(Redactor(env=()), [], None)
    plain = _request("POST", URLS[0], [], BODIES[1])
    before = keys.of_request(plain)[0]
    bearer = (b"Authorization", f"Bearer {SECRET}".encode())
    keys.of_request(_request("POST", URLS[0], [bearer], b""))

    known = keys.known_key(plain)

    assert known is None
    assert keys.of_request(plain)[0] != before  # the body's secret is redacted now


def test_a_secret_variable_set_since_makes_the_request_keyed_again(monkeypatch):
    monkeypatch.delenv("AGENTCTX_KNOWN_KEY_SECRET", raising=False)
    keys = RequestKeys(Redactor(env=("AGENTCTX_KNOWN_KEY_SECRET",), by_name=False), [], None)
    request = _request("POST", URLS[0], [], BODIES[1])
    before = keys.of_request(request)[0]
    monkeypatch.setenv("AGENTCTX_KNOWN_KEY_SECRET", SECRET)

    known = keys.known_key(request)

    assert known is None
    assert keys.of_request(request)[0] != before


def test_a_request_with_another_body_is_keyed_again():
    keys = RequestKeys(Redactor(env=()), [], None)
    keys.of_request(_request("POST", URLS[0], [], BODIES[0]))

    assert keys.known_key(_request("POST", URLS[0], [], BODIES[2])) is None


def test_a_body_hook_sees_every_request():
    seen = []

    def hook(body: object) -> object:
        seen.append(body)
        return body

    keys = RequestKeys(Redactor(env=()), [], hook)
    request = _request("POST", URLS[0], [(b"Content-Type", b"application/json")], BODIES[0])
    keys.of_request(request)

    assert keys.known_key(request) is None
    keys.of_request(request)
    assert len(seen) == 2


def _recording(answer: str) -> Interaction:
    return Interaction(
        method="POST",
        url=str(URLS[0]),
        request_headers={"content-type": "application/json"},
        request_body={"json": json.loads(BODIES[0])},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": {"answer": answer}},
    )


def test_a_cassette_replays_a_repeated_request_in_order_then_misses(tmp_path: Path):
    path = tmp_path / "cassette.json"
    write_cassette(path, [_recording("first"), _recording("second")])
    cassette = Cassette(path, redactor=Redactor(env=()))
    signed = [(b"Content-Type", b"application/json")]

    answers = []
    for stamp in (b"1", b"2", b"3"):
        request = _request("POST", URLS[0], [*signed, (b"X-Amz-Date", stamp)], BODIES[0])
        response = cassette.handle(request)
        assert isinstance(response, httpx2.Response)
        answers.append((response.status_code, response.read()))

    assert [(status, json.loads(body)) for status, body in answers[:2]] == [
        (200, {"answer": "first"}),
        (200, {"answer": "second"}),
    ]
    assert answers[2][0] == 599
    assert cassette.played == [0, 1]
    assert len(cassette.misses) == 1
    with pytest.raises(CassetteMiss, match="has this request 2 time"):
        cassette.check()
