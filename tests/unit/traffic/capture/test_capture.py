"""Unit tests of pytest_agentctx.traffic.capture: conversations rebuilt from HTTP exchanges.

Exchanges are built with the wire-format codecs (``encode_request``, ``encode_response``,
``encode_stream``), as an agent on the SDKs would send and receive them: every request
repeats the whole history, the reply is echoed back in the next request, tool results
follow. The live tests drive the real ``openai`` SDK against the fake model.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import openai
import pytest

from pytest_agentctx import (
    Agent as AgentDefinition,
    AgentContext,
    AgentRuntime,
    CapturedRuns,
    CaptureError,
    Exchange,
    FakeLLM,
    Iteration,
    Message,
    NotOneConversation,
    SequentialIds,
    StepClock,
    ToolCall,
    build_contexts,
    capture_contexts,
    contexts_from_cassette,
    nested_runs,
    tool,
)
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.reports.figures import run_stats
from pytest_agentctx.traffic.cassettes.body import encode_body
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.store import write_cassette
from pytest_agentctx.traffic.codecs import Completion, Usage, get_codec
from pytest_agentctx.traffic.codecs.sse import format_sse

URLS = {
    "openai_chat": "https://api.openai.com/v1/chat/completions",
    "openai_responses": "https://api.openai.com/v1/responses",
    "anthropic_messages": "https://api.anthropic.com/v1/messages",
}
WIRE_FORMATS = sorted(URLS)
START = datetime(2025, 1, 1, tzinfo=UTC)
WEATHER = ToolSpec("get_weather", "The weather in a city.", {"type": "object"})


def _json(body: dict[str, Any] | None) -> Any:
    """The JSON of a stored body, which must be there."""
    assert body is not None
    return body["json"]


def _call(call_id: str, name: str = "get_weather", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


class Agent:
    """A scripted agent on one wire format: it sends its whole history with every call."""

    def __init__(
        self,
        wire_format: str = "openai_chat",
        *,
        system: str | None = "You are a weather bot.",
        tools: Sequence[ToolSpec] = (WEATHER,),
        stream: bool = False,
    ) -> None:
        self.codec = get_codec(wire_format)
        self.url = URLS[wire_format]
        self.tools = tools
        self.stream = stream
        self.history: list[dict[str, Any]] = []
        self.replies = 0
        if system is not None:
            self.history.append({"role": "system", "content": system})

    def user(self, text: str) -> Agent:
        self.history.append({"role": "user", "content": text})
        return self

    def results(self, *pairs: tuple[str, str]) -> Agent:
        for call_id, content in pairs:
            self.history.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return self

    def call(
        self,
        content: str | None = None,
        *calls: ToolCall,
        status: int = 200,
        error: str = "rate limited",
    ) -> Exchange:
        """One model call: the request of the history so far and this reply."""
        body = self.codec.encode_request(model="m-1", messages=self.history, tools=self.tools)
        if self.stream:
            body["stream"] = True
            if self.codec.name == "openai_chat":
                body["stream_options"] = {"include_usage": True}
        if status != 200:
            response = {"json": {"type": "error", "error": {"type": "x", "message": error}}}
            return Exchange("POST", self.url, status, {"json": body}, response)
        self.replies += 1
        completion = Completion(
            content=content,
            tool_calls=calls,
            model="m-1-2025",
            usage=Usage(10 * self.replies, 2),
            response_id=f"resp_{id(self)}_{self.replies}",
        )
        assert completion.response_id is not None
        if self.stream:
            encode_stream: Any = getattr(self.codec, "encode_stream")  # noqa: B009
            usage = {"include_usage": True} if self.codec.name == "openai_chat" else {}
            raw = format_sse(encode_stream(completion, response_id=completion.response_id, **usage))
            response_body = encode_body(raw, "text/event-stream")
        else:
            response_body = {
                "json": self.codec.encode_response(completion, response_id=completion.response_id)
            }
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [call.model_dump() for call in calls]
        self.history.append(message)
        return Exchange("POST", self.url, 200, {"json": body}, response_body)


def _weather_run(agent: Agent) -> list[Exchange]:
    agent.user("Weather in Paris?")
    first = agent.call(None, _call("c1", city="Paris"))
    agent.results(("c1", "Sunny"))
    return [first, agent.call("Sunny in Paris.")]


# -- one conversation ----------------------------------------------------------------


@pytest.mark.parametrize("wire_format", WIRE_FORMATS)
def test_a_tool_loop_is_one_iteration_per_model_call(wire_format):
    runs = build_contexts(_weather_run(Agent(wire_format)))

    match runs.context:
        case AgentContext(
            iterations=[
                Iteration(
                    number=1,
                    messages=[
                        Message("system", "You are a weather bot."),
                        Message("user", "Weather in Paris?"),
                        Message("assistant", None, [ToolCall("get_weather", {"city": "Paris"})]),
                        Message("tool", "Sunny", tool_call_id="c1"),
                    ],
                    tool_calls=[ToolCall("get_weather", id="c1")],
                ),
                Iteration(number=2, messages=[Message("assistant", "Sunny in Paris.", [])]),
            ],
            current_iteration=2,
        ):
            pass
        case other:
            raise AssertionError(other)


def test_history_already_seen_is_not_repeated():
    agent = Agent().user("Weather in Paris, then Rome?")
    exchanges = [agent.call(None, _call("c1", city="Paris"))]
    agent.results(("c1", "Sunny"))
    exchanges.append(agent.call(None, _call("c2", city="Rome")))
    agent.results(("c2", "Rainy"))
    exchanges.append(agent.call("Sunny, then rainy."))

    context = build_contexts(exchanges).context

    assert [[m.role for m in it.messages] for it in context.iterations] == [
        ["system", "user", "assistant", "tool"],
        ["assistant", "tool"],
        ["assistant"],
    ]
    assert len(context.get_all_messages()) == 7


def test_tool_results_are_joined_by_call_id_with_the_tools_name():
    agent = Agent().user("Paris and Rome?")
    exchanges = [agent.call(None, _call("c1", city="Paris"), _call("c2", "get_time", tz="CET"))]
    agent.results(("c2", "12:00"), ("c1", "Sunny"))
    exchanges.append(agent.call("Done."))

    first = build_contexts(exchanges).context.iterations[0]

    assert [(m.tool_call_id, m.name, m.content) for m in first.messages if m.role == "tool"] == [
        ("c2", "get_time", "12:00"),
        ("c1", "get_weather", "Sunny"),
    ]
    assert first.pending_tool_calls == []


def test_metadata_has_the_runtimes_keys():
    runs = build_contexts(_weather_run(Agent("anthropic_messages")))

    assert runs.context.iterations[0].metadata == {
        "model": "m-1-2025",
        "provider": "anthropic",
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
    }


def test_timestamps_come_from_the_step_clock_in_exchange_order():
    runs = build_contexts(
        _weather_run(Agent()), clock_start="2030-06-01T12:00:00Z", clock_step=timedelta(seconds=5)
    )
    at = datetime(2030, 6, 1, 12, tzinfo=UTC)

    match runs.context:
        case AgentContext(
            iterations=[
                Iteration(started_at=s1, completed_at=c1),
                Iteration(started_at=s2, completed_at=c2),
            ],
        ):
            # request 1, reply 1, request 2 (results in: iteration 1 complete), reply 2
            assert (s1, c1, s2, c2) == (at, at + 10 * _S, at + 10 * _S, at + 15 * _S)
        case other:
            raise AssertionError(other)


_S = timedelta(seconds=1)


def test_a_reply_with_tool_calls_left_unanswered_stays_open():
    agent = Agent().user("Weather?")

    context = build_contexts([agent.call(None, _call("c1", city="Paris"))]).context

    assert context.iterations[-1].completed_at is None
    assert [call.id for call in context.iterations[-1].pending_tool_calls] == ["c1"]


def test_a_new_user_message_opens_a_new_iteration():
    agent = Agent().user("Hi")
    exchanges = [agent.call("Hello.")]
    agent.user("Weather?")
    exchanges.append(agent.call("Sunny."))

    context = build_contexts(exchanges).context

    assert [[(m.role, m.content) for m in it.messages] for it in context.iterations] == [
        [("system", "You are a weather bot."), ("user", "Hi"), ("assistant", "Hello.")],
        [("user", "Weather?"), ("assistant", "Sunny.")],
    ]


def test_responses_chained_by_previous_response_id_are_one_conversation():
    codec = get_codec("openai_responses")
    url = URLS["openai_responses"]
    first = Completion(tool_calls=(_call("c1", city="Oslo"),), response_id="resp_1")
    second = Completion(content="Snow.", response_id="resp_2")
    exchanges = [
        Exchange(
            "POST",
            url,
            200,
            {"json": {"model": "m", "input": "Weather in Oslo?"}},
            {"json": codec.encode_response(first, response_id="resp_1")},
        ),
        Exchange(
            "POST",
            url,
            200,
            {
                "json": {
                    "model": "m",
                    "previous_response_id": "resp_1",
                    "input": [{"type": "function_call_output", "call_id": "c1", "output": "-3"}],
                }
            },
            {"json": codec.encode_response(second, response_id="resp_2")},
        ),
    ]

    context = build_contexts(exchanges).context

    assert [[m.role for m in it.messages] for it in context.iterations] == [
        ["user", "assistant", "tool"],
        ["assistant"],
    ]


# -- several conversations -------------------------------------------------------------


def test_interleaved_agents_with_their_own_prompts_are_separate_contexts():
    weather = Agent(system="You are a weather bot.").user("Paris?")
    travel = Agent(system="You plan trips.").user("A trip to Rome?")
    exchanges = [weather.call(None, _call("w1", city="Paris"))]
    exchanges.append(travel.call(None, _call("t1", "book", city="Rome")))
    weather.results(("w1", "Sunny"))
    travel.results(("t1", "Booked"))
    exchanges.append(weather.call("Sunny."))
    exchanges.append(travel.call("Booked."))
    # the trip's first call starts while the weather bot waits for a tool, so it would be a
    # sub-agent: here both tools answered, so take the tool call as finished first
    runs = build_contexts([exchanges[0], exchanges[2], exchanges[1], exchanges[3]])

    assert [ctx.final_output for ctx in runs] == ["Sunny.", "Booked."]
    assert [len(ctx.iterations) for ctx in runs] == [2, 2]


def test_the_same_agent_run_twice_is_two_conversations():
    exchanges = _weather_run(Agent()) + _weather_run(Agent())

    runs = build_contexts(exchanges)

    assert len(runs) == 2
    assert runs[1].iterations[0].started_at > runs[0].updated_at


def test_the_same_question_answered_twice_is_two_conversations():
    exchanges = [Agent().user("Hi").call("Hello."), Agent().user("Hi").call("Hey.")]

    assert [ctx.final_output for ctx in build_contexts(exchanges)] == ["Hello.", "Hey."]


def test_a_request_continues_the_conversation_whose_tool_calls_it_answers():
    first, second = Agent().user("Weather?"), Agent().user("Weather?")
    exchanges = [first.call(None, _call("a1", city="Paris"))]
    exchanges.append(second.call(None, _call("b1", city="Rome")))
    second.results(("b1", "Rainy"))
    first.results(("a1", "Sunny"))
    exchanges += [second.call("Rainy in Rome."), first.call("Sunny in Paris.")]

    first_run, second_run = build_contexts(exchanges)

    assert (first_run.final_output, second_run.final_output) == (
        "Sunny in Paris.",
        "Rainy in Rome.",
    )
    assert [m.tool_call_id for m in second_run.iterations[0].messages if m.role == "tool"] == ["b1"]


def test_a_follow_up_continues_the_conversation_with_the_same_tools():
    time = ToolSpec("get_time", "The time.", {"type": "object"})
    weather, clock = Agent().user("Hi"), Agent(tools=[time]).user("Hi")
    exchanges = [weather.call("Hello from weather."), clock.call("Hello from clock.")]
    clock.user("What time is it?")
    exchanges.append(clock.call("Noon."))

    runs = build_contexts(exchanges)

    assert [[it.messages[-1].content for it in ctx.iterations] for ctx in runs] == [
        ["Hello from weather."],
        ["Hello from clock.", "Noon."],
    ]


def test_a_conversation_started_during_a_tool_call_is_its_sub_agent():
    boss = Agent(system="You delegate.").user("Research Paris.")
    helper = Agent(system="You research.").user("Paris")
    exchanges = [boss.call(None, _call("b1", "research", topic="Paris"))]
    exchanges += [helper.call("Paris is the capital of France.")]
    boss.results(("b1", "Paris is the capital of France."))
    exchanges.append(boss.call("Done."))

    runs = build_contexts(exchanges)

    assert len(runs) == 1
    match runs.context.iterations[0].metadata:
        case {"subagents": {"b1": {"tool_call_id": "b1", "context": {"iterations": [_]}}}}:
            pass
        case other:
            raise AssertionError(other)
    assert [(path, ctx.final_output) for path, ctx in nested_runs(runs.context)] == [
        ("iterations[0].metadata.subagents.b1.context", "Paris is the capital of France.")
    ]
    assert run_stats(runs.context).iterations == 3


def test_parallel_sub_agents_are_linked_to_the_call_their_input_quotes():
    boss = Agent(system="You delegate.").user("Research two cities.")
    rome = Agent(system="You research.").user("Tell me about Rome")
    paris = Agent(system="You research.").user("Tell me about Paris")
    calls = (_call("b1", "research", topic="Paris"), _call("b2", "research", topic="Rome"))
    exchanges = [boss.call(None, *calls), rome.call("Rome: Italy."), paris.call("Paris: France.")]

    subagents = build_contexts(exchanges).context.iterations[0].metadata["subagents"]

    assert {
        key: value["context"]["iterations"][0]["messages"][1]["content"]
        for key, value in subagents.items()
    } == {
        "b1": "Tell me about Paris",
        "b2": "Tell me about Rome",
    }


def test_a_sub_agent_of_a_sub_agent_is_nested_twice():
    top = Agent(system="Top.").user("Go.")
    middle = Agent(system="Middle.").user("Go on.")
    bottom = Agent(system="Bottom.").user("Finish.")
    exchanges = [top.call(None, _call("t1", "delegate"))]
    exchanges.append(middle.call(None, _call("m1", "delegate")))
    exchanges.append(bottom.call("Finished."))

    paths = [path for path, _ in nested_runs(build_contexts(exchanges).context)]

    assert paths == [
        "iterations[0].metadata.subagents.t1.context",
        "iterations[0].metadata.subagents.t1.context.iterations[0].metadata.subagents.m1.context",
    ]


def test_a_forced_tool_call_that_ends_the_reply_starts_no_sub_agent():
    extract = Agent(system="Extract.").user("Paris, 21C")
    exchange = extract.call(None, _call("x1", "record", city="Paris"))
    body = _json(exchange.response)
    body["choices"][0]["finish_reason"] = "stop"  # tool_choice forced the call
    exchanges = [exchange, Agent(system="Other.").user("Hi").call("Hello.")]

    assert len(build_contexts(exchanges)) == 2


def test_context_raises_when_there_are_several_conversations_and_lists_them():
    runs = build_contexts([Agent().user("One").call("1"), Agent().user("Two").call("2")])

    with pytest.raises(NotOneConversation) as raised:
        _ = runs.context

    assert str(raised.value).splitlines()[1:3] == [
        "  [0] conversation 1 (openai_chat, 1 iteration(s), first user message 'One')",
        "  [1] conversation 2 (openai_chat, 1 iteration(s), first user message 'Two')",
    ]


def test_context_raises_when_there_is_no_model_call():
    runs = build_contexts([Exchange("GET", "https://api.openai.com/v1/models", 200)])

    with pytest.raises(NotOneConversation, match=r"no model call.*GET /v1/models"):
        _ = runs.context


# -- streaming -------------------------------------------------------------------------


@pytest.mark.parametrize("wire_format", WIRE_FORMATS)
def test_a_streamed_conversation_gives_the_same_context(wire_format):
    plain = build_contexts(_weather_run(Agent(wire_format))).context
    streamed_exchanges = _weather_run(Agent(wire_format, stream=True))

    streamed = build_contexts(streamed_exchanges).context

    assert all(e.response is not None and "sse" in e.response for e in streamed_exchanges)
    assert streamed.model_dump(mode="json") == plain.model_dump(mode="json")


def test_a_stream_stored_as_text_is_decoded_too():
    exchanges = _weather_run(Agent(stream=True))
    as_text = [
        Exchange(e.method, e.url, e.status, e.request, {"text": _sse_text(e)}) for e in exchanges
    ]

    assert build_contexts(as_text).context.final_output == "Sunny in Paris."


def _sse_text(exchange: Exchange) -> str:
    from pytest_agentctx.traffic.cassettes.body import body_bytes

    return body_bytes(exchange.response).decode()


# -- what clients change from one call to the next -------------------------------------

CACHE = {"type": "ephemeral"}


def _with_request(exchange: Exchange, body: dict[str, Any]) -> Exchange:
    return Exchange(
        exchange.method, exchange.url, exchange.status, {"json": body}, exchange.response
    )


def _cache_marked(exchange: Exchange) -> Exchange:
    """The request as a client that caches prompts sends it: the newest message (and the
    system prompt and the last tool) carry ``cache_control``, a string turned into a text
    block to hold it. The older messages carry none: the marker moves on every call."""
    assert exchange.request is not None
    body = copy.deepcopy(exchange.request["json"])
    items = body.get("messages") or body.get("input")
    last = items[-1]
    content = last.get("content")
    if isinstance(content, str):
        last["content"] = [{"type": "text", "text": content, "cache_control": CACHE}]
    elif isinstance(content, list):
        content[-1]["cache_control"] = CACHE
    else:
        last["cache_control"] = CACHE
    if isinstance(body.get("system"), str):
        body["system"] = [{"type": "text", "text": body["system"], "cache_control": CACHE}]
    if body.get("tools"):
        body["tools"][-1]["cache_control"] = CACHE
    return _with_request(exchange, body)


@pytest.mark.parametrize("wire_format", ["anthropic_messages", "openai_chat"])
def test_a_cache_marker_moved_to_the_newest_message_keeps_one_conversation(wire_format):
    agent = Agent(wire_format).user("Weather in Paris, then Rome?")
    exchanges = [agent.call(None, _call("c1", city="Paris"))]
    agent.results(("c1", "Sunny"))
    exchanges.append(agent.call(None, _call("c2", city="Rome")))
    agent.results(("c2", "Rainy"))
    exchanges.append(agent.call("Sunny, then rainy."))

    runs = build_contexts([_cache_marked(e) for e in exchanges])

    assert len(runs) == 1
    context = runs.context
    assert [[m.role for m in it.messages] for it in context.iterations] == [
        ["system", "user", "assistant", "tool"],
        ["assistant", "tool"],
        ["assistant"],
    ]
    assert all("subagents" not in it.metadata for it in context.iterations)
    assert context.final_output == "Sunny, then rainy."


def test_a_cache_marker_on_a_tool_result_block_keeps_one_conversation():
    agent = Agent("anthropic_messages").user("Weather in Paris?")
    first = agent.call(None, _call("c1", city="Paris"))
    agent.results(("c1", "Sunny"))
    second = agent.call(None, _call("c2", city="Rome"))
    agent.results(("c2", "Rainy"))
    third = agent.call("Done.")
    assert second.request is not None
    body = copy.deepcopy(second.request["json"])
    body["messages"][-1]["content"][-1]["cache_control"] = CACHE

    runs = build_contexts([first, _with_request(second, body), third])

    assert len(runs) == 1
    assert len(runs.context.iterations) == 3


@pytest.mark.parametrize(("question", "conversations"), [("Paris?", 1), ("Lyon?", 2)])
def test_only_the_cache_marker_is_left_out_of_the_comparison(question, conversations):
    agent = Agent("anthropic_messages").user("Paris?")
    first = _cache_marked(agent.call("Sunny."))
    other = Agent("anthropic_messages").user(question)
    other.history.append({"role": "assistant", "content": "Sunny."})
    second = _cache_marked(other.user("And tomorrow?").call("Rainy."))

    runs = build_contexts([first, second])

    assert len(runs.contexts) == conversations


def test_parallel_calls_answered_one_by_one_add_no_assistant_message():
    agent = Agent("openai_responses").user("Weather in Paris and Rome?")
    first = agent.call(None, _call("c1", city="Paris"), _call("c2", city="Rome"))
    agent.results(("c1", "Sunny"), ("c2", "Rainy"))
    second = agent.call("Sunny, then rainy.")
    assert second.request is not None
    body = copy.deepcopy(second.request["json"])
    # call 1, result 1, call 2, result 2 (as the openai-agents SDK and others send them)
    *history, call1, call2, result1, result2 = body["input"]
    assert [call1["type"], result2["type"]] == ["function_call", "function_call_output"]
    body["input"] = [*history, call1, result1, call2, result2]

    context = build_contexts([first, _with_request(second, body)]).context

    assert [[m.role for m in it.messages] for it in context.iterations] == [
        ["system", "user", "assistant", "tool", "tool"],
        ["assistant"],
    ]
    assert context.iterations[1].messages[0].content == "Sunny, then rainy."


def test_text_blocks_of_a_user_turn_stay_apart_in_the_context():
    exchange = Agent("anthropic_messages").user("Reserve Dune.").call("Reserved both.")
    assert exchange.request is not None
    body = copy.deepcopy(exchange.request["json"])
    # Two requests of the user in one turn, as two text blocks.
    body["messages"][0]["content"] = [
        {"type": "text", "text": "Reserve Dune."},
        {"type": "text", "text": "Now Emma."},
    ]

    context = build_contexts([_with_request(exchange, body)]).context

    assert [(m.role, m.content) for m in context.iterations[0].messages] == [
        ("system", "You are a weather bot."),
        ("user", "Reserve Dune."),
        ("user", "Now Emma."),
        ("assistant", "Reserved both."),
    ]


def _responses_body(response_id: str, status: str, completion: Completion | None = None) -> Any:
    codec = get_codec("openai_responses")
    body = codec.encode_response(completion or Completion(), response_id=response_id)
    if completion is None:
        body["output"] = []
    body["status"] = status
    return {"json": body}


def test_a_background_response_is_answered_by_the_retrieval_that_finds_it_done():
    agent = Agent("openai_responses").user("Weather in Paris?")
    asked = agent.call("ignored")
    assert asked.request is not None
    queued = Exchange("POST", asked.url, 200, asked.request, _responses_body("resp_bg", "queued"))
    url = "https://api.openai.com/v1/responses/resp_bg?stream=false"
    poll = Exchange("GET", url, 200, None, _responses_body("resp_bg", "in_progress"))
    done = Exchange(
        "GET", url, 200, None, _responses_body("resp_bg", "completed", Completion("Sunny."))
    )

    runs = build_contexts([queued, poll, done])

    assert [(m.role, m.content) for m in runs.context.iterations[0].messages] == [
        ("system", "You are a weather bot."),
        ("user", "Weather in Paris?"),
        ("assistant", "Sunny."),
    ]
    assert runs.non_llm == [poll]
    assert runs.non_llm_reasons == ["a poll of background response resp_bg (in_progress)"]


def test_a_retrieval_of_a_response_nobody_waits_for_is_not_a_model_call():
    retrieval = Exchange(
        "GET",
        "https://api.openai.com/v1/responses/resp_1",
        200,
        None,
        _responses_body("resp_1", "completed", Completion("Sunny.")),
    )

    runs = build_contexts([*_weather_run(Agent("openai_responses")), retrieval])

    assert runs.non_llm == [retrieval]
    assert runs.context.final_output == "Sunny in Paris."


def test_a_request_that_sends_back_a_compacted_history_continues_the_conversation():
    agent = Agent("openai_responses").user("What is 2+2?")
    first = agent.call("4.")
    agent.user("And 3+3?")
    second = agent.call("6.")
    assert second.request is not None
    history = second.request["json"]
    compaction = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA"}
    compact = Exchange(
        "POST",
        "https://api.openai.com/v1/responses/compact",
        200,
        {"json": {**history, "input": [*history["input"], agent.history[-1]]}},
        {"json": {"object": "response.compaction", "output": [compaction]}},
    )
    after = Agent("openai_responses").user("And 5+5?").call("10.")
    assert after.request is not None
    body = {**after.request["json"], "input": [compaction, *after.request["json"]["input"]]}

    runs = build_contexts([first, second, compact, _with_request(after, body)])

    assert [[m.content for m in it.messages] for it in runs.context.iterations] == [
        ["You are a weather bot.", "What is 2+2?", "4."],
        ["And 3+3?", "6."],
        ["And 5+5?", "10."],
    ]
    assert runs.non_llm_reasons == ["compacts the history of conversation 1"]


@pytest.mark.parametrize(
    ("url", "wire_format"),
    [
        (
            "https://res.openai.azure.com/openai/responses?api-version=2025-04-01-preview",
            "openai_responses",
        ),
        ("https://res.openai.azure.com/openai/v1/responses", "openai_responses"),
        ("https://gateway.example/proxy/openai/responses", "openai_responses"),
        (
            "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions"
            "?api-version=2024-10-21",
            "openai_chat",
        ),
        ("https://api.groq.com/openai/v1/chat/completions", "openai_chat"),
        ("https://gateway.example/anthropic/v1/messages?beta=true", "anthropic_messages"),
    ],
)
def test_a_model_endpoint_under_any_prefix_is_a_model_call(url, wire_format):
    exchanges = [
        Exchange(e.method, url, e.status, e.request, e.response)
        for e in _weather_run(Agent(wire_format))
    ]

    runs = build_contexts(exchanges)

    assert runs.non_llm == []
    assert runs.context.final_output == "Sunny in Paris."
    assert (
        runs.context.iterations[0].metadata["provider"]
        == {
            "openai_chat": "openai",
            "openai_responses": "openai-responses",
            "anthropic_messages": "anthropic",
        }[wire_format]
    )


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("GET", "https://api.openai.com/v1/responses/resp_1"),
        (
            "GET",
            "https://res.openai.azure.com/openai/responses/resp_1?api-version=2025-04-01-preview",
        ),
        ("GET", "https://api.openai.com/v1/responses/resp_1/input_items"),
        ("POST", "https://api.openai.com/v1/responses/resp_1/cancel"),
        ("POST", "https://api.openai.com/v1/responses/input_tokens"),
        ("POST", "https://api.anthropic.com/v1/messages/count_tokens"),
        ("POST", "https://api.anthropic.com/v1/messages/batches"),
    ],
)
def test_the_endpoints_beside_a_model_endpoint_are_not_model_calls(method, url):
    exchange = Exchange(method, url, 200, {"json": {"model": "m", "input": "Hi"}})

    runs = build_contexts([exchange])

    assert runs.non_llm == [exchange]
    assert runs.non_llm_reasons == ["not a model endpoint"]


# -- exchanges that are not model calls ------------------------------------------------


def test_non_llm_exchanges_are_listed_apart_with_their_reason():
    embeddings = Exchange(
        "POST", "https://api.openai.com/v1/embeddings", 200, {"json": {"input": "x"}}
    )
    traces = Exchange("POST", "https://api.openai.com/v1/traces/ingest", 204)
    poll = Exchange("GET", "https://api.openai.com/v1/threads/t/runs/r", 200)
    exchanges = [embeddings, *_weather_run(Agent()), traces, poll]

    runs = build_contexts(exchanges)

    assert runs.non_llm == [embeddings, traces, poll]
    assert runs.non_llm_reasons == ["not a model endpoint"] * 3
    assert len(runs.context.iterations) == 2


def test_a_model_endpoint_whose_request_does_not_decode_is_non_llm():
    broken = Exchange("POST", URLS["anthropic_messages"], 200, {"json": {"model": "m"}})

    runs = build_contexts([broken])

    assert runs.contexts == []
    assert runs.non_llm_reasons == ["the request has no 'messages' list"]


# -- errors ----------------------------------------------------------------------------


def test_a_failed_call_retried_is_one_iteration_with_its_errors():
    agent = Agent().user("Hi")
    exchanges = [agent.call(status=429, error="slow down"), agent.call("Hello.")]

    context = build_contexts(exchanges).context

    match context.iterations:
        case [
            Iteration(
                messages=[Message("system"), Message("user", "Hi"), Message("assistant", "Hello.")],
                metadata={"errors": [{"status": 429, "message": "slow down"}], "model": "m-1-2025"},
            )
        ]:
            pass
        case other:
            raise AssertionError(other)


def test_a_last_call_that_failed_leaves_the_iteration_open_with_its_error():
    agent = Agent().user("Weather?")
    exchanges = [agent.call(None, _call("c1", city="Paris"))]
    agent.results(("c1", "Sunny"))
    exchanges.append(agent.call(status=500, error="overloaded"))

    context = build_contexts(exchanges).context

    match context.iterations:
        case [
            Iteration(number=1, completed_at=datetime()),
            Iteration(
                number=2,
                messages=[],
                completed_at=None,
                metadata={"errors": [{"status": 500, "message": "overloaded"}]},
            ),
        ]:
            pass
        case other:
            raise AssertionError(other)


def test_a_success_status_whose_body_does_not_decode_is_an_error():
    request = Agent().user("Hi").call("x").request
    garbled = Exchange("POST", URLS["openai_chat"], 200, request, {"text": "<html>oops</html>"})

    metadata = build_contexts([garbled]).context.iterations[0].metadata

    assert metadata["errors"][0]["status"] == 200
    assert "neither JSON nor a stream" in metadata["errors"][0]["message"]


# -- sources: live logs, cassettes, live traffic ---------------------------------------


def test_contexts_follow_a_growing_log():
    log: list[Exchange] = []
    runs = CapturedRuns(lambda: log)
    exchanges = _weather_run(Agent())

    log.append(exchanges[0])
    during = runs.context
    log.append(exchanges[1])

    assert (len(during.iterations), len(runs.context.iterations)) == (1, 2)
    assert (during.final_output, runs.context.final_output) == (None, "Sunny in Paris.")


def test_contexts_from_cassette_reads_a_cassette_file(tmp_path: Path):
    interactions = [
        Interaction(e.method, e.url, {}, e.request, e.status, {}, e.response)
        for e in _weather_run(Agent("anthropic_messages", stream=True))
    ]
    path = tmp_path / "weather.json"
    write_cassette(path, interactions)

    assert contexts_from_cassette(path).context.final_output == "Sunny in Paris."


def test_contexts_from_cassette_says_when_the_file_is_missing(tmp_path: Path):
    with pytest.raises(CaptureError, match=r"there is no such file.*--agent-record"):
        contexts_from_cassette(tmp_path / "nope.json")


async def test_capture_contexts_sees_live_sdk_traffic_answered_by_the_fake_model():
    fake = FakeLLM().reply_tool_call("get_weather", city="Paris").reply("Sunny.")
    with fake, capture_contexts() as runs:
        async with openai.AsyncOpenAI(
            api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0
        ) as client:
            messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
            first = await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
            messages += [
                first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "Sunny"},
            ]
            await client.chat.completions.create(model="gpt-4o-mini", messages=messages)

    match runs.context:
        case AgentContext(
            iterations=[
                Iteration(
                    messages=[Message("user"), Message("assistant"), Message("tool", "Sunny")]
                ),
                Iteration(messages=[Message("assistant", "Sunny.")]),
            ]
        ):
            pass
        case other:
            raise AssertionError(other)
    assert [e.status for e in runs.exchanges] == [200, 200]


async def test_capture_contexts_keeps_what_it_saw_after_the_block():
    fake = FakeLLM().reply("Hello.")
    with fake, capture_contexts() as runs:
        async with openai.AsyncOpenAI(
            api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0
        ) as client:
            await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
            )
    fake.reply("Unseen.")
    with fake:
        async with openai.AsyncOpenAI(
            api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0
        ) as client:
            await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Again"}]
            )

    assert [ctx.final_output for ctx in runs] == ["Hello."]


# -- the runtime's own context, captured ---------------------------------------------


@tool
def lookup_order(order_id: str) -> str:
    """Status of an order."""
    return f"{order_id}: shipped"


def _without_times(context: AgentContext) -> dict[str, Any]:
    data = context.model_dump(mode="json", exclude={"created_at", "updated_at"})
    for iteration in data["iterations"]:
        del iteration["started_at"], iteration["completed_at"]
    return data


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(
    "model", ["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "openai-responses:gpt-4.1"]
)
async def test_capture_of_a_runtime_run_gives_the_runtimes_context(model, stream, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    agent = AgentDefinition(
        name="support",
        model=model,
        system_prompt="You are a support agent.",
        tools=[lookup_order],
        stream=stream,
    )
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds())
    fake = FakeLLM()
    fake.reply(
        tool_calls=[("lookup_order", {"order_id": "A1"}), ("lookup_order", {"order_id": "B2"})]
    )
    fake.reply("Both shipped.").reply("You are welcome.")

    with fake, capture_contexts() as runs:
        result = await runtime.run_multi_turn(agent, "Where are A1 and B2?", ["Thanks!"])

    assert _without_times(runs.context) == _without_times(result.context)


# -- cost ------------------------------------------------------------------------------


class CountedItem(dict[str, Any]):
    """A request item that counts how often it is compared."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        CountedItem.compared += 1
        return dict.__eq__(self, other)

    __hash__ = None


def _counted(exchange: Exchange) -> Exchange:
    assert exchange.request is not None
    body = dict(exchange.request["json"])
    body["messages"] = [CountedItem(item) for item in body["messages"]]
    return Exchange(exchange.method, exchange.url, 200, {"json": body}, exchange.response)


def test_a_long_conversation_compares_each_request_item_at_most_once():
    agent = Agent().user("Look 79 steps up.")
    exchanges = []
    for step in range(79):
        exchanges.append(agent.call(None, _call(f"c{step}", step=step)))
        agent.results((f"c{step}", "ok"))
    exchanges.append(agent.call("Done."))
    counted = [_counted(e) for e in exchanges]
    CountedItem.compared = 0

    context = build_contexts(counted).context

    assert len(context.iterations) == 80
    assert CountedItem.compared <= sum(len(_json(e.request)["messages"]) for e in counted)


def test_many_conversations_are_not_compared_with_each_other():
    counted = [_counted(Agent().user(f"Question {n}").call(f"Answer {n}")) for n in range(200)]
    CountedItem.compared = 0

    runs = build_contexts(counted)

    assert len(runs) == 200
    assert CountedItem.compared == 0
