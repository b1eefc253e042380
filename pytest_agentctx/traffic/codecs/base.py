"""Types shared by the codecs, and the lookup of a codec by name or URL path."""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_agentctx.context.model import INVALID_ARGUMENTS_KEY, ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.errors import CodecError

__all__ = [
    "Codec",
    "Completion",
    "DecodedRequest",
    "Usage",
    "codec_for_path",
    "get_codec",
    "parse_arguments",
]


@dataclass(frozen=True)
class Usage:
    """Token usage of one model call."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True)
class Completion:
    """A model's reply, whatever the wire format: text, tool calls, usage, model."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    model: str | None = None
    usage: Usage | None = None
    stop_reason: str | None = None
    response_id: str | None = None
    #: Provider reasoning items returned with the reply, verbatim (see Message.reasoning).
    reasoning: tuple[dict[str, Any], ...] = ()
    #: Tools the provider ran itself while making the reply (web search, code execution),
    #: in order, each ``{"id": ..., "name": ..., "input": {...}}`` (``id`` when the provider
    #: gives one). No tool result of the client answers them: they are no tool calls.
    server_tools: tuple[dict[str, Any], ...] = ()

    def metadata(self) -> dict[str, Any]:
        """What the runtime records in the iteration's metadata for this call."""
        data: dict[str, Any] = {"model": self.model, "stop_reason": self.stop_reason}
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        if self.server_tools:
            data["server_tools"] = [dict(tool) for tool in self.server_tools]
        return data


@dataclass(frozen=True)
class DecodedRequest:
    """A request body read back into provider-neutral form."""

    model: str | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    stream: bool = False


class Codec(Protocol):
    """The four functions every wire-format module provides."""

    name: str

    def encode_request(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> dict[str, Any]: ...

    def decode_request(self, body: Mapping[str, Any]) -> DecodedRequest: ...

    def decode_response(self, body: Mapping[str, Any]) -> Completion: ...

    def encode_response(
        self, completion: Completion, *, response_id: str, created: int = 0
    ) -> dict[str, Any]: ...


_CODECS = {
    "openai_chat": "pytest_agentctx.traffic.codecs.openai_chat",
    "anthropic_messages": "pytest_agentctx.traffic.codecs.anthropic_messages",
    "openai_responses": "pytest_agentctx.traffic.codecs.openai_responses",
    "gemini": "pytest_agentctx.traffic.codecs.gemini",
}

# The endpoints of each wire format: (a regular expression that the end of a URL's path
# must match, the codec's name). Any prefix may come before it: ``/v1``, a gateway's
# ``/proxy/openai``, Azure's ``/openai`` or ``/openai/deployments/<name>``; the query
# (``?api-version=...``) is not part of the path. Only the last segments count, so the
# endpoints beside a model endpoint stay out: ``/v1/responses/<id>`` (retrieval),
# ``.../input_items``, ``.../cancel``, ``/v1/responses/input_tokens``,
# ``/v1/messages/count_tokens``, ``/v1/messages/batches``. Anthropic needs its ``/v1``:
# the SDK always posts to ``/v1/messages``, and a bare ``/messages`` would claim OpenAI's
# Assistants endpoint ``/v1/threads/<id>/messages``. A new wire format adds its rows here.
_PATHS: tuple[tuple[str, str], ...] = (
    (r"/chat/completions", "openai_chat"),
    (r"/responses", "openai_responses"),
    (r"/v1/messages", "anthropic_messages"),
    # Anthropic on Vertex AI: the model is in the path, the body is a Messages body.
    (
        r"/publishers/anthropic/models/(?!count-tokens:)[^/:]+:(?:rawPredict|streamRawPredict)",
        "anthropic_messages",
    ),
    # Google Gemini: .../models/<model>:generateContent on /v1beta, /v1, Vertex AI
    # (.../publishers/google/models/<model>, .../endpoints/<id>) and tuned models; a
    # stream is :streamGenerateContent?alt=sse.
    (":generateContent", "gemini"),
    (":streamGenerateContent", "gemini"),
)
#: The patterns of ``_PATHS``, compiled to match the end of a path.
_ENDPOINTS = tuple((re.compile(f"(?:{pattern})$"), name) for pattern, name in _PATHS)


def get_codec(name: str) -> Codec:
    """The codec module called ``name`` (``openai_chat`` or ``anthropic_messages``)."""
    try:
        module_name = _CODECS[name]
    except KeyError:
        raise CodecError(f"No codec called {name!r}; the codecs are {sorted(_CODECS)}.") from None
    module: Codec = importlib.import_module(module_name)
    return module


def codec_for_path(path: str) -> Codec | None:
    """The codec whose endpoint ``path`` is, or ``None`` for other endpoints.

    ``path`` is a URL's path; a query or fragment after it (``?api-version=...``) is
    ignored, and so is a trailing slash.
    """
    trimmed = path.partition("?")[0].partition("#")[0].rstrip("/")
    for pattern, name in _ENDPOINTS:
        if pattern.search(trimmed):
            return get_codec(name)
    return None


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict; invalid JSON is kept under ``INVALID_ARGUMENTS_KEY``."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return {INVALID_ARGUMENTS_KEY: raw}
        if isinstance(value, dict):
            return value
    return {INVALID_ARGUMENTS_KEY: raw if isinstance(raw, str) else json.dumps(raw)}


def require(body: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``body[key]`` if it has the expected type, else a :class:`CodecError`."""
    if not isinstance(body, Mapping):
        raise CodecError(f"{where}: expected a JSON object, got {type(body).__name__}.")
    if key not in body:
        raise CodecError(
            f"{where}: the JSON has no {key!r} field (it has {sorted(body)}). Is this "
            "really a response of this wire format?"
        )
    value = body[key]
    if not isinstance(value, kind):
        raise CodecError(
            f"{where}: field {key!r} is a {type(value).__name__}, expected "
            f"{getattr(kind, '__name__', kind)}."
        )
    return value
