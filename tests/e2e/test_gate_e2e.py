"""End-to-end tests of the gate: ``--agent-gate`` fails a session whose tests all passed,
for budgets, stale or unused cassettes and drift from ``--agent-baseline``; serially and on
two xdist workers.

The inner agent's behaviour is set by environment variables, so one test module serves as
the baseline run and as the changed run: ``AGENT_TOOLS`` (the tools it calls, in order)
and ``AGENT_TOKENS`` (input tokens of each model reply).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_agentctx import LoopbackProvider

RESEARCH_TESTS = '''
import os

from pytest_agentctx import Agent, tool


@tool
def search(q: str) -> str:
    """Search the web."""
    return "found"


@tool
def lookup(q: str) -> str:
    """Look a word up."""
    return "defined"


AGENT = Agent(name="research", model="openai:gpt-4o-mini", tools=[search, lookup])
TOOLS = [name for name in os.environ.get("AGENT_TOOLS", "search").split(",") if name]
TOKENS = int(os.environ.get("AGENT_TOKENS", "100"))


async def test_research(agent_runtime, fake_llm):
    for name in TOOLS:
        fake_llm.reply(
            tool_calls=[(name, {"q": "x"})], usage={"input_tokens": TOKENS, "output_tokens": 0}
        )
    fake_llm.reply("done", usage={"input_tokens": TOKENS, "output_tokens": 0})
    await agent_runtime.run(AGENT, "research")


async def test_steady(agent_runtime, fake_llm):
    fake_llm.reply("ok", usage={"input_tokens": 10, "output_tokens": 10})
    await agent_runtime.run(AGENT, "hi")
'''

#: The failure lines of RESEARCH_TESTS run with AGENT_TOOLS=search,lookup against a
#: baseline run with the defaults.
DRIFT = [
    "test_research_agent.py::test_research: iterations 2 -> 3 (allowed change ±0)",
    "test_research_agent.py::test_research: tool trajectory [search] -> [search, lookup]",
    "test_research_agent.py::test_research: tokens 200 -> 300 (+50.0%, allowed ±10%)",
]

WORKERS = pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
QUIET = ("-p", "no:cacheprovider")


@pytest.fixture
def research(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(test_research_agent=RESEARCH_TESTS)
    return agent_pytester


@pytest.fixture
def baseline(research: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """RESEARCH_TESTS with a baseline report (base.json) of their default behaviour; the
    agent then calls one more tool."""
    research.runpytest(*QUIET, "--agent-report=base.json").assert_outcomes(passed=2)
    monkeypatch.setenv("AGENT_TOOLS", "search,lookup")
    return research


def _gate_block(result: pytest.RunResult) -> list[str]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("agentctx gate"))
    end = next(
        (i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines)
    )
    return lines[start:end]


def _gate_entry(tester: pytest.Pytester, name: str = "report.json") -> Any:
    return json.loads((tester.path / name).read_text())["summary"]["gate"]


# -- a clean session -------------------------------------------------------------------


@WORKERS
def test_the_gate_passes_a_clean_session(research: pytest.Pytester, workers) -> None:
    result = research.runpytest(*workers, *QUIET, "--agent-gate", "--agent-report=report.json")

    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    assert _gate_block(result) == ["agentctx gate: passed"]
    assert _gate_entry(research) == {
        "enabled": True,
        "passed": True,
        "failures": [],
        "records": [],
    }


def test_without_the_gate_the_report_says_it_is_off(research: pytest.Pytester) -> None:
    research.runpytest(*QUIET, "--agent-report=report.json").assert_outcomes(passed=2)

    assert _gate_entry(research) == {
        "enabled": False,
        "passed": True,
        "failures": [],
        "records": [],
    }


# -- the baseline ----------------------------------------------------------------------


@WORKERS
def test_drift_from_the_baseline_fails_a_passing_session(
    baseline: pytest.Pytester, workers
) -> None:
    result = baseline.runpytest(
        *workers,
        *QUIET,
        "--agent-gate",
        "--agent-baseline=base.json",
        "--agent-report=report.json",
    )

    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _gate_block(result) == ["agentctx gate FAILED: 3 reasons", *(f"  {d}" for d in DRIFT)]
    result.stdout.fnmatch_lines(
        [
            f"baseline: {baseline.path / 'base.json'} (tokens ±10%, iterations ±0, trajectory "
            "exact; pass rate: level 0.05, margin none)"
        ]
    )
    gate = _gate_entry(baseline)
    assert (gate["enabled"], gate["passed"], gate["failures"]) == (True, False, DRIFT)
    failing = [record for record in gate["records"] if record["verdict"] == "fail"]
    assert [(r["nodeid"], r["kind"], r["measure"], r["message"]) for r in failing] == [
        ("test_research_agent.py::test_research", "drift", measure, line)
        for measure, line in zip(("iterations", "trajectory", "total_tokens"), DRIFT, strict=True)
    ]


def test_the_gate_block_is_printed_once_under_xdist(baseline: pytest.Pytester) -> None:
    result = baseline.runpytest("-n", "2", *QUIET, "--agent-gate", "--agent-baseline=base.json")

    assert sum(line.startswith("agentctx gate") for line in result.stdout.lines) == 1


def test_drift_within_the_tolerance_passes(baseline: pytest.Pytester) -> None:
    result = baseline.runpytest(
        *QUIET,
        "--agent-gate",
        "--agent-baseline=base.json",
        "--agent-baseline-tokens=50%",
        "--agent-baseline-iterations=1",
        "--agent-baseline-trajectory=ignore",
    )

    assert result.ret == pytest.ExitCode.OK
    assert _gate_block(result) == ["agentctx gate: passed"]


def test_tolerances_from_the_ini(baseline: pytest.Pytester) -> None:
    baseline.makeini(
        """
        [pytest]
        asyncio_mode = auto
        asyncio_default_fixture_loop_scope = function
        filterwarnings = error
        agent_baseline_tokens = ignore
        agent_baseline_iterations = 1
        agent_baseline_trajectory = unordered
        """
    )

    result = baseline.runpytest(*QUIET, "--agent-gate", "--agent-baseline=base.json")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _gate_block(result) == [
        "agentctx gate FAILED: 1 reason",
        "  test_research_agent.py::test_research: tool calls changed (any order): +lookup",
    ]


def test_a_command_line_tolerance_overrides_the_ini(baseline: pytest.Pytester) -> None:
    baseline.makeini(
        """
        [pytest]
        asyncio_mode = auto
        asyncio_default_fixture_loop_scope = function
        filterwarnings = error
        agent_baseline_trajectory = ignore
        agent_baseline_iterations = 5
        """
    )

    result = baseline.runpytest(
        *QUIET, "--agent-gate", "--agent-baseline=base.json", "--agent-baseline-tokens=60"
    )

    assert result.ret == pytest.ExitCode.OK


def test_a_test_missing_from_the_baseline_is_new_not_a_failure(
    research: pytest.Pytester,
) -> None:
    research.runpytest(*QUIET, "-k", "steady", "--agent-report=base.json")

    result = research.runpytest(*QUIET, "--agent-gate", "--agent-baseline=base.json")

    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "agentctx gate: passed",
            "baseline: *base.json (*)",
            "new (not in the baseline, not compared): 1",
            "  test_research_agent.py::test_research",
        ]
    )


def test_baseline_tests_that_did_not_run_are_listed(baseline: pytest.Pytester) -> None:
    result = baseline.runpytest(
        *QUIET, "-k", "steady", "--agent-gate", "--agent-baseline=base.json"
    )

    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["in the baseline but not run: 1", "  test_research_agent.py::test_research"]
    )


def test_a_baseline_without_the_gate_shows_the_drift_and_passes(
    baseline: pytest.Pytester,
) -> None:
    result = baseline.runpytest(*QUIET, "--agent-baseline=base.json")

    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "agentctx: the gate would fail (3 reasons; it is off: add --agent-gate to enforce it)",
            *(f"  {d}" for d in DRIFT),
        ]
    )


@WORKERS
def test_a_drifted_test_keeps_the_baseline_run_beside_its_own(
    baseline: pytest.Pytester, workers
) -> None:
    baseline.runpytest(
        *QUIET, *workers, "--agent-baseline=base.json", "--agent-report=report.json"
    ).assert_outcomes(passed=2)

    report = json.loads((baseline.path / "report.json").read_text())
    research, steady = report["tests"]
    assert "baseline" not in steady
    assert research["baseline"]["stats"] == {
        "runs": 1,
        "iterations": 2,
        "tool_calls": 1,
        "input_tokens": 200,
        "output_tokens": 0,
        "total_tokens": 200,
        "cost_usd": pytest.approx(0.00003),
        "trajectory": ["search"],
    }
    from pytest_agentctx.reports.html import render_html

    page = render_html(report)  # later, from the JSON report alone
    start = page.index('<table class="drift">')
    table = page[start : page.index("</table>", start)]
    assert (
        '<tr class="changed"><th>trajectory</th><td><ol class="trajectory"><li>search</li></ol>'
        '</td><td><ol class="trajectory"><li>search</li><li class="diff">lookup</li></ol></td>'
        "</tr>"
    ) in table
    assert '<tr class="changed"><th>iterations</th><td>2</td><td>3</td></tr>' in table
    assert '<tr class="changed"><th>tokens</th><td>200</td><td>300</td></tr>' in table
    assert page.count('<table class="drift">') == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "*base.json does not exist. Write one with: pytest --agent-report=PATH*"),
        ("<testsuites/>", "*base.json is not JSON (Expecting value, line 1)*"),
        ('{"format": "pytest-agentctx-report", "version": 99}', "*has version 99*"),
    ],
    ids=["missing", "not-json", "version"],
)
def test_a_baseline_that_is_not_a_report_is_a_usage_error(
    research: pytest.Pytester, content: str | None, message: str
) -> None:
    if content is not None:
        (research.path / "base.json").write_text(content)

    result = research.runpytest(*QUIET, "--agent-gate", "--agent-baseline=base.json")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --agent-baseline: Report {message}"])


def test_a_tolerance_that_cannot_work_is_a_usage_error(research: pytest.Pytester) -> None:
    result = research.runpytest(*QUIET, "--agent-baseline-trajectory=roughly")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --agent-baseline-trajectory / agent_baseline_trajectory = 'roughly': *"]
    )


# -- budgets ---------------------------------------------------------------------------


def test_an_exceeded_budget_is_a_gate_failure(research: pytest.Pytester) -> None:
    research.makepyfile(
        test_budget="""
        import pytest
        from test_research_agent import AGENT

        @pytest.mark.agent_budget(max_tokens=150, max_iterations=5)
        async def test_expensive(agent_runtime, fake_llm):
            fake_llm.reply("done", usage={"input_tokens": 200, "output_tokens": 0})
            await agent_runtime.run(AGENT, "research")
        """
    )

    result = research.runpytest(*QUIET, "--agent-gate", "test_budget.py")

    result.assert_outcomes(failed=1)
    assert _gate_block(result) == [
        "agentctx gate FAILED: 1 reason",
        "  test_budget.py::test_expensive: over budget: max_tokens measured 200, allowed 150",
    ]


# -- cassettes -------------------------------------------------------------------------

ECHO_TESTS = """
import os

import pytest
from pytest_agentctx import Agent

AGENT = Agent(name="echo", model="openai:gpt-4o-mini")


@pytest.mark.agent(allow_unused=True)
async def test_fewer_questions(agent_runtime):
    for n in range(int(os.environ.get("AGENT_RUNS", "1"))):
        await agent_runtime.run(AGENT, f"question {n}")


async def test_same_question(agent_runtime):
    await agent_runtime.run(AGENT, "question")
"""


@pytest.fixture
def echo(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """ECHO_TESTS recorded with AGENT_RUNS=2 (from a loopback provider, stopped after) and
    then run with AGENT_RUNS=1: one recording of test_fewer_questions goes unused."""
    agent_pytester.makepyfile(test_echo=ECHO_TESTS)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-gate-e2e")
    with LoopbackProvider() as provider:
        for _ in range(3):
            provider.reply("fine", usage={"input_tokens": 10, "output_tokens": 5})
        monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
        monkeypatch.setenv("AGENT_RUNS", "2")
        agent_pytester.runpytest(*QUIET, "--agent-record").assert_outcomes(passed=2)
    monkeypatch.setenv("AGENT_RUNS", "1")
    return agent_pytester


@WORKERS
def test_unused_recordings_fail_the_gate_even_where_allowed(echo: pytest.Pytester, workers):
    result = echo.runpytest(*workers, *QUIET, "--agent-gate")

    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _gate_block(result) == [
        "agentctx gate FAILED: 1 reason",
        "  test_echo.py::test_fewer_questions: cassette cassettes/test_echo/"
        "test_fewer_questions.json left 1 recorded interaction(s) unused (#1); re-record "
        'with pytest --agent-record "test_echo.py::test_fewer_questions"',
    ]


def test_a_stale_cassette_is_a_gate_failure(echo: pytest.Pytester) -> None:
    echo.makepyfile(test_echo=ECHO_TESTS.replace('"question")', '"another question")'))

    result = echo.runpytest(*QUIET, "--agent-gate", "-k", "same_question")

    result.assert_outcomes(failed=1, deselected=1)
    assert _gate_block(result) == [
        "agentctx gate FAILED: 1 reason",
        "  test_echo.py::test_same_question: cassette cassettes/test_echo/"
        "test_same_question.json is stale: the agent sent requests it has no recording for; "
        're-record with pytest --agent-record "test_echo.py::test_same_question"',
    ]
