"""Other tools' cassettes replay through the current ``openai`` and ``anthropic`` SDKs.

Two corpora of vcrpy YAML cassettes recorded against the real APIs, each with a
``MANIFEST.md`` that names the source of every file: the shared compatibility corpus
(``shared/corpus/`` beside the checkout: pydantic-ai, simonw/llm, crewAI, LangSmith,
OpenLLMetry, OpenInference and OpenTelemetry; gzip ``!!binary`` bodies, pydantic-ai's
``parsed_body``, pretty-printed bodies, server-sent events, 204s and error statuses) and
this repository's own ``tests/integration/corpus/`` (Azure OpenAI, OpenAI-compatible
providers under their own paths, prompt caching, server tools, background responses,
compaction and the endpoints beside the model endpoints).

For every file, each recorded request is rebuilt as the SDK call that sends it (the
recorded JSON body as the call's arguments; body fields the SDK method has no argument
for go through ``extra_body``, as a user's code would pass them), with a client whose base
URL is the recorded one (``AzureOpenAI`` for an Azure deployment), and answered by a
:class:`Cassette` in replay mode while a :class:`NetworkGuard` refuses every connection.
Every interaction must be used, in order, with no miss; error statuses surface as the
SDK's own ``APIStatusError`` subclass; every chat completions, Responses or Messages reply
(streamed or not) decodes with the wire-format codec that :func:`codec_for_path` finds for
its URL, into the same text, tool calls and stop reason the SDK parsed.
"""

from __future__ import annotations

import inspect
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anthropic
import httpx2
import openai
import pytest
from vcr.serializers import compat, yamlserializer

from pytest_agentctx.traffic.cassettes import Cassette, Interaction, NetworkGuard
from pytest_agentctx.traffic.cassettes.body import body_bytes, decode_content
from pytest_agentctx.traffic.cassettes.vcr import convert_vcr_yaml, vcr_json
from pytest_agentctx.traffic.codecs import Completion, codec_for_path

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
FILES = sorted(CORPUS.glob("*.yaml"))
#: This repository's own corpus (always present). Its AWS Bedrock files replay through
#: boto3 in test_corpus_replay_bedrock.py.
OWN_CORPUS = Path(__file__).resolve().parent / "corpus"
ALL_OWN_FILES = sorted(OWN_CORPUS.glob("*.yaml"))
OWN_FILES = [path for path in ALL_OWN_FILES if "__bedrock_" not in path.name]
SKIP_REASON = (
    f"the cassette corpus is not at {CORPUS}; it is checked out as shared/corpus beside "
    "the repository (as in CI)"
)
PARAMS = [pytest.param(path, id=path.name) for path in FILES] or [
    pytest.param(None, id="corpus", marks=pytest.mark.skip(reason=SKIP_REASON))
]
OWN_PARAMS = [pytest.param(path, id=f"own-{path.name}") for path in OWN_FILES]

#: The SDKs' exception class for each recorded error status (same names in both SDKs;
#: 5xx statuses raise InternalServerError).
ERRORS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}
#: Keyword arguments of the SDK methods that are request options, never body fields.
SDK_OPTIONS = frozenset({"extra_body", "extra_headers", "extra_query", "timeout"})


@dataclass
class Clients:
    """The clients the corpus talks through (all sync or all async): one per base URL."""

    asynchronous: bool
    http: httpx2.Client | httpx2.AsyncClient
    made: dict[tuple[str, ...], Any] = field(default_factory=dict)

    @classmethod
    def make(cls, *, asynchronous: bool) -> Clients:
        return cls(asynchronous, httpx2.AsyncClient() if asynchronous else httpx2.Client())

    def openai_at(self, base_url: str) -> Any:
        """An ``openai`` client of the API at ``base_url`` (OpenAI or a compatible one)."""
        kind = openai.AsyncOpenAI if self.asynchronous else openai.OpenAI
        return self._client(("openai", base_url), kind, base_url=base_url)

    def azure_deployment(self, endpoint: str, deployment: str, api_version: str) -> Any:
        """An ``AzureOpenAI`` client of one deployment."""
        kind = openai.AsyncAzureOpenAI if self.asynchronous else openai.AzureOpenAI
        return self._client(
            ("azure", endpoint, deployment, api_version),
            kind,
            azure_endpoint=endpoint,
            azure_deployment=deployment,
            api_version=api_version,
        )

    def anthropic_at(self, base_url: str) -> Any:
        kind = anthropic.AsyncAnthropic if self.asynchronous else anthropic.Anthropic
        return self._client(("anthropic", base_url), kind, base_url=base_url)

    def _client(self, key: tuple[str, ...], kind: Any, **options: Any) -> Any:
        if key not in self.made:
            self.made[key] = kind(api_key="sk-test", max_retries=0, **options)
        return self.made[key]

    def close(self) -> None:
        for client in self.made.values():
            client.close()
        self.http.close()  # type: ignore[union-attr]

    async def aclose(self) -> None:
        for client in self.made.values():
            await client.close()
        await self.http.aclose()  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def clients() -> Iterator[Clients]:
    """Sync clients shared by the module (each builds an SSL context, which costs more
    than replaying a cassette)."""
    made = Clients.make(asynchronous=False)
    try:
        yield made
    finally:
        made.close()


# -- building the SDK call of a recorded request -------------------------------------


def _arguments(method: Callable[..., Any], body: dict[str, Any]) -> dict[str, Any]:
    """The recorded body as keyword arguments; fields the method lacks go in extra_body."""
    accepted = set(inspect.signature(method).parameters) - SDK_OPTIONS
    arguments = {name: value for name, value in body.items() if name in accepted}
    extra = {name: value for name, value in body.items() if name not in accepted}
    if extra:
        arguments["extra_body"] = extra
    return arguments


def _json_body(interaction: Interaction) -> Any:
    body = interaction.request_body
    return body.get("json") if body else None


@dataclass
class Call:
    """How one recorded request is sent again."""

    send: Callable[[], Any]
    sdk: ModuleType | None  # the SDK whose errors it raises (None: plain httpx2)
    api: str  # a codec's name, "typed" (other SDK methods), "generic" or "http"
    stream: bool


#: Where an OpenAI-style API's own path begins: the base URL is what comes before it.
_OPENAI_ENDPOINT = re.compile(
    r"^(?P<base>.*?)(?P<endpoint>/(?:chat/completions|responses|embeddings|assistants|threads"
    r"|traces)(?:/.*)?)$"
)
#: The typed method of each OpenAI endpoint: (codec name or "typed", attribute path).
_OPENAI_METHODS = {
    ("POST", "/chat/completions"): ("openai_chat", ("chat", "completions", "create")),
    ("POST", "/responses"): ("openai_responses", ("responses", "create")),
    ("POST", "/responses/compact"): ("typed", ("responses", "compact")),
    ("POST", "/responses/input_tokens"): ("typed", ("responses", "input_tokens", "count")),
    ("POST", "/embeddings"): ("typed", ("embeddings", "create")),
}


def _raw_method(client: Any, names: tuple[str, ...]) -> Any:
    """``client.a.b.with_raw_response.c`` for the attribute path ``(a, b, c)``."""
    resource = client
    for name in names[:-1]:
        resource = getattr(resource, name)
    return getattr(resource.with_raw_response, names[-1])


def _http_call(clients: Clients, interaction: Interaction) -> Call:
    """The recorded request sent as it is (another provider's API, a file upload)."""
    content = body_bytes(interaction.request_body) if interaction.request_body else None
    method, url = interaction.method, interaction.url
    return Call(
        lambda: clients.http.request(method, url, content=content), None, "http", stream=False
    )


def _anthropic_call(clients: Clients, interaction: Interaction, body: Any, stream: bool) -> Call:
    parts = urlsplit(interaction.url)
    client = clients.anthropic_at(f"{parts.scheme}://{parts.netloc}")
    beta = ("beta", "true") in parse_qsl(parts.query)
    resource = client.beta.messages if beta else client.messages
    if interaction.method == "POST" and parts.path == "/v1/messages":
        create = resource.with_raw_response.create
        return Call(
            lambda: create(**_arguments(create, body)), anthropic, "anthropic_messages", stream
        )
    if interaction.method == "POST" and parts.path == "/v1/messages/count_tokens":
        count = resource.with_raw_response.count_tokens
        return Call(lambda: count(**_arguments(count, body)), anthropic, "typed", stream=False)
    return _http_call(clients, interaction)  # the Files API: a multipart upload, a delete


def _openai_client(clients: Clients, interaction: Interaction, base: str) -> Any:
    parts = urlsplit(interaction.url)
    origin = f"{parts.scheme}://{parts.netloc}"
    deployment = re.fullmatch(r"/openai/deployments/([^/]+)", base)
    if deployment is not None:
        version = dict(parse_qsl(parts.query))["api-version"]
        return clients.azure_deployment(origin, deployment.group(1), version)
    return clients.openai_at(origin + base)


def _call(clients: Clients, interaction: Interaction) -> Call:
    parts = urlsplit(interaction.url)
    body = _json_body(interaction)
    stream = isinstance(body, dict) and bool(body.get("stream"))
    if parts.hostname == "generativelanguage.googleapis.com":
        return _http_call(clients, interaction)
    if parts.hostname == "api.anthropic.com":
        return _anthropic_call(clients, interaction, body, stream)
    found = _OPENAI_ENDPOINT.match(parts.path)
    if found is None:
        raise AssertionError(f"{interaction.origin}: no SDK call for {interaction.url}")
    client = _openai_client(clients, interaction, found["base"])
    endpoint = found["endpoint"]
    typed = _OPENAI_METHODS.get((interaction.method, endpoint))
    if typed is not None and isinstance(body, dict):
        api, names = typed
        method = _raw_method(client, names)
        return Call(lambda: method(**_arguments(method, body)), openai, api, stream)
    params = dict(parse_qsl(parts.query))
    retrieved = re.fullmatch(r"/responses/(resp_[^/]+)", endpoint)
    if interaction.method == "GET" and retrieved is not None:
        retrieve = client.responses.with_raw_response.retrieve
        return Call(
            lambda: retrieve(retrieved[1], extra_query=params), openai, "typed", stream=False
        )
    # Assistants, threads, runs, traces: the SDK's generic methods.
    if interaction.method == "GET":
        return Call(
            lambda: client.get(endpoint, cast_to=httpx2.Response, options={"params": params}),
            openai,
            "generic",
            stream=False,
        )
    return Call(
        lambda: client.post(
            endpoint, cast_to=httpx2.Response, body=body, options={"params": params}
        ),
        openai,
        "generic",
        stream=False,
    )


# -- what the SDK parsed, for comparison with the codec ------------------------------


@dataclass(frozen=True)
class Reply:
    """The parts of a model reply that the codec and the SDK must agree on."""

    content: str | None
    tool_calls: list[tuple[str, str]]
    stop_reason: str | None

    @classmethod
    def of(cls, completion: Completion) -> Reply:
        calls = [(call.id, call.name) for call in completion.tool_calls]
        return cls(completion.content, calls, completion.stop_reason)


def _chat_reply(parsed: Any) -> Reply:
    choice = parsed.choices[0]
    if choice.message is None:  # stopped by Azure's content filter before any message
        return Reply(None, [], choice.finish_reason)
    calls = [(call.id, call.function.name) for call in choice.message.tool_calls or []]
    return Reply(choice.message.content, calls, choice.finish_reason)


def _chat_stream_reply(chunks: list[Any]) -> Reply:
    texts: list[str] | None = None
    calls: dict[int, list[str]] = {}
    stop = None
    for chunk in chunks:
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            if isinstance(choice.delta.content, str):
                texts = [*(texts or []), choice.delta.content]
            for call in choice.delta.tool_calls or []:
                slot = calls.setdefault(call.index, ["", ""])
                slot[0] = call.id or slot[0]
                slot[1] += (call.function and call.function.name) or ""
            stop = choice.finish_reason or stop
    content = None if texts is None else "".join(texts)
    return Reply(content, [(i, n) for _, (i, n) in sorted(calls.items())], stop)


def _paragraphs(blocks: list[tuple[str, str]]) -> str | None:
    """The text of ``(block type, text)`` pairs as the codec documents it: adjacent text
    blocks run on, text blocks that other blocks stand between are paragraphs apart."""
    texts: list[str] = []
    apart = False
    for kind, text in blocks:
        if kind != "text":
            apart = True
            continue
        texts.extend(["\n\n", text] if texts and apart else [text])
        apart = False
    return "".join(texts) if texts else None


def _messages_reply(parsed: Any) -> Reply:
    blocks = [(block.type, getattr(block, "text", "")) for block in parsed.content]
    calls = [(block.id, block.name) for block in parsed.content if block.type == "tool_use"]
    return Reply(_paragraphs(blocks), calls, parsed.stop_reason)


def _messages_stream_reply(events: list[Any]) -> Reply:
    blocks: list[list[str]] = []  # [type, text] per content block, in order
    calls: list[tuple[str, str]] = []
    stop = None
    for event in events:
        if event.type == "content_block_start":
            block = event.content_block
            blocks.append([block.type, getattr(block, "text", "")])
            if block.type == "tool_use":
                calls.append((block.id, block.name))
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            blocks[-1][1] += event.delta.text
        elif event.type == "message_delta":
            stop = event.delta.stop_reason or stop
    return Reply(_paragraphs([(kind, text) for kind, text in blocks]), calls, stop)


def _responses_reply(parsed: Any) -> Reply:
    texts = [
        part.text
        for item in parsed.output
        if item.type == "message"
        for part in item.content
        if part.type == "output_text"
    ]
    calls = [(item.call_id, item.name) for item in parsed.output if item.type == "function_call"]
    # The codec's stop reason: "tool_calls" for a completed response that calls tools.
    stop = "tool_calls" if calls and parsed.status == "completed" else parsed.status
    return Reply("".join(texts) if texts else None, calls, stop)


def _responses_stream_reply(events: list[Any]) -> Reply:
    ends = ("response.completed", "response.incomplete", "response.failed")
    [final] = [event.response for event in events if event.type in ends]
    return _responses_reply(final)


#: What the SDK parsed (one reply, or the events of a stream), per codec.
SDK_REPLIES: dict[str, tuple[Callable[[Any], Reply], Callable[[list[Any]], Reply]]] = {
    "openai_chat": (_chat_reply, _chat_stream_reply),
    "openai_responses": (_responses_reply, _responses_stream_reply),
    "anthropic_messages": (_messages_reply, _messages_stream_reply),
}


# -- one interaction -----------------------------------------------------------------


def _error_problem(
    call: Call, interaction: Interaction, error: Exception, where: str
) -> str | None:
    assert call.sdk is not None
    expected = getattr(call.sdk, ERRORS.get(interaction.status, "InternalServerError"))
    if type(error) is not expected or getattr(error, "status_code", None) != interaction.status:
        return f"{where}: raised {error!r}, expected {expected.__name__}"
    return None


def _result_problem(
    cassette: Cassette, call: Call, result: Any, parsed: Any, events: list[Any] | None, where: str
) -> str | None:
    """Compare what the SDK got with the recording, and with what the codec decodes."""
    interaction = cassette.loaded[cassette.played[-1]]
    recorded = interaction.response_body
    if events is None and recorded and "json" in recorded:
        response = result if call.api in ("http", "generic") else result.http_response
        if response.status_code != interaction.status or response.json() != recorded["json"]:
            return f"{where}: the response served differs from the recorded one"
    if call.api in ("http", "generic"):
        if result.status_code != interaction.status:  # the 204s have no body to compare
            return f"{where}: status {result.status_code}, recorded {interaction.status}"
        return None
    if call.api not in SDK_REPLIES:
        return None  # embeddings: the SDK parsed them, the body was compared above
    codec = codec_for_path(urlsplit(interaction.url).path)
    if codec is None or codec.name != call.api:
        return f"{where}: the codec for this URL is {codec and codec.name}, not {call.api}"
    parse_reply, parse_stream_reply = SDK_REPLIES[call.api]
    if events is not None:
        sdk_reply = parse_stream_reply(events)
        # every codec module has decode_stream; the Codec protocol names only four functions
        streaming: Any = codec
        codec_reply = Reply.of(streaming.decode_stream(body_bytes(recorded)))
    else:
        sdk_reply = parse_reply(parsed)
        codec_reply = Reply.of(codec.decode_response(result.http_response.json()))
    if codec_reply != sdk_reply:
        return f"{where}: the codec decoded {codec_reply}, the SDK parsed {sdk_reply}"
    return None


def _replay(clients: Clients, cassette: Cassette, position: int) -> str | None:
    """Send recorded request ``position`` again; returns a problem, or None."""
    interaction = cassette.loaded[position]
    call = _call(clients, interaction)
    where = f"#{position} {interaction.method} {interaction.url}"
    if interaction.status >= 400 and call.sdk is not None:
        with pytest.raises(call.sdk.APIStatusError) as raised:
            call.send()
        return _error_problem(call, interaction, raised.value, where)
    result = call.send()
    parsed = events = None
    if call.api not in ("http", "generic"):
        parsed = result.parse()
        events = list(parsed) if call.stream else None  # streams consumed to the end
    return _result_problem(cassette, call, result, parsed, events, where)


async def _replay_async(clients: Clients, cassette: Cassette, position: int) -> str | None:
    """:func:`_replay` with async clients."""
    interaction = cassette.loaded[position]
    call = _call(clients, interaction)
    where = f"{cassette.path.name} #{position} {interaction.method} {interaction.url}"
    if interaction.status >= 400 and call.sdk is not None:
        with pytest.raises(call.sdk.APIStatusError) as raised:
            await call.send()
        return _error_problem(call, interaction, raised.value, where)
    result = await call.send()
    parsed = events = None
    if call.api not in ("http", "generic"):
        parsed = result.parse()  # openai's raw responses parse synchronously, anthropic's not
        if inspect.isawaitable(parsed):
            parsed = await parsed
        events = [event async for event in parsed] if call.stream else None
    return _result_problem(cassette, call, result, parsed, events, where)


# -- the tests -----------------------------------------------------------------------


def _replays_through_the_sdks(path: Path, clients: Clients) -> None:
    cassette = Cassette(path)
    guard = NetworkGuard(reason="replaying the corpus")
    problems: list[str] = []
    cassette.start()
    guard.start()
    try:
        for position in range(len(cassette.loaded)):
            problem = _replay(clients, cassette, position)
            if problem is not None:
                problems.append(problem)
    finally:
        guard.stop()
        cassette.stop()

    assert [cassette.miss_message(miss) for miss in cassette.misses] == []
    assert problems == []
    assert cassette.unused() == []
    assert cassette.played == list(range(len(cassette.loaded)))
    assert guard.blocked == []


@pytest.mark.filterwarnings(r"ignore:The model '[^']*' is deprecated:DeprecationWarning")
@pytest.mark.parametrize("path", PARAMS + OWN_PARAMS)
def test_cassette_replays_through_the_sdks(path: Path, clients: Clients) -> None:
    _replays_through_the_sdks(path, clients)


def _converted(path: Path, tmp_path: Path) -> Path:
    """A copy of ``path`` as ``migrate --convert-json`` rewrites it."""
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    assert convert_vcr_yaml(copy), vcr_json(path)[1]
    return copy


@pytest.mark.filterwarnings(r"ignore:The model '[^']*' is deprecated:DeprecationWarning")
@pytest.mark.parametrize("path", PARAMS + OWN_PARAMS)
def test_a_converted_cassette_replays_as_the_yaml(
    path: Path, clients: Clients, tmp_path: Path
) -> None:
    copy = _converted(path, tmp_path)

    def stored(cassette: Cassette) -> list[Interaction]:
        return [replace(interaction, origin="") for interaction in cassette.loaded]

    assert stored(Cassette(copy)) == stored(Cassette(path))
    _replays_through_the_sdks(copy, clients)


def _vcrpy_sees(path: Path) -> list[tuple[object, int, object]]:
    """Each recording as vcrpy's own loader gives it (its YAML serializer, then the
    conversion of each response it makes): the request, the status, and the body handed
    to the client with its content-encoding undone as an HTTP client undoes it (or
    pydantic-ai's ``parsed_body``, which its own serializer reads)."""
    data = yamlserializer.deserialize(path.read_text(encoding="utf-8"))
    seen: list[tuple[object, int, object]] = []
    for item in data["interactions"]:
        response = compat.convert_to_bytes(item["response"])
        headers = {name.lower(): value for name, value in response["headers"].items()}
        body = response.get("body", {}).get("string", response.get("parsed_body"))
        if isinstance(body, bytes):
            body = decode_content(body, ", ".join(headers.get("content-encoding", [])))
        seen.append((item["request"], response["status"]["code"], body))
    return seen


@pytest.mark.parametrize("path", PARAMS + OWN_PARAMS)
def test_vcrpy_reads_a_converted_cassette_as_the_yaml(path: Path, tmp_path: Path) -> None:
    assert _vcrpy_sees(_converted(path, tmp_path)) == _vcrpy_sees(path)


@pytest.mark.skipif(not FILES, reason=SKIP_REASON)
def test_corpus_is_the_one_the_manifest_lists() -> None:
    listed = re.findall(r"^\| `([^`]+\.yaml)` \|", (CORPUS / "MANIFEST.md").read_text(), re.M)

    assert sorted(listed) == [path.name for path in FILES]
    assert len(FILES) == 36


def test_own_corpus_is_the_one_its_manifest_lists() -> None:
    manifest = (OWN_CORPUS / "MANIFEST.md").read_text()
    listed = re.findall(r"^\| `([^`]+\.yaml)` \|", manifest, re.M)

    assert sorted(listed) == [path.name for path in ALL_OWN_FILES]
    assert OWN_FILES


@pytest.mark.filterwarnings(r"ignore:The model '[^']*' is deprecated:DeprecationWarning")
async def test_corpus_replays_through_the_async_sdks() -> None:
    # Every file again through the async clients, in one test with one set of clients.
    made = Clients.make(asynchronous=True)
    problems: list[str] = []
    try:
        for path in FILES + OWN_FILES:
            cassette = Cassette(path)
            guard = NetworkGuard(reason="replaying the corpus")
            cassette.start()
            guard.start()
            try:
                for position in range(len(cassette.loaded)):
                    problem = await _replay_async(made, cassette, position)
                    if problem is not None:
                        problems.append(problem)
            finally:
                guard.stop()
                cassette.stop()
            problems.extend(cassette.miss_message(miss) for miss in cassette.misses)
            if cassette.played != list(range(len(cassette.loaded))):
                problems.append(f"{path.name}: replayed {cassette.played}")
    finally:
        await made.aclose()

    assert problems == []
