"""Capture of Gemini traffic: contexts rebuilt from ``generateContent`` exchanges, and
``google-genai`` agents recorded into a cassette and replayed offline.

The recording goes to a :class:`~pytest_agentctx.LoopbackProvider` on 127.0.0.1; the
replay runs with the network blocked and must not reach it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentctx import Exchange, build_contexts, contexts_from_cassette
from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.cassettes.body import encode_body
from pytest_agentctx.traffic.codecs import Completion, Usage, gemini
from pytest_agentctx.traffic.codecs.sse import format_sse

CORPUS = Path(__file__).resolve().parents[4].parent / "shared" / "corpus"
MIXED = CORPUS / "pydantic-ai__gemini_then_openai_chat_tools.yaml"
API = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
VERTEX = (
    "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/"
    "publishers/google/models/gemini-2.5-flash"
)
WEATHER = ToolSpec("get_weather", "The weather in a city.", {"type": "object"})
PARIS = ToolCall(
    id=gemini.synthetic_call_id("get_weather", {"city": "Paris"}, 0),
    name="get_weather",
    arguments={"city": "Paris"},
)


def weather_run(url: str, *, stream: bool = False) -> list[Exchange]:
    """A two-call tool loop as the SDK sends it: the call, then its answer."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    replies = [
        Completion(tool_calls=(PARIS,), model="gemini-2.5-flash", usage=Usage(20, 5)),
        Completion(content="Sunny in Paris.", model="gemini-2.5-flash", usage=Usage(40, 4)),
    ]
    exchanges = []
    for number, completion in enumerate(replies):
        body = gemini.encode_request(model="gemini-2.5-flash", messages=history, tools=[WEATHER])
        del body["model"]  # the SDK sends it in the URL
        if stream:
            raw = format_sse(gemini.encode_stream(completion, response_id=f"r{number}"))
            response = encode_body(raw, "text/event-stream")
            endpoint = f"{url}:streamGenerateContent?alt=sse"
        else:
            response = {"json": gemini.encode_response(completion, response_id=f"r{number}")}
            endpoint = f"{url}:generateContent"
        exchanges.append(Exchange("POST", endpoint, 200, {"json": body}, response))
        history.append(
            {
                "role": "assistant",
                "content": completion.content,
                "tool_calls": [call.model_dump() for call in completion.tool_calls],
            }
        )
        history.append(
            {"role": "tool", "content": "Sunny", "tool_call_id": PARIS.id, "name": "get_weather"}
        )
    return exchanges


@pytest.mark.parametrize("url", [API, VERTEX], ids=["gemini-api", "vertex-ai"])
def test_a_gemini_tool_loop_is_one_iteration_per_model_call(url):
    runs = build_contexts(weather_run(url))

    context = runs.context
    assert runs.non_llm == []
    assert [[m.role for m in iteration.messages] for iteration in context.iterations] == [
        ["system", "user", "assistant", "tool"],
        ["assistant"],
    ]
    assert context.iterations[0].messages[3].tool_call_id == PARIS.id
    assert context.iterations[0].metadata == {
        "model": "gemini-2.5-flash",
        "provider": "google",
        "stop_reason": "STOP",
        "usage": {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25},
    }
    assert context.final_output == "Sunny in Paris."


def test_a_streamed_run_rebuilds_the_same_context():
    assert build_contexts(weather_run(API, stream=True)).context == (
        build_contexts(weather_run(API)).context
    )


def test_other_gemini_endpoints_are_not_model_calls():
    count = Exchange(
        "POST",
        f"{API}:countTokens",
        200,
        {"json": {"contents": []}},
        {"json": {"totalTokens": 3}},
    )

    runs = build_contexts([count, *weather_run(API)])

    assert runs.non_llm == [count]
    assert len(runs.contexts) == 1


@pytest.mark.skipif(not MIXED.is_file(), reason=f"the cassette corpus is not at {CORPUS}")
def test_the_recorded_gemini_conversation_resumed_on_openai_is_one_conversation():
    runs = contexts_from_cassette(MIXED)

    assert runs.non_llm == []
    providers = [it.metadata["provider"] for it in runs.context.iterations]
    assert providers == ["google", "google", "openai", "openai"]
    first, second = runs.context.iterations[:2]
    assert [(m.role, m.content) for m in first.messages] == [
        ("user", "What is the capital of France?"),
        ("assistant", None),
        ("tool", "Paris"),
    ]
    assert first.tool_calls[0].name == "get_capital"
    assert first.messages[2].tool_call_id == first.tool_calls[0].id
    assert first.metadata["usage"] == {"input_tokens": 23, "output_tokens": 5, "total_tokens": 28}
    assert second.messages[0].content == "The capital of France is Paris.\n"


# -- record and replay through the plugin --------------------------------------------------

PROJECT = """
import pytest
from google import genai
from google.genai import types

from pytest_agentctx import LoopbackProvider, RecordMode, Trajectory

MODEL = "gemini-2.5-flash"
CONFIG = types.GenerateContentConfig(
    system_instruction="Be brief.",
    tools=[
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(
                    name="get_weather",
                    description="The weather in a city.",
                    parameters_json_schema={
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                    },
                )
            ]
        )
    ],
)


def answer(calls):
    return types.Content(
        role="user",
        parts=[
            types.Part.from_function_response(name=c.name, response={"result": "Sunny"})
            for c in calls
        ],
    )


def agent(client, question):
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    while True:
        reply = client.models.generate_content(model=MODEL, contents=contents, config=CONFIG)
        contents.append(reply.candidates[0].content)
        if not reply.function_calls:
            return reply.text
        contents.append(answer(reply.function_calls))


async def streaming_agent(client, question):
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    while True:
        parts, calls = [], []
        stream = await client.models.generate_content_stream(
            model=MODEL, contents=contents, config=CONFIG
        )
        async for chunk in stream:
            parts.extend(chunk.candidates[0].content.parts or [])
            calls.extend(chunk.function_calls or [])
        contents.append(types.Content(role="model", parts=parts))
        if not calls:
            return "".join(part.text or "" for part in parts)
        contents.append(answer(calls))


@pytest.fixture
def model_server(agent_cassette):
    with LoopbackProvider() as server:
        yield server
        if agent_cassette.mode is RecordMode.NONE:
            assert server.exchanges == []
        else:
            server.verify()


def client_of(server):
    options = types.HttpOptions(base_url=server.gemini_base_url, api_version="v1beta")
    return genai.Client(api_key="test-key", http_options=options)


@pytest.fixture
def client(model_server):
    with client_of(model_server) as sdk:
        yield sdk


@pytest.fixture
async def aclient(model_server):
    async with client_of(model_server).aio as sdk:
        yield sdk


def script(server):
    server.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")


def check(context):
    assert context == Trajectory([("get_weather", {"city": "Paris"})])
    assert [it.metadata["provider"] for it in context.iterations] == ["google", "google"]
    assert context.iterations[0].messages[-1].content == "Sunny"
    assert context.final_output == "Sunny in Paris."


@pytest.mark.agent
def test_sync_client(model_server, client, agent_context):
    script(model_server)
    assert agent(client, "Weather in Paris?") == "Sunny in Paris."
    check(agent_context.context)


@pytest.mark.agent
async def test_async_streaming_client(model_server, aclient, agent_context):
    script(model_server)
    assert await streaming_agent(aclient, "Weather in Paris?") == "Sunny in Paris."
    check(agent_context.context)
"""


def test_a_google_genai_agent_is_recorded_and_replayed_offline(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    agent_pytester.makepyfile(test_gemini_agent=PROJECT)

    recorded = agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record")
    recorded.assert_outcomes(passed=2)
    cassettes = sorted((agent_pytester.path / "cassettes").rglob("*.json"))
    text = "\n".join(path.read_text(encoding="utf-8") for path in cassettes)
    assert ":generateContent" in text
    assert ":streamGenerateContent?alt=sse" in text
    assert len(cassettes) == 2
    assert "test-key" not in text

    replayed = agent_pytester.runpytest("-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=2)


# -- streams as one JSON array, ids the client assigns, identical calls in two turns --------


def as_array_stream(exchanges: list[Exchange], *, parsed: bool) -> list[Exchange]:
    """The same run streamed without ``alt=sse``: one JSON array of chunks, stored parsed
    (``{"json": [...]}``) or as the text that came."""
    out = []
    for number, exchange in enumerate(exchanges):
        assert exchange.response is not None
        completion = gemini.decode_response(exchange.response["json"])
        events = gemini.encode_stream(completion, response_id=f"r{number}")
        raw = b"".join(gemini.array_chunks(events))
        response = {"json": json.loads(raw)} if parsed else {"text": raw.decode()}
        url = exchange.url.replace(":generateContent", ":streamGenerateContent")
        out.append(Exchange("POST", url, 200, exchange.request, response))
    return out


@pytest.mark.parametrize("parsed", [True, False], ids=["stored-as-json", "stored-as-text"])
def test_a_stream_sent_as_one_json_array_rebuilds_the_same_context(parsed):
    runs = build_contexts(as_array_stream(weather_run(API), parsed=parsed))

    assert runs.non_llm == []
    assert runs.context == build_contexts(weather_run(API)).context
    assert "errors" not in runs.context.iterations[0].metadata


def test_an_error_sent_in_a_json_array_is_the_iterations_error():
    request = weather_run(API)[0].request
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    failed = Exchange("POST", f"{API}:streamGenerateContent", 503, request, {"json": [error]})

    iteration = build_contexts([failed]).context.iterations[0]

    assert iteration.metadata["errors"] == [{"status": 503, "message": "The model is overloaded."}]


def client_id_run(*, echo_ids: bool) -> list[Exchange]:
    """A tool loop whose client gives the model's bare function call an id of its own: on
    the function response, and (``echo_ids``) on its echo of the call."""
    question = {"role": "user", "parts": [{"text": "Weather in Paris?"}]}
    call: dict[str, Any] = {"name": "get_weather", "args": {"city": "Paris"}}
    first = {
        "candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}}],
        "modelVersion": "gemini-2.5-flash",
    }
    echoed = {**call, "id": "client-1"} if echo_ids else call
    answer = {"name": "get_weather", "id": "client-1", "response": {"result": "Sunny"}}
    second_request = {
        "contents": [
            question,
            {"role": "model", "parts": [{"functionCall": echoed}]},
            {"role": "user", "parts": [{"functionResponse": answer}]},
        ]
    }
    final = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Sunny in Paris."}]}}],
        "modelVersion": "gemini-2.5-flash",
    }
    return [
        Exchange(
            "POST",
            f"{API}:generateContent",
            200,
            {"json": {"contents": [question]}},
            {"json": first},
        ),
        Exchange("POST", f"{API}:generateContent", 200, {"json": second_request}, {"json": final}),
    ]


def test_a_call_takes_the_id_the_client_gives_it_and_its_result_joins_it():
    context = build_contexts(client_id_run(echo_ids=True)).context

    first, second = context.iterations
    assert [m.role for m in first.messages] == ["user", "assistant", "tool"]
    assert [call.id for call in first.tool_calls] == ["client-1"]
    assert first.messages[1].tool_calls[0].id == "client-1"
    assert first.messages[2].tool_call_id == "client-1"
    assert [m.role for m in second.messages] == ["assistant"]


def test_a_result_whose_id_only_the_client_knows_joins_the_bare_call_of_its_name():
    context = build_contexts(client_id_run(echo_ids=False)).context

    first, second = context.iterations
    assert [m.role for m in first.messages] == ["user", "assistant", "tool"]
    assert first.messages[2].tool_call_id == first.tool_calls[0].id
    assert [m.role for m in second.messages] == ["assistant"]


def test_identical_calls_in_two_turns_get_distinct_ids_and_each_its_result():
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris, twice?"}]
    exchanges = []
    for number in range(3):
        turn = sum(1 for message in history if message["role"] == "assistant")
        call = ToolCall(
            id=gemini.synthetic_call_id("get_weather", {"city": "Paris"}, 0, turn),
            name="get_weather",
            arguments={"city": "Paris"},
        )
        completion = Completion(tool_calls=(call,)) if number < 2 else Completion(content="Sunny.")
        body = gemini.encode_request(model="gemini-2.5-flash", messages=history, tools=[WEATHER])
        del body["model"]
        response = {"json": gemini.encode_response(completion, response_id=f"r{number}")}
        exchanges.append(Exchange("POST", f"{API}:generateContent", 200, {"json": body}, response))
        history.append({"role": "assistant", "content": None, "tool_calls": [call.model_dump()]})
        result = f"Sunny ({number})"
        history.append({"role": "tool", "content": result, "tool_call_id": call.id})

    first, second, _ = build_contexts(exchanges).context.iterations

    assert first.tool_calls[0].id != second.tool_calls[0].id
    assert [(m.tool_call_id, m.content) for m in first.messages if m.role == "tool"] == [
        (first.tool_calls[0].id, "Sunny (0)")
    ]
    assert [(m.tool_call_id, m.content) for m in second.messages if m.role == "tool"] == [
        (second.tool_calls[0].id, "Sunny (1)")
    ]
