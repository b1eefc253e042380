"""End-to-end tests: agent runs awaited together in one test (``asyncio.gather``), each with
its own cassette or fake model, in real pytest runs.

The agent is a short tool loop through the real ``openai`` SDK (``AsyncOpenAI``). Its tool
waits at a barrier both runs share, so each run's second request is made after the other
run's first: the runs interleave. The cassettes are recorded against two
:class:`LoopbackProvider` servers the inner conftest starts and stops before the test
replays them, offline.
"""

from __future__ import annotations

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest

AGENT = '''
import asyncio
import json

import openai


async def run_agent(base_url, city, barrier):
    """Ask for the weather in ``city``; call the tool the model asks for; return the answer."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-e2e-test-key", max_retries=0)
    messages = [{"role": "user", "content": f"Weather in {city}?"}]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    async with client:
        for _ in range(4):
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=tools
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                async with asyncio.timeout(30):  # a run that ended early never comes
                    await barrier.wait()  # the other run asks the model meanwhile
                asked = json.loads(call.function.arguments)["city"]
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": f"sunny in {asked}"}
                )
    raise AssertionError("the agent did not stop")
'''

CONFTEST = '''
import asyncio
from pathlib import Path

import pytest
from pytest_agentctx import LoopbackProvider
from pytest_agentctx.traffic.cassettes import Cassette, RecordMode

from agent import run_agent

CITIES = ("Paris", "Rome")


def _script(provider, city):
    provider.reply_tool_call("get_weather", city=city).reply(f"It is sunny in {city}.")


async def _record(folder, urls):
    barrier = asyncio.Barrier(len(CITIES))

    async def one(city, url):
        cassette = Cassette(folder / f"{city}.json", mode=RecordMode.REWRITE, test_id=city)
        cassette.start()  # inside this run's task: it records this run only
        try:
            answer = await run_agent(url, city, barrier)
        finally:
            cassette.stop()
        cassette.save("")
        return answer

    return await asyncio.gather(*(one(city, urls[city]) for city in CITIES))


@pytest.fixture
def recorded(tmp_path):
    """Two cassettes recorded concurrently, one per city, against a loopback server each;
    the servers are stopped before the test: replay must not reach them."""
    providers = {city: LoopbackProvider() for city in CITIES}
    for city, provider in providers.items():
        provider.start()
        _script(provider, city)
    try:
        urls = {city: p.openai_base_url for city, p in providers.items()}
        answers = asyncio.run(_record(tmp_path, urls))
        for provider in providers.values():
            provider.verify()
    finally:
        for provider in providers.values():
            provider.stop()
    assert answers == [f"It is sunny in {city}." for city in CITIES]
    return tmp_path, urls
'''

REPLAY = """
import asyncio

from pytest_agentctx import build_contexts
from pytest_agentctx.traffic.cassettes import Cassette

from agent import run_agent
from conftest import CITIES


async def test_two_runs_replay_their_own_cassettes_together(recorded):
    folder, urls = recorded
    barrier = asyncio.Barrier(len(CITIES))
    order = []

    async def one(city):
        cassette = Cassette(folder / f"{city}.json", test_id=city)
        cassette.start()
        try:
            answer = await run_agent(urls[city], city, barrier)
        finally:
            cassette.stop()
        cassette.check()  # no miss, every recording used
        order.extend(city for _ in cassette.exchange_log)
        return cassette, answer

    (paris, paris_answer), (rome, rome_answer) = await asyncio.gather(*map(one, CITIES))

    assert (paris_answer, rome_answer) == ("It is sunny in Paris.", "It is sunny in Rome.")
    for cassette, city in ((paris, "Paris"), (rome, "Rome")):
        log = cassette.exchange_log
        asked = [i.request_body["json"]["messages"][0]["content"] for i in log]
        assert asked == [f"Weather in {city}?"] * 2
        assert cassette.replayed == 2
        # capture sees one conversation per cassette: this run's, and only its
        conversation = build_contexts(log).context
        assert f"sunny in {city}" in conversation.model_dump_json()
"""

FAKES = """
import asyncio

from pytest_agentctx import FakeLLM

from agent import run_agent
from conftest import CITIES


async def test_two_runs_with_a_fake_model_each(tmp_path):
    barrier = asyncio.Barrier(len(CITIES))

    async def one(city):
        fake = FakeLLM()
        fake.reply_tool_call("get_weather", city=city).reply(f"{city}: sunny.")
        fake.start()  # inside this run's task: it answers this run only
        try:
            answer = await run_agent("http://127.0.0.1:9/v1", city, barrier)
        finally:
            fake.stop()
        fake.verify()
        return answer, [call.request.messages[0]["content"] for call in fake.calls]

    results = await asyncio.gather(*map(one, CITIES))

    assert results == [
        (f"{city}: sunny.", [f"Weather in {city}?"] * 2) for city in CITIES
    ]
"""

SWALLOWED = """
import asyncio

import openai
import pytest
from pytest_agentctx import FakeLLM

from agent import run_agent


def ask_in_a_thread():
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-e2e", max_retries=0)
    try:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi?"}]
        )
    except Exception:
        return "swallowed"  # the agent's code hides the error


@pytest.mark.agent
async def test_a_thread_outside_both_runs(tmp_path):
    started = asyncio.Barrier(2)

    async def one(city):
        fake = FakeLLM()
        fake.reply("sunny")
        with fake:
            await started.wait()
            # run_in_executor does not carry this run's context into the thread
            answer = await asyncio.get_running_loop().run_in_executor(None, ask_in_a_thread)
            await started.wait()  # both fakes active until both threads have asked
        return answer

    assert await asyncio.gather(one("Paris"), one("Rome")) == ["swallowed", "swallowed"]
"""


@pytest.fixture
def project(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(agent=AGENT)
    agent_pytester.makeconftest(CONFTEST)
    return agent_pytester


def test_two_runs_awaited_together_replay_their_own_cassettes(project: pytest.Pytester) -> None:
    project.makepyfile(test_replay=REPLAY)

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


def test_two_runs_awaited_together_each_with_their_own_fake_model(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_fakes=FAKES)

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


def test_a_request_no_run_owns_fails_the_test_though_the_agent_swallowed_it(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_swallowed=SWALLOWED)

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*UnscopedRequest: pytest-agentctx did not send POST "
            "http://127.0.0.1:9/v1/chat/completions*"
        ]
    )
    assert "asyncio.to_thread" in result.stdout.str()
