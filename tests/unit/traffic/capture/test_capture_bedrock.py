"""Capture of AWS Bedrock traffic: contexts rebuilt from Converse, ConverseStream and
InvokeModel exchanges (tool calls joined to the next request's ``toolResult`` by
``toolUseId``, usage, stop reasons, the model from the URL), errors kept, and the
InvokeModel bodies the codec does not read listed with the reason."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from pytest_agentctx import Exchange, build_contexts
from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.cassettes.body import encode_body
from pytest_agentctx.traffic.codecs import Completion, Usage, bedrock
from pytest_agentctx.traffic.codecs.eventstream import encode_messages, event, exception

MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"
RUNTIME = "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
PATH_MODEL = MODEL.replace(":", "%3A")
EVENTSTREAM = "application/vnd.amazon.eventstream"
WEATHER = ToolSpec("get_weather", "The weather in a city.", {"type": "object"})
PARIS = ToolCall(
    id="tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", name="get_weather", arguments={"city": "Paris"}
)


def _stored(completion: Completion, form: str) -> dict[str, Any] | None:
    if form == "json":
        return {"json": bedrock.encode_response(completion, response_id="r")}
    raw = encode_messages(bedrock.encode_stream(completion, response_id="r"))
    if form == "eventstream":
        return encode_body(raw, EVENTSTREAM)
    return {"base64": base64.b64encode(raw).decode()}  # as bytes, without its content type


def weather_run(form: str = "json") -> list[Exchange]:
    """A two-call tool loop as boto3 sends it: the call, then its answer."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    replies = [
        Completion(tool_calls=(PARIS,), usage=Usage(20, 5), stop_reason="tool_use"),
        Completion(content="Sunny in Paris.", usage=Usage(40, 4), stop_reason="end_turn"),
    ]
    operation = "converse" if form == "json" else "converse-stream"
    exchanges = []
    for completion in replies:
        body = bedrock.encode_request(model=MODEL, messages=history, tools=[WEATHER])
        del body["modelId"]  # boto3 sends it in the URL
        url = f"{RUNTIME}{PATH_MODEL}/{operation}"
        exchanges.append(Exchange("POST", url, 200, {"json": body}, _stored(completion, form)))
        history.append(
            {
                "role": "assistant",
                "content": completion.content,
                "tool_calls": [call.model_dump() for call in completion.tool_calls],
            }
        )
        history.append({"role": "tool", "content": "Sunny", "tool_call_id": PARIS.id})
    return exchanges


@pytest.mark.parametrize("form", ["json", "eventstream", "base64"])
def test_a_bedrock_tool_loop_is_one_iteration_per_model_call(form):
    runs = build_contexts(weather_run(form))

    assert runs.non_llm == []
    first, second = runs.context.iterations
    assert [m.role for m in first.messages] == ["system", "user", "assistant", "tool"]
    assert first.messages[3].tool_call_id == PARIS.id
    assert first.messages[3].name == "get_weather"
    assert first.tool_calls == [PARIS]
    assert first.metadata["provider"] == "bedrock"
    assert first.metadata["model"] == MODEL
    assert (first.metadata["stop_reason"], first.metadata["usage"]["input_tokens"]) == (
        "tool_use",
        20,
    )
    assert [m.content for m in second.messages] == ["Sunny in Paris."]
    assert second.metadata["stop_reason"] == "end_turn"


def test_an_invoke_model_call_with_anthropic_messages_is_a_bedrock_model_call():
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    reply = {
        "id": "msg_bdrk_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [{"type": "text", "text": "Hello!"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 8, "output_tokens": 3},
    }
    url = f"{RUNTIME}{PATH_MODEL}/invoke"

    runs = build_contexts([Exchange("POST", url, 200, {"json": body}, {"json": reply})])

    (iteration,) = runs.context.iterations
    assert [m.content for m in iteration.messages] == ["Hi", "Hello!"]
    assert iteration.metadata["provider"] == "bedrock"
    assert iteration.metadata["usage"]["total_tokens"] == 11


def test_an_invoke_model_stream_with_anthropic_events_is_read():
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 9, "messages": []}
    body["messages"] = [{"role": "user", "content": "Hi"}]
    completion = Completion(content="Hello!", model=MODEL, usage=Usage(8, 3))
    raw = encode_messages(bedrock.encode_invoke_stream(completion, response_id="msg_1"))
    url = f"{RUNTIME}{PATH_MODEL}/invoke-with-response-stream"

    runs = build_contexts(
        [Exchange("POST", url, 200, {"json": body}, encode_body(raw, EVENTSTREAM))]
    )

    assert [m.content for m in runs.context.iterations[0].messages] == ["Hi", "Hello!"]


@pytest.mark.parametrize(
    ("model", "body", "family"),
    [
        ("meta.llama3-70b-instruct-v1%3A0", {"prompt": "Hi", "max_gen_len": 9}, "meta.llama3"),
        (
            "us.amazon.nova-micro-v1%3A0",
            {"messages": [{"role": "user", "content": [{"text": "Hi"}]}]},
            "amazon.nova",
        ),
    ],
)
def test_an_invoke_model_body_not_read_is_listed_with_its_model_family(model, body, family):
    url = f"{RUNTIME}{model}/invoke"

    runs = build_contexts([Exchange("POST", url, 200, {"json": body}, {"json": {}})])

    assert runs.contexts == []
    (reason,) = runs.non_llm_reasons
    assert f"(family '{family}') is not read" in reason


def test_a_refused_call_keeps_bedrock_s_error_message():
    body = bedrock.encode_request(model=MODEL, messages=[{"role": "user", "content": "hello"}])
    del body["modelId"]
    refused = {"json": {"message": "The provided model identifier is invalid."}}
    url = f"{RUNTIME}us.does-not-exist-model-v1%3A0/converse-stream"

    runs = build_contexts([Exchange("POST", url, 400, {"json": body}, refused)])

    assert runs.context.iterations[0].metadata["errors"] == [
        {"status": 400, "message": "The provided model identifier is invalid."}
    ]


def test_an_exception_in_the_stream_is_an_error_of_its_iteration():
    body = bedrock.encode_request(model=MODEL, messages=[{"role": "user", "content": "hello"}])
    del body["modelId"]
    messages = [
        event("messageStart", {"role": "assistant"}),
        exception("throttlingException", "Too many requests, please wait."),
    ]
    url = f"{RUNTIME}{PATH_MODEL}/converse-stream"
    stored = encode_body(encode_messages(messages), EVENTSTREAM)

    runs = build_contexts([Exchange("POST", url, 200, {"json": body}, stored)])

    (error,) = runs.context.iterations[0].metadata["errors"]
    assert error["status"] == 200
    assert "throttlingException: Too many requests" in error["message"]


def test_the_request_body_of_a_recorded_bedrock_call_is_read_from_its_json_text():
    body = bedrock.encode_request(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    del body["modelId"]
    raw = json.dumps(body).encode()
    url = f"{RUNTIME}{PATH_MODEL}/converse"
    reply = {"json": bedrock.encode_response(Completion(content="Hey"), response_id="r")}

    runs = build_contexts([Exchange("POST", url, 200, encode_body(raw, "application/json"), reply)])

    assert [m.content for m in runs.context.iterations[0].messages] == ["Hi", "Hey"]


def test_a_cache_point_moved_to_the_newest_message_keeps_the_conversation_whole():
    cache_point = {"cachePoint": {"type": "default"}}
    first = {"messages": [{"role": "user", "content": [{"text": "Read this."}, cache_point]}]}
    second = {
        "messages": [
            {"role": "user", "content": [{"text": "Read this."}]},
            {"role": "assistant", "content": [{"text": "Done."}]},
            {"role": "user", "content": [{"text": "How long is it?"}, cache_point]},
        ]
    }
    url = f"{RUNTIME}{PATH_MODEL}/converse"
    replies = [Completion(content="Done."), Completion(content="Short.")]

    runs = build_contexts(
        [
            Exchange("POST", url, 200, {"json": body}, _stored(reply, "json"))
            for body, reply in zip([first, second], replies, strict=True)
        ]
    )

    assert [[m.content for m in it.messages] for it in runs.context.iterations] == [
        ["Read this.", "Done."],
        ["How long is it?", "Short."],
    ]
