"""End-to-end tests of judges (``agent_judge``): an agent and its judge, both played by a
LoopbackProvider, recorded in one cassette with their roles, replayed offline with the same
verdicts, a changed rubric reported as a judge miss with its diff, and ``--agent-record=judge``
recording the judge alone, the agent's recordings left as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentctx import LoopbackProvider

RUBRIC = "The answer gives the temperature in Paris."

TEST_MODULE = """
from pytest_agentctx import Agent

WEATHER = Agent(name="weather", model="openai:gpt-4o-mini")
RUBRIC = "RUBRIC_TEXT"

async def test_judged(agent_runtime, agent_judge):
    result = await agent_runtime.run(WEATHER, "What is the weather in Paris?")
    verdict = await agent_judge(rubric=RUBRIC, subject=result.output, threshold=0.7)
    verdict.assert_passed()
"""

AGENT_REPLY = "It is 18 degrees in Paris."
VERDICT = '{"score": 0.9, "rationale": "It gives 18 degrees."}'
CASSETTE = Path("cassettes") / "test_weather" / "test_judged.json"
REPORT = "--agent-report=report.json"


def _module(rubric: str = RUBRIC) -> str:
    return TEST_MODULE.replace("RUBRIC_TEXT", rubric)


@pytest.fixture
def recorded(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project whose test ran once against the loopback provider, recorded."""
    agent_pytester.makepyfile(test_weather=_module())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LoopbackProvider() as provider:
        provider.reply(AGENT_REPLY).reply(VERDICT)
        monkeypatch.setenv("OPENAI_BASE_URL", provider.base_url)
        result = agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record")
        result.assert_outcomes(passed=1)
    # the base URL stays, its server stopped: a call that is not replayed cannot connect
    return agent_pytester


def _interactions(project: pytest.Pytester) -> list[dict[str, object]]:
    document = json.loads((project.path / CASSETTE).read_text())
    interactions: list[dict[str, object]] = document["interactions"]
    return interactions


def _agents(project: pytest.Pytester) -> list[str]:
    """The agent's interactions of the cassette, each as the file's text of it."""
    return [
        json.dumps(item, sort_keys=True, indent=2)
        for item in _interactions(project)
        if "role" not in item
    ]


def _verdicts(project: pytest.Pytester) -> list[object]:
    report = json.loads((project.path / "report.json").read_text())
    return [test.get("verdicts") for test in report["tests"]]


def test_the_judges_call_is_recorded_with_its_role(recorded: pytest.Pytester) -> None:
    assert [item.get("role", "agent") for item in _interactions(recorded)] == ["agent", "judge"]


def test_a_replayed_judge_gives_the_same_verdict_offline_every_run(
    recorded: pytest.Pytester,
) -> None:
    runs = []
    for _ in range(3):
        recorded.runpytest("-p", "no:cacheprovider", REPORT).assert_outcomes(passed=1)
        runs.append(json.dumps(_verdicts(recorded), sort_keys=True))

    assert len(set(runs)) == 1
    assert json.loads(runs[0]) == [
        [
            {
                "judge": "judge",
                "rubric_id": json.loads(runs[0])[0][0]["rubric_id"],
                "rubric": RUBRIC,
                "score": 0.9,
                "threshold": 0.7,
                "rationale": "It gives 18 degrees.",
                "passed": True,
            }
        ]
    ]


def test_the_judges_runs_are_listed_apart_from_the_agents(recorded: pytest.Pytester) -> None:
    recorded.runpytest("-p", "no:cacheprovider", REPORT).assert_outcomes(passed=1)
    test = json.loads((recorded.path / "report.json").read_text())["tests"][0]

    assert [run["name"] for run in test["runs"]] == ["weather"]
    assert [run["name"] for run in test["role_runs"]] == ["judge 1"]
    assert set(test["role_stats"]) == {"judge"}


def test_a_changed_rubric_is_a_judge_miss_with_the_rubric_diff(
    recorded: pytest.Pytester,
) -> None:
    recorded.makepyfile(test_weather=_module("The answer gives the temperature in Lyon."))

    result = recorded.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*The judge's rubric changed since interaction #1 was recorded*",
            "*-The answer gives the temperature in Paris.",
            "*+The answer gives the temperature in Lyon.",
            "*re-record the judges' calls alone*: pytest --agent-record=judge *",
        ]
    )


def test_recording_the_judge_again_leaves_the_agents_recordings_as_they_were(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _agents(recorded)
    recorded.makepyfile(test_weather=_module("The answer gives the temperature in Lyon."))
    with LoopbackProvider() as provider:
        provider.reply('{"score": 0.2, "rationale": "Paris, not Lyon."}')
        monkeypatch.setenv("OPENAI_BASE_URL", provider.base_url)
        result = recorded.runpytest("-p", "no:cacheprovider", "--agent-record=judge")
        sent = len(provider.exchanges)

    result.assert_outcomes(failed=1)  # the new verdict is below the threshold
    result.stdout.fnmatch_lines(["*score 0.2 < threshold 0.7*", "*rationale: Paris, not Lyon.*"])
    assert sent == 1
    assert _agents(recorded) == before
    assert [item.get("role", "agent") for item in _interactions(recorded)] == ["agent", "judge"]


def test_the_verdict_is_a_junit_property_and_on_the_html_page(recorded: pytest.Pytester) -> None:
    recorded.runpytest(
        "-p", "no:cacheprovider", "--junitxml=junit.xml", "--agent-report-html=report.html"
    ).assert_outcomes(passed=1)

    junit = (recorded.path / "junit.xml").read_text()
    html = (recorded.path / "report.html").read_text()
    assert '<property name="agentctx.verdict" value="sha256:' in junit
    assert "0.9/0.7 passed" in junit
    assert "It gives 18 degrees." in html
