"""Types shared by the codecs (:class:`Completion`, :class:`Usage`, :class:`DecodedRequest`,
the :class:`Codec` protocol), the lookup of a codec by name or URL path, and the helpers that
read provider JSON.

Provider JSON is untrusted (recorded, or from any server): the codecs read it as
``Mapping[str, object]`` and narrow each value they use. :func:`fields` and :func:`each`
read a nested object or array the way ``value.get(...)`` and ``for item in value or []``
do, failing on the same shapes with the same errors.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypedDict

from pytest_agentctx.context.model import INVALID_ARGUMENTS_KEY, ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.errors import CodecError


class NeutralCall(TypedDict):
    """A tool call of a decoded request's assistant message."""

    id: object
    name: object
    arguments: dict[str, object]


class NeutralMessage(TypedDict, total=False):
    """A message of a decoded request, in provider-neutral form (the keys of
    :meth:`~pytest_agentctx.context.model.Message.to_dict`). Values read from the request
    JSON are passed on as they are: the context's models validate them."""

    role: object
    content: object
    tool_calls: list[NeutralCall]
    tool_call_id: object
    name: object
    is_error: bool
    reasoning: list[dict[str, object]]


class NeutralTool(TypedDict):
    """A tool declared in a decoded request."""

    name: object
    description: object
    parameters: object


#: The standard tiers the providers name in ``service_tier`` (OpenAI and Bedrock
#: ``default``, Anthropic and Gemini ``standard``, Groq ``on_demand``): a call served at the
#: standard price records no tier.
STANDARD_TIERS = frozenset({"default", "standard", "on_demand"})

#: The keys of the cache and reasoning breakdown in ``metadata["usage"]``, in order.
BREAKDOWN_KEYS = (
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "reasoning_tokens",
    "service_tier",
)


@dataclass(frozen=True)
class Usage:
    """Token usage of one model call.

    ``input_tokens`` counts every input token of the call, the ones read from or written to
    the prompt cache included, whatever the provider calls its fields (Anthropic and Bedrock
    report the cached ones apart; the codecs add them up). Of those:

    - ``cache_read_tokens`` were read from the prompt cache (billed at the cache-hit price),
    - ``cache_write_tokens`` were written to it (Anthropic, Bedrock), of which
      ``cache_write_1h_tokens`` with Anthropic's one-hour lifetime,
    - the rest, :attr:`uncached_input_tokens`, at the plain input price.

    ``output_tokens`` counts every output token, thinking included; ``reasoning_tokens`` is
    the part of it spent thinking (OpenAI's ``reasoning_tokens``, Gemini's
    ``thoughtsTokenCount``), billed as output. ``service_tier`` is the tier the provider
    says it served the call at, ``None`` for its standard tier.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    reasoning_tokens: int = 0
    service_tier: str | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """The input tokens neither read from nor written to the prompt cache."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)

    @property
    def total_input_tokens(self) -> int:
        """Uncached, cache-read and cache-written input tokens: ``input_tokens`` whenever the
        provider's figures add up."""
        return self.uncached_input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def breakdown(self) -> dict[str, int | str]:
        """The cache and reasoning figures the provider reported (the keys of
        :data:`BREAKDOWN_KEYS` with a non-zero value or a tier; ``uncached_input_tokens``
        whenever a cache figure is there); empty for a call without any."""
        data: dict[str, int | str] = {}
        if self.cache_read_tokens or self.cache_write_tokens:
            data["uncached_input_tokens"] = self.uncached_input_tokens
        figures = {
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_write_1h_tokens": self.cache_write_1h_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }
        data.update({key: value for key, value in figures.items() if value})
        if self.service_tier is not None:
            data["service_tier"] = self.service_tier
        return data

    def to_dict(self) -> dict[str, int | str]:
        """``metadata["usage"]``: the input, output and total counts, then
        :meth:`breakdown`."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            **self.breakdown(),
        }


def tier_or_none(value: object) -> str | None:
    """A provider's ``service_tier``: the string, ``None`` for a standard tier or none."""
    if isinstance(value, str) and value and value not in STANDARD_TIERS:
        return value
    return None


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
    reasoning: tuple[Mapping[str, object], ...] = ()
    #: Tools the provider ran itself while making the reply (web search, code execution),
    #: in order, each ``{"id": ..., "name": ..., "input": {...}}`` (``id`` when the provider
    #: gives one). No tool result of the client answers them: they are no tool calls.
    server_tools: tuple[Mapping[str, object], ...] = ()

    def metadata(self) -> dict[str, object]:
        """What the runtime records in the iteration's metadata for this call."""
        data: dict[str, object] = {"model": self.model, "stop_reason": self.stop_reason}
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        if self.server_tools:
            data["server_tools"] = [dict(tool) for tool in self.server_tools]
        return data


@dataclass(frozen=True)
class DecodedRequest:
    """A request body read back into provider-neutral form."""

    model: str | None
    messages: list[NeutralMessage]
    tools: list[NeutralTool] = field(default_factory=list)
    stream: bool = False


class Codec(Protocol):
    """The four functions every wire-format module provides."""

    name: str

    def encode_request(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, object]],
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> dict[str, object]: ...

    def decode_request(self, body: Mapping[str, object]) -> DecodedRequest: ...

    def decode_response(self, body: Mapping[str, object]) -> Completion: ...

    def encode_response(
        self, completion: Completion, *, response_id: str, created: int = 0
    ) -> dict[str, object]: ...


_CODECS = {
    "openai_chat": "pytest_agentctx.traffic.codecs.openai_chat",
    "anthropic_messages": "pytest_agentctx.traffic.codecs.anthropic_messages",
    "openai_responses": "pytest_agentctx.traffic.codecs.openai_responses",
    "gemini": "pytest_agentctx.traffic.codecs.gemini",
    "cohere_chat": "pytest_agentctx.traffic.codecs.cohere_chat",
    "ollama_chat": "pytest_agentctx.traffic.codecs.ollama_chat",
    "bedrock": "pytest_agentctx.traffic.codecs.bedrock",
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
    # Cohere v2 chat (the v1 ``/v1/chat`` is another format, not read); Cohere on Azure
    # and other hosts serves the same body under ``/v2/chat``.
    (r"/v2/chat", "cohere_chat"),
    # Ollama's native chat (its OpenAI-compatible ``/v1/chat/completions`` is openai_chat).
    # Many web apps have an ``/api/chat`` of their own: the codec refuses a body without a
    # ``model`` string and a ``messages`` list, so capture keeps those as non-LLM.
    (r"/api/chat", "ollama_chat"),
    # AWS Bedrock runtime: /model/<model id, percent-encoded>/<operation>.
    (r"/model/[^/]+/(?:converse|converse-stream|invoke|invoke-with-response-stream)", "bedrock"),
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


def parse_arguments(raw: object) -> dict[str, object]:
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


def require(body: object, key: str, kind: type | tuple[type, ...], where: str) -> object:
    """``body[key]`` if it has the expected type, else a :class:`CodecError`."""
    if not isinstance(body, Mapping):
        raise CodecError(f"{where}: expected a JSON object, got {type(body).__name__}.")
    if key not in body:
        raise CodecError(
            f"{where}: the JSON has no {key!r} field (it has {sorted(body)}). Is this "
            "really a response of this wire format?"
        )
    value: object = body[key]
    if not isinstance(value, kind):
        raise CodecError(
            f"{where}: field {key!r} is a {type(value).__name__}, expected "
            f"{getattr(kind, '__name__', kind)}."
        )
    return value


def require_list(body: object, key: str, where: str) -> list[object]:
    """``body[key]``, a JSON array, else a :class:`CodecError` (see :func:`require`)."""
    value = require(body, key, list, where)
    assert isinstance(value, list)
    return value


def require_object(body: object, key: str, where: str) -> Mapping[str, object]:
    """``body[key]``, a JSON object, else a :class:`CodecError` (see :func:`require`)."""
    value = require(body, key, Mapping, where)
    assert isinstance(value, Mapping)
    return value


def require_int(body: object, key: str, where: str) -> int:
    """``body[key]``, an integer, else a :class:`CodecError` (see :func:`require`)."""
    value = require(body, key, int, where)
    assert isinstance(value, int)
    return value


def fields(value: object) -> Mapping[str, object]:
    """``value``, a JSON object, to read with ``.get``; anything else raises the
    ``AttributeError`` that ``value.get(...)`` raises."""
    if isinstance(value, Mapping):
        return value
    raise AttributeError(f"{type(value).__name__!r} object has no attribute 'get'")


def each(value: object) -> Iterable[object]:
    """The items of ``value or []``: a JSON array (or any iterable), nothing for a missing or
    empty value; anything else raises the ``TypeError`` that iterating it raises."""
    if not value:
        return ()
    if isinstance(value, Iterable):
        return value
    raise TypeError(f"{type(value).__name__!r} object is not iterable")


def text_or_none(value: object) -> str | None:
    """``value`` if it is a string, else ``None``."""
    return value if isinstance(value, str) else None


def member(data: object, key: str) -> object:
    """``data[key]`` of a JSON object: a ``KeyError`` when it is missing, a ``TypeError``
    when ``data`` is no object, as indexing raises."""
    if isinstance(data, Mapping):
        value: object = data[key]
        return value
    raise TypeError(f"{type(data).__name__!r} object is not subscriptable")


def as_int(value: object) -> int:
    """``int(value)`` of a JSON number or string, with the ``TypeError`` it raises for
    anything else."""
    if isinstance(value, (int, float, str, bytes)):
        return int(value)
    raise TypeError(f"int() argument must be a string or a number, not {type(value).__name__!r}")


def token_count(value: object) -> int:
    """A token count of a usage object, read as ``int(value or 0)``."""
    return as_int(value) if value else 0


def nested_count(data: Mapping[str, object], key: str, name: str) -> int:
    """The token count ``data[key][name]`` of a usage object's details (OpenAI's
    ``prompt_tokens_details.cached_tokens``), 0 when either is missing or no object."""
    inner = data.get(key)
    return token_count(inner.get(name)) if isinstance(inner, Mapping) else 0


def join_texts(texts: Iterable[object], separator: str = "") -> str:
    """``separator.join(texts)``, with the ``TypeError`` it raises for an item that is no
    string."""
    joined: list[str] = []
    for number, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(
                f"sequence item {number}: expected str instance, {type(text).__name__} found"
            )
        joined.append(text)
    return separator.join(joined)


def concat_text(left: object, right: object) -> str:
    """``left + right`` of two strings, with the ``TypeError`` it raises for anything else."""
    if not isinstance(left, str):
        raise TypeError(f"unsupported operand type(s) for +: {type(left).__name__!r} and str")
    if not isinstance(right, str):
        raise TypeError(f'can only concatenate str (not "{type(right).__name__}") to str')
    return left + right


def first(value: object) -> object:
    """``value[0]`` of a JSON value, with the errors indexing it raises (a ``KeyError`` for
    an object, a ``TypeError`` for a number)."""
    if isinstance(value, (list, tuple, str)):
        item: object = value[0]
        return item
    if isinstance(value, Mapping):
        raise KeyError(0)
    raise TypeError(f"{type(value).__name__!r} object is not subscriptable")


def function_tools(tools: Sequence[ToolSpec]) -> list[dict[str, object]]:
    """Tool specs as the ``tools`` of an OpenAI-style body (``{"type": "function",
    "function": {name, description, parameters}}``), which OpenAI chat completions, Cohere
    v2 chat and Ollama's native chat all take."""
    return [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
            },
        }
        for spec in tools
    ]


def function_tools_of(raw: object) -> list[NeutralTool]:
    """The tools of an OpenAI-style ``tools`` array as Cohere and Ollama send it (a missing
    or null ``function`` reads as an empty one); items that are no object are left out."""
    tools: list[NeutralTool] = []
    for tool in each(raw):
        if isinstance(tool, Mapping):
            function = fields(tool.get("function") or {})
            tools.append(
                {
                    "name": function.get("name"),
                    "description": function.get("description", ""),
                    "parameters": function.get("parameters", {}),
                }
            )
    return tools
