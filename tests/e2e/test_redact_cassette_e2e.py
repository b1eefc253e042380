"""End-to-end: a canary secret never reaches a cassette, however the traffic hides it, and the
redacted cassette still replays with the real SDKs.

The outer test starts ``Leaky``, a server on 127.0.0.1 (in a thread, stopped by the test)
that does everything a careless provider could: it streams the canary split across SSE
events (OpenAI chat content and tool-call arguments, Anthropic text deltas), sends it in
gzip, deflate, br and zstd bodies, as a JSON object key, and answers a URL whose path holds
it. The canary is the API key the inner test's SDK clients send (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``). Its response headers change on every request (request ids, timings,
rate-limit counters), as a real provider's do.
"""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import anthropic  # noqa: F401  (imported here so the inner runs do not import it again)
import brotli
import openai  # noqa: F401  (same)
import pytest
import zstandard
from support.http_server import ServerThread

CANARY = "sk-canary-7Qx9Lm2Vb8Nw4Tz"
#: How the server splits the canary across stream events: no piece may reach the cassette.
PIECES = [CANARY[:6], CANARY[6:13], CANARY[13:19], CANARY[19:]]

COMPRESS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": zstandard.ZstdCompressor().compress,
}


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-leaky",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _chat_events() -> list[tuple[str | None, dict[str, Any] | str]]:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "save"}}
    return [
        (None, _chat_chunk({"role": "assistant", "content": ""})),
        (None, _chat_chunk({"content": "Your key is "})),
        *((None, _chat_chunk({"content": piece})) for piece in PIECES),
        (None, _chat_chunk({"content": "."})),
        (None, _chat_chunk({"tool_calls": [call]})),
        *(
            (None, _chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
            for piece in ['{"key": "', *PIECES, '"}']
        ),
        (None, _chat_chunk({}, "tool_calls")),
        (None, "[DONE]"),
    ]  # fmt: skip


def _anthropic_events() -> list[tuple[str | None, dict[str, Any] | str]]:
    message: dict[str, Any] = {
        "id": "msg_leaky",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 0},
    }

    def delta(text: str) -> tuple[str, dict[str, Any]]:
        data = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text},
        }
        return "content_block_delta", data

    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    return [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", block),
        delta("Your key is "),
        *(delta(piece) for piece in PIECES),
        delta("."),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-leaky",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class _Handler(BaseHTTPRequestHandler):
    """Answers for the :class:`Leaky` server that owns it (``server.owner``)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _start(self, content_type: str, encoding: str | None = None) -> None:
        n = self.server.owner.count()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("content-type", content_type)
        if encoding:
            self.send_header("content-encoding", encoding)
        # What changes on every call of a real provider.
        self.send_header("x-request-id", f"req_{n:04d}")
        self.send_header("request-id", f"req_{n:04d}")
        self.send_header("openai-processing-ms", str(100 + n))
        self.send_header("x-ratelimit-remaining-requests", str(1000 - n))
        self.send_header("x-ratelimit-limit-requests", "1000")
        self.send_header("cf-ray", f"8f{n:04d}-CDG")
        self.end_headers()

    def _stream(self, events: list[tuple[str | None, Any]]) -> None:
        self._start("text/event-stream")
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            self.wfile.write((f"event: {name}\n" if name else "").encode())
            self.wfile.write(f"data: {text}\n\n".encode())
            self.wfile.flush()

    def _json(self, value: Any, encoding: str | None = None) -> None:
        raw = json.dumps(value).encode()
        if encoding == "compress":
            raw = b"\x1f\x9d\x90" + raw  # an encoding no client decodes
        elif encoding:
            raw = COMPRESS[encoding](raw)
        self._start("application/json", encoding)
        self.wfile.write(raw)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/v1/messages":
            self._stream(_anthropic_events())
        elif request.get("stream"):
            self._stream(_chat_events())
        else:
            encoding = self.headers.get("x-reply-encoding")
            self._json(_completion(f"{encoding}: {CANARY}"), encoding)

    def do_GET(self) -> None:
        if self.path == f"/v1/keys/{CANARY}/usage":
            self._json({"usage": {CANARY: {"tokens": 12}}})
        elif self.path == "/v1/files/report":
            self._json({"owner_key": CANARY}, "zstd")
        else:
            self._json({"legacy": CANARY}, "compress")


class Leaky:
    """The careless provider (HTTP/1.0: one connection per request, so stopping it never
    waits on a kept-alive connection)."""

    def __init__(self) -> None:
        self.requests = 0
        self._lock = threading.Lock()
        self._serving = ServerThread(_Handler)
        self._serving.server.owner = self
        self.url: str = self._serving.url
        self._serving.start()

    def count(self) -> int:
        """Count one more request; its number, from 1."""
        with self._lock:
            self.requests += 1
            return self.requests

    def stop(self) -> None:
        self._serving.stop()


@pytest.fixture
def leaky(monkeypatch: pytest.MonkeyPatch) -> Iterator[Leaky]:
    server = Leaky()
    monkeypatch.setenv("AGENT_SERVER", server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tester(
    agent_pytester: pytest.Pytester, leaky: Leaky, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    """A pytester whose SDK clients send the canary as their API key."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    return agent_pytester


AGENT_TEST = """
import json
import os

import anthropic
import httpx2
import openai
import pytest
import zstandard

KEY = os.environ["OPENAI_API_KEY"]
BASE = os.environ["AGENT_SERVER"]
USER = {"role": "user", "content": "What is my key?"}


def hidden(text):
    # What the test sees live (the key) and on replay (REDACTED) alike.
    return text.replace(KEY, "REDACTED")


@pytest.mark.agent
def test_leaky_agent(agent_context):
    with openai.OpenAI(base_url=BASE + "/v1", max_retries=0) as client:
        stream = client.chat.completions.create(
            model="gpt-4o-mini", messages=[USER], stream=True
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks)
        arguments = "".join(
            call.function.arguments or ""
            for c in chunks
            for call in c.choices[0].delta.tool_calls or ()
        )
        assert hidden(text) == "Your key is REDACTED."
        assert json.loads(hidden(arguments)) == {"key": "REDACTED"}
        # The assistant's text goes back to the model: the request matches on replay.
        history = [USER, {"role": "assistant", "content": text}]
        for encoding in ("gzip", "deflate", "br"):
            reply = client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[*history, {"role": "user", "content": encoding}],
                extra_headers={"x-reply-encoding": encoding},
            )
            assert hidden(reply.choices[0].message.content) == f"{encoding}: REDACTED"
        usage = json.loads(client.get(f"/keys/{KEY}/usage", cast_to=str))
        assert json.loads(hidden(json.dumps(usage))) == {"usage": {"REDACTED": {"tokens": 12}}}
    with anthropic.Anthropic(base_url=BASE, max_retries=0) as claude:
        with claude.messages.stream(
            model="claude-haiku-4-5", max_tokens=50, messages=[USER]
        ) as stream:
            assert hidden(stream.get_final_text()) == "Your key is REDACTED."
    with httpx2.Client(trust_env=False) as http:
        response = http.get(BASE + "/v1/files/report", headers={"accept-encoding": "zstd"})
        raw = response.content
        if response.headers.get("content-encoding") == "zstd":  # live: httpx2 leaves it
            raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
        assert json.loads(hidden(raw.decode())) == {"owner_key": "REDACTED"}
    for context in agent_context:
        assert KEY not in context.model_dump_json()
"""


def test_a_recorded_cassette_holds_no_piece_of_the_canary_and_replays(tester, leaky):
    tester.makepyfile(test_leaky=AGENT_TEST)

    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    cassette = tester.path / "cassettes" / "test_leaky" / "test_leaky_agent.json"
    written = cassette.read_text()
    leaky.stop()
    replayed = tester.runpytest()

    assert [piece for piece in [CANARY, *PIECES] if piece in written] == []
    replayed.assert_outcomes(passed=1)


def test_recording_an_unchanged_agent_again_writes_the_same_cassette(tester, leaky):
    tester.makepyfile(test_leaky=AGENT_TEST)
    cassette = tester.path / "cassettes" / "test_leaky" / "test_leaky_agent.json"

    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    first = cassette.read_text()
    tester.runpytest("--agent-record").assert_outcomes(passed=1)

    assert leaky.requests == 14
    assert cassette.read_text() == first
    assert "req_0001" not in first
    assert "openai-processing-ms" not in first


def test_a_body_that_cannot_be_decoded_fails_the_recording_and_is_never_written(tester):
    tester.makepyfile(
        test_legacy="""
        import os

        import httpx2
        import pytest

        @pytest.mark.agent
        def test_download():
            with httpx2.Client(trust_env=False) as http:
                assert http.get(os.environ["AGENT_SERVER"] + "/v1/files/legacy").status_code == 200
        """
    )

    result = tester.runpytest("--agent-record")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*CassetteWriteError: Cassette *test_download.json: the response to GET "
            "http://127.0.0.1:*/v1/files/legacy was not recorded, because its body cannot be "
            "scrubbed of secrets: content-encoding 'compress': *Accept-Encoding: gzip*"
            'then record again: pytest --agent-record "test_legacy.py::test_download"'
        ]
    )
    assert not (tester.path / "cassettes").exists()
