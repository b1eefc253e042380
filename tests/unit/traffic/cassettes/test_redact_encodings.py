"""Laws of redaction (hypothesis): a secret registered in any way is found in a body however
it is encoded.

The ways a secret becomes known: a default secret variable (``GROQ_API_KEY``), a variable
that is a secret by its name (``MY_SERVICE_TOKEN``), a test's ``redact_values``, and the
values learned from a request: ``Authorization: Bearer``, ``Authorization: Basic``
(the password), a custom header named like a secret (``X-My-Token``), a key-like query
parameter.

The encodings: as it is; percent-encoded (upper or lower hex digits, every character, in a
form); base64 in a ``data:`` URL (standard and URL-safe alphabets, at any alignment);
``\\u``-escaped in JSON and in NDJSON; split over the deltas of a server-sent-event stream
and over the chunks of an NDJSON stream.

Each body goes the way a recording stores it (:func:`encode_body`, then
:meth:`Redactor.body` with the bytes it was read from) and back to wire bytes
(:func:`body_bytes`); decoding those the way the body was encoded must show no secret.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock
from urllib.parse import parse_qsl, quote, unquote, urlencode

from hypothesis import given, settings, strategies as st

from pytest_agentctx.traffic.cassettes.body import body_bytes, encode_body
from pytest_agentctx.traffic.cassettes.redact import Redactor

LAWS = settings(max_examples=150, deadline=None, derandomize=True, database=None)

#: Secrets with the characters URLs and base64 treat specially, starting with a letter.
SECRETS = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    st.text(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~+/=:!*$@",
        min_size=7,
        max_size=31,
    ),
).filter(lambda s: "REDACTED" not in s and s.lower() not in ("disabled", "enabled"))

#: Bytes around a secret in a base64-encoded image: 0 to 5 of them shift its alignment.
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


def _env(values: dict[str, str]) -> contextlib.AbstractContextManager[Any]:
    return mock.patch.dict(os.environ, values)


def _made_in(values: dict[str, str]) -> Callable[[str], Redactor]:
    def make(secret: str) -> Redactor:
        with _env({name: secret for name in values}):
            return Redactor()

    return make


def _learned(headers: Callable[[str], list[tuple[str, str]]], url: str = "") -> Any:
    def make(secret: str) -> Redactor:
        redactor = Redactor()
        redactor.learn(headers(secret), url.format(quote(secret, safe="")))
        return redactor

    return make


def _basic(secret: str) -> list[tuple[str, str]]:
    return [("Authorization", "Basic " + base64.b64encode(f"client:{secret}".encode()).decode())]


#: How a secret becomes known to a redactor.
WAYS: dict[str, Callable[[str], Redactor]] = {
    "default variable": _made_in({"GROQ_API_KEY": ""}),
    "variable named like a secret": _made_in({"MY_SERVICE_TOKEN": ""}),
    "redact_values": lambda secret: Redactor(extra_values=(secret,)),
    "bearer": _learned(lambda s: [("Authorization", f"Bearer {s}")]),
    "basic": _learned(_basic),
    "custom header": _learned(lambda s: [("X-My-Token", s)]),
    "query parameter": _learned(lambda s: [], "https://api.example/v1?api_key={}"),
}


def _escaped(text: str) -> str:
    return "".join(f"\\u{ord(char):04x}" for char in text)


def _json_text(raw: bytes) -> str:
    return json.dumps(json.loads(raw), ensure_ascii=False)


def _lines_text(raw: bytes) -> str:
    return "".join(json.dumps(json.loads(line), ensure_ascii=False) for line in raw.splitlines())


def _data_url(altchars: bool) -> Callable[[str, int], tuple[bytes, str]]:
    encode = base64.urlsafe_b64encode if altchars else base64.b64encode

    def make(secret: str, shift: int) -> tuple[bytes, str]:
        image = encode(PNG[:shift] + secret.encode() + PNG).decode()
        body = {"model": "m", "image_url": f"data:image/png;base64,{image}"}
        return json.dumps(body).encode(), "application/json"

    return make


def _image_bytes(raw: bytes) -> str:
    encoded = json.loads(raw)["image_url"].partition(",")[2]
    alt = b"-_" if re.search("[-_]", encoded) else None
    return base64.b64decode(encoded, altchars=alt).decode("latin-1")


def _form(secret: str, shift: int) -> tuple[bytes, str]:
    body = urlencode({"grant_type": "password", "user": "u" * shift, "password": secret})
    return body.encode(), "application/x-www-form-urlencoded"


def _form_values(raw: bytes) -> str:
    return " ".join(value for _, value in parse_qsl(raw.decode(), keep_blank_values=True))


def _lower_hex(text: str) -> str:
    return re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), text)


def _text(body: str, ctype: str = "text/plain") -> Callable[[str, int], tuple[bytes, str]]:
    return lambda secret, shift: (body.format(s=secret, pad="x" * shift).encode(), ctype)


#: name: (the body holding a secret, and its content type; what it decodes to)
ENCODINGS: dict[str, tuple[Callable[[str, int], tuple[bytes, str]], Callable[[bytes], str]]] = {
    "plain text": (_text("{pad}the key is {s}."), bytes.decode),
    "json": (
        lambda s, n: (json.dumps({"k": "x" * n + s}).encode(), "application/json"),
        _json_text,
    ),
    "percent-encoded": (
        lambda s, n: (f"cb=https://x/?k={quote(s, safe='')}&n={n}".encode(), "text/plain"),
        lambda raw: unquote(raw.decode()),
    ),
    "percent-encoded, lower hex": (
        lambda s, n: (f"k={_lower_hex(quote(s, safe=''))}&n={n}".encode(), "text/plain"),
        lambda raw: unquote(raw.decode()),
    ),
    "percent-encoded, every character": (
        lambda s, n: (("%%%02X" * len(s) % tuple(s.encode())).encode(), "text/plain"),
        lambda raw: unquote(raw.decode()),
    ),
    "percent-encoded in json": (
        lambda s, n: (json.dumps({"url": f"https://x/cb?k={quote(s, safe='')}"}).encode(), "j"),
        lambda raw: unquote(_json_text(raw)),
    ),
    "form": (_form, _form_values),
    "base64 data url": (_data_url(altchars=False), _image_bytes),
    "url-safe base64 data url": (_data_url(altchars=True), _image_bytes),
    "json, \\u-escaped": (
        lambda s, n: (('{"k": "' + "x" * n + _escaped(s) + '"}').encode(), "application/json"),
        _json_text,
    ),
    "ndjson, \\u-escaped": (
        lambda s, n: (f'{{"n": {n}}}\n{{"k": "{_escaped(s)}"}}\n'.encode(), "application/x-ndjson"),
        _lines_text,
    ),
}


def _stored(redactor: Redactor, raw: bytes, content_type: str) -> bytes:
    """``raw`` as a recording stores it, and back to wire bytes."""
    return body_bytes(redactor.body(encode_body(raw, content_type), raw=raw))


@LAWS
@given(
    secret=SECRETS,
    way=st.sampled_from(sorted(WAYS)),
    encoding=st.sampled_from(sorted(ENCODINGS)),
    shift=st.integers(min_value=0, max_value=5),
)
def test_a_registered_secret_is_found_however_a_body_encodes_it(
    secret: str, way: str, encoding: str, shift: int
) -> None:
    encode, decode = ENCODINGS[encoding]
    raw, content_type = encode(secret, shift)
    assert secret in decode(raw)  # the case holds the secret

    stored = _stored(WAYS[way](secret), raw, content_type)

    assert secret not in decode(stored)


def _chat_chunk(content: str) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": content}}],
    }


def _pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(cut % (len(text) + 1) for cut in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


STREAMED = st.tuples(
    SECRETS, st.sampled_from(sorted(WAYS)), st.lists(st.integers(0, 99), max_size=6)
)


@LAWS
@given(STREAMED)
def test_a_secret_split_across_server_sent_events_is_cut_out(
    case: tuple[str, str, list[int]],
) -> None:
    secret, way, cuts = case
    pieces = _pieces(f"your key: {secret}, keep it", cuts)
    raw = b"".join(f"data: {json.dumps(_chat_chunk(p))}\n\n".encode() for p in pieces)

    stored = _stored(WAYS[way](secret), raw + b"data: [DONE]\n\n", "text/event-stream")

    events = [line[6:] for line in stored.decode().split("\n") if line.startswith("data: {")]
    text = "".join(json.loads(e)["choices"][0]["delta"]["content"] for e in events)
    assert secret not in text
    assert text.endswith(", keep it")


@LAWS
@given(STREAMED)
def test_a_secret_split_across_the_json_chunks_of_a_stream_is_cut_out(
    case: tuple[str, str, list[int]],
) -> None:
    secret, way, cuts = case
    pieces = _pieces(f"your key: {secret}, keep it", cuts)
    lines = [json.dumps({"message": {"content": p}, "done": False}) for p in pieces]
    raw = "\n".join([*lines, json.dumps({"message": {"content": ""}, "done": True}), ""]).encode()

    stored = _stored(WAYS[way](secret), raw, "application/x-ndjson")

    chunks = [json.loads(line) for line in stored.decode().splitlines()]
    text = "".join(chunk["message"]["content"] for chunk in chunks)
    assert secret not in text
    assert text.endswith(", keep it")


def test_a_base64_form_is_overwritten_in_place_so_the_data_url_still_decodes() -> None:
    secret = "sk-Secret+/value_123"
    image = base64.b64encode(PNG[:2] + secret.encode() + PNG).decode()

    text = Redactor(extra_values=(secret,)).text(f"data:image/png;base64,{image}")

    encoded = text.partition(",")[2]
    assert len(encoded) == len(image)
    assert "REDACTED" in encoded
    assert secret.encode() not in base64.b64decode(encoded, validate=True)


# -- secrets by their name -------------------------------------------------------------


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[Redactor]:
    with _env(values):
        yield Redactor()


def test_a_variable_named_like_a_secret_is_one_without_configuration() -> None:
    for name in (
        "MY_SERVICE_TOKEN",
        "DB_PASSWORD",
        "STRIPE_SECRET",
        "ACME_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "X_APIKEY",
    ):
        with _environment(**{name: "v4lue-of-" + name.lower()}) as redactor:
            assert redactor.text(f"got v4lue-of-{name.lower()}!") == "got REDACTED!", name


def test_of_the_variables_named_like_secrets_only_secret_looking_values_are_redacted() -> None:
    words = "false 100000000 /home/me/.cache/token short PYTEST-secret-value"
    with _environment(
        MY_SERVICE_TOKEN="svc-token-81d4e6",
        TOKENIZERS_PARALLELISM="false",
        MODEL_TOKEN_LIMIT="100000000",
        HF_TOKEN_PATH="/home/me/.cache/token",
        SHORT_TOKEN="short",
        PYTEST_SECRET="PYTEST-secret-value",
    ) as redactor:
        assert redactor.text(f"{words} svc-token-81d4e6") == f"{words} REDACTED"


def test_a_variable_named_like_a_secret_set_later_is_found_on_refresh() -> None:
    redactor = Redactor()
    with _env({"LATE_SERVICE_TOKEN": "late-token-4f2a"}):
        redactor.refresh()
        assert redactor.text("late-token-4f2a") == "REDACTED"


def test_a_header_named_like_a_secret_is_redacted_whole_unless_a_number_or_boolean() -> None:
    headers = [
        ("X-My-Token", "abc"),
        ("x-amz-security-token", "FwoGZXIvYXdzEJr"),
        ("x-ratelimit-limit-tokens", "30000"),
        ("access-control-allow-credentials", "true"),
        ("accept", "application/json"),
    ]

    assert Redactor().header_items(headers) == [
        ("X-My-Token", "REDACTED"),
        ("x-amz-security-token", "REDACTED"),
        ("x-ratelimit-limit-tokens", "30000"),
        ("access-control-allow-credentials", "true"),
        ("accept", "application/json"),
    ]


def test_the_password_of_a_basic_header_is_learned() -> None:
    redactor = Redactor()

    redactor.learn(_basic("hunter2-hunter2"))

    assert redactor.text("password=hunter2-hunter2") == "password=REDACTED"


def test_a_variable_secret_by_its_name_is_not_passed_on_to_later_tests_as_learned() -> None:
    from pytest_agentctx.redaction.active import SessionSecrets

    with _env({"MY_SERVICE_TOKEN": "svc-token-81d4e6"}):
        secrets = SessionSecrets()
        redactor = secrets.for_test()
        redactor.learn([("authorization", "Bearer sk-learned-1234")])
        secrets.absorb(redactor)

    assert "svc-token-81d4e6" in redactor.secret_values
    assert secrets.learned == ("Bearer sk-learned-1234", "sk-learned-1234")


# -- a secret learned late ---------------------------------------------------------------


def _recorded(scrubs: Any, response: bytes, content_type: str) -> Any:
    """An interaction recorded through ``scrubs`` (slot 0) whose response is ``response``."""
    from pytest_agentctx.traffic.cassettes.fileformat import Interaction

    scrubs.request(0, b"")
    body = scrubs.response(0, encode_body(response, content_type), response)
    return Interaction("POST", "https://auth.example/token", {}, None, 200, {}, body)


@LAWS
@given(STREAMED, st.booleans())
def test_a_secret_learned_after_its_stream_was_recorded_is_cut_out_of_it_before_saving(
    case: tuple[str, str, list[int]], other_secret: bool
) -> None:
    from pytest_agentctx.traffic.cassettes.saving import Scrubs

    secret, _, cuts = case
    pieces = _pieces(f"your token: {secret}, keep it", cuts)
    raw = b"".join(f"data: {json.dumps(_chat_chunk(p))}\n\n".encode() for p in pieces)
    # with another secret known while it records (the stream is taken apart then) or none
    redactor = Redactor(env=(), extra_values=("unrelated-secret-1",) if other_secret else ())
    scrubs = Scrubs(redactor)
    recorded = _recorded(scrubs, raw, "text/event-stream")

    redactor.learn([("Authorization", f"Bearer {secret}")])
    (saved,) = scrubs.again([recorded])

    assert saved.response_body is not None
    text = "".join(e["data"]["choices"][0]["delta"]["content"] for e in saved.response_body["sse"])
    assert secret not in text
    assert text.endswith(", keep it")


def test_a_token_a_response_gave_is_scrubbed_from_it_once_a_later_request_sends_it() -> None:
    from pytest_agentctx.traffic.cassettes.saving import Scrubs

    redactor = Redactor(env=())
    scrubs = Scrubs(redactor)
    grant = json.dumps({"access_token": "oauth-Hd3Yc7Rk2", "expires_in": 3600}).encode()
    recorded = _recorded(scrubs, grant, "application/json")
    assert scrubs.again([recorded]) == [recorded]  # nothing learned: kept as it is
    redactor.learn([("Authorization", "Bearer sk-unrelated-0042")])
    assert scrubs.again([recorded])[0] is recorded  # a secret it does not hold: kept too

    redactor.learn([("Authorization", "Bearer oauth-Hd3Yc7Rk2")])
    (saved,) = scrubs.again([recorded, None])

    assert saved.response_body == {"json": {"access_token": "REDACTED", "expires_in": 3600}}
