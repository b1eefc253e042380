"""Unit tests of context assembly in the runtime: sources read before every model call.

Runs go through the real SDKs, answered by :class:`FakeLLM`; the requests it received
show where the context message went. No ``from __future__ import annotations``: a tool
below takes a ``RunContext``, whose annotation must be a real class.
"""

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from pytest_agentctx.context.clock import StepClock
from pytest_agentctx.context.model import Message
from pytest_agentctx.doubles.ids import SequentialIds
from pytest_agentctx.runtime.agent import Agent
from pytest_agentctx.runtime.assembly import FromRetrieval, FromState, Text
from pytest_agentctx.runtime.errors import (
    AgentDefinitionError,
    ContextAssemblyError,
    ContextAssemblyFailed,
)
from pytest_agentctx.runtime.loop import CONTEXT_TAG, AgentRuntime
from pytest_agentctx.runtime.providers import AnthropicMessagesProvider, OpenAIChatProvider
from pytest_agentctx.runtime.retrieval import Document, InMemoryVectorStore
from pytest_agentctx.runtime.tools import RunContext, tool
from pytest_agentctx.runtime.window import ContextWindow

_TLS = ssl.create_default_context()
SYSTEM = "You answer support tickets."


@dataclass
class Customer:
    name: str
    plan: str


@dataclass
class Ticket:
    question: str
    customer: Customer
    notes: list[str] = field(default_factory=list)


def ticket() -> Ticket:
    return Ticket("How long do refunds take?", Customer("Ada", "pro"))


def kb() -> InMemoryVectorStore:
    return InMemoryVectorStore(
        {
            "kb": [
                Document("refunds", "Refunds take five days."),
                Document("shipping", "Shipping takes two days."),
            ]
        }
    )


SOURCES = [
    FromState("customer.plan", label="Plan"),
    FromRetrieval("kb", query_from="question", top_k=1, min_relevance=0.1),
    Text("Answer in one sentence.", label="Style"),
]


def support_agent(model: str = "openai:gpt-4o-mini", **options: Any) -> Agent:
    options.setdefault("context", SOURCES)
    return Agent(name="support", model=model, system_prompt=SYSTEM, state_type=Ticket, **options)


@pytest.fixture
async def runtime() -> AsyncIterator[AgentRuntime]:
    async with (
        openai.AsyncOpenAI(api_key="sk-test", http_client=httpx2.AsyncClient(verify=_TLS)) as oai,
        anthropic.AsyncAnthropic(
            api_key="sk-ant-test", http_client=httpx2.AsyncClient(verify=_TLS)
        ) as ant,
    ):
        yield AgentRuntime(
            clock=StepClock(),
            ids=SequentialIds(),
            providers={
                "openai": OpenAIChatProvider(client=oai),
                "anthropic": AnthropicMessagesProvider(client=ant),
            },
            vector_store=kb(),
        )


EXPECTED_TEXT = (
    "## Plan\npro\n\n"
    "## kb\n[1] refunds (score 0.447)\nRefunds take five days.\n\n"
    "## Style\nAnswer in one sentence."
)


# -- definition ----------------------------------------------------------------------------


def test_a_state_path_the_state_type_lacks_fails_when_the_agent_is_defined():
    with pytest.raises(
        ContextAssemblyError, match=r"Agent 'support': FromState\('customer.tier'\)"
    ):
        support_agent(context=[FromState("customer.tier")])


def test_a_context_assembly_error_is_an_agent_definition_error():
    with pytest.raises(AgentDefinitionError):
        support_agent(context=["plain text"])


def test_the_agent_keeps_its_sources_as_a_tuple():
    assert support_agent().context == tuple(SOURCES)


# -- the context message -------------------------------------------------------------------


async def test_the_context_message_goes_between_the_system_prompt_and_the_user_prompt(
    fake, runtime
):
    fake.reply("Five days.")

    await runtime.run(support_agent(), "How long?", state=ticket())

    match fake.requests[0].messages:
        case [
            {"role": "system", "content": str(system)},
            {"role": "system", "content": str(context)},
            {"role": "user", "content": "How long?"},
        ]:
            assert system == SYSTEM
            assert context == f"<{CONTEXT_TAG}>\n{EXPECTED_TEXT}\n</{CONTEXT_TAG}>"
        case other:
            pytest.fail(f"unexpected request: {other}")


async def test_anthropic_receives_the_context_after_the_system_prompt(fake, runtime):
    fake.reply("Five days.")

    await runtime.run(support_agent("anthropic:claude-haiku-4-5"), "How long?", state=ticket())

    match fake.calls[0].body:
        case {
            "system": str(system),
            "messages": [{"role": "user", "content": [{"type": "text", "text": "How long?"}]}],
        }:
            assert system == f"{SYSTEM}\n\n<context>\n{EXPECTED_TEXT}\n</context>"
        case other:
            pytest.fail(f"unexpected body: {other}")


async def test_the_context_message_is_not_stored_in_the_conversation(fake, runtime):
    fake.reply("Five days.")

    result = await runtime.run(support_agent(), "How long?", state=ticket())

    match result.context.iterations[0].messages:
        case [Message(role="system", content=str(s)), Message(role="user"), Message("assistant")]:
            assert s == SYSTEM
        case other:
            pytest.fail(f"unexpected messages: {other}")


async def test_the_metadata_records_each_segment_and_retrieval_result(fake, runtime):
    fake.reply("Five days.")

    result = await runtime.run(support_agent(), "How long?", state=ticket())

    match result.context.iterations[0].metadata["context"]:
        case {
            "segments": [
                {"kind": "state", "label": "Plan", "path": "customer.plan"},
                {
                    "kind": "retrieval",
                    "collection": "kb",
                    "query": "How long do refunds take?",
                    "results": [{"source_id": "refunds", "score": 0.447214, "rank": 1}],
                },
                {"kind": "text", "label": "Style"},
            ]
        }:
            pass
        case other:
            pytest.fail(f"unexpected context metadata: {other}")


@tool
def add_note(ctx: RunContext, note: str) -> str:
    """Add a note to the ticket."""
    ctx.state.customer.plan = note
    return "noted"


async def test_the_context_is_assembled_again_before_every_model_call(fake, runtime):
    fake.reply_tool_call("add_note", note="enterprise").reply("Done.")

    result = await runtime.run(support_agent(tools=[add_note]), "Upgrade me", state=ticket())

    plans = [request.messages[1]["content"].split("\n")[2] for request in fake.requests]
    assert plans == ["pro", "enterprise"]
    assert [it.metadata["context"]["chars"] for it in result.context.iterations] == [
        len(EXPECTED_TEXT),
        len(EXPECTED_TEXT) - len("pro") + len("enterprise"),
    ]


async def test_tools_receive_the_runs_state(fake, runtime):
    state = ticket()
    fake.reply_tool_call("add_note", note="basic").reply("Done.")

    await runtime.run(support_agent(tools=[add_note]), "Downgrade me", state=state)

    assert state.customer.plan == "basic"


async def test_an_agent_without_sources_sends_no_context_message(fake, runtime):
    fake.reply("Hi.")

    result = await runtime.run(support_agent(context=[]), "Hello", state=ticket())

    assert [m["role"] for m in fake.requests[0].messages] == ["system", "user"]
    assert "context" not in result.context.iterations[0].metadata


async def test_a_state_without_the_attribute_fails_the_run_with_context_assembly_failed(
    fake, runtime
):
    with pytest.raises(ContextAssemblyFailed, match="has no attribute 'customer'"):
        await runtime.run(support_agent(), "How long?", state={"question": "?"})


async def test_a_retrieval_source_without_a_vector_store_fails_the_run(fake):
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds())

    with pytest.raises(ContextAssemblyFailed, match="needs a vector store"):
        await runtime.run(support_agent(), "How long?", state=ticket())


async def test_the_window_counts_the_context_message_and_keeps_it(fake, runtime):
    fake.reply("Five days.")
    window = ContextWindow(max_messages=3)

    result = await runtime.run(support_agent(window=window), "How long?", state=ticket())

    match result.context.iterations[0].metadata["window"]:
        case {"tokens_before": int(tokens)}:
            assert tokens > len(EXPECTED_TEXT) // 4
        case other:
            pytest.fail(f"unexpected window metadata: {other}")
    assert [m["role"] for m in fake.requests[0].messages] == ["system", "system", "user"]
