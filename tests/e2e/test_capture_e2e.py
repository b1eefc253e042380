"""End-to-end tests of ``agent_context``: contexts captured from real SDK traffic in pytest.

The inner tests run agents written on the raw ``openai`` and ``anthropic`` SDKs (no
pytest-agentctx runtime); their model calls are answered by ``fake_llm`` or replayed from
a cassette file the outer test writes. Nothing leaves the process: the clients point at
``http://127.0.0.1:9`` (nobody listens there).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic  # noqa: F401  (imported here so the inner runs do not import it again)
import openai  # noqa: F401  (same)
import pytest

AGENTS = '''
import json

import anthropic
import openai

BASE = "http://127.0.0.1:9"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def openai_client():
    return openai.OpenAI(api_key="sk-test", base_url=BASE + "/v1", max_retries=0)


def chat_agent(client, question, system="You are a weather bot.", tools=None):
    """A raw chat-completions tool loop, as users write them."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    while True:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=[WEATHER]
        )
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            if tools and call.function.name in tools:
                result = tools[call.function.name](**arguments)
            else:
                result = f"Sunny in {arguments.get('city')}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def anthropic_streaming_agent(question):
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=BASE, max_retries=0)
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    messages = [{"role": "user", "content": question}]
    while True:
        with client.messages.stream(
            model="claude-haiku-4-5", max_tokens=200, messages=messages, tools=tools
        ) as stream:
            message = stream.get_final_message()
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        calls = [b for b in message.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in message.content if b.type == "text")
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": c.id, "content": "Sunny"} for c in calls
                ],
            }
        )


def responses_streaming_agent(question):
    client = openai_client()
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    items = [{"role": "user", "content": question}]
    while True:
        stream = client.responses.create(
            model="gpt-4o-mini", input=items, tools=tools, stream=True,
            instructions="Answer briefly.",
        )
        final = [e.response for e in stream if e.type == "response.completed"][0]
        items += [item.model_dump(exclude_none=True) for item in final.output]
        calls = [item for item in final.output if item.type == "function_call"]
        if not calls:
            return final.output_text
        items += [
            {"type": "function_call_output", "call_id": c.call_id, "output": "Sunny"}
            for c in calls
        ]
'''


@pytest.fixture
def agents(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    # not "agents": that is the openai-agents package, which the examples import
    agent_pytester.makepyfile(sdk_agents=AGENTS)
    return agent_pytester


def test_a_raw_sdk_agent_gets_its_context(agents: pytest.Pytester) -> None:
    agents.makepyfile(
        test_weather="""
        from sdk_agents import chat_agent, openai_client
        from pytest_agentctx import AgentContext, Iteration, Message, ToolCall, Trajectory
        from pytest_agentctx import matches


        def test_weather(fake_llm, agent_context):
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")

            assert chat_agent(openai_client(), "Weather in Paris?") == "Sunny in Paris."

            assert matches(agent_context.context, Trajectory(["get_weather"]))
            match agent_context.context:
                case AgentContext(
                    iterations=[
                        Iteration(
                            messages=[
                                Message("system"),
                                Message("user", "Weather in Paris?"),
                                Message(
                                    "assistant", None, [ToolCall("get_weather", {"city": "Paris"})]
                                ),
                                Message("tool", "Sunny in Paris", name="get_weather"),
                            ],
                            metadata={"model": "gpt-4o-mini", "provider": "openai"},
                        ),
                        Iteration(messages=[Message("assistant", "Sunny in Paris.")]),
                    ]
                ):
                    pass
                case other:
                    raise AssertionError(other)
        """
    )

    result = agents.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


def test_two_agents_in_one_test_are_two_contexts(agents: pytest.Pytester) -> None:
    agents.makepyfile(
        test_two="""
        import pytest
        from sdk_agents import chat_agent, openai_client


        def test_two_agents(fake_llm, agent_context):
            fake_llm.reply("Sunny.").reply("Booked.")
            client = openai_client()
            chat_agent(client, "Weather?", system="You are a weather bot.")
            chat_agent(client, "Book Rome.", system="You book trips.")

            assert [ctx.final_output for ctx in agent_context] == ["Sunny.", "Booked."]
            assert len(agent_context) == 2


        def test_context_says_there_are_two(fake_llm, agent_context):
            fake_llm.reply("Sunny.").reply("Booked.")
            client = openai_client()
            chat_agent(client, "Weather?", system="You are a weather bot.")
            chat_agent(client, "Book Rome.", system="You book trips.")

            agent_context.context
        """
    )

    result = agents.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*NotOneConversation: agent_context.context: the test ran 2 conversations, not one:",
            "*[[]0] conversation 1 (openai_chat, 1 iteration(s), first user message 'Weather?')",
            "*[[]1] conversation 2 (openai_chat, 1 iteration(s), first user message 'Book Rome.')",
            "*Pick one with agent_context.contexts[[]i]*",
        ]
    )


def test_a_sub_agent_run_inside_a_tool_is_linked_to_its_call(agents: pytest.Pytester) -> None:
    agents.makepyfile(
        test_orchestrator="""
        from sdk_agents import chat_agent, openai_client
        from pytest_agentctx import Trajectory, matches, nested_runs


        def test_orchestrator(fake_llm, agent_context):
            boss_call = {"id": "call_boss", "name": "research", "arguments": {"city": "Oslo"}}
            fake_llm.reply(tool_calls=[boss_call])
            fake_llm.reply_tool_call("get_weather", city="Oslo")
            fake_llm.reply("Oslo: snow.")
            fake_llm.reply("The researcher says: snow in Oslo.")
            client = openai_client()

            def research(city):
                return chat_agent(client, f"Research {city}", system="You research.")

            tools = {"research": research}
            chat_agent(client, "Plan a trip to Oslo.", system="You plan.", tools=tools)

            assert len(agent_context) == 1
            parent = agent_context.context
            sub = parent.iterations[0].metadata["subagents"]["call_boss"]
            assert sub["tool_call_id"] == "call_boss"
            assert [path for path, _ in nested_runs(parent)] == [
                "iterations[0].metadata.subagents.call_boss.context"
            ]
            assert matches(parent, Trajectory(["research", "get_weather"], nested=True))
        """
    )

    result = agents.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


def test_streamed_agents_on_anthropic_and_responses_are_captured(
    agents: pytest.Pytester,
) -> None:
    agents.makepyfile(
        test_streams="""
        from sdk_agents import anthropic_streaming_agent, responses_streaming_agent


        def test_anthropic_stream(fake_llm, agent_context):
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny.")

            assert anthropic_streaming_agent("Weather?") == "Sunny."

            context = agent_context.context
            assert [m.role for m in context.iterations[0].messages] == ["user", "assistant", "tool"]
            assert context.iterations[0].metadata["provider"] == "anthropic"
            assert context.final_output == "Sunny."


        def test_responses_stream(fake_llm, agent_context):
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny.")

            assert responses_streaming_agent("Weather?") == "Sunny."

            context = agent_context.context
            assert [[m.role for m in it.messages] for it in context.iterations] == [
                ["system", "user", "assistant", "tool"],
                ["assistant"],
            ]
            assert context.iterations[1].metadata["provider"] == "openai-responses"
        """
    )

    result = agents.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=2)


def _interaction(path: str, request: Any, status: int, response: Any) -> dict[str, Any]:
    return {
        "request": {
            "method": "POST",
            "url": f"http://127.0.0.1:9{path}",
            "headers": {"content-type": "application/json"},
            "body": {"json": request} if request is not None else None,
        },
        "response": {
            "status": status,
            "headers": {"content-type": "application/json"},
            "body": {"json": response} if response is not None else None,
        },
    }


CHAT_REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
}


def test_non_llm_exchanges_of_a_replayed_cassette_are_listed_apart(
    agents: pytest.Pytester,
) -> None:
    cassette = {
        "cassette": "pytest-agentctx",
        "version": 1,
        "interactions": [
            _interaction(
                "/v1/embeddings",
                {"input": "hello", "model": "text-embedding-3-small"},
                200,
                {"data": [], "model": "text-embedding-3-small", "object": "list"},
            ),
            _interaction(
                "/v1/chat/completions",
                {"messages": [{"role": "user", "content": "Hi"}], "model": "gpt-4o-mini"},
                200,
                CHAT_REPLY,
            ),
            _interaction("/v1/traces/ingest", {"data": [{"span": 1}]}, 204, None),
        ],
    }
    folder = agents.path / "cassettes" / "test_replay"
    folder.mkdir(parents=True)
    (folder / "test_replayed.json").write_text(json.dumps(cassette))
    agents.makepyfile(
        test_replay="""
        import httpx2
        from sdk_agents import openai_client


        def test_replayed(agent_context):
            with httpx2.Client() as http:
                http.post(
                    "http://127.0.0.1:9/v1/embeddings",
                    json={"input": "hello", "model": "text-embedding-3-small"},
                )
                client = openai_client()
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
                )
                http.post("http://127.0.0.1:9/v1/traces/ingest", json={"data": [{"span": 1}]})

            assert agent_context.context.final_output == "Hello."
            assert [(e.method, e.path, e.status) for e in agent_context.non_llm] == [
                ("POST", "/v1/embeddings", 200),
                ("POST", "/v1/traces/ingest", 204),
            ]
        """
    )

    result = agents.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


def test_a_budget_counts_the_captured_runs(agents: pytest.Pytester) -> None:
    agents.makepyfile(
        test_budget="""
        import pytest
        from sdk_agents import chat_agent, openai_client


        @pytest.mark.agent_budget(max_tool_calls=1)
        def test_too_many_calls(fake_llm, agent_context):
            fake_llm.reply_tool_call("get_weather", city="Paris")
            fake_llm.reply_tool_call("get_weather", city="Rome")
            fake_llm.reply("Done.")

            chat_agent(openai_client(), "Paris and Rome?")
        """
    )

    result = agents.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*agent budget exceeded: max_tool_calls 2 > 1*"])


def test_with_the_runtime_the_captured_context_matches_and_counts_once(
    agents: pytest.Pytester,
) -> None:
    agents.makepyfile(
        test_runtime="""
        import pytest
        from pytest_agentctx import Agent, tool


        @tool
        def get_weather(city: str) -> str:
            \"\"\"The weather in a city.\"\"\"
            return f"Sunny in {city}"


        bot = Agent(name="bot", model="openai:gpt-4o-mini", tools=[get_weather])


        @pytest.mark.agent_budget(max_iterations=2)
        async def test_runtime(agent_runtime, fake_llm, agent_context):
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny.")

            result = await agent_runtime.run(bot, "Weather?")

            captured = agent_context.context
            assert [it.messages for it in captured.iterations] == [
                it.messages for it in result.context.iterations
            ]
            assert [it.metadata for it in captured.iterations] == [
                it.metadata for it in result.context.iterations
            ]
        """
    )

    result = agents.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)
