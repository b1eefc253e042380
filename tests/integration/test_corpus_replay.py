"""Other tools' cassettes replay through the current ``openai`` and ``anthropic`` SDKs.

The compatibility corpus (``shared/corpus/`` beside the checkout; its ``MANIFEST.md`` names
the source of every file) holds 36 vcrpy YAML cassettes recorded against the real APIs by
pydantic-ai, simonw/llm, crewAI, LangSmith, OpenLLMetry, OpenInference and
OpenTelemetry: gzip ``!!binary`` bodies, pydantic-ai's ``parsed_body``, pretty-printed
bodies, server-sent events, 204s and error statuses.

For every file, each recorded request is rebuilt as the SDK call that sends it (the
recorded JSON body as the call's arguments; body fields the SDK method has no argument
for go through ``extra_body``, as a user's code would pass them) and answered by a
:class:`Cassette` in replay mode while a :class:`NetworkGuard` refuses every connection.
Every interaction must be used, in order, with no miss; error statuses surface as the
SDK's own ``APIStatusError`` subclass; every chat completions, Responses or Messages reply
(streamed or not) decodes with the wire-format codec that :func:`codec_for_path` finds for
its URL, into the same text, tool calls and stop reason the SDK parsed.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anthropic
import httpx2
import openai
import pytest

from pytest_agentctx.cassettes import Cassette, Interaction, NetworkGuard
from pytest_agentctx.cassettes.body import body_bytes
from pytest_agentctx.codecs import Completion, codec_for_path

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
FILES = sorted(CORPUS.glob("*.yaml"))
SKIP_REASON = (
    f"the cassette corpus is not at {CORPUS}; it is checked out as shared/corpus beside "
    "the repository (as in CI)"
)
PARAMS = [pytest.param(path, id=path.name) for path in FILES] or [
    pytest.param(None, id="corpus", marks=pytest.mark.skip(reason=SKIP_REASON))
]

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
    """One client per API the corpus talks to (all sync or all async)."""

    openai: openai.OpenAI | openai.AsyncOpenAI
    openrouter: openai.OpenAI | openai.AsyncOpenAI
    anthropic: anthropic.Anthropic | anthropic.AsyncAnthropic
    http: httpx2.Client | httpx2.AsyncClient

    @classmethod
    def make(cls, *, asynchronous: bool) -> Clients:
        openai_client = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        anthropic_client = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return cls(
            openai=openai_client(
                api_key="sk-test", base_url="https://api.openai.com/v1", max_retries=0
            ),
            openrouter=openai_client(
                api_key="sk-test", base_url="https://openrouter.ai/api/v1", max_retries=0
            ),
            anthropic=anthropic_client(
                api_key="sk-test", base_url="https://api.anthropic.com", max_retries=0
            ),
            http=httpx2.AsyncClient() if asynchronous else httpx2.Client(),
        )


@pytest.fixture(scope="module")
def clients() -> Iterator[Clients]:
    """Sync clients shared by the module (each builds an SSL context, which costs more
    than replaying a cassette)."""
    made = Clients.make(asynchronous=False)
    try:
        yield made
    finally:
        for client in (made.openai, made.openrouter, made.anthropic, made.http):
            client.close()


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


def _call(clients: Clients, interaction: Interaction) -> Call:
    parts = urlsplit(interaction.url)
    host, path = parts.hostname or "", parts.path
    body = _json_body(interaction)
    stream = isinstance(body, dict) and bool(body.get("stream"))
    if host == "generativelanguage.googleapis.com":
        return Call(
            lambda: clients.http.post(interaction.url, json=body), None, "http", stream=False
        )
    if host == "api.anthropic.com" and path == "/v1/messages":
        beta = ("beta", "true") in parse_qsl(parts.query)
        resource = clients.anthropic.beta.messages if beta else clients.anthropic.messages
        create = resource.with_raw_response.create
        return Call(
            lambda: create(**_arguments(create, body)), anthropic, "anthropic_messages", stream
        )
    if host == "openrouter.ai" and path.startswith("/api/v1/"):
        client, endpoint = clients.openrouter, path.removeprefix("/api/v1")
    elif host == "api.openai.com" and path.startswith("/v1/"):
        client, endpoint = clients.openai, path.removeprefix("/v1")
    else:
        raise AssertionError(f"{interaction.origin}: no SDK call for {interaction.url}")
    typed = {
        "/chat/completions": ("openai_chat", lambda: client.chat.completions),
        "/responses": ("openai_responses", lambda: client.responses),
        "/embeddings": ("typed", lambda: client.embeddings),
    }
    if endpoint in typed and isinstance(body, dict):
        api, resource = typed[endpoint]
        create = resource().with_raw_response.create
        return Call(lambda: create(**_arguments(create, body)), openai, api, stream)
    # Assistants, threads, runs, traces: the SDK's generic methods.
    params = dict(parse_qsl(parts.query))
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


def _messages_reply(parsed: Any) -> Reply:
    texts = [block.text for block in parsed.content if block.type == "text"]
    calls = [(block.id, block.name) for block in parsed.content if block.type == "tool_use"]
    return Reply("".join(texts) if texts else None, calls, parsed.stop_reason)


def _messages_stream_reply(events: list[Any]) -> Reply:
    texts: list[str] | None = None
    calls: list[tuple[str, str]] = []
    stop = None
    for event in events:
        if event.type == "content_block_start" and event.content_block.type == "text":
            texts = [*(texts or []), event.content_block.text]
        elif event.type == "content_block_start" and event.content_block.type == "tool_use":
            calls.append((event.content_block.id, event.content_block.name))
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            texts = [*(texts or []), event.delta.text]
        elif event.type == "message_delta":
            stop = event.delta.stop_reason or stop
    return Reply("".join(texts) if texts is not None else None, calls, stop)


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
        codec_reply = Reply.of(codec.decode_stream(body_bytes(recorded)))
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


@pytest.mark.filterwarnings(r"ignore:The model '[^']*' is deprecated:DeprecationWarning")
@pytest.mark.parametrize("path", PARAMS)
def test_cassette_replays_through_the_sdks(path: Path, clients: Clients) -> None:
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


@pytest.mark.skipif(not FILES, reason=SKIP_REASON)
def test_corpus_is_the_one_the_manifest_lists() -> None:
    listed = re.findall(r"^\| `([^`]+\.yaml)` \|", (CORPUS / "MANIFEST.md").read_text(), re.M)

    assert sorted(listed) == [path.name for path in FILES]
    assert len(FILES) == 36


@pytest.mark.filterwarnings(r"ignore:The model '[^']*' is deprecated:DeprecationWarning")
@pytest.mark.skipif(not FILES, reason=SKIP_REASON)
async def test_corpus_replays_through_the_async_sdks() -> None:
    # Every file again through the async clients, in one test with one set of clients.
    made = Clients.make(asynchronous=True)
    problems: list[str] = []
    try:
        for path in FILES:
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
        await made.openai.close()
        await made.openrouter.close()
        await made.anthropic.close()
        await made.http.aclose()

    assert problems == []
