"""End-to-end tests of other HTTP tools in the same test as the plugin: respx first.

The inner agent (``weather_agent``) asks a model through the real ``openai`` SDK (which
sends through ``httpx2``) for a tool call, then calls ``https://weather.example`` itself,
through ``httpx`` or ``httpx2``, and answers with what that API said. The weather API is
mocked by respx (its ``respx_mock`` fixture for ``httpx``; pytest-httpx2's ``httpx2_mock``,
respx with ``using="httpcore2"``, for ``httpx2``). Recordings come from a
:class:`~pytest_agentctx.LoopbackProvider` on 127.0.0.1; nothing leaves the machine.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
import pytest_httpx2  # noqa: F401  (same)
import respx  # noqa: F401  (same)
import yaml  # noqa: F401  (same: a second import of its C loader breaks it)

from pytest_agentctx import LoopbackProvider

AGENT = '''
import json

import httpx
import httpx2
import openai

LIBRARIES = {"httpx": httpx, "httpx2": httpx2}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def get_weather(city, library):
    with LIBRARIES[library].Client() as http:
        reply = http.get("https://weather.example/v1/now", params={"city": city})
    return reply.json()["sky"]


def run(question, library="httpx2"):
    """One model call picks the city; the weather API's answer is the agent's answer."""
    with openai.OpenAI(max_retries=0) as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": question}],
            tools=TOOLS,
        )
    (call,) = reply.choices[0].message.tool_calls
    city = json.loads(call.function.arguments)["city"]
    return f"{city}: {get_weather(city, library)}"
'''

#: One agent test per library; the sky the weather mock answers comes from ``SKY``.
WEATHER_TESTS = """
import os

import pytest

from weather_agent import run

SKY = os.environ.get("SKY", "sunny")
WEATHER = "https://weather.example/v1/now"


@pytest.mark.agent
def test_httpx_tool(respx_mock, agent_context):
    route = respx_mock.get(WEATHER, params={"city": "Paris"}).respond(json={"sky": SKY})

    assert run("Weather in Paris?", library="httpx") == f"Paris: {SKY}"
    assert route.call_count == 1
    # What the agent saw, respx's answer included (never written to the cassette).
    assert [(e.url, e.response_json()) for e in agent_context.non_llm] == [
        (WEATHER + "?city=Paris", {"sky": SKY})
    ]
    assert len(agent_context.context.iterations) == 1


@pytest.mark.agent
def test_httpx2_tool(httpx2_mock):
    # respx mocks every httpx2 request: the model calls pass through to the cassette.
    httpx2_mock.route(host="127.0.0.1").pass_through()
    route = httpx2_mock.get(WEATHER, params={"city": "Paris"}).respond(json={"sky": SKY})

    assert run("Weather in Paris?", library="httpx2") == f"Paris: {SKY}"
    assert route.call_count == 1
"""


class Recorded(NamedTuple):
    tester: pytest.Pytester
    #: The paths of the requests the loopback provider received while recording.
    provider_paths: list[str]


@pytest.fixture
def weather(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    """WEATHER_TESTS with their cassettes recorded from a loopback provider, then stopped."""
    agent_pytester.makepyfile(weather_agent=AGENT, test_weather=WEATHER_TESTS)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-tools-e2e")
    with LoopbackProvider() as provider:
        for _ in range(2):
            provider.reply_tool_call("get_weather", city="Paris")
        monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
        result = agent_pytester.runpytest("--agent-record", "-p", "no:cacheprovider")
        result.assert_outcomes(passed=2)
        provider.verify()
    return Recorded(agent_pytester, [exchange.path for exchange in provider.exchanges])


def _cassette_urls(tester: pytest.Pytester, test: str) -> list[str]:
    data: dict[str, Any] = json.loads(
        (tester.path / "cassettes" / "test_weather" / f"{test}.json").read_text()
    )
    return [
        f"{item['request']['method']} {item['request']['url']}" for item in data["interactions"]
    ]


# -- (a) replay: the respx route answers, not the cassette -----------------------------


@pytest.mark.parametrize("sky", ["sunny", "rainy"])
def test_replay_asks_the_respx_route_and_uses_its_answer(weather, monkeypatch, sky):
    monkeypatch.setenv("SKY", sky)  # "rainy": the mock changed since the recording

    result = weather.tester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=2)


# -- (b) record: the respx-mocked request is not written -------------------------------


@pytest.mark.parametrize("test", ["test_httpx_tool", "test_httpx2_tool"])
def test_recording_writes_the_model_calls_and_not_what_respx_answered(weather, test):
    urls = _cassette_urls(weather.tester, test)

    assert [url.split("/", 3)[-1] for url in urls] == ["v1/chat/completions"]
    assert weather.provider_paths == ["/v1/chat/completions"] * 2


# -- (c) the fake model and respx in the same test -------------------------------------

FAKE_TESTS = """
import httpx2
import openai

from weather_agent import run

WEATHER = "https://weather.example/v1/now"


def test_tool_mocked_by_respx(fake_llm, httpx2_mock, agent_context):
    fake_llm.reply_tool_call("get_weather", city="Paris")
    httpx2_mock.get(WEATHER).respond(json={"sky": "sunny"})

    assert run("Weather in Paris?") == "Paris: sunny"
    # What the agent saw, respx's answer included.
    assert [(e.method, e.url, e.response_json()) for e in agent_context.non_llm] == [
        ("GET", WEATHER + "?city=Paris", {"sky": "sunny"})
    ]


def test_model_endpoint_mocked_by_respx_wins_over_the_fake(fake_llm, httpx2_mock):
    route = httpx2_mock.post("https://api.openai.com/v1/chat/completions").respond(
        json={
            "id": "chatcmpl-respx",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "from respx"},
                    "finish_reason": "stop",
                }
            ],
        }
    )
    with openai.OpenAI(max_retries=0) as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
        )

    assert (reply.choices[0].message.content, route.call_count) == ("from respx", 1)
"""


def test_fake_llm_and_respx_share_a_test(agent_pytester):
    agent_pytester.makepyfile(weather_agent=AGENT, test_fake=FAKE_TESTS)

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=2)


# -- (d) respx mocks the model endpoint of an agent test -------------------------------

MODEL_TESTS = """
import openai
import pytest

COMPLETIONS = "https://api.openai.com/v1/chat/completions"


@pytest.mark.agent
def test_model_mocked_by_respx(httpx2_mock, agent_context):
    route = httpx2_mock.post(COMPLETIONS).respond(
        json={
            "id": "chatcmpl-respx",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "from respx"},
                    "finish_reason": "stop",
                }
            ],
        }
    )
    with openai.OpenAI(api_key="sk-respx-test", max_retries=0) as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
        )

    assert (reply.choices[0].message.content, route.call_count) == ("from respx", 1)
    # The conversation the agent had with respx's mock.
    assert [m.content for m in agent_context.context.iterations[0].messages] == [
        "Hi",
        "from respx",
    ]
"""


@pytest.mark.parametrize("options", [(), ("--agent-record",)], ids=["replay", "record"])
def test_respx_mocking_the_model_wins_and_nothing_is_recorded(agent_pytester, options):
    agent_pytester.makepyfile(test_model=MODEL_TESTS)

    result = agent_pytester.runpytest("-p", "no:cacheprovider", *options)

    result.assert_outcomes(passed=1)
    assert not (agent_pytester.path / "cassettes").exists()
