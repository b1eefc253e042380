"""Providers: send a wire-format request through the official SDK and return the JSON.

A provider pairs a codec with an SDK client. The runtime encodes the request with the
codec, the provider sends it through the ``openai`` or ``anthropic`` SDK (which run on
``httpx2``), and the runtime decodes the raw response JSON with the same codec. The SDKs are
optional extras: ``pip install 'pytest-agentctx[openai]'`` or ``[anthropic]``.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from .codecs.base import Codec, get_codec
from .exceptions import ProviderError

__all__ = [
    "AnthropicMessagesProvider",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "Provider",
    "default_provider",
    "split_model",
]


@runtime_checkable
class Provider(Protocol):
    """Sends a request body in its codec's wire format and returns the response body.

    A provider that can stream also has ``async send_stream(body) -> bytes`` returning the
    raw event stream, which the runtime decodes with ``codec.decode_stream``.
    """

    codec: Codec

    async def send(self, body: Mapping[str, Any]) -> dict[str, Any]: ...


def split_model(model: str) -> tuple[str, str]:
    """Split ``"openai:gpt-4o-mini"`` into ``("openai", "gpt-4o-mini")``."""
    prefix, sep, name = model.partition(":")
    if not sep or not prefix or not name:
        raise ProviderError(
            f"Model {model!r} does not name its provider; expected 'PROVIDER:MODEL', for "
            "example 'openai:gpt-4o-mini' or 'anthropic:claude-sonnet-4-5'."
        )
    return prefix, name


def _import_sdk(module: str, extra: str, prefix: str | None = None) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderError(
            f"The {module!r} SDK is not installed, so models '{prefix or extra}:...' cannot be "
            f"called. Run: pip install 'pytest-agentctx[{extra}]'"
        ) from None


async def _stream_bytes(method: Any, body: Mapping[str, Any]) -> bytes:
    """The raw event-stream bytes of a streamed call, read through the SDK's transport."""
    async with method.with_streaming_response.create(**body) as response:
        return bytes(await response.read())


def _json_of(raw: Any) -> dict[str, Any]:
    data = json.loads(raw.http_response.content)
    if not isinstance(data, dict):
        raise ProviderError(f"The provider answered with JSON that is not an object: {data!r}")
    return data


class OpenAIChatProvider:
    """OpenAI chat completions through ``openai.AsyncOpenAI``.

    Pass ``client=`` to use your own client (another base URL, an API gateway); without
    one, ``AsyncOpenAI()`` is created on first use and reads ``OPENAI_API_KEY``.
    """

    def __init__(self, client: Any = None) -> None:
        self.codec = get_codec("openai_chat")
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _import_sdk("openai", "openai").AsyncOpenAI()
        return self._client

    async def send(self, body: Mapping[str, Any]) -> dict[str, Any]:
        raw = await self.client.chat.completions.with_raw_response.create(**body)
        return _json_of(raw)

    async def send_stream(self, body: Mapping[str, Any]) -> bytes:
        return await _stream_bytes(self.client.chat.completions, body)


class OpenAIResponsesProvider:
    """The OpenAI Responses API through ``openai.AsyncOpenAI`` (models ``openai-responses:...``)."""

    def __init__(self, client: Any = None) -> None:
        self.codec = get_codec("openai_responses")
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _import_sdk("openai", "openai", "openai-responses").AsyncOpenAI()
        return self._client

    async def send(self, body: Mapping[str, Any]) -> dict[str, Any]:
        raw = await self.client.responses.with_raw_response.create(**body)
        return _json_of(raw)

    async def send_stream(self, body: Mapping[str, Any]) -> bytes:
        return await _stream_bytes(self.client.responses, body)


class AnthropicMessagesProvider:
    """Anthropic Messages through ``anthropic.AsyncAnthropic``.

    Pass ``client=`` to use your own client; without one, ``AsyncAnthropic()`` is created
    on first use and reads ``ANTHROPIC_API_KEY``.
    """

    def __init__(self, client: Any = None) -> None:
        self.codec = get_codec("anthropic_messages")
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _import_sdk("anthropic", "anthropic").AsyncAnthropic()
        return self._client

    async def send(self, body: Mapping[str, Any]) -> dict[str, Any]:
        raw = await self.client.messages.with_raw_response.create(**body)
        return _json_of(raw)

    async def send_stream(self, body: Mapping[str, Any]) -> bytes:
        return await _stream_bytes(self.client.messages, body)


_DEFAULTS: dict[
    str, type[OpenAIChatProvider] | type[OpenAIResponsesProvider] | type[AnthropicMessagesProvider]
] = {
    "openai": OpenAIChatProvider,
    "openai-responses": OpenAIResponsesProvider,
    "anthropic": AnthropicMessagesProvider,
}


def default_provider(prefix: str) -> Provider:
    """A new provider for a model prefix (``openai`` or ``anthropic``)."""
    try:
        return _DEFAULTS[prefix]()
    except KeyError:
        raise ProviderError(
            f"No provider for models '{prefix}:...'; the built-in ones are "
            f"{sorted(_DEFAULTS)}. Pass AgentRuntime(providers={{{prefix!r}: ...}}) with an "
            "object that has a codec and an async send(body)."
        ) from None
