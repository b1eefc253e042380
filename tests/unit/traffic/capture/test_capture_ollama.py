"""Capture of Ollama's native chat traffic (``POST /api/chat``): contexts rebuilt from its
exchanges, whole and as NDJSON streams, tool results joined to id-less calls, errors, and
the web apps' own ``/api/chat`` left aside."""

from __future__ import annotations

from typing import Any

from pytest_agentctx import Exchange, build_contexts
from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.cassettes.body import encode_body
from pytest_agentctx.traffic.codecs import Completion, Usage, ollama_chat

URL = "http://127.0.0.1:11434/api/chat"
MODEL = "llama3.1"
NDJSON = "application/x-ndjson"
WEATHER = ToolSpec("get_weather", "The weather in a city.", {"type": "object"})
PARIS = ToolCall(
    id=ollama_chat.synthetic_call_id("get_weather", {"city": "Paris"}, 0),
    name="get_weather",
    arguments={"city": "Paris"},
)
REPLIES = [
    Completion(tool_calls=(PARIS,), model=MODEL, usage=Usage(180, 20)),
    Completion(content="Sunny in Paris.", model=MODEL, usage=Usage(215, 6)),
]


def weather_run(*, stream: bool = False) -> list[Exchange]:
    """A two-call tool loop as the ollama SDK sends it (no call ids on the wire)."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    exchanges = []
    for number, completion in enumerate(REPLIES):
        body = ollama_chat.encode_request(model=MODEL, messages=history, tools=[WEATHER])
        if stream:
            del body["stream"]  # the SDK's default, and Ollama's: a stream
            raw = ollama_chat.format_ndjson(
                ollama_chat.encode_stream(completion, response_id=f"r{number}")
            )
            response = encode_body(raw, NDJSON)
        else:
            response = {"json": ollama_chat.encode_response(completion, response_id=f"r{number}")}
        exchanges.append(Exchange("POST", URL, 200, {"json": body}, response))
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


def test_an_ollama_tool_loop_is_one_iteration_per_model_call():
    runs = build_contexts(weather_run())

    context = runs.context
    assert runs.non_llm == []
    assert [[m.role for m in iteration.messages] for iteration in context.iterations] == [
        ["system", "user", "assistant", "tool"],
        ["assistant"],
    ]
    assert context.iterations[0].metadata == {
        "model": MODEL,
        "provider": "ollama",
        "stop_reason": "stop",
        "usage": {"input_tokens": 180, "output_tokens": 20, "total_tokens": 200},
    }
    assert context.final_output == "Sunny in Paris."


def test_the_tool_result_joins_the_id_less_call_it_answers():
    first = build_contexts(weather_run()).context.iterations[0]

    assert first.tool_calls == [PARIS]
    assert (first.messages[3].tool_call_id, first.messages[3].name) == (PARIS.id, "get_weather")


def test_an_ndjson_stream_is_stored_as_text_and_rebuilds_the_same_context():
    streamed = weather_run(stream=True)

    assert all("text" in exchange.response for exchange in streamed if exchange.response)
    assert build_contexts(streamed).context == build_contexts(weather_run()).context


def test_a_stream_of_one_line_is_stored_as_json_and_still_read():
    raw = ollama_chat.format_ndjson(
        [ollama_chat.encode_response(Completion(content="Hi.", model=MODEL), response_id="r")]
    )
    request = {"json": {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}}
    exchange = Exchange("POST", URL, 200, request, encode_body(raw, NDJSON))

    assert exchange.response is not None
    assert "json" in exchange.response
    assert build_contexts([exchange]).context.final_output == "Hi."


def test_a_failed_call_keeps_ollama_s_error():
    first, second = weather_run()
    failed = Exchange("POST", URL, 404, first.request, {"json": {"error": "model not found"}})

    runs = build_contexts([failed, first, second])

    assert runs.context.iterations[0].metadata["errors"] == [
        {"status": 404, "message": "model not found"}
    ]


def test_an_error_in_the_middle_of_a_stream_is_an_error_of_its_iteration():
    first, second = weather_run(stream=True)
    raw = b'{"model":"llama3.1","message":{"role":"assistant","content":"Sun"},"done":false}\n'
    raw += b'{"error":"an error was encountered while running the model"}\n'
    broken = Exchange("POST", URL, 200, first.request, encode_body(raw, NDJSON))

    (error,) = build_contexts([broken, first, second]).context.iterations[0].metadata["errors"]

    assert error["status"] == 200
    assert "an error was encountered while running the model" in str(error["message"])


def test_a_web_app_s_own_api_chat_is_no_model_call():
    app = Exchange(
        "POST",
        "http://localhost:3000/api/chat",
        200,
        {"json": {"messages": [{"role": "user", "content": "Hi"}], "sessionId": "s1"}},
        {"json": {"reply": "Hello"}},
    )

    runs = build_contexts([app])

    assert runs.non_llm == [app]
    assert runs.non_llm_reasons[0].startswith(
        "the request does not decode: ollama_chat.decode_request: expected a 'model' string"
    )


def test_a_conversation_started_during_an_ollama_tool_call_is_its_sub_agent():
    first, second = weather_run()
    child = Exchange(
        "POST",
        URL,
        200,
        {"json": {"model": MODEL, "messages": [{"role": "user", "content": "Paris?"}]}},
        {
            "json": ollama_chat.encode_response(
                Completion(content="Sunny", model=MODEL), response_id=""
            )
        },
    )

    runs = build_contexts([first, child, second])

    assert len(runs.contexts) == 1
    assert list(runs.context.iterations[0].metadata["subagents"]) == [PARIS.id]


def test_a_result_answering_the_client_s_own_call_id_joins_the_call():
    first, _ = weather_run()
    assert first.request is not None
    echo = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "lc-7f3a", "function": {"name": "get_weather", "arguments": PARIS.arguments}}
        ],
    }
    result = {"role": "tool", "content": "Sunny", "tool_call_id": "lc-7f3a"}
    body = {"model": MODEL, "messages": [*first.request["json"]["messages"], echo, result]}
    reply = {"json": ollama_chat.encode_response(REPLIES[1], response_id="")}
    second = Exchange("POST", URL, 200, {"json": {**body, "stream": False}}, reply)

    iteration = build_contexts([first, second]).context.iterations[0]

    assert iteration.messages[-1].tool_call_id == PARIS.id
