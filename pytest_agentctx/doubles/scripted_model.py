"""A script of model replies, and the answers it gives in each provider's wire format.

:class:`ScriptedModel` is the part the two scripted models share:
:class:`~pytest_agentctx.doubles.fake_llm.FakeLLM` (answering at the HTTP transport) and
:class:`~pytest_agentctx.doubles.loopback.LoopbackProvider` (answering on a socket). It is
scripted with ``reply``, ``reply_tool_call`` and ``fail``, logs every call it answers
(:class:`FakeModelCall`), checks with ``verify`` that the script was used up exactly, and
turns a request body into the next scripted reply (:class:`ScriptedReply`) in the wire
format of the endpoint called (:class:`ScriptedAnswer`): OpenAI chat completions or
Responses, Anthropic Messages, Google Gemini, Amazon Bedrock (Converse, and InvokeModel with
an Anthropic Messages body), as one JSON response or as stream events (server-sent events,
or AWS event-stream messages for Bedrock's streaming endpoints).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.doubles.errors import FakeLLMError, UnexpectedModelCall, UnusedScriptedReplies
from pytest_agentctx.doubles.ids import IdFactory, SequentialIds
from pytest_agentctx.doubles.scripted_usage import scripted_usage
from pytest_agentctx.traffic.codecs import openai_chat
from pytest_agentctx.traffic.codecs.base import (
    Codec,
    Completion,
    DecodedRequest,
    Usage,
    codec_for_path,
    get_codec,
)
from pytest_agentctx.traffic.codecs.sse import SSEEvent
from pytest_agentctx.traffic.errors import CodecError

if TYPE_CHECKING:
    from pytest_agentctx.traffic.codecs.eventstream import EventMessage

_ID_PREFIX = {
    "openai_chat": ("call", "chatcmpl"),
    "anthropic_messages": ("toolu", "msg"),
    "bedrock": ("tooluse", "msg"),
}

ToolCallSpec = ToolCall | Mapping[str, Any] | tuple[str, Mapping[str, Any]]


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate: one token per four characters, at least one."""
    return max(1, math.ceil(len(text) / 4))


@dataclass(frozen=True)
class _ScriptedCall:
    name: str
    arguments: dict[str, object]
    id: str | None = None


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted model reply: text, tool calls, or an HTTP error."""

    content: str | None = None
    tool_calls: tuple[_ScriptedCall, ...] = ()
    usage: Usage | None = None
    model: str | None = None
    status: int = 200
    error: str | None = None

    def describe(self) -> str:
        if self.status != 200:
            return f"error {self.status}: {self.error!r}"
        parts = []
        if self.content is not None:
            parts.append(f"text {self.content[:50]!r}")
        for call in self.tool_calls:
            parts.append(f"tool call {call.name}({json.dumps(call.arguments, sort_keys=True)})")
        return ", ".join(parts) or "an empty reply"


@dataclass(frozen=True)
class FakeModelCall:
    """A model call the fake answered: the endpoint, the request and the reply served."""

    path: str
    wire_format: str
    body: dict[str, Any]
    request: DecodedRequest
    reply: ScriptedReply | None
    response: dict[str, Any] | None


@dataclass(frozen=True)
class ScriptedAnswer:
    """A scripted model's answer to one model call, before a transport sends it.

    Status 200 carries the ``completion`` and its wire-format ``response`` JSON; an error
    status carries the ``error`` message. ``body`` and ``request`` (the request JSON, and
    it decoded) are ``None`` when the request could not be read.
    """

    status: int
    codec: Codec
    body: object
    request: DecodedRequest | None
    completion: Completion | None = None
    response: dict[str, object] | None = None
    error: str | None = None
    #: The endpoint's path (Bedrock's says whether the body is Converse or InvokeModel's).
    path: str = field(default="", compare=False)

    @property
    def eventstream(self) -> bool:
        """Whether the answer goes as AWS event-stream messages (``event_messages``):
        Bedrock's ``converse-stream`` and ``invoke-with-response-stream``."""
        return self.codec.name == "bedrock" and self.request is not None and self.request.stream

    def event_messages(self) -> list[EventMessage]:
        """A 200 answer of Bedrock's streaming endpoints as the event-stream messages Bedrock
        sends: ConverseStream's events, or InvokeModelWithResponseStream's ``chunk`` events,
        each carrying one Anthropic Messages stream event (base64 JSON in ``bytes``)."""
        from pytest_agentctx.traffic.codecs import bedrock

        completion = self.completion
        if completion is None:
            raise FakeLLMError(f"a {self.status} answer has no reply to stream")
        response_id = completion.response_id or ""
        if bedrock.is_invoke_path(self.path):
            return bedrock.encode_invoke_stream(completion, response_id=response_id)
        return bedrock.encode_stream(completion, response_id=response_id)

    def stream_events(self) -> list[SSEEvent]:
        """A 200 answer as the events of its endpoint's stream (for ``stream: true``).

        OpenAI streams end with a usage chunk when the request's
        ``stream_options.include_usage`` asks for one.
        """
        completion = self.completion
        if completion is None:
            raise FakeLLMError(f"a {self.status} answer has no reply to stream")
        response_id = completion.response_id or ""
        if self.codec.name == openai_chat.name:
            options = self.body.get("stream_options") if isinstance(self.body, Mapping) else None
            include_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
            return openai_chat.encode_stream(
                completion, response_id=response_id, include_usage=include_usage
            )
        # Every other wire format streams with its own codec's events (Anthropic Messages,
        # OpenAI Responses...): never fall back to another format's chunks.
        encode_stream = getattr(self.codec, "encode_stream", None)
        if encode_stream is None:
            raise FakeLLMError(f"the {self.codec.name} wire format has no stream encoder")
        events: list[SSEEvent] = encode_stream(completion, response_id=response_id)
        return events


def _scripted_call(spec: ToolCallSpec, owner: str = "fake_llm") -> _ScriptedCall:
    if isinstance(spec, ToolCall):
        return _ScriptedCall(spec.name, dict(spec.arguments), spec.id or None)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        return _ScriptedCall(spec[0], dict(spec[1]))
    if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
        return _ScriptedCall(spec["name"], dict(spec.get("arguments") or {}), spec.get("id"))
    raise FakeLLMError(
        f"{owner}.reply(tool_calls=...): cannot read {spec!r} as a tool call. Give a "
        "ToolCall, a ('name', {arguments}) pair or {'name': ..., 'arguments': {...}}."
    )


class ScriptedModel:
    """A script of model replies, and the answers it gives, whatever carries them.

    The shared part of :class:`FakeLLM` (answering at the transport) and
    :class:`~pytest_agentctx.doubles.loopback.LoopbackProvider` (answering on a socket): the
    scripting methods, the log of calls, :meth:`verify`, and :meth:`answer`, which turns
    a request body into the next scripted reply in the endpoint's wire format. Safe to
    call from several threads.
    """

    #: How messages name the object (``fake_llm.reply(...)``).
    _name: ClassVar[str] = "model"

    def __init__(self, *, ids: IdFactory | None = None) -> None:
        self._ids = ids or SequentialIds()
        self._script: list[ScriptedReply] = []
        self._position = 0
        self._lock = threading.Lock()
        self.calls: list[FakeModelCall] = []
        self.unexpected: list[FakeModelCall] = []

    # -- scripting -------------------------------------------------------------------

    def reply(
        self,
        content: str | None = None,
        *,
        tool_calls: Iterable[ToolCallSpec] = (),
        usage: Usage | Mapping[str, int | str | None] | None = None,
        model: str | None = None,
    ) -> Self:
        """Script the next reply: text, tool calls, or both. Returns the fake, to chain.

        ``usage`` is what the reply reports, with the keys of ``metadata["usage"]``
        (:data:`~pytest_agentctx.doubles.scripted_usage.USAGE_KEYS`: ``input_tokens``,
        ``output_tokens``, the cache and reasoning figures, ``service_tier``); without it
        the counts are estimated from the text."""
        calls = tuple(_scripted_call(spec, self._name) for spec in tool_calls)
        if content is None and not calls:
            raise FakeLLMError(
                f"{self._name}.reply() needs content, tool_calls or both; an empty reply "
                "would leave the agent with nothing to do. Example: "
                f"{self._name}.reply('Done.')."
            )
        if isinstance(usage, Mapping):
            usage = scripted_usage(usage, self._name)
        self._script.append(ScriptedReply(content, calls, usage, model))
        return self

    def reply_tool_call(self, name: str, /, **arguments: object) -> Self:
        """Script a reply that calls one tool: ``reply_tool_call("get_weather", city="Paris")``."""
        return self.reply(tool_calls=[(name, arguments)])

    def fail(self, status: int = 500, message: str = "scripted failure") -> Self:
        """Script an HTTP error reply (not retried by the SDKs)."""
        if not 400 <= status <= 599:
            raise FakeLLMError(
                f"{self._name}.fail(status={status}) needs an HTTP error status from 400 to 599."
            )
        self._script.append(ScriptedReply(status=status, error=message))
        return self

    # -- state -----------------------------------------------------------------------

    @property
    def remaining(self) -> list[ScriptedReply]:
        """The scripted replies no call has consumed yet."""
        return self._script[self._position :]

    @property
    def requests(self) -> list[DecodedRequest]:
        """Every model request answered so far, decoded into neutral form."""
        return [call.request for call in self.calls]

    def verify(self) -> None:
        """Raise if the agent made more calls than scripted, or left replies unused."""
        if self.unexpected:
            first = self.unexpected[0]
            raise UnexpectedModelCall(
                f"{self._name}: the agent made {len(self.calls) + len(self.unexpected)} model "
                f"calls but only {len(self._script)} replies were scripted. The first "
                f"unscripted call went to {first.path} with "
                f"{len(first.request.messages)} messages, the last: "
                f"{_last_message(first.request)}. Script another reply with "
                f"{self._name}.reply(...), or find why the agent did not stop."
            )
        if self.remaining:
            listed = "; ".join(
                f"#{self._position + i + 1}: {reply.describe()}"
                for i, reply in enumerate(self.remaining)
            )
            raise UnusedScriptedReplies(
                f"{self._name}: {len(self.remaining)} of {len(self._script)} scripted replies "
                f"were never used ({listed}). The agent stopped earlier than the script "
                "expects: remove those replies or check why the agent ended."
            )

    # -- answering -------------------------------------------------------------------

    def answer(self, path: str, content: bytes) -> ScriptedAnswer | None:
        """Answer a model call to ``path`` with body ``content``: the next scripted reply.

        Returns ``None`` when ``path`` is no model endpoint. A body that cannot be read,
        and a call beyond the script, get a 400 answer (and the latter is logged in
        :attr:`unexpected`).
        """
        codec = codec_for_path(path)
        if codec is None:
            return None
        try:
            body = json.loads(content or b"{}")
            decoded = _decode_request(codec, path, body)
        except (ValueError, CodecError) as exc:
            return ScriptedAnswer(
                400,
                codec,
                None,
                None,
                error=f"pytest-agentctx {self._name} could not read the request: {exc}",
                path=path,
            )
        with self._lock:
            if self._position >= len(self._script):
                self.unexpected.append(FakeModelCall(path, codec.name, body, decoded, None, None))
                return ScriptedAnswer(
                    400,
                    codec,
                    body,
                    decoded,
                    error=f"pytest-agentctx {self._name}: model call "
                    f"#{len(self.calls) + len(self.unexpected)} was not scripted (only "
                    f"{len(self._script)} replies were). Script another reply with "
                    f"{self._name}.reply(...).",
                    path=path,
                )
            reply = self._script[self._position]
            self._position += 1
            if reply.status != 200:
                self.calls.append(FakeModelCall(path, codec.name, body, decoded, reply, None))
                return ScriptedAnswer(
                    reply.status,
                    codec,
                    body,
                    decoded,
                    error=reply.error or "scripted failure",
                    path=path,
                )
            reply_codec = _reply_codec(codec, path)
            completion = self._completion(reply_codec, reply, decoded, body)
            response = reply_codec.encode_response(
                completion, response_id=completion.response_id or ""
            )
            self.calls.append(FakeModelCall(path, codec.name, body, decoded, reply, response))
            return ScriptedAnswer(200, codec, body, decoded, completion, response, path=path)

    def _completion(
        self,
        codec: Codec,
        reply: ScriptedReply,
        decoded: DecodedRequest,
        body: Mapping[str, object],
    ) -> Completion:
        call_prefix, response_prefix = _ID_PREFIX.get(codec.name, ("call", "resp"))
        # A format whose calls come without ids (Gemini) gets its codec's synthetic ones,
        # which it leaves out of the reply, as the real API does.
        synthetic = getattr(codec, "synthetic_call_id", None)
        turns = getattr(codec, "model_turns", None)  # the ids count the model's turns
        turn = {"turn": turns(body.get("contents"))} if turns is not None else {}
        calls = tuple(
            ToolCall(
                id=call.id
                or (
                    synthetic(call.name, call.arguments, index, **turn)
                    if synthetic is not None
                    else self._ids(call_prefix)
                ),
                name=call.name,
                arguments=call.arguments,
            )
            for index, call in enumerate(reply.tool_calls)
        )
        usage = reply.usage or Usage(
            input_tokens=estimate_tokens(_prompt_text(body, decoded)),
            output_tokens=estimate_tokens(
                (reply.content or "") + "".join(c.arguments_json for c in calls)
            ),
        )
        return Completion(
            content=reply.content,
            tool_calls=calls,
            model=reply.model or decoded.model,
            usage=usage,
            response_id=self._ids(response_prefix),
        )


def _decode_request(codec: Codec, path: str, body: Any) -> DecodedRequest:
    """The request ``body`` sent to ``path`` in neutral form: Gemini and Bedrock name the
    model, and whether it streams, in the URL (Bedrock's InvokeModel: the body of an
    Anthropic model only, else a :class:`CodecError`)."""
    decode_at = getattr(codec, "decode_request_at", None)
    if decode_at is not None:
        at_path: DecodedRequest = decode_at(path, body)
        return at_path
    decoded = codec.decode_request(body)
    for_path = getattr(codec, "request_for_path", None)
    if for_path is not None:
        decoded = for_path(path, decoded)
    return decoded


def _reply_codec(codec: Codec, path: str) -> Codec:
    """The codec of the reply's body: Bedrock's InvokeModel answers in the format of the
    request's body, Anthropic Messages (the only one :func:`_decode_request` lets by)."""
    is_invoke = getattr(codec, "is_invoke_path", None)
    if is_invoke is not None and is_invoke(path):
        return get_codec("anthropic_messages")
    return codec


def _prompt_text(body: Mapping[str, object], decoded: DecodedRequest) -> str:
    """What the input-token estimate counts: the messages, and a separate system prompt
    (Anthropic's ``system``, the Responses API's ``instructions``, whose messages are its
    ``input``)."""
    parts: list[object] = [body.get("messages") or decoded.messages]
    for key in ("system", "instructions"):
        if body.get(key):
            parts.append(body[key])
    messages: object = parts[0] if len(parts) == 1 else parts
    return json.dumps(messages, sort_keys=True)


def _last_message(request: DecodedRequest) -> str:
    if not request.messages:
        return "none"
    last = request.messages[-1]
    return f"{last.get('role')} {str(last.get('content'))[:60]!r}"


#: The status names of Google's errors (``google.rpc.Code``) by HTTP status.
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def google_error(status: int, message: str) -> dict[str, object]:
    """An error body as Google's APIs send it (what the ``google-genai`` SDK reads)."""
    kind = _GOOGLE_STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return {"error": {"code": status, "message": message, "status": kind}}


#: The exception Bedrock names (``x-amzn-ErrorType``) for an HTTP status.
_BEDROCK_ERRORS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def bedrock_error_type(status: int) -> str:
    """The ``x-amzn-ErrorType`` Bedrock sends with an error of ``status`` (botocore raises
    a ``ClientError`` with that code and the body's ``message``)."""
    default = "InternalServerException" if status >= 500 else "ValidationException"
    return _BEDROCK_ERRORS.get(status, default)


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def wire_error(wire: str, status: int, message: str) -> dict[str, object]:
    """An error body as the API called sends it: ``wire`` is ``openai``, ``anthropic``,
    ``gemini`` or ``bedrock`` (Bedrock's code goes in a header: :func:`bedrock_error_type`)."""
    if wire == "anthropic":
        kind = _ANTHROPIC_ERROR_TYPES.get(
            status, "api_error" if status >= 500 else "invalid_request_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}
    if wire == "gemini":
        return google_error(status, message)
    if wire == "bedrock":
        return {"message": message}
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
