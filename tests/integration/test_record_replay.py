"""Recording for real, then replaying offline: the weather example through the real SDKs.

A loopback provider on 127.0.0.1 speaks the OpenAI and Anthropic wire formats (tool calls
and streaming). A pytest run with ``--agent-record`` records the example agent's traffic
through the real SDKs into cassettes; then, with the server stopped, a plain run replays
them offline (the network guard is on and the port is closed) and must build exactly the
same contexts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentctx import LoopbackProvider

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weather"

INNER_TEST = """
import dataclasses
import json
import os
from pathlib import Path

import pytest
from weather_agent import WeatherService, weather_agent

CASES = [
    ("openai:gpt-4o-mini", False),
    ("openai:gpt-4o-mini", True),
    ("anthropic:claude-haiku-4-5", False),
    ("anthropic:claude-haiku-4-5", True),
]


@pytest.mark.parametrize(("model", "stream"), CASES)
async def test_weather_run(agent_runtime, agent_cassette, model, stream):
    agent = dataclasses.replace(weather_agent(model), stream=stream)
    result = await agent_runtime.run(
        agent, "Weather and time in Paris?", deps={"weather": WeatherService()}
    )
    name = f"{model.split(':')[0]}-{'stream' if stream else 'plain'}"
    out = Path(os.environ["CONTEXT_DIR"]) / f"{name}.{os.environ['RUN_NAME']}.json"
    out.write_text(result.context.model_dump_json())
    mode = "recorded" if agent_cassette.recorded else "replayed"
    Path(os.environ["CONTEXT_DIR"], f"{name}.{os.environ['RUN_NAME']}.mode").write_text(mode)
"""


@pytest.fixture
def provider():
    with LoopbackProvider() as server:
        yield server


def _script(provider: LoopbackProvider) -> None:
    for _ in range(4):  # one conversation per case above
        provider.reply(
            tool_calls=[("get_weather", {"city": "Paris"}), ("get_local_time", {"city": "Paris"})]
        ).reply("18°C in Paris, 01:00 local time.")


def test_a_recorded_run_replays_offline_to_the_same_context(
    agent_pytester: pytest.Pytester, provider: LoopbackProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(EXAMPLE)!r})\n")
    agent_pytester.makepyfile(test_weather_recorded=INNER_TEST)
    contexts = agent_pytester.mkdir("contexts")
    monkeypatch.setenv("CONTEXT_DIR", str(contexts))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-record-canary-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-record-canary-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.anthropic_base_url)
    _script(provider)

    monkeypatch.setenv("RUN_NAME", "record")
    recorded = agent_pytester.runpytest_subprocess("--agent-record")
    recorded.assert_outcomes(passed=4)
    provider.verify()
    provider.stop()

    monkeypatch.setenv("RUN_NAME", "replay")
    replayed = agent_pytester.runpytest_subprocess()
    replayed.assert_outcomes(passed=4)

    for name in ("openai-plain", "openai-stream", "anthropic-plain", "anthropic-stream"):
        record = (contexts / f"{name}.record.json").read_text()
        replay = (contexts / f"{name}.replay.json").read_text()
        assert (contexts / f"{name}.record.mode").read_text() == "recorded"
        assert (contexts / f"{name}.replay.mode").read_text() == "replayed"
        assert json.loads(replay) == json.loads(record)
        assert replay == record
    cassettes = sorted((agent_pytester.path / "cassettes").rglob("*.json"))
    assert len(cassettes) == 4
    written = "".join(path.read_text() for path in cassettes)
    assert "canary" not in written
    assert '"sse"' in written  # the streamed calls were stored as events
