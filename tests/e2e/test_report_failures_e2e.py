"""End-to-end tests of why a test failed, in every report: the JSON report's ``failure``
entry, the HTML page's failure section and the JUnit ``agentctx.failure`` property; the
partial run of an agent that raised; and a secret in the failure text, which reaches none
of the three, serially and on two xdist workers (the record travels between processes).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html import escape
from typing import Any

import pytest

FAILING_TESTS = '''
import os

import openai
import pytest
from pytest_agentctx import Agent, tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


AGENT = Agent(name="calc", model="openai:gpt-4o-mini", tools=[add], max_iterations=2)


async def test_wrong_answer(agent_runtime, fake_llm):
    fake_llm.reply("5", usage={"input_tokens": 10, "output_tokens": 1})
    result = await agent_runtime.run(AGENT, "2 + 3?")
    assert result.output == "6", "the agent cannot add"


async def test_out_of_iterations(agent_runtime, fake_llm):
    for _ in range(2):
        fake_llm.reply(
            tool_calls=[("add", {"a": 2, "b": 3})], usage={"input_tokens": 10, "output_tokens": 1}
        )
    await agent_runtime.run(AGENT, "2 + 3?")


async def test_model_down_in_the_second_run(agent_runtime, fake_llm):
    fake_llm.reply("5", usage={"input_tokens": 10, "output_tokens": 1})
    fake_llm.reply(
        tool_calls=[("add", {"a": 1, "b": 1})], usage={"input_tokens": 7, "output_tokens": 1}
    )
    fake_llm.fail(500, "the model is down")
    await agent_runtime.run(AGENT, "2 + 3?")
    await agent_runtime.run(AGENT, "1 + 1?")


@pytest.mark.agent
def test_sdk_call_misses_the_cassette():
    client = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0)
    client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Paris?"}]
    )


async def test_leaks_the_key(agent_runtime, fake_llm):
    fake_llm.reply("5", usage={"input_tokens": 10, "output_tokens": 1})
    await agent_runtime.run(AGENT, "2 + 3?")
    assert os.environ["OPENAI_API_KEY"] == "", f"key {os.environ['OPENAI_API_KEY']} was used"


def test_passes():
    pass
'''

#: A secret of the session: the value of a secret environment variable.
SECRET = "sk-live-e2e-0123456789abcdef"
WORKERS = pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
REPORTS = ("--agent-report=report.json", "--agent-report-html=report.html", "--junitxml=junit.xml")


@pytest.fixture
def failing(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """FAILING_TESTS run once with every report, the secret in the environment."""
    agent_pytester.makepyfile(test_failing=FAILING_TESTS)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return agent_pytester


def _run(tester: pytest.Pytester, *args: str) -> dict[str, Any]:
    result = tester.runpytest("-p", "no:cacheprovider", *REPORTS, *args)
    result.assert_outcomes(passed=1, failed=5)
    report: dict[str, Any] = json.loads((tester.path / "report.json").read_text())
    return report


def _test(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(test for test in report["tests"] if test["nodeid"].endswith(f"::{name}"))


def _junit(tester: pytest.Pytester) -> dict[str, dict[str, str]]:
    root = ET.parse(tester.path / "junit.xml").getroot()
    return {
        case.get("name", ""): {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        for case in root.iter("testcase")
    }


def _section(page: str, nodeid: str) -> str:
    """The HTML of one test's section."""
    start = page.index(f'data-nodeid="{escape(nodeid)}"')
    end = page.find('<details class="test"', start)
    return page[start : end if end != -1 else page.index("</main>")]


def test_a_failed_assertion_is_in_every_report(failing: pytest.Pytester) -> None:
    report = _run(failing)

    failure = _test(report, "test_wrong_answer")["failure"]
    assert failure["phase"] == "call"
    assert failure["message"] == "AssertionError: the agent cannot add"
    assert "assert '5' == '6'" in failure["text"]
    assert failure["truncated"] is False
    assert _test(report, "test_passes")["failure"] is None
    page = (failing.path / "report.html").read_text()
    section = _section(page, "test_failing.py::test_wrong_answer")
    assert '<details class="failure" id="' in section
    assert escape("assert '5' == '6'") in section
    assert _junit(failing)["test_wrong_answer"]["agentctx.failure"] == (
        "call: AssertionError: the agent cannot add"
    )


def test_an_agent_out_of_iterations_keeps_its_partial_run(failing: pytest.Pytester) -> None:
    report = _run(failing)

    test = _test(report, "test_out_of_iterations")
    assert [run["stats"]["iterations"] for run in test["runs"]] == [2]
    assert test["stats"]["trajectory"] == ["add", "add"]
    assert "MaxIterationsExceeded" in test["failure"]["message"]
    page = (failing.path / "report.html").read_text()
    section = _section(page, "test_failing.py::test_out_of_iterations")
    assert "No agent run was recorded" not in section
    assert "add → add" in section


def test_a_run_stopped_by_a_model_error_is_kept_after_a_finished_one(
    failing: pytest.Pytester,
) -> None:
    report = _run(failing)

    test = _test(report, "test_model_down_in_the_second_run")
    runs = [run["context"]["iterations"] for run in test["runs"]]
    assert [len(iterations) for iterations in runs] == [1, 2]
    assert [m["content"] for m in runs[1][0]["messages"]][:1] == ["1 + 1?"]
    assert test["stats"]["trajectory"] == ["add"]
    assert "the model is down" in test["failure"]["text"]


def test_an_sdk_call_that_missed_the_cassette_is_the_last_iteration(
    failing: pytest.Pytester,
) -> None:
    report = _run(failing)

    test = _test(report, "test_sdk_call_misses_the_cassette")
    assert test["cassette"]["status"] == "missing"
    [run] = test["runs"]
    [iteration] = run["context"]["iterations"]
    assert [m["content"] for m in iteration["messages"]] == ["Weather in Paris?"]
    assert [error["status"] for error in iteration["metadata"]["errors"]] == [599]
    assert "CassetteMiss" in test["failure"]["message"]
    page = (failing.path / "report.html").read_text()
    assert "Weather in Paris?" in _section(
        page, "test_failing.py::test_sdk_call_misses_the_cassette"
    )


@WORKERS
def test_a_secret_in_the_failure_text_reaches_no_report(failing: pytest.Pytester, workers):
    report = _run(failing, *workers)

    failure = _test(report, "test_leaks_the_key")["failure"]
    assert failure["message"] == "AssertionError: key REDACTED was used"
    assert "key REDACTED was used" in failure["text"]
    for name in ("report.json", "report.html", "junit.xml"):
        text = (failing.path / name).read_text()
        assert SECRET not in text, name
    junit = (failing.path / "junit.xml").read_text()
    assert "key REDACTED was used" in junit  # the failure element, and the property
    assert _junit(failing)["test_leaks_the_key"]["agentctx.failure"] == (
        "call: AssertionError: key REDACTED was used"
    )


def test_a_long_failure_text_is_cut_with_a_note(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(
        test_long="""
        async def test_long(fake_llm):
            assert False, "start " + "x" * 50_000 + " end"
        """
    )
    agent_pytester.runpytest("-p", "no:cacheprovider", *REPORTS).assert_outcomes(failed=1)

    report = json.loads((agent_pytester.path / "report.json").read_text())
    failure = _test(report, "test_long")["failure"]
    assert failure["truncated"] is True
    assert failure["cut"] > 30_000
    assert len(failure["text"]) < 20_500
    assert "characters of the failure text cut here" in failure["text"]
    page = (agent_pytester.path / "report.html").read_text()
    assert f"{failure['cut']:,} characters were cut from the middle" in page
