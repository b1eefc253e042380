"""End to end: an agent that changes provider mid-conversation is one conversation.

Agents on the real SDKs against a :class:`~pytest_agentctx.LoopbackProvider` the test
starts (one script, each reply in the wire format of the path asked): an OpenAI call that
fails with 401 and falls back to Anthropic, and a conversation started on Gemini and
resumed on Anthropic with its tool call converted; and pydantic-ai's ``FallbackModel``
(OpenAI, then Anthropic), which converts the history itself and tries OpenAI again on the
next request. Each is recorded (``--agent-record``), then replayed offline, and
``agent_context`` shows one conversation both times.
"""

from __future__ import annotations

import pytest

PROJECT = """
import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from pytest_agentctx import LoopbackProvider, RecordMode

SYSTEM = "You are a weather bot."
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture
def server(agent_cassette):
    with LoopbackProvider() as provider:
        yield provider
        if agent_cassette.mode is RecordMode.NONE:
            assert provider.exchanges == []
        else:
            provider.verify()


def get_weather(city):
    return f"Sunny in {city}"


def on_anthropic(client, messages):
    \"\"\"The rest of the run on Anthropic: ``messages`` in Anthropic's format.\"\"\"
    while True:
        reply = client.messages.create(
            model="claude-test-model",
            max_tokens=256,
            system=SYSTEM,
            messages=messages,
            tools=[{"name": WEATHER["name"], "description": WEATHER["description"],
                    "input_schema": WEATHER["parameters"]}],
        )
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return reply.content[0].text
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.id, "content": get_weather(**c.input)}
            for c in calls
        ]})


def fallback_agent(server, question):
    \"\"\"OpenAI first; on an authentication error, the same request on Anthropic.\"\"\"
    sdk = openai.OpenAI(api_key="test-key", base_url=server.openai_base_url, max_retries=0)
    try:
        reply = sdk.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
            tools=[{"type": "function", "function": WEATHER}],
        )
    except openai.AuthenticationError:
        client = anthropic.Anthropic(
            api_key="test-key", base_url=server.anthropic_base_url, max_retries=0
        )
        return on_anthropic(client, [{"role": "user", "content": question}])
    return reply.choices[0].message.content


@pytest.mark.agent
def test_openai_401_falls_back_to_anthropic(server, agent_context):
    server.fail(401, "Incorrect API key provided.")
    server.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")

    assert fallback_agent(server, "Weather in Paris?") == "Sunny in Paris."

    first, second = agent_context.context.iterations
    assert [e["status"] for e in first.metadata["errors"]] == [401]
    assert first.metadata["errors"][0]["provider"] == "openai"
    assert "Incorrect API key" in first.metadata["errors"][0]["message"]
    assert first.metadata["provider"] == second.metadata["provider"] == "anthropic"
    assert [m.role for m in first.messages] == ["system", "user", "assistant", "tool"]
    assert first.messages[-1].tool_call_id == first.tool_calls[0].id
    assert agent_context.context.final_output == "Sunny in Paris."


@pytest.mark.agent
def test_gemini_run_resumed_on_anthropic(server, agent_context):
    server.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
    google = genai.Client(
        api_key="test-key",
        http_options=types.HttpOptions(base_url=server.gemini_base_url, api_version="v1beta"),
    )
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=[types.Tool(function_declarations=[types.FunctionDeclaration(
            name=WEATHER["name"], description=WEATHER["description"],
            parameters_json_schema=WEATHER["parameters"],
        )])],
    )
    reply = google.models.generate_content(
        model="gemini-2.5-flash", contents="Weather in Paris?", config=config
    )
    (call,) = reply.function_calls
    # the history converted to Anthropic's format, with an id of Anthropic's form
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_01", "name": call.name, "input": dict(call.args)}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": get_weather(**call.args)}
        ]},
    ]
    client = anthropic.Anthropic(api_key="test-key", base_url=server.anthropic_base_url)

    assert on_anthropic(client, messages) == "Sunny in Paris."

    first, second = agent_context.context.iterations
    assert (first.metadata["provider"], second.metadata["provider"]) == ("google", "anthropic")
    assert first.messages[-1].content == "Sunny in Paris"
    assert first.messages[-1].tool_call_id == first.tool_calls[0].id
    assert agent_context.context.final_output == "Sunny in Paris."
"""


def test_a_provider_change_is_one_conversation_recorded_and_replayed(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    agent_pytester.makepyfile(test_cross_agent=PROJECT)

    recorded = agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record")
    recorded.assert_outcomes(passed=2)
    text = "\n".join(
        path.read_text(encoding="utf-8")
        for path in sorted((agent_pytester.path / "cassettes").rglob("*.json"))
    )
    assert '"status": 401' in text or '"status":401' in text
    assert "test-key" not in text

    replayed = agent_pytester.runpytest("-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=2)


FALLBACK_PROJECT = """
import anthropic
import openai
import pytest
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from pytest_agentctx import LoopbackProvider, RecordMode


@pytest.fixture
def server(agent_cassette):
    with LoopbackProvider() as provider:
        yield provider
        if agent_cassette.mode is RecordMode.NONE:
            assert provider.exchanges == []
        else:
            provider.verify()


@pytest.mark.agent
async def test_fallback_model(server, agent_context):
    server.fail(401, "Incorrect API key provided.")
    server.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
    # SDK clients the test closes: a provider's own cached client would leave its
    # connections to the loopback open after the test
    async with (
        openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0) as oa,
        anthropic.AsyncAnthropic(
            base_url=server.anthropic_base_url, api_key="k", max_retries=0
        ) as an,
    ):
        primary = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=oa))
        backup = AnthropicModel(
            "claude-test-model", provider=AnthropicProvider(anthropic_client=an)
        )
        agent = Agent(FallbackModel(primary, backup), system_prompt="Be brief.")

        @agent.tool_plain
        def get_weather(city: str) -> str:
            return f"Sunny in {city}"

        assert (await agent.run("Weather in Paris?")).output == "Sunny in Paris."

    first, second = agent_context.context.iterations
    assert [(e["status"], e["provider"]) for e in first.metadata["errors"]] == [(401, "openai")]
    # FallbackModel tries OpenAI first on every request: the answer came from there
    assert (first.metadata["provider"], second.metadata["provider"]) == ("anthropic", "openai")
    assert first.messages[-1].tool_call_id == first.tool_calls[0].id
"""


def test_pydantic_ai_fallback_model_is_one_conversation_recorded_and_replayed(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(test_fallback_agent=FALLBACK_PROJECT)

    recorded = agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record")
    recorded.assert_outcomes(passed=1)
    replayed = agent_pytester.runpytest("-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=1)
