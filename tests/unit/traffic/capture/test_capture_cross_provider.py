"""Unit tests of capture across wire formats: a retry or a continuation on another provider
joins the conversation it continues (pytest_agentctx.traffic.capture.crossing).

A :class:`Run` keeps one neutral history and sends each model call in the wire format the
test picks, converting the whole history with that codec's ``encode_request``, as a
fallback (LiteLLM, pydantic-ai's ``FallbackModel``) or a framework resuming a run on
another model does. Tool call ids are renamed when a call made in one format is sent in
another (``call_`` for OpenAI, ``toolu_`` for Anthropic), as converters do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from pytest_agentctx import AgentContext, Exchange, Iteration, Message, ToolCall, build_contexts
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.capture import crossing
from pytest_agentctx.traffic.codecs import Completion, Usage, get_codec

URLS = {
    "openai_chat": "https://api.openai.com/v1/chat/completions",
    "openai_responses": "https://api.openai.com/v1/responses",
    "anthropic_messages": "https://api.anthropic.com/v1/messages",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
    ":generateContent",
}
WIRE_FORMATS = sorted(URLS)
#: How a converter names a tool call made in another format.
PREFIXES = {
    "openai_chat": "call_",
    "openai_responses": "call_",
    "anthropic_messages": "toolu_",
    "gemini": "gm_",
}
WEATHER = ToolSpec("get_weather", "The weather in a city.", {"type": "object"})


@dataclass
class Run:
    """One conversation whose calls go to the wire format each call names."""

    system: str | None = "You are a weather bot."
    history: list[dict[str, Any]] = field(default_factory=list)
    #: The format that made each tool call (by the id its client got).
    origin: dict[str, str] = field(default_factory=dict)
    replies: int = 0
    #: The calls of the last reply, as the client got them.
    pending: list[ToolCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.system is not None:
            self.history.append({"role": "system", "content": self.system})

    def user(self, text: str) -> Run:
        self.history.append({"role": "user", "content": text})
        return self

    def results(self, *contents: str) -> Run:
        """Answer the last reply's tool calls, in order."""
        for call, content in zip(self.pending, contents, strict=True):
            self.history.append(
                {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}
            )
        self.pending = []
        return self

    def converted(self, wire_format: str) -> list[dict[str, Any]]:
        """The history as a converter sends it in ``wire_format``: the ids of tool calls
        made in another format renamed."""

        def rename(call_id: str) -> str:
            if self.origin.get(call_id, wire_format) == wire_format:
                return call_id
            return f"{PREFIXES[wire_format]}{list(self.origin).index(call_id)}"

        messages = []
        for message in self.history:
            message = dict(message)
            if message.get("tool_calls"):
                message["tool_calls"] = [
                    {**call, "id": rename(call["id"])} for call in message["tool_calls"]
                ]
            if message.get("tool_call_id"):
                message["tool_call_id"] = rename(message["tool_call_id"])
            messages.append(message)
        return messages

    def call(
        self,
        wire_format: str,
        content: str | None = None,
        *calls: tuple[str, dict[str, Any]],
        status: int = 200,
        error: str = "Incorrect API key provided.",
    ) -> Exchange:
        """One model call in ``wire_format``: the converted history and this reply."""
        codec = get_codec(wire_format)
        body = codec.encode_request(
            model="m-1", messages=self.converted(wire_format), tools=[WEATHER]
        )
        if wire_format == "gemini":
            del body["model"]  # the SDK sends it in the URL
        url = URLS[wire_format]
        if status != 200:
            response = {"json": {"error": {"type": "x", "message": error}}}
            return Exchange("POST", url, status, {"json": body}, response)
        self.replies += 1
        completion = Completion(
            content=content,
            tool_calls=tuple(
                ToolCall(id=f"{PREFIXES[wire_format]}r{self.replies}_{n}", name=name, arguments=a)
                for n, (name, a) in enumerate(calls)
            ),
            model=f"{wire_format}-model",
            usage=Usage(10, 2),
        )
        encoded = codec.encode_response(completion, response_id=f"resp_{self.replies}")
        got = codec.decode_response(encoded)  # the ids as the client reads them
        self.pending = list(got.tool_calls)
        for call in got.tool_calls:
            self.origin[call.id] = wire_format
        message: dict[str, Any] = {"role": "assistant", "content": got.content}
        if got.tool_calls:
            message["tool_calls"] = [c.model_dump(mode="json") for c in got.tool_calls]
        self.history.append(message)
        return Exchange("POST", url, 200, {"json": body}, {"json": encoded})


def _roles(context: AgentContext) -> list[list[str]]:
    return [[m.role for m in iteration.messages] for iteration in context.iterations]


def _joined(context: AgentContext) -> bool:
    """Whether every tool result answers a tool call of its iteration."""
    return all(
        m.tool_call_id in {c.id for c in iteration.tool_calls}
        for iteration in context.iterations
        for m in iteration.messages
        if m.role == "tool"
    )


# -- a failed call retried on another provider ---------------------------------------------


def test_an_openai_call_failing_with_401_retried_on_anthropic_is_one_iteration():
    run = Run().user("Hi")
    exchanges = [run.call("openai_chat", status=401), run.call("anthropic_messages", "Hello.")]

    runs = build_contexts(exchanges)

    match runs.context.iterations:
        case [
            Iteration(
                messages=[Message("system"), Message("user", "Hi"), Message("assistant", "Hello.")],
                metadata={
                    "errors": [
                        {
                            "status": 401,
                            "message": "Incorrect API key provided.",
                            "provider": "openai",
                        }
                    ],
                    "provider": "anthropic",
                    "model": "anthropic_messages-model",
                },
            )
        ]:
            pass
        case other:
            raise AssertionError(other)


def test_an_openai_call_failing_with_429_retried_on_gemini_is_one_iteration():
    run = Run().user("Weather in Paris?")
    exchanges = [
        run.call("openai_chat", status=429, error="Rate limit reached."),
        run.call("gemini", None, ("get_weather", {"city": "Paris"})),
    ]
    run.results("Sunny")
    exchanges.append(run.call("gemini", "Sunny in Paris."))

    context = build_contexts(exchanges).context

    first, second = context.iterations
    assert first.metadata["errors"] == [
        {"status": 429, "message": "Rate limit reached.", "provider": "openai"}
    ]
    assert first.metadata["provider"] == second.metadata["provider"] == "google"
    assert _roles(context) == [["system", "user", "assistant", "tool"], ["assistant"]]
    assert _joined(context)


def test_each_failed_attempt_names_its_provider_once_the_iteration_crossed():
    run = Run().user("Hi")
    exchanges = [
        run.call("openai_chat", status=401),
        run.call("anthropic_messages", status=529, error="Overloaded"),
        run.call("anthropic_messages", "Hello."),
    ]

    metadata = build_contexts(exchanges).context.iterations[0].metadata

    assert [(e["status"], e["provider"]) for e in metadata["errors"]] == [
        (401, "openai"),
        (529, "anthropic"),
    ]


def test_a_retry_on_the_same_provider_keeps_its_errors_as_they_were():
    run = Run().user("Hi")
    exchanges = [run.call("openai_chat", status=429), run.call("openai_chat", "Hello.")]

    metadata = build_contexts(exchanges).context.iterations[0].metadata

    assert metadata["errors"] == [{"status": 429, "message": "Incorrect API key provided."}]


def test_a_failed_call_retried_with_other_messages_on_another_provider_stays_apart():
    run = Run().user("Hi")
    other = Run().user("Hi there, who are you?")
    exchanges = [run.call("openai_chat", status=401), other.call("anthropic_messages", "Claude.")]

    runs = build_contexts(exchanges)

    assert len(runs.contexts) == 2


# -- a conversation resumed on another provider --------------------------------------------


def test_a_gemini_tool_call_answered_on_anthropic_joins_the_gemini_iteration():
    run = Run().user("Weather in Paris?")
    exchanges = [run.call("gemini", None, ("get_weather", {"city": "Paris"}))]
    run.results("Sunny")
    exchanges.append(run.call("anthropic_messages", "Sunny in Paris."))

    context = build_contexts(exchanges).context

    first, second = context.iterations
    assert _roles(context) == [["system", "user", "assistant", "tool"], ["assistant"]]
    (call,) = first.tool_calls
    assert first.messages[-1] == Message(
        role="tool", content="Sunny", tool_call_id=call.id, name="get_weather"
    )
    assert (first.metadata["provider"], second.metadata["provider"]) == ("google", "anthropic")


def test_a_gemini_conversation_resumed_on_anthropic_after_its_answer_is_one_conversation():
    run = Run().user("Weather in Paris?")
    exchanges = [run.call("gemini", None, ("get_weather", {"city": "Paris"}))]
    run.results("Sunny")
    exchanges.append(run.call("gemini", "Sunny in Paris."))
    run.user("And in Rome?")
    exchanges.append(run.call("anthropic_messages", None, ("get_weather", {"city": "Rome"})))
    run.results("Rainy")
    exchanges.append(run.call("anthropic_messages", "Rainy in Rome."))

    context = build_contexts(exchanges).context

    assert _roles(context) == [
        ["system", "user", "assistant", "tool"],
        ["assistant"],
        ["user", "assistant", "tool"],
        ["assistant"],
    ]
    assert [it.metadata["provider"] for it in context.iterations] == [
        "google",
        "google",
        "anthropic",
        "anthropic",
    ]
    assert _joined(context)


def test_openai_chat_continued_on_responses_and_back_is_one_conversation():
    run = Run().user("Weather in Paris?")
    exchanges = [run.call("openai_chat", None, ("get_weather", {"city": "Paris"}))]
    run.results("Sunny")
    exchanges.append(run.call("openai_responses", "Sunny in Paris."))
    run.user("Thanks!")
    exchanges.append(run.call("openai_chat", "You're welcome."))

    context = build_contexts(exchanges).context

    assert [it.metadata["provider"] for it in context.iterations] == [
        "openai",
        "openai-responses",
        "openai",
    ]
    assert _roles(context) == [
        ["system", "user", "assistant", "tool"],
        ["assistant"],
        ["user", "assistant"],
    ]
    assert _joined(context)


def test_the_next_call_on_the_new_provider_continues_by_its_items():
    run = Run().user("Weather in Paris?")
    exchanges = [run.call("openai_chat", status=401)]
    exchanges.append(run.call("anthropic_messages", None, ("get_weather", {"city": "Paris"})))
    run.results("Sunny")
    exchanges.append(run.call("anthropic_messages", "Sunny in Paris."))

    context = build_contexts(exchanges).context

    assert _roles(context) == [["system", "user", "assistant", "tool"], ["assistant"]]
    assert _joined(context)


def test_a_json_tool_result_is_compared_by_value_across_formats():
    run = Run().user("Weather in Paris?")
    exchanges = [run.call("gemini", None, ("get_weather", {"city": "Paris"}))]
    run.results('{"temp": 20, "sky": "clear"}')
    second = run.call("gemini", "Clear, 20 degrees.")
    assert second.request is not None
    (part,) = second.request["json"]["contents"][-1]["parts"]
    part["functionResponse"]["response"] = {"temp": 20, "sky": "clear"}  # an object
    exchanges.append(second)
    run.user("Thanks!")
    exchanges.append(run.call("anthropic_messages", "You're welcome."))

    context = build_contexts(exchanges).context

    assert [it.metadata["provider"] for it in context.iterations] == [
        "google",
        "google",
        "anthropic",
    ]


# -- what never joins ----------------------------------------------------------------------


def test_the_same_question_asked_of_two_providers_is_two_conversations():
    exchanges = [
        Run().user("Weather in Paris?").call("openai_chat", "Sunny."),
        Run().user("Weather in Paris?").call("anthropic_messages", "Sunny."),
    ]

    runs = build_contexts(exchanges)

    assert [c.iterations[0].metadata["provider"] for c in runs.contexts] == [
        "openai",
        "anthropic",
    ]


def test_two_runs_sharing_a_first_message_stay_apart_in_different_formats():
    first, second = Run().user("Weather in Paris?"), Run().user("Weather in Paris?")
    exchanges = [first.call("gemini", None, ("get_weather", {"city": "Paris"}))]
    exchanges.append(second.call("anthropic_messages", None, ("get_weather", {"city": "Paris"})))
    first.results("Sunny")
    second.results("Sunny")
    exchanges.append(first.call("gemini", "Sunny in Paris."))
    exchanges.append(second.call("anthropic_messages", "Sunny in Paris!"))

    runs = build_contexts(exchanges)

    assert [_roles(c) for c in runs.contexts] == [
        [["system", "user", "assistant", "tool"], ["assistant"]]
    ] * 2
    assert [c.iterations[1].metadata["provider"] for c in runs.contexts] == [
        "google",
        "anthropic",
    ]


def test_a_request_that_does_not_carry_the_answer_starts_its_own_conversation():
    run = Run().user("Weather in Paris?")
    exchanges = [run.call("openai_chat", "Sunny.")]
    other = Run().user("Weather in Paris?")
    other.history.append({"role": "assistant", "content": "Let me check."})
    other.user("Please hurry.")
    exchanges.append(other.call("anthropic_messages", "Sunny."))

    assert len(build_contexts(exchanges).contexts) == 2


def test_a_sub_agent_on_another_provider_is_linked_to_the_call_that_started_it():
    parent = Run().user("Research Lisbon.")
    exchanges = [parent.call("openai_chat", None, ("research", {"topic": "Lisbon"}))]
    child = Run(system="You research.").user("Lisbon")
    exchanges.append(child.call("anthropic_messages", "Lisbon is the capital of Portugal."))
    parent.results("Lisbon is the capital of Portugal.")
    exchanges.append(parent.call("openai_chat", "Done."))

    runs = build_contexts(exchanges)

    (context,) = runs.contexts
    (subagent,) = context.iterations[0].metadata["subagents"].values()
    assert subagent["context"]["iterations"][0]["metadata"]["provider"] == "anthropic"


def test_conversations_with_other_first_messages_are_not_compared_across_formats(
    monkeypatch: pytest.MonkeyPatch,
):
    compared: list[int] = []
    continues = crossing._continues

    def counted(*args: Any) -> Any:
        compared.append(1)
        return continues(*args)

    monkeypatch.setattr(crossing, "_continues", counted)
    exchanges = [
        Run().user(f"Question {n}").call(WIRE_FORMATS[n % len(WIRE_FORMATS)], f"Answer {n}")
        for n in range(100)
    ]

    assert len(build_contexts(exchanges)) == 100
    assert compared == []


# -- the law --------------------------------------------------------------------------------

#: One model call of a scripted run: its wire format, and whether it asks for a tool.
_STEPS = st.lists(st.tuples(st.sampled_from(WIRE_FORMATS), st.booleans()), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(steps=_STEPS, fails=st.lists(st.booleans(), min_size=6, max_size=6))
def test_a_conversation_sent_through_any_formats_is_one_conversation(steps, fails):
    run = Run().user("Weather, step by step?")
    exchanges = []
    for number, ((wire_format, asks), failed) in enumerate(zip(steps, fails, strict=False)):
        if failed:  # a failed attempt on another format first, then this one
            other = WIRE_FORMATS[(WIRE_FORMATS.index(wire_format) + 1) % len(WIRE_FORMATS)]
            exchanges.append(run.call(other, status=503, error="Unavailable"))
        if asks:
            exchanges.append(run.call(wire_format, None, ("get_weather", {"step": number})))
            run.results(f"result {number}")
        else:
            exchanges.append(run.call(wire_format, f"Answer {number}."))
            run.user(f"Next {number}?")

    context = build_contexts(exchanges).context

    assert len(context.iterations) == len(steps)
    assert [it.metadata["provider"] for it in context.iterations] == [
        {"openai_chat": "openai", "openai_responses": "openai-responses"}.get(
            f, "anthropic" if f == "anthropic_messages" else "google"
        )
        for f, _ in steps
    ]
    assert sum(len(it.metadata.get("errors", [])) for it in context.iterations) == sum(
        fails[: len(steps)]
    )
    assert _joined(context)
    assert all(
        sum(m.role == "tool" for m in it.messages) == len(it.tool_calls)
        for it in context.iterations[:-1]
    )


@pytest.mark.parametrize("wire_format", WIRE_FORMATS)
def test_a_same_format_conversation_is_rebuilt_as_before(wire_format):
    run = Run().user("Weather in Paris?")
    exchanges = [run.call(wire_format, None, ("get_weather", {"city": "Paris"}))]
    run.results("Sunny")
    exchanges.append(run.call(wire_format, "Sunny in Paris."))

    context = build_contexts(exchanges).context

    assert _roles(context) == [["system", "user", "assistant", "tool"], ["assistant"]]
    assert _joined(context)
