"""Capture of Cohere v2 chat traffic (``POST /v2/chat``): contexts rebuilt from its
exchanges, whole and streamed, and its errors."""

from __future__ import annotations

from typing import Any

from pytest_agentctx import Exchange, build_contexts
from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.cassettes.body import encode_body
from pytest_agentctx.traffic.codecs import Completion, Usage, cohere_chat
from pytest_agentctx.traffic.codecs.sse import format_sse

URL = "https://api.cohere.com/v2/chat"
MODEL = "command-a-03-2025"
WEATHER = ToolSpec("get_weather", "The weather in a city.", {"type": "object"})
PARIS = ToolCall(id="get_weather_k2x9", name="get_weather", arguments={"city": "Paris"})
REPLIES = [
    Completion(content="I will look up Paris.", tool_calls=(PARIS,), usage=Usage(1611, 66)),
    Completion(content="Sunny in Paris.", usage=Usage(1728, 12)),
]


def weather_run(*, stream: bool = False) -> list[Exchange]:
    """A two-call tool loop as the cohere SDK sends it: the call, then its answer."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    exchanges = []
    for number, completion in enumerate(REPLIES):
        body = cohere_chat.encode_request(model=MODEL, messages=history, tools=[WEATHER])
        body["stream"] = stream
        if stream:
            raw = format_sse(cohere_chat.encode_stream(completion, response_id=f"r{number}"))
            response = encode_body(raw, "text/event-stream")
        else:
            response = {"json": cohere_chat.encode_response(completion, response_id=f"r{number}")}
        exchanges.append(Exchange("POST", URL, 200, {"json": body}, response))
        history.append(
            {
                "role": "assistant",
                "content": completion.content,
                "tool_calls": [call.model_dump() for call in completion.tool_calls],
            }
        )
        history.append({"role": "tool", "content": "Sunny", "tool_call_id": PARIS.id})
    return exchanges


def test_a_cohere_tool_loop_is_one_iteration_per_model_call():
    runs = build_contexts(weather_run())

    context = runs.context
    assert runs.non_llm == []
    assert [[m.role for m in iteration.messages] for iteration in context.iterations] == [
        ["system", "user", "assistant", "tool"],
        ["assistant"],
    ]
    assert context.iterations[0].messages[3].tool_call_id == PARIS.id
    assert context.iterations[0].metadata == {
        "model": MODEL,
        "provider": "cohere",
        "stop_reason": "TOOL_CALL",
        "usage": {"input_tokens": 1611, "output_tokens": 66, "total_tokens": 1677},
    }
    assert context.final_output == "Sunny in Paris."


def test_the_tool_plan_is_the_text_of_the_reply_that_calls_tools():
    first = build_contexts(weather_run()).context.iterations[0]

    assert (first.messages[2].content, first.tool_calls) == ("I will look up Paris.", [PARIS])


def test_a_streamed_run_rebuilds_the_same_context():
    streamed = weather_run(stream=True)

    assert all("sse" in exchange.response for exchange in streamed if exchange.response)
    assert build_contexts(streamed).context == build_contexts(weather_run()).context


def test_a_failed_call_keeps_cohere_s_error_message():
    first, second = weather_run()
    failed = Exchange(
        "POST",
        URL,
        400,
        first.request,
        {"json": {"id": "e1", "message": "invalid request: model 'command-z' not found"}},
    )

    runs = build_contexts([failed, first, second])

    assert runs.context.iterations[0].metadata["errors"] == [
        {"status": 400, "message": "invalid request: model 'command-z' not found"}
    ]
    assert runs.context.final_output == "Sunny in Paris."
