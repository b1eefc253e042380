"""Re-judging recorded runs: 100 recorded agent runs judged again by two rubrics make no
call to the agent's model and exactly one judge call per run and rubric, from the
``pytest-agentctx rejudge`` command and from pytest."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_agentctx import LoopbackProvider
from pytest_agentctx.cli.main import main
from pytest_agentctx.testing import Interaction, write_cassette
from pytest_agentctx.traffic.codecs.base import DecodedRequest

RUNS = 100
JUDGES = """
[[judge]]
name = "cites"
rubric = "The answer cites the order number."
model = "openai:gpt-4o-mini"
threshold = 0.7

[[judge]]
name = "polite"
rubric = "The answer is polite."
model = "openai:gpt-4o-mini"
threshold = 0.5
"""
RUBRICS = ("The answer cites the order number.", "The answer is polite.")
VERDICT = '{"score": 0.9, "rationale": "Cites the order and says please."}'


@pytest.fixture
def agent_model() -> Iterator[LoopbackProvider]:
    """The agent's model: where the recorded runs went, still reachable while they are
    judged again, so that a call to it would be seen."""
    with LoopbackProvider() as provider:
        yield provider


@pytest.fixture
def judge_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackProvider]:
    with LoopbackProvider() as provider:
        monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield provider


def order_of(prompt: str) -> str:
    """The number of the order whose run a judge's prompt shows."""
    order = re.search(r"Order (\d+) ships", prompt)
    assert order is not None, prompt
    return order.group(1)


def asked(request: DecodedRequest) -> tuple[str, str]:
    """The rubric and the order number of the run a judge call was about."""
    prompt = str(request.messages[-1]["content"])
    rubric = re.search(r"<rubric>\n(.*)\n</rubric>", prompt)
    assert rubric is not None, prompt
    return rubric.group(1), order_of(prompt)


def recorded_run(url: str, n: int) -> list[Interaction]:
    """An agent run of two model calls (a tool call, then the answer) to ``url``."""
    ask = [{"role": "user", "content": f"Where is order {n}?"}]
    call = {"id": f"call_{n}", "type": "function", "function": {"name": "track", "arguments": "{}"}}
    tool_turn: dict[str, object] = {"role": "assistant", "content": None, "tool_calls": [call]}
    answered = [*ask, tool_turn, {"role": "tool", "tool_call_id": f"call_{n}", "content": "Ships"}]

    def reply(message: dict[str, object], reason: str) -> dict[str, object]:
        choice = {"index": 0, "message": message, "finish_reason": reason}
        return {
            "id": f"c{n}",
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [choice],
        }

    answer: dict[str, object] = {
        "role": "assistant",
        "content": f"Order {n} ships today, thank you for waiting.",
    }
    return [
        Interaction(
            "POST",
            url,
            {},
            {"json": {"model": "gpt-4o-mini", "messages": messages}},
            200,
            {},
            {"json": reply(message, reason)},
            test_id=f"test_orders.py::test_order[{n}]",
        )
        for messages, message, reason in (
            (ask, tool_turn, "tool_calls"),
            (answered, answer, "stop"),
        )
    ]


def test_rejudging_100_recorded_runs_from_the_command(
    tmp_path: Path,
    agent_model: LoopbackProvider,
    judge_model: LoopbackProvider,
    monkeypatch,
    capsys,
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"{agent_model.openai_base_url}/chat/completions"
    for n in range(RUNS):
        write_cassette(tmp_path / "cassettes" / f"test_order_{n:03}.json", recorded_run(url, n))
    (tmp_path / "judges.toml").write_text(JUDGES)
    for _ in range(2 * RUNS):
        judge_model.reply(VERDICT)

    code = main(["rejudge", "cassettes", "--judges", "judges.toml", "-o", "verdicts.json"])

    assert code == 0, capsys.readouterr()
    assert agent_model.exchanges == []
    assert Counter(map(asked, judge_model.requests)) == {
        (rubric, str(n)): 1 for n in range(RUNS) for rubric in RUBRICS
    }


def test_the_verdicts_file_has_one_verdict_per_run_and_rubric(
    tmp_path: Path, agent_model: LoopbackProvider, judge_model: LoopbackProvider, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"{agent_model.openai_base_url}/chat/completions"
    for n in range(RUNS):
        write_cassette(tmp_path / "cassettes" / f"test_order_{n:03}.json", recorded_run(url, n))
    (tmp_path / "judges.toml").write_text(JUDGES)
    for _ in range(2 * RUNS):
        judge_model.reply(VERDICT)

    main(["rejudge", "cassettes", "--judges", "judges.toml", "-o", "verdicts.json"])

    verdicts = json.loads((tmp_path / "verdicts.json").read_text())["verdicts"]
    assert Counter((v["cassette"], v["judge"], v["passed"]) for v in verdicts) == {
        (f"test_order_{n:03}.json", judge, True): 1
        for n in range(RUNS)
        for judge in ("cites", "polite")
    }


# -- from pytest: --agent-record=judge ----------------------------------------------

JUDGED_TESTS = """
import functools
import json
import os

import openai
import pytest


@functools.cache
def agent_client():
    return openai.OpenAI(base_url=os.environ["AGENT_URL"], api_key="sk-test", max_retries=0)


def agent(question):
    messages = [{"role": "user", "content": question}]
    reply = agent_client().chat.completions.create(model="gpt-4o-mini", messages=messages)
    return reply.choices[0].message.content


@pytest.mark.parametrize("n", range(100))
async def test_order(n, agent_judge):
    answer = agent(f"Where is order {n}?")
    for rubric in json.loads(os.environ["RUBRICS"]):
        await agent_judge.assert_passes(rubric, answer)
"""


@pytest.fixture
def judged_project(
    agent_pytester: pytest.Pytester,
    agent_model: LoopbackProvider,
    judge_model: LoopbackProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> pytest.Pytester:
    """100 judged tests (agent_judge), recorded once with one rubric against the two
    loopback models (the judge's at OPENAI_BASE_URL, where the judge's SDK looks)."""
    agent_pytester.makepyfile(test_orders=JUDGED_TESTS)
    monkeypatch.setenv("AGENT_URL", agent_model.openai_base_url)
    monkeypatch.setenv("RUBRICS", json.dumps(["The answer cites the order."]))
    for n in range(RUNS):
        agent_model.reply(f"Order {n} ships today.")
        judge_model.reply(VERDICT)
    agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record").assert_outcomes(
        passed=RUNS
    )
    return agent_pytester


def test_rejudging_100_recorded_tests_from_pytest(
    judged_project: pytest.Pytester,
    agent_model: LoopbackProvider,
    judge_model: LoopbackProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorded_by_agent, judged_before = len(agent_model.exchanges), len(judge_model.requests)
    monkeypatch.setenv("RUBRICS", json.dumps(list(RUBRICS)))
    for _ in range(2 * RUNS):
        judge_model.reply(VERDICT)

    result = judged_project.runpytest("-p", "no:cacheprovider", "--agent-record=judge")

    result.assert_outcomes(passed=RUNS)
    assert len(agent_model.exchanges) == recorded_by_agent == RUNS
    assert Counter(map(asked, judge_model.requests[judged_before:])) == {
        (rubric, str(n)): 1 for n in range(RUNS) for rubric in RUBRICS
    }
