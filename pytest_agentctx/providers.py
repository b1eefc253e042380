"""Providers: send a wire-format request through the official SDK and return the JSON.

A provider pairs a codec with an SDK client. The runtime encodes the request with the
codec, the provider sends it through the ``openai`` or ``anthropic`` SDK (which run on
``httpx2``), and the runtime decodes the raw response JSON with the same codec. The SDKs are
optional extras: ``pip install 'pytest-agentctx[openai]'`` or ``[anthropic]``.
"""

from __future__ import annotations

import functools
import importlib
import json
import ssl
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


def _json_of(raw: Any) -> dict[str, Any]:
    data = json.loads(raw.http_response.content)
    if not isinstance(data, dict):
        raise ProviderError(f"The provider answered with JSON that is not an object: {data!r}")
    return data


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs tens of milliseconds; the context is safe to share, so
    # clients created per run (or per test) load it once per process.
    import httpx2

    return httpx2.create_ssl_context()


@functools.cache
def _sdk_platform(sdk: str) -> object:
    """The operating system the SDK names in its request headers (its ``get_platform()``),
    looked up once per process; ``None`` if this SDK version has no such function."""
    try:
        return importlib.import_module(f"{sdk}._base_client").get_platform()
    except (ImportError, AttributeError):
        return None


def _give_platform(client: Any, sdk: str) -> None:
    """Spare a new async SDK client its thread.

    ``AsyncOpenAI`` and ``AsyncAnthropic`` look the platform up in a worker thread on their
    first request (``asyncify(get_platform)``, since the lookup may block on some systems),
    and keep it on the client only. Clients created per run would start, and at the end of
    the event loop join, one thread per test: measurable in a suite of fast replayed tests,
    and more under ``pytest -n``. The answer is the same for every client of the process.
    """
    if getattr(client, "_platform", False) is None:
        platform = _sdk_platform(sdk)
        if platform is not None:
            client._platform = platform


class _SDKProvider:
    """A provider on an SDK client: given, or created on first use and owned.

    An owned client is closed by :meth:`aclose` (the runtime calls it at the end of each
    run, so no connection outlives its event loop) and created again when next needed.
    """

    codec_name = ""
    sdk = ""
    extra = ""
    prefix = ""
    client_class = ""

    def __init__(self, client: Any = None) -> None:
        self.codec = get_codec(self.codec_name)
        self._client = client
        self._owned = client is None

    @property
    def client(self) -> Any:
        if self._client is None:
            module = _import_sdk(self.sdk, self.extra, self.prefix)
            http_client = module.DefaultAsyncHttpxClient(verify=_ssl_context())
            self._client = getattr(module, self.client_class)(http_client=http_client)
            _give_platform(self._client, self.sdk)
        return self._client

    def _endpoint(self) -> Any:
        raise NotImplementedError

    async def send(self, body: Mapping[str, Any]) -> dict[str, Any]:
        raw = await self._endpoint().with_raw_response.create(**body)
        return _json_of(raw)

    async def send_stream(self, body: Mapping[str, Any]) -> bytes:
        """The raw event stream of a streamed call, read through the SDK's transport."""
        async with self._endpoint().with_streaming_response.create(**body) as response:
            return bytes(await response.read())

    async def aclose(self) -> None:
        """Close the client if this provider created it (a given client is left open)."""
        if self._owned and self._client is not None:
            client, self._client = self._client, None
            await client.close()


class OpenAIChatProvider(_SDKProvider):
    """OpenAI chat completions through ``openai.AsyncOpenAI``.

    Pass ``client=`` to use your own client (another base URL, an API gateway); without
    one, ``AsyncOpenAI()`` is created on first use and reads ``OPENAI_API_KEY`` (and
    ``OPENAI_BASE_URL``).
    """

    codec_name = "openai_chat"
    sdk = extra = prefix = "openai"
    client_class = "AsyncOpenAI"

    def _endpoint(self) -> Any:
        return self.client.chat.completions


class OpenAIResponsesProvider(_SDKProvider):
    """The OpenAI Responses API through ``openai.AsyncOpenAI`` (models ``openai-responses:...``)."""

    codec_name = "openai_responses"
    sdk = extra = "openai"
    prefix = "openai-responses"
    client_class = "AsyncOpenAI"

    def _endpoint(self) -> Any:
        return self.client.responses


class AnthropicMessagesProvider(_SDKProvider):
    """Anthropic Messages through ``anthropic.AsyncAnthropic``.

    Pass ``client=`` to use your own client; without one, ``AsyncAnthropic()`` is created
    on first use and reads ``ANTHROPIC_API_KEY`` (and ``ANTHROPIC_BASE_URL``).
    """

    codec_name = "anthropic_messages"
    sdk = extra = prefix = "anthropic"
    client_class = "AsyncAnthropic"

    def _endpoint(self) -> Any:
        return self.client.messages


_DEFAULTS: dict[str, type[_SDKProvider]] = {
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
