"""End-to-end tests: every agent test is measured, whatever the agent is written with.

The inner agents call the raw ``openai`` and ``anthropic`` SDKs (no pytest-agentctx
runtime, no ``agent_context``). They are recorded once against a
:class:`~pytest_agentctx.LoopbackProvider` on 127.0.0.1 and then replayed; budgets,
reports, the gate and a baseline must see their runs from the traffic alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import anthropic  # noqa: F401  (imported here so the inner runs do not import it again)
import openai  # noqa: F401  (same)
import pytest
from raw_sdk_project import AGENTS, CONFTEST

TESTS = """
import pytest

from sdk_agents import anthropic_agent, chat_agent, script, streaming_chat_agent


@pytest.mark.agent
def test_openai_chat(model_server):
    script(model_server)
    assert chat_agent(model_server.openai_base_url) == "Sunny in Paris."


@pytest.mark.agent
async def test_openai_streaming(model_server):
    script(model_server)
    assert await streaming_chat_agent(model_server.openai_base_url) == "Sunny in Paris."


@pytest.mark.agent
def test_anthropic_streaming(model_server):
    script(model_server)
    assert anthropic_agent(model_server.anthropic_base_url) == "Sunny in Paris."
"""

WORKERS = pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
QUIET = ("-p", "no:cacheprovider", "-p", "xdist")
NODES = ("test_openai_chat", "test_openai_streaming", "test_anthropic_streaming")


@pytest.fixture
def recorded(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The three raw-SDK agents, each recorded making two model calls."""
    agent_pytester.makeconftest(CONFTEST)
    agent_pytester.makepyfile(sdk_agents=AGENTS, test_raw=TESTS)
    monkeypatch.setenv("AGENT_STEPS", "2")
    agent_pytester.runpytest(*QUIET, "--agent-record").assert_outcomes(passed=3)
    return agent_pytester


def _report(pytester: pytest.Pytester, name: str) -> dict[str, dict[str, object]]:
    data = json.loads(Path(pytester.path, name).read_text(encoding="utf-8"))
    return {test["nodeid"].rsplit("::", 1)[1]: test for test in data["tests"]}


@WORKERS
def test_a_budget_fails_raw_sdk_agents_that_use_more(recorded: pytest.Pytester, workers) -> None:
    result = recorded.runpytest(*QUIET, *workers, "-o", "agent_budget_max_iterations=1")

    result.assert_outcomes(failed=3)
    for node in NODES:
        result.stdout.fnmatch_lines(
            [f"*agent budget exceeded: max_iterations 2 > 1 (test_raw.py::{node})*"]
        )


@WORKERS
def test_a_budget_marker_on_a_raw_sdk_agent_is_checked(recorded: pytest.Pytester, workers) -> None:
    recorded.makepyfile(
        test_raw="import pytest\npytestmark = pytest.mark.agent_budget(max_tool_calls=0)\n" + TESTS
    )

    result = recorded.runpytest(*QUIET, *workers)

    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*agent budget exceeded: max_tool_calls 1 > 0*"])


@WORKERS
def test_the_report_measures_raw_sdk_agents(recorded: pytest.Pytester, workers) -> None:
    recorded.runpytest(*QUIET, *workers, "--agent-report=report.json").assert_outcomes(passed=3)

    tests = _report(recorded, "report.json")
    for node in NODES:
        stats = tests[node]["stats"]
        assert isinstance(stats, dict)
        assert (stats["runs"], stats["iterations"], stats["trajectory"]) == (
            1,
            2,
            ["get_weather"],
        ), node
        assert "measured" not in tests[node]


@WORKERS
def test_the_gate_fails_on_a_budget_a_raw_sdk_agent_exceeds(
    recorded: pytest.Pytester, workers
) -> None:
    result = recorded.runpytest(
        *QUIET, *workers, "--agent-gate", "-o", "agent_budget_max_tool_calls=0"
    )

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "agentctx gate FAILED: 3 reasons",
            *(
                f"  test_raw.py::{node}: over budget: max_tool_calls measured 1, allowed 0"
                for node in sorted(NODES)
            ),
        ]
    )


@WORKERS
def test_a_baseline_sees_a_raw_sdk_agent_make_one_more_call(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers
) -> None:
    recorded.runpytest(*QUIET, "--agent-report=baseline.json").assert_outcomes(passed=3)
    monkeypatch.setenv("AGENT_STEPS", "3")
    recorded.runpytest(*QUIET, "--agent-record").assert_outcomes(passed=3)

    result = recorded.runpytest(*QUIET, *workers, "--agent-baseline=baseline.json", "--agent-gate")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [f"*test_raw.py::{node}: iterations 2 -> 3 (allowed change ±0)" for node in sorted(NODES)],
        consecutive=False,
    )


def test_a_plain_replay_leaves_captured_runs_unmeasured(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "passed   test_raw.py::test_anthropic_streaming *?*?*?*?*replayed",
            "*3 agent tests*; 3 not measured (runs captured from traffic are measured for a "
            "budget, --agent-report, --agent-gate or --agent-baseline)",
        ]
    )


@WORKERS
def test_a_budget_on_a_test_that_made_no_model_call_fails(
    agent_pytester: pytest.Pytester, workers
) -> None:
    agent_pytester.makepyfile(
        test_idle="""
        import pytest

        @pytest.mark.agent_budget(max_iterations=3)
        def test_idle(fake_llm):
            pass

        @pytest.mark.agent
        @pytest.mark.agent_budget(max_tokens=100)
        def test_idle_with_a_cassette(agent_cassette):
            pass
        """
    )

    result = agent_pytester.runpytest(*QUIET, *workers)

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*agent budget not measured: test_idle.py::test_idle made no model call*",
            "*take the budget off it: @pytest.mark.agent_budget(max_iterations=None)*",
        ],
        consecutive=False,
    )


def test_ini_budgets_fail_an_agent_test_that_made_no_model_call(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(
        test_idle="""
        def test_idle(fake_llm):
            pass

        def test_plain():
            pass
        """
    )

    result = agent_pytester.runpytest(*QUIET, "-o", "agent_budget_max_iterations=3")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*agent budget not measured: test_idle.py::test_idle*"])


@WORKERS
def test_a_budget_on_a_live_agent_without_a_cassette_is_measured(
    agent_pytester: pytest.Pytester, workers
) -> None:
    agent_pytester.makeconftest(CONFTEST)
    agent_pytester.makepyfile(
        sdk_agents=AGENTS,
        test_live="""
        import pytest
        from sdk_agents import chat_agent, script

        @pytest.mark.agent_budget(max_iterations=1)
        def test_live(model_server):
            script(model_server)
            chat_agent(model_server.openai_base_url)
        """,
    )

    result = agent_pytester.runpytest(*QUIET, *workers)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*agent budget exceeded: max_iterations 2 > 1*"])


@WORKERS
def test_the_fake_model_is_measured_without_agent_context(
    agent_pytester: pytest.Pytester, workers
) -> None:
    agent_pytester.makepyfile(
        sdk_agents=AGENTS,
        test_fake="""
        import pytest
        from sdk_agents import anthropic_agent, script

        @pytest.mark.agent_budget(max_iterations=1)
        def test_fake(fake_llm):
            script(fake_llm)
            anthropic_agent("http://127.0.0.1:9")
        """,
    )

    result = agent_pytester.runpytest(*QUIET, *workers)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*agent budget exceeded: max_iterations 2 > 1*"])


#: Counts how often the capture builder ran, printed at the end of the session.
COUNTING_CONFTEST = (
    CONFTEST
    + """

from pytest_agentctx.traffic.capture import runs

_BUILDS = [0]
_original = runs.build


def _counted(*args, **kwargs):
    _BUILDS[0] += 1
    return _original(*args, **kwargs)


runs.build = _counted


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"CONTEXTS BUILT {_BUILDS[0]}")
"""
)


@pytest.mark.parametrize(
    ("args", "built"),
    [((), 0), (("-o", "agent_budget_max_iterations=5"), 3), (("--agent-report=r.json",), 3)],
    ids=["plain", "budget", "report"],
)
def test_captured_runs_are_built_only_when_something_reads_them(
    recorded: pytest.Pytester, args: tuple[str, ...], built: int
) -> None:
    recorded.makeconftest(COUNTING_CONFTEST)

    result = recorded.runpytest(*QUIET, *args)

    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([f"CONTEXTS BUILT {built}"])
