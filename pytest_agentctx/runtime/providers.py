"""Providers: send a wire-format request through the official SDK and return the JSON.

A provider pairs a codec with an SDK client. The runtime encodes the request with the
codec, the provider sends it through the ``openai``, ``anthropic`` or ``google-genai`` SDK
(all run on ``httpx2``) or ``boto3`` (Bedrock's Converse API, on ``urllib3``), and the
runtime decodes the raw response JSON with the same codec. The SDKs are optional extras:
``pip install 'pytest-agentctx[openai]'``, ``[anthropic]``, ``[gemini]`` or ``[bedrock]``.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
import os
import ssl
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_agentctx.runtime.errors import ProviderError
from pytest_agentctx.traffic.codecs.base import Codec, get_codec
from pytest_agentctx.traffic.codecs.sse import SSEEvent, format_sse

if TYPE_CHECKING:
    import httpx2


@runtime_checkable
class Provider(Protocol):
    """Sends a request body in its codec's wire format and returns the response body.

    A provider that can stream also has ``async send_stream(body) -> bytes`` returning the
    raw event stream, which the runtime decodes with ``codec.decode_stream``.
    """

    codec: Codec

    async def send(self, body: Mapping[str, object]) -> dict[str, object]: ...


def split_model(model: str) -> tuple[str, str]:
    """Split ``"openai:gpt-4o-mini"`` into ``("openai", "gpt-4o-mini")``."""
    prefix, sep, name = model.partition(":")
    if not sep or not prefix or not name:
        raise ProviderError(
            f"Model {model!r} does not name its provider; expected 'PROVIDER:MODEL', for "
            "example 'openai:gpt-4o-mini' or 'anthropic:claude-sonnet-4-5'."
        )
    return prefix, name


def _import_sdk(module: str, extra: str, prefix: str | None = None) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderError(
            f"The {module!r} SDK is not installed, so models '{prefix or extra}:...' cannot be "
            f"called. Run: pip install 'pytest-agentctx[{extra}]'"
        ) from None


def _json_of(content: bytes) -> dict[str, object]:
    data = json.loads(content)
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
    The client is an object of an optional SDK, imported when first needed: typed ``Any``.
    """

    codec_name = ""
    sdk = ""
    extra = ""
    prefix = ""
    client_class = ""
    #: The attributes from the client to the SDK resource whose ``create`` is called.
    endpoint: tuple[str, ...] = ()

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
        return functools.reduce(getattr, self.endpoint, self.client)

    async def send(self, body: Mapping[str, object]) -> dict[str, object]:
        raw = await self._endpoint().with_raw_response.create(**body)
        return _json_of(raw.http_response.content)

    async def send_stream(self, body: Mapping[str, object]) -> bytes:
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
    endpoint = ("chat", "completions")


class OpenAIResponsesProvider(_SDKProvider):
    """The OpenAI Responses API through ``openai.AsyncOpenAI`` (models ``openai-responses:...``)."""

    codec_name = "openai_responses"
    sdk = extra = "openai"
    prefix = "openai-responses"
    client_class = "AsyncOpenAI"
    endpoint = ("responses",)


class AnthropicMessagesProvider(_SDKProvider):
    """Anthropic Messages through ``anthropic.AsyncAnthropic``.

    Pass ``client=`` to use your own client; without one, ``AsyncAnthropic()`` is created
    on first use and reads ``ANTHROPIC_API_KEY`` (and ``ANTHROPIC_BASE_URL``).
    """

    codec_name = "anthropic_messages"
    sdk = extra = prefix = "anthropic"
    client_class = "AsyncAnthropic"
    endpoint = ("messages",)


#: The environment variables that give ``google-genai`` a key (it prefers the first), and
#: the one that sends its calls to Vertex AI instead (with the project's credentials).
_GEMINI_KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
_GEMINI_VERTEX = "GOOGLE_GENAI_USE_VERTEXAI"

#: Fields of the SDK's parsed stream chunks that are not part of the wire JSON.
_SDK_ONLY_FIELDS = {"sdk_http_response", "automatic_function_calling_history", "parsed"}


class GeminiProvider:
    """Google Gemini through ``google.genai.Client`` (models ``google:...``).

    Pass ``client=`` to use your own ``genai.Client`` (Vertex AI, another base URL, your
    ``HttpOptions``); without one, ``genai.Client()`` is created on first use, which reads
    ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY`` (``GOOGLE_GENAI_USE_VERTEXAI`` and
    ``GOOGLE_CLOUD_PROJECT``/``GOOGLE_CLOUD_LOCATION`` for Vertex AI), with ``httpx2``
    clients of its own: the SDK's async calls would otherwise go through ``aiohttp`` when it
    is installed, out of reach of cassettes and the fake model.

    The body is the codec's: its ``model`` goes in the URL, its ``contents`` and the rest
    become the SDK's arguments, and the response JSON is read as the SDK received it. A
    stream is read chunk by chunk through the SDK and written back as the events it came as.
    """

    def __init__(self, client: Any = None) -> None:
        self.codec = get_codec("gemini")
        self._client = client
        self._owned = client is None
        self._http: tuple[httpx2.Client, httpx2.AsyncClient] | None = None

    @property
    def client(self) -> Any:
        if self._client is None:
            genai = _import_sdk("google.genai", "gemini", "google")
            vertex = os.environ.get(_GEMINI_VERTEX, "").lower() in ("1", "true")
            if not vertex and not any(os.environ.get(name) for name in _GEMINI_KEYS):
                raise ProviderError(
                    "Models 'google:...' need an API key, and neither GEMINI_API_KEY nor "
                    "GOOGLE_API_KEY is set. Set one (replayed cassettes and fake_llm tests "
                    "need no real key), or pass AgentRuntime(providers={'google': "
                    "GeminiProvider(client=genai.Client(...))})."
                )
            import httpx2

            self._http = (
                httpx2.Client(verify=_ssl_context(), follow_redirects=True),
                httpx2.AsyncClient(verify=_ssl_context(), follow_redirects=True),
            )
            options = genai.types.HttpOptions(
                httpx_client=self._http[0], httpx_async_client=self._http[1]
            )
            self._client = genai.Client(http_options=options)
        return self._client

    def _arguments(self, body: Mapping[str, object], raw: bool) -> dict[str, object]:
        """The SDK's ``generate_content`` arguments for a codec body."""
        types = _import_sdk("google.genai", "gemini", "google").types
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise ProviderError(
                f"GeminiProvider: the request body has no 'model' (keys: {sorted(body)}); "
                "encode it with the gemini codec's encode_request(model=...)."
            )
        contents = body.get("contents", [])
        generation = body.get("generationConfig") or {}
        if not isinstance(contents, list) or not isinstance(generation, Mapping):
            raise ProviderError(
                f"GeminiProvider: the request body's 'contents' ({type(contents).__name__}) "
                f"and 'generationConfig' ({type(generation).__name__}) are not a list and an "
                "object; encode it with the gemini codec's encode_request()."
            )
        config: dict[str, object] = {
            "system_instruction": body.get("systemInstruction"),
            "tools": body.get("tools"),
            "automatic_function_calling": {"disable": True},
        }
        for key, field in (
            ("temperature", "temperature"),
            ("maxOutputTokens", "max_output_tokens"),
        ):
            if key in generation:
                config[field] = generation[key]
        if raw:
            config["should_return_http_response"] = True
        return {
            "model": model,
            "contents": [types.Content.model_validate(turn) for turn in contents],
            "config": types.GenerateContentConfig.model_validate(
                {k: v for k, v in config.items() if v is not None}
            ),
        }

    async def send(self, body: Mapping[str, object]) -> dict[str, object]:
        response = await self.client.aio.models.generate_content(**self._arguments(body, True))
        data = json.loads(response.sdk_http_response.body or "{}")
        if not isinstance(data, dict):
            raise ProviderError(f"Gemini answered with JSON that is not an object: {data!r}")
        return data

    async def send_stream(self, body: Mapping[str, object]) -> bytes:
        """The event stream of a streamed call (``:streamGenerateContent?alt=sse``)."""
        stream = await self.client.aio.models.generate_content_stream(
            **self._arguments(body, False)
        )
        events = []
        async for chunk in stream:
            data = chunk.model_dump(
                mode="json", by_alias=True, exclude_none=True, exclude=_SDK_ONLY_FIELDS
            )
            events.append(SSEEvent(None, json.dumps(data, ensure_ascii=False)))
        return format_sse(events)

    async def aclose(self) -> None:
        """Close the client and its HTTP clients if this provider created them."""
        if self._owned and self._client is not None:
            client, self._client = self._client, None
            http, self._http = self._http, None
            await client.aio.aclose()
            client.close()
            if http is not None:
                http[0].close()
                await http[1].aclose()


#: The region of the client :class:`BedrockProvider` makes when boto3 is given none (no
#: ``AWS_REGION``, ``AWS_DEFAULT_REGION`` or profile region): Bedrock's first region.
BEDROCK_DEFAULT_REGION = "us-east-1"


class BedrockProvider:
    """Amazon Bedrock's Converse API through boto3's ``bedrock-runtime`` client (models
    ``bedrock:<model id>``, e.g. ``bedrock:us.anthropic.claude-3-5-haiku-20241022-v1:0``).

    Pass ``client=`` to use your own ``boto3.client("bedrock-runtime", ...)`` (another
    region, ``endpoint_url``, a session's credentials, ``Config(retries=...)``); without one,
    a client is created on first use from boto3's default session, which reads the AWS
    credentials and region from the environment or the shared files (in
    :data:`BEDROCK_DEFAULT_REGION` when none is set).

    The body is the codec's: its model goes in the URL (``modelId``), the rest are the
    keyword arguments of ``converse`` (``converse_stream`` for a stream). boto3 is
    synchronous: each call runs in a worker thread, with the run's context (its cassette or
    fake model). A stream is read event by event and written back as the event-stream
    messages it came as.
    """

    def __init__(self, client: Any = None) -> None:
        self.codec = get_codec("bedrock")
        self._client = client
        self._owned = client is None

    @property
    def client(self) -> Any:
        if self._client is None:
            boto3 = _import_sdk("boto3", "bedrock")
            session = boto3.session.Session()
            self._client = session.client(
                "bedrock-runtime", region_name=session.region_name or BEDROCK_DEFAULT_REGION
            )
        return self._client

    def _arguments(self, body: Mapping[str, object]) -> dict[str, object]:
        """The keyword arguments of ``converse`` for a codec body."""
        model = body.get("modelId", body.get("model"))
        if not isinstance(model, str) or not model:
            raise ProviderError(
                f"BedrockProvider: the request body has no 'modelId' (keys: {sorted(body)}); "
                "encode it with the bedrock codec's encode_request(model=...)."
            )
        rest = {k: v for k, v in body.items() if k not in ("model", "modelId", "stream")}
        return {"modelId": model, **rest}

    async def send(self, body: Mapping[str, object]) -> dict[str, object]:
        arguments = self._arguments(body)
        response = await asyncio.to_thread(lambda: self.client.converse(**arguments))
        # boto3's parsed response is the wire JSON, plus its own ResponseMetadata.
        return {k: v for k, v in dict(response).items() if k != "ResponseMetadata"}

    async def send_stream(self, body: Mapping[str, object]) -> bytes:
        """The event stream of a streamed call (``converse_stream``), as its messages."""
        from pytest_agentctx.traffic.codecs.eventstream import encode_message, event

        arguments = self._arguments(body)

        def read() -> bytes:
            response = self.client.converse_stream(**arguments)
            return b"".join(
                encode_message(event(kind, payload))
                for item in response["stream"]
                for kind, payload in item.items()
            )

        return await asyncio.to_thread(read)

    async def aclose(self) -> None:
        """Close the client if this provider created it (a given client is left open)."""
        if self._owned and self._client is not None:
            client, self._client = self._client, None
            client.close()


_DEFAULTS: dict[str, type[_SDKProvider] | type[GeminiProvider] | type[BedrockProvider]] = {
    "openai": OpenAIChatProvider,
    "openai-responses": OpenAIResponsesProvider,
    "anthropic": AnthropicMessagesProvider,
    "google": GeminiProvider,
    "bedrock": BedrockProvider,
}


def default_provider(prefix: str) -> Provider:
    """A new provider for a model prefix (``openai``, ``openai-responses``, ``anthropic``,
    ``google``, ``bedrock``)."""
    try:
        return _DEFAULTS[prefix]()
    except KeyError:
        raise ProviderError(
            f"No provider for models '{prefix}:...'; the built-in ones are "
            f"{sorted(_DEFAULTS)}. Pass AgentRuntime(providers={{{prefix!r}: ...}}) with an "
            "object that has a codec and an async send(body)."
        ) from None
