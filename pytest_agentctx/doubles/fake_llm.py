"""The fake model: :class:`FakeLLM` answers the SDKs' model calls at the HTTP transport.

It answers in the real wire format of whichever endpoint was called (OpenAI chat
completions or Responses, Anthropic Messages, Google Gemini, Amazon Bedrock's Converse,
ConverseStream and InvokeModel), so the real ``openai``/``anthropic``/``google-genai`` SDK
and ``boto3`` parse every reply. One script serves any
provider (see :mod:`pytest_agentctx.doubles.scripted_model`). While it is started, provider
API keys that are unset get placeholders (:data:`PLACEHOLDER_KEYS`), and a request carrying
one that the fake does not answer is refused rather than sent to a provider.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from pytest_agentctx.doubles.ids import IdFactory
from pytest_agentctx.doubles.scripted_model import (
    ScriptedAnswer,
    ScriptedModel,
    bedrock_error_type,
    google_error,
)
from pytest_agentctx.traffic.capture.exchange import Exchange
from pytest_agentctx.traffic.cassettes.body import Body
from pytest_agentctx.traffic.cassettes.network import is_loopback
from pytest_agentctx.traffic.codecs.sse import format_sse
from pytest_agentctx.traffic.roles import current_role
from pytest_agentctx.traffic.transport import Interceptor, WireRequest, make_response

#: The API keys a started :class:`FakeLLM` puts in ``os.environ`` when they are unset or
#: empty (the SDKs refuse to build a client without one), and takes out again when the last
#: started fake stops. They are no keys: a request carrying one that the fake does not
#: answer is refused rather than sent to a provider.
PLACEHOLDER_KEYS: Mapping[str, str] = {
    "OPENAI_API_KEY": "sk-agentctx-fake",
    "ANTHROPIC_API_KEY": "sk-ant-agentctx-fake",
    "GEMINI_API_KEY": "agentctx-fake-gemini-key",
    # boto3 (Bedrock) signs every request and refuses to send one without credentials.
    "AWS_ACCESS_KEY_ID": "AGENTCTXFAKEACCESSKEY",
    "AWS_SECRET_ACCESS_KEY": "agentctx-fake-aws-secret-key",
}

#: For a placeholder key, the other variables its SDK reads the same credential from: a
#: placeholder is never set beside one of them (google-genai warns when both of its keys are
#: set and uses ``GOOGLE_API_KEY``; the anthropic SDK sends both an api key and a token).
ALTERNATIVE_KEYS: Mapping[str, tuple[str, ...]] = {
    "GEMINI_API_KEY": ("GOOGLE_API_KEY",),
    "ANTHROPIC_API_KEY": ("ANTHROPIC_AUTH_TOKEN",),
    # AWS credentials go in pairs, or come from a named profile: a half-set pair or a
    # profile gets no placeholder (it would take precedence over the profile).
    "AWS_ACCESS_KEY_ID": ("AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"),
    "AWS_SECRET_ACCESS_KEY": ("AWS_ACCESS_KEY_ID", "AWS_PROFILE"),
}


def missing_keys(environ: Mapping[str, str]) -> dict[str, str]:
    """The placeholders :data:`PLACEHOLDER_KEYS` gives the keys unset or empty in
    ``environ`` whose SDK has none of its other variables (:data:`ALTERNATIVE_KEYS`) set."""
    return {
        name: value
        for name, value in PLACEHOLDER_KEYS.items()
        if not environ.get(name)
        and not any(environ.get(other) for other in ALTERNATIVE_KEYS.get(name, ()))
    }


class _PlaceholderKeys:
    """The placeholder keys in ``os.environ`` while at least one fake is started: set by
    the first start for the names that had no value, restored by the last stop (a name the
    user set meanwhile keeps the user's value)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._saved: dict[str, str | None] = {}

    def acquire(self) -> None:
        with self._lock:
            if self._users == 0:
                for name, value in missing_keys(os.environ).items():
                    self._saved[name] = os.environ.get(name)
                    os.environ[name] = value
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users > 0:
                return
            for name, before in self._saved.items():
                if os.environ.get(name) != PLACEHOLDER_KEYS[name]:
                    continue
                if before is None:
                    del os.environ[name]
                else:
                    os.environ[name] = before
            self._saved.clear()


_PLACEHOLDERS = _PlaceholderKeys()


@contextlib.contextmanager
def placeholder_keys() -> Iterator[None]:
    """While active, the provider API keys that are unset or empty hold placeholders
    (:data:`PLACEHOLDER_KEYS`), so the SDKs build their clients without a real key. For
    what never reaches a provider: a started :class:`FakeLLM`, and a cassette that replays
    only (it answers every request or fails it as a miss, and writes nothing)."""
    _PLACEHOLDERS.acquire()
    try:
        yield
    finally:
        _PLACEHOLDERS.release()


def _placeholder_in(request: WireRequest) -> str | None:
    """The name of the placeholder key a request carries (in a header or its URL), if any."""
    places = [str(request.url), *request.headers.values()]
    for name, value in PLACEHOLDER_KEYS.items():
        if any(value in place for place in places):
            return name
    return None


class FakeLLM(ScriptedModel):
    """A scripted model, answering at the HTTP transport in the real wire format.

    >>> fake = FakeLLM()
    >>> fake.reply(tool_calls=[("get_weather", {"city": "Paris"})]).reply("Sunny in Paris.")
    FakeLLM(2 scripted, 0 served)
    """

    _name = "fake_llm"

    def __init__(self, *, ids: IdFactory | None = None, placeholder_keys: bool = True) -> None:
        super().__init__(ids=ids)
        self._interceptor = Interceptor(self.handle)
        self._exchanges: list[Exchange] = []
        #: Whether :meth:`start` gives unset provider keys placeholders (the fixture passes
        #: the ini option ``agent_placeholder_keys``).
        self._placeholder_keys = placeholder_keys
        self._holds_keys = False

    @property
    def exchanges(self) -> list[Exchange]:
        """Every model call answered so far, as an exchange capture reads (the request's
        JSON body and the reply's, also for a streamed reply), in the order answered."""
        with self._lock:
            return list(self._exchanges)

    def note(self, exchange: Exchange) -> None:
        """Keep an exchange another fake of the same test answered (``fake_mcp``'s) among
        :attr:`exchanges`, in the order answered, so the test's context shows it."""
        with self._lock:
            self._exchanges.append(exchange)

    # -- serving ---------------------------------------------------------------------

    def handle(self, request: WireRequest) -> Any:
        """Answer a model call; return ``None`` for requests to other endpoints."""
        answer = (
            self.answer(request.url.path, request.content) if request.method == "POST" else None
        )
        if answer is None:
            return self._refuse_placeholder(request)
        self._log(request, answer)
        if answer.status != 200:
            return _error_response(
                answer.status, answer.error or "scripted failure", answer.codec.name
            )
        if answer.eventstream:
            # Bedrock's streams are AWS event-stream messages, one per chunk as it sends them.
            from pytest_agentctx.traffic.codecs.eventstream import encode_message

            return make_response(
                200,
                chunks=[encode_message(message) for message in answer.event_messages()],
                headers={"content-type": "application/vnd.amazon.eventstream"},
            )
        frame_ndjson = getattr(answer.codec, "format_ndjson", None)
        if answer.request is not None and answer.request.stream and frame_ndjson is not None:
            # Ollama streams NDJSON (one JSON object per line), not server-sent events.
            return make_response(
                200,
                chunks=[frame_ndjson([chunk]) for chunk in answer.stream_events()],
                headers={"content-type": "application/x-ndjson"},
            )
        if answer.request is not None and answer.request.stream:
            array = _array_stream(str(request.url), answer)
            if array is not None:
                return make_response(
                    200, chunks=array, headers={"content-type": "application/json; charset=UTF-8"}
                )
            # A client that asked for a stream reads server-sent events; JSON would reach
            # it as an empty stream.
            return make_response(
                200,
                chunks=[format_sse([event]) for event in answer.stream_events()],
                headers={"content-type": "text/event-stream; charset=utf-8"},
            )
        return make_response(
            200,
            content=json.dumps(answer.response, ensure_ascii=False).encode(),
            headers={"content-type": "application/json"},
        )

    def _refuse_placeholder(self, request: WireRequest) -> Any:
        """A request the fake does not answer goes its way, unless it carries a placeholder
        key to a host that is not loopback: a provider would only reject it, and a recorder
        would keep the rejection."""
        name = _placeholder_in(request)
        if name is None or is_loopback(request.url.host):
            return None
        return _error_response(
            401,
            f"pytest-agentctx {self._name} answers model calls only (chat completions, "
            "Responses, Anthropic Messages, Gemini, Bedrock); this "
            f"{request.method} {request.url.path} to {request.url.host} carries the "
            f"placeholder {name} the fake set, so it was not sent. Answer it in the test "
            "(respx, a fake client), or set a real key and record it in a cassette without "
            "the fake.",
        )

    def _log(self, request: WireRequest, answer: ScriptedAnswer) -> None:
        """Keep the exchange (cheap: the bodies are the objects already at hand)."""
        if answer.request is not None:
            sent: Body = {"json": answer.body}
        else:
            sent = {"text": bytes(request.content).decode("utf-8", "replace")}
        reply: Body = (
            {"json": answer.response}
            if answer.status == 200
            else {
                "json": _error_body(
                    answer.error or "scripted failure", answer.status, answer.codec.name
                )
            }
        )
        exchange = Exchange(
            "POST", str(request.url), answer.status, sent, reply, "fake_llm", current_role()
        )
        with self._lock:
            self._exchanges.append(exchange)

    # -- installation ----------------------------------------------------------------

    def start(self) -> None:
        """Answer model calls from now on.

        Provider API keys that are unset get a placeholder (:data:`PLACEHOLDER_KEYS`) until
        :meth:`stop`, so the SDKs build their clients without a real key (not with
        ``placeholder_keys=False``).
        """
        self._interceptor.start()
        if self._placeholder_keys and not self._holds_keys:
            _PLACEHOLDERS.acquire()
            self._holds_keys = True

    def stop(self) -> None:
        """Stop answering model calls, and take out the placeholder keys :meth:`start` set."""
        self._interceptor.stop()
        if self._holds_keys:
            self._holds_keys = False
            _PLACEHOLDERS.release()

    def verify(self) -> None:
        """Raise for a request no concurrent run owned while the fake was active (made in a
        thread without a run's context: :class:`~pytest_agentctx.UnscopedRequest`, even if
        the client swallowed it), then as :meth:`ScriptedModel.verify` does."""
        if self._interceptor.refused:
            raise self._interceptor.refused[0]
        super().verify()

    def __enter__(self) -> FakeLLM:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"FakeLLM({len(self._script)} scripted, {len(self.calls)} served)"


def _array_stream(url: str, answer: ScriptedAnswer) -> list[bytes] | None:
    """The chunks of the JSON array a Gemini stream asked for without ``alt=sse`` (as the
    API answers it), else ``None`` (server-sent events)."""
    if answer.codec.name != "gemini":
        return None
    from pytest_agentctx.traffic.codecs import gemini

    if not gemini.is_array_stream(url):
        return None
    return gemini.array_chunks(answer.stream_events())


def _error_body(message: str, status: int = 500, wire_format: str = "") -> dict[str, object]:
    if wire_format == "gemini":
        return google_error(status, message)
    if wire_format == "bedrock":
        return {"message": message}
    return {"error": {"type": "fake_llm_error", "message": message}, "type": "error"}


def _error_response(status: int, message: str, wire_format: str = "") -> Any:
    headers = {"content-type": "application/json", "x-should-retry": "false"}
    if wire_format == "bedrock":
        # botocore reads the error's code from this header and raises its ClientError.
        headers["x-amzn-errortype"] = bedrock_error_type(status)
    return make_response(
        status,
        content=json.dumps(_error_body(message, status, wire_format)).encode(),
        headers=headers,
    )
