"""Unit tests of pytest_agentctx.cassettes.redact: no secret survives redaction."""

from __future__ import annotations

import pytest

from pytest_agentctx.cassettes.redact import (
    DEFAULT_SECRET_ENV,
    DEFAULT_SECRET_HEADERS,
    REDACTED,
    Redactor,
)

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
async def test_every_secret_header_is_redacted(name, no_provider_keys):
    assert Redactor().header_items([(name, "some-value-123")]) == [(name, REDACTED)]


async def test_secret_header_names_are_matched_in_any_case(no_provider_keys):
    assert Redactor().header_items([("X-Api-Key", "k-123456789")]) == [("X-Api-Key", REDACTED)]


async def test_ordinary_headers_are_kept(no_provider_keys):
    pairs = [("content-type", "application/json"), ("x-request-id", "req_1")]

    assert Redactor().header_items(pairs) == pairs


async def test_user_secret_headers_are_redacted(no_provider_keys):
    redactor = Redactor(headers=frozenset({"X-Tenant-Token"}))

    assert redactor.header_items([("x-tenant-token", "t")]) == [("x-tenant-token", REDACTED)]


# -- environment values --------------------------------------------------------------


async def test_env_value_is_redacted_inside_an_ordinary_header(canary_key):
    pairs = [("x-echo", f"you sent {CANARY}")]

    assert Redactor().header_items(pairs) == [("x-echo", f"you sent {REDACTED}")]


async def test_env_value_is_redacted_in_a_query_value(canary_key):
    assert Redactor().url(f"{URL}?q={CANARY}") == f"{URL}?q={REDACTED}"


async def test_env_value_is_redacted_in_a_url_path(canary_key):
    assert Redactor().url(f"https://h.test/keys/{CANARY}") == f"https://h.test/keys/{REDACTED}"


async def test_env_value_is_redacted_in_every_string_of_a_json_body(canary_key):
    body = {"json": {"a": [CANARY, {"b": f"x{CANARY}y"}], "n": 1, CANARY[:4]: None}}

    assert Redactor().body(body) == {
        "json": {"a": [REDACTED, {"b": f"x{REDACTED}y"}], "n": 1, CANARY[:4]: None}
    }


async def test_env_value_is_redacted_in_stream_events(canary_key):
    body = {"sse": [{"event": "e", "data": {"echo": CANARY}}, {"data": CANARY}]}

    assert Redactor().body(body) == {
        "sse": [{"event": "e", "data": {"echo": REDACTED}}, {"data": REDACTED}]
    }


async def test_env_value_is_redacted_in_a_text_body(canary_key):
    assert Redactor().body({"text": f"key={CANARY}"}) == {"text": f"key={REDACTED}"}


async def test_user_env_variable_is_redacted(no_provider_keys, monkeypatch):
    monkeypatch.setenv("MY_VENDOR_TOKEN", CANARY)

    assert Redactor(env=("MY_VENDOR_TOKEN",)).text(CANARY) == REDACTED


async def test_env_value_set_after_the_redactor_was_made_is_redacted_after_refresh(
    no_provider_keys, monkeypatch
):
    redactor = Redactor()
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)

    redactor.refresh()

    assert redactor.text(CANARY) == REDACTED


async def test_short_env_values_are_not_treated_as_secrets(no_provider_keys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")

    assert Redactor().text("a test message") == "a test message"


async def test_longest_secret_is_replaced_whole(no_provider_keys):
    redactor = Redactor(extra_values=("abcdefgh", "abcdefgh-longer"))

    assert redactor.text("abcdefgh-longer") == REDACTED


# -- query parameters ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["key", "api_key", "api-key", "apikey", "apiKey", "x-api-key", "token", "access_token",
     "client_secret", "sig", "X-Amz-Signature", "password"],
)  # fmt: skip
async def test_key_like_query_parameters_are_redacted(name, no_provider_keys):
    assert Redactor().url(f"{URL}?{name}=abc&q=1") == f"{URL}?{name}={REDACTED}&q=1"


@pytest.mark.parametrize("name", ["q", "page", "model", "monkey_business", "pageToken"])
async def test_ordinary_query_parameters_are_kept(name, no_provider_keys):
    assert Redactor().url(f"{URL}?{name}=abc") == f"{URL}?{name}=abc"


async def test_credentials_in_a_url_are_redacted(no_provider_keys):
    assert Redactor().url("https://user:pw@h.test:8443/x") == f"https://{REDACTED}@h.test:8443/x"


# -- values learned from requests ----------------------------------------------------


async def test_bearer_token_of_a_request_is_redacted_wherever_it_appears(no_provider_keys):
    redactor = Redactor()

    redactor.learn([("Authorization", f"Bearer {CANARY}")])

    assert redactor.text(f"echo: {CANARY}") == f"echo: {REDACTED}"


async def test_secret_header_value_of_a_request_is_redacted_wherever_it_appears(
    no_provider_keys,
):
    redactor = Redactor()

    redactor.learn([("x-api-key", CANARY)])

    assert redactor.body({"json": {"echo": CANARY}}) == {"json": {"echo": REDACTED}}


async def test_cookie_values_of_a_request_are_redacted_wherever_they_appear(no_provider_keys):
    redactor = Redactor()

    redactor.learn([("cookie", f"session={CANARY}; theme=dark")])

    assert redactor.header_items([("x-echo", CANARY)]) == [("x-echo", REDACTED)]


async def test_key_like_query_value_of_a_request_is_redacted_wherever_it_appears(
    no_provider_keys,
):
    redactor = Redactor()

    redactor.learn([], f"{URL}?api_key={CANARY}")

    assert redactor.body({"text": CANARY}) == {"text": REDACTED}


async def test_values_of_ordinary_headers_are_not_learned(no_provider_keys):
    redactor = Redactor()

    redactor.learn([("content-type", "application/json")], f"{URL}?model=gpt-4o-mini")

    assert redactor.secret_values == ()
