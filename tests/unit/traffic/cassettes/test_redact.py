"""Unit tests of pytest_agentctx.traffic.cassettes.redact: no secret survives redaction, wherever it
hides (headers, URLs, JSON keys and values, streams split into deltas, binary bodies), and
response headers that change on every call are not stored."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV, DEFAULT_SECRET_HEADERS, REDACTED
from pytest_agentctx.traffic.cassettes.body import UndecodableBody, body_bytes, encode_body
from pytest_agentctx.traffic.cassettes.redact import NORMALISED_REQUEST_ID, Redactor
from pytest_agentctx.traffic.codecs import anthropic_messages, openai_chat

CANARY = "canary-5f1e-secret-value"
URL = "https://api.example.test/v1/models"


@pytest.fixture
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DEFAULT_SECRET_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def canary_key(monkeypatch: pytest.MonkeyPatch, no_provider_keys: None) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    return CANARY


# -- headers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    sorted(
        DEFAULT_SECRET_HEADERS
        | {
            "authorization",
            "x-api-key",
            "api-key",
            "openai-organization",
            "openai-project",
            "anthropic-organization-id",
            "cookie",
        }
    ),
)
def test_every_secret_header_is_redacted(name, no_provider_keys):
    assert Redactor().header_items([(name, "some-value-123")]) == [(name, REDACTED)]


def test_secret_header_names_are_matched_in_any_case(no_provider_keys):
    assert Redactor().header_items([("X-Api-Key", "k-123456789")]) == [("X-Api-Key", REDACTED)]


def test_ordinary_headers_are_kept(no_provider_keys):
    pairs = [("content-type", "application/json"), ("x-request-id", "req_1")]

    assert Redactor().header_items(pairs) == pairs


def test_user_secret_headers_are_redacted(no_provider_keys):
    redactor = Redactor(headers=frozenset({"X-Tenant-Token"}))

    assert redactor.header_items([("x-tenant-token", "t")]) == [("x-tenant-token", REDACTED)]


# -- environment values --------------------------------------------------------------


def test_env_value_is_redacted_inside_an_ordinary_header(canary_key):
    pairs = [("x-echo", f"you sent {CANARY}")]

    assert Redactor().header_items(pairs) == [("x-echo", f"you sent {REDACTED}")]


def test_env_value_is_redacted_in_a_query_value(canary_key):
    assert Redactor().url(f"{URL}?q={CANARY}") == f"{URL}?q={REDACTED}"


def test_env_value_is_redacted_in_a_url_path(canary_key):
    assert Redactor().url(f"https://h.test/keys/{CANARY}") == f"https://h.test/keys/{REDACTED}"


def test_env_value_is_redacted_in_every_string_of_a_json_body(canary_key):
    body = {"json": {"a": [CANARY, {"b": f"x{CANARY}y"}], "n": 1, CANARY[:4]: None}}

    assert Redactor().body(body) == {
        "json": {"a": [REDACTED, {"b": f"x{REDACTED}y"}], "n": 1, CANARY[:4]: None}
    }


def test_env_value_is_redacted_in_stream_events(canary_key):
    body = {"sse": [{"event": "e", "data": {"echo": CANARY}}, {"data": CANARY}]}

    assert Redactor().body(body) == {
        "sse": [{"event": "e", "data": {"echo": REDACTED}}, {"data": REDACTED}]
    }


def test_env_value_is_redacted_in_a_text_body(canary_key):
    assert Redactor().body({"text": f"key={CANARY}"}) == {"text": f"key={REDACTED}"}


def test_user_env_variable_is_redacted(no_provider_keys, monkeypatch):
    monkeypatch.setenv("MY_VENDOR_TOKEN", CANARY)

    assert Redactor(env=("MY_VENDOR_TOKEN",)).text(CANARY) == REDACTED


def test_env_value_set_after_the_redactor_was_made_is_redacted_after_refresh(
    no_provider_keys, monkeypatch
):
    redactor = Redactor()
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)

    redactor.refresh()

    assert redactor.text(CANARY) == REDACTED


def test_env_value_changed_after_a_refresh_is_redacted_after_the_next(
    no_provider_keys, monkeypatch
):
    redactor = Redactor()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-first-value-0001")
    redactor.refresh()
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)

    redactor.refresh()

    assert redactor.text(f"sk-first-value-0001 {CANARY}") == f"sk-first-value-0001 {REDACTED}"


def test_env_value_is_redacted_after_refresh_when_os_environ_was_replaced(
    no_provider_keys, monkeypatch
):
    import os

    redactor = Redactor()
    monkeypatch.setattr(os, "environ", {**os.environ, "OPENAI_API_KEY": CANARY})

    redactor.refresh()

    assert redactor.text(CANARY) == REDACTED


def test_url_seen_before_a_secret_was_learned_is_redacted_after(no_provider_keys):
    redactor = Redactor()
    url = f"https://example.com/v1/{CANARY}/items"
    assert redactor.url(url) == url

    redactor.learn([("authorization", f"Bearer {CANARY}")])

    assert redactor.url(url) == f"https://example.com/v1/{REDACTED}/items"


def test_a_request_with_the_signature_of_the_one_before_is_not_read_again(
    no_provider_keys,
):
    redactor = Redactor()
    redactor.learn([], signature=("same",))

    redactor.learn([("authorization", f"Bearer {CANARY}")], signature=("same",))

    assert redactor.secret_values == ()


def test_a_request_with_another_signature_is_read(no_provider_keys):
    redactor = Redactor()
    redactor.learn([], signature=("first",))

    redactor.learn([("authorization", f"Bearer {CANARY}")], signature=("second",))

    assert CANARY in redactor.secret_values


def test_short_env_values_are_not_treated_as_secrets(no_provider_keys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")

    assert Redactor().text("a test message") == "a test message"


def test_longest_secret_is_replaced_whole(no_provider_keys):
    redactor = Redactor(extra_values=("abcdefgh", "abcdefgh-longer"))

    assert redactor.text("abcdefgh-longer") == REDACTED


# -- query parameters ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["key", "api_key", "api-key", "apikey", "apiKey", "x-api-key", "token", "access_token",
     "client_secret", "sig", "X-Amz-Signature", "password"],
)  # fmt: skip
def test_key_like_query_parameters_are_redacted(name, no_provider_keys):
    assert Redactor().url(f"{URL}?{name}=abc&q=1") == f"{URL}?{name}={REDACTED}&q=1"


@pytest.mark.parametrize("name", ["q", "page", "model", "monkey_business", "pageToken"])
def test_ordinary_query_parameters_are_kept(name, no_provider_keys):
    assert Redactor().url(f"{URL}?{name}=abc") == f"{URL}?{name}=abc"


def test_credentials_in_a_url_are_redacted(no_provider_keys):
    assert Redactor().url("https://user:pw@h.test:8443/x") == f"https://{REDACTED}@h.test:8443/x"


# -- values learned from requests ----------------------------------------------------


def test_bearer_token_of_a_request_is_redacted_wherever_it_appears(no_provider_keys):
    redactor = Redactor()

    redactor.learn([("Authorization", f"Bearer {CANARY}")])

    assert redactor.text(f"echo: {CANARY}") == f"echo: {REDACTED}"


def test_secret_header_value_of_a_request_is_redacted_wherever_it_appears(
    no_provider_keys,
):
    redactor = Redactor()

    redactor.learn([("x-api-key", CANARY)])

    assert redactor.body({"json": {"echo": CANARY}}) == {"json": {"echo": REDACTED}}


def test_cookie_values_of_a_request_are_redacted_wherever_they_appear(no_provider_keys):
    redactor = Redactor()

    redactor.learn([("cookie", f"session={CANARY}; theme=dark")])

    assert redactor.header_items([("x-echo", CANARY)]) == [("x-echo", REDACTED)]


def test_key_like_query_value_of_a_request_is_redacted_wherever_it_appears(
    no_provider_keys,
):
    redactor = Redactor()

    redactor.learn([], f"{URL}?api_key={CANARY}")

    assert redactor.body({"text": CANARY}) == {"text": REDACTED}


def test_values_of_ordinary_headers_are_not_learned(no_provider_keys):
    redactor = Redactor()

    redactor.learn([("content-type", "application/json")], f"{URL}?model=gpt-4o-mini")

    assert redactor.secret_values == ()


# -- JSON keys, URLs, header names ---------------------------------------------------


def test_env_value_is_redacted_in_a_json_key_at_any_depth(canary_key):
    body = {"json": {"a": [{"b": {f"user-{CANARY}": 1}}]}}

    assert Redactor().body(body) == {"json": {"a": [{"b": {f"user-{REDACTED}": 1}}]}}


def test_two_json_keys_that_redact_alike_are_both_kept(no_provider_keys):
    redactor = Redactor(extra_values=("sk-first-secret", "sk-other-secret"))

    redacted = redactor.json({"sk-first-secret": 1, "sk-other-secret": 2})

    assert isinstance(redacted, dict)
    assert sorted(redacted.values()) == [1, 2]
    assert not any("secret" in key for key in redacted)


def test_json_without_a_secret_comes_back_as_it_was(canary_key):
    value = {"messages": [{"content": "hello"}]}

    assert Redactor().json(value) is value


def test_a_value_read_from_json_text_without_a_secret_comes_back_as_it_was(canary_key):
    raw = b'{"messages": [{"content": "hello"}]}'
    value = json.loads(raw)

    assert Redactor().json(value, raw=raw) is value


def test_a_secret_that_json_text_escapes_is_still_found_with_the_text_at_hand(
    no_provider_keys,
):
    raw = b'{"echo": "tok\\/en\\/with\\/slashes"}'  # as an encoder that escapes "/" writes it
    redactor = Redactor(extra_values=("tok/en/with/slashes",))

    assert redactor.json(json.loads(raw), raw=raw) == {"echo": REDACTED}


def test_a_split_secret_is_cut_with_the_stream_bytes_at_hand(canary_key):
    body = _chat_stream(*SPLIT)

    redacted = Redactor().body(body, raw=body_bytes(body))

    assert "5f1e" not in _stored_text(redacted)


def test_percent_encoded_env_value_is_redacted_in_a_url_path(no_provider_keys):
    redactor = Redactor(extra_values=("tok/en+with=marks",))

    redacted = redactor.url("https://h.test/v1/keys/tok%2Fen%2Bwith%3Dmarks/usage")

    assert redacted == f"https://h.test/v1/keys/{REDACTED}/usage"


def test_env_value_in_a_url_path_is_redacted_before_a_further_segment(canary_key):
    redacted = Redactor().url(f"https://h.test/v1/keys/{CANARY}/usage?page=2")

    assert redacted == f"https://h.test/v1/keys/{REDACTED}/usage?page=2"


def test_env_value_is_redacted_in_a_header_name(canary_key):
    assert Redactor().header_items([(f"x-{CANARY}", "1")]) == [(f"x-{REDACTED}", "1")]


# -- volatile response headers -------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["date", "Date", "cf-ray", "openai-processing-ms", "x-envoy-upstream-service-time",
     "server-timing", "age", "alt-svc", "apim-request-id", "x-ms-request-id",
     "x-ratelimit-remaining-requests", "x-ratelimit-reset-tokens",
     "anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-requests-reset",
     "ratelimit"],
)  # fmt: skip
def test_volatile_response_headers_are_dropped(name, no_provider_keys):
    assert Redactor().response_header_items([(name, "1"), ("content-type", "a/b")]) == [
        ("content-type", "a/b")
    ]


@pytest.mark.parametrize(
    "name",
    ["content-type", "retry-after", "retry-after-ms", "x-should-retry", "openai-poll-after-ms",
     "x-ratelimit-limit-requests", "anthropic-ratelimit-tokens-limit", "openai-version",
     "anthropic-workspace-id", "link"],
)  # fmt: skip
def test_response_headers_the_sdks_read_or_that_stay_the_same_are_kept(name, no_provider_keys):
    assert Redactor().response_header_items([(name, "7")]) == [(name, "7")]


@pytest.mark.parametrize("name", ["x-request-id", "request-id", "X-Request-Id"])
def test_request_id_headers_get_a_fixed_value(name, no_provider_keys):
    redacted = Redactor().response_header_items([(name, "req_0a1b2c3d4e")])

    assert redacted == [(name, NORMALISED_REQUEST_ID)]


def test_response_headers_are_still_scrubbed_of_secrets(canary_key):
    pairs = [("set-cookie", "s=1"), ("x-echo", CANARY)]

    assert Redactor().response_header_items(pairs) == [
        ("set-cookie", REDACTED),
        ("x-echo", REDACTED),
    ]


# -- streams -------------------------------------------------------------------------


def _sse(*events: tuple[str | None, Any]) -> dict[str, Any]:
    """A stored stream of ``(event name, data)`` pairs, as a recording stores it."""
    wire = "".join(
        (f"event: {name}\n" if name else "")
        + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        for name, data in events
    )
    body = encode_body(wire.encode(), "text/event-stream")
    assert body is not None
    return body


def _chat_chunk(delta: dict[str, Any]) -> tuple[None, dict[str, Any]]:
    return None, {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    }


def _chat_stream(*pieces: str, arguments: Sequence[str] = ()) -> dict[str, Any]:
    events = [_chat_chunk({"role": "assistant", "content": ""})]
    events += [_chat_chunk({"content": piece}) for piece in pieces]
    if arguments:
        call = {"index": 0, "id": "call_1", "type": "function"}
        events.append(_chat_chunk({"tool_calls": [{**call, "function": {"name": "f"}}]}))
        events += [
            _chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in arguments
        ]
    return _sse(*events, (None, "[DONE]"))


def _anthropic_stream(*pieces: str, kind: str = "text") -> dict[str, Any]:
    block, delta, field = (
        ({"type": "text", "text": ""}, "text_delta", "text")
        if kind == "text"
        else ({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
              "input_json_delta", "partial_json")
    )  # fmt: skip
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 0},
    }
    start = {"type": "content_block_start", "index": 0, "content_block": block}
    return _sse(
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", start),
        *(
            ("content_block_delta",
             {"type": "content_block_delta", "index": 0, "delta": {"type": delta, field: piece}})
            for piece in pieces
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    )  # fmt: skip


def _responses_stream(*pieces: str, kind: str = "output_text") -> dict[str, Any]:
    return _sse(
        *(
            (f"response.{kind}.delta",
             {"type": f"response.{kind}.delta", "item_id": "msg_1", "output_index": 0,
              "content_index": 0, "delta": piece})
            for piece in pieces
        )
    )  # fmt: skip


def _stored_text(body: Any) -> str:
    return json.dumps(body, ensure_ascii=False)


SPLIT = ("Your key is canary-5f1e", "-secr", "et-val", "ue, keep it.")


def test_secret_split_across_openai_chat_deltas_is_cut_out_of_every_piece(canary_key):
    redacted = Redactor().body(_chat_stream(*SPLIT))

    assert openai_chat.decode_stream(body_bytes(redacted)).content == (
        f"Your key is {REDACTED}, keep it."
    )
    assert "5f1e" not in _stored_text(redacted)
    assert "-secr" not in _stored_text(redacted)


def test_the_first_piece_of_a_split_secret_takes_redacted_and_the_rest_lose_theirs(
    canary_key,
):
    redacted = Redactor().body(_chat_stream(*SPLIT))

    assert redacted is not None
    pieces = [e["data"]["choices"][0]["delta"]["content"] for e in redacted["sse"][1:-1]]
    assert pieces == [f"Your key is {REDACTED}", "", "", ", keep it."]


def test_secret_split_across_openai_tool_call_argument_deltas_is_cut(canary_key):
    arguments = ['{"key": "canary', "-5f1e-secret", '-value"}']

    redacted = Redactor().body(_chat_stream("ok", arguments=arguments))

    [call] = openai_chat.decode_stream(body_bytes(redacted)).tool_calls
    assert call.arguments == {"key": REDACTED}


def test_secret_split_across_anthropic_text_deltas_is_cut(canary_key):
    redacted = Redactor().body(_anthropic_stream(*SPLIT))

    assert anthropic_messages.decode_stream(body_bytes(redacted)).content == (
        f"Your key is {REDACTED}, keep it."
    )


def test_secret_split_across_anthropic_input_json_deltas_is_cut(canary_key):
    pieces = ['{"key": "canary-5f1e-se', 'cret-value"}']

    redacted = Redactor().body(_anthropic_stream(*pieces, kind="tool"))

    [call] = anthropic_messages.decode_stream(body_bytes(redacted)).tool_calls
    assert call.arguments == {"key": REDACTED}


def test_secret_split_across_responses_text_deltas_is_cut(canary_key):
    redacted = Redactor().body(_responses_stream(*SPLIT))

    assert redacted is not None
    assert "".join(e["data"]["delta"] for e in redacted["sse"]) == (
        f"Your key is {REDACTED}, keep it."
    )


def test_secret_split_across_responses_argument_deltas_is_cut(canary_key):
    redacted = Redactor().body(_responses_stream("canary-5f1e", "-secret-value", kind="x.y"))

    assert "5f1e" not in _stored_text(redacted)


def test_deltas_of_different_choices_are_not_joined(canary_key):
    first = _chat_chunk({"content": "canary-5f1e"})
    second = (None, {**first[1], "choices": [{"index": 1, "delta": {"content": "-secret-value"}}]})
    body = _sse(first, second)

    assert Redactor().body(body) == body


def test_secret_split_across_gemini_parts_is_cut(canary_key):
    def chunk(text: str) -> tuple[None, dict[str, Any]]:
        return None, {"candidates": [{"index": 0, "content": {"parts": [{"text": text}]}}]}

    redacted = Redactor().body(_sse(*(chunk(piece) for piece in SPLIT)))

    assert "5f1e" not in _stored_text(redacted)


def test_secret_split_across_events_of_an_unknown_shape_is_cut(canary_key):
    events = [("token", {"token": {"text": piece}}) for piece in SPLIT]

    redacted = Redactor().body(_sse(*events))

    assert redacted is not None
    assert "".join(e["data"]["token"]["text"] for e in redacted["sse"]) == (
        f"Your key is {REDACTED}, keep it."
    )


def test_secret_split_across_plain_text_events_is_cut(canary_key):
    redacted = Redactor().body(_sse(*((None, piece) for piece in SPLIT)))

    assert redacted is not None
    assert "".join(e["data"] for e in redacted["sse"]) == f"Your key is {REDACTED}, keep it."


def test_secret_that_only_shows_across_event_boundaries_is_refused(no_provider_keys):
    redactor = Redactor(extra_values=('end"}{"start',))
    body = _sse(("a", {"x": "the end"}), ("b", {"start": 1}))

    with pytest.raises(UndecodableBody, match="concatenated data of its events"):
        redactor.body(body)


def test_stream_without_a_secret_is_kept_as_it_was(canary_key):
    body = _chat_stream("Sunny", " in", " Paris.")

    assert Redactor().body(body) == body


# -- binary bodies -------------------------------------------------------------------


def test_secret_bytes_in_a_binary_body_are_overwritten_in_place(canary_key):
    raw = b"\x89PNG\x00\xff" + CANARY.encode() + b"\x00\xfe"

    redacted = Redactor().body({"base64": base64.b64encode(raw).decode()})

    assert redacted is not None
    scrubbed = base64.b64decode(redacted["base64"])
    assert len(scrubbed) == len(raw)
    assert scrubbed == b"\x89PNG\x00\xff" + b"REDACTEDREDACTEDREDACTED" + b"\x00\xfe"


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_base64_of_a_secret_in_a_binary_body_is_overwritten(canary_key, offset):
    encoded = base64.b64encode(b"x" * offset + CANARY.encode())
    raw = b"\xff\x00" + encoded + b"\x00\xff"

    redacted = Redactor().body({"base64": base64.b64encode(raw).decode()})

    assert redacted is not None
    scrubbed = base64.b64decode(redacted["base64"])
    assert len(scrubbed) == len(raw)
    assert CANARY.encode() not in base64.b64decode(scrubbed[2:-2])


def test_binary_body_without_a_secret_is_kept_as_it_was(canary_key):
    body = {"base64": base64.b64encode(b"\x89PNG\x00\xff").decode()}

    assert Redactor().body(body) == body
