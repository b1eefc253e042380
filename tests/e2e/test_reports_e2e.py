"""End-to-end tests of the reports: the terminal table, JUnit properties, the JSON report
and the HTML page, in real pytest runs, serially and on two xdist workers.

The runs of the inner tests have known figures: their model replies come from ``fake_llm``
with scripted usage, or from cassettes recorded from a :class:`LoopbackProvider` on
127.0.0.1 with scripted usage.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib import metadata
from typing import Any

import pytest

from pytest_agentctx import LoopbackProvider

CALC_TESTS = '''
from pytest_agentctx import Agent, tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


AGENT = Agent(name="calc", model="openai:gpt-4o-mini", tools=[add])


async def test_tool_then_answer(agent_runtime, fake_llm):
    fake_llm.reply(
        tool_calls=[("add", {"a": 2, "b": 3})], usage={"input_tokens": 100, "output_tokens": 10}
    )
    fake_llm.reply("5", usage={"input_tokens": 120, "output_tokens": 20})
    await agent_runtime.run(AGENT, "2 + 3?")


async def test_answer(agent_runtime, fake_llm):
    fake_llm.reply("4", usage={"input_tokens": 40, "output_tokens": 10})
    await agent_runtime.run(AGENT, "2 + 2?")


def test_plain():
    assert True
'''

#: The figures of CALC_TESTS: (iterations, tool calls, tokens, cost).
TOOL_THEN_ANSWER = (2, 1, 250, 0.000051)  # (220 * 0.15 + 30 * 0.60) / 1e6
ANSWER = (1, 0, 50, 0.000012)

CASSETTE_TESTS = """
import os

import pytest
from pytest_agentctx import Agent

AGENT = Agent(name="echo", model="openai:gpt-4o-mini")
RUNS = int(os.environ.get("AGENT_RUNS", "1"))


async def test_replayed(agent_runtime):
    await agent_runtime.run(AGENT, "one")


@pytest.mark.agent(allow_unused=True)
async def test_unused(agent_runtime):
    for n in range(RUNS):
        await agent_runtime.run(AGENT, f"question {n}")


async def test_stale(agent_runtime):
    for n in range(RUNS):
        await agent_runtime.run(AGENT, f"question {n}")


@pytest.mark.agent
def test_missing():
    pass
"""

#: Cassette status of each test of CASSETTE_TESTS replayed with AGENT_RUNS=1 after a
#: recording with AGENT_RUNS=2.
REPLAYED_STATUSES = {
    "test_replayed": "replayed",
    "test_unused": "unused",
    "test_stale": "stale",
    "test_missing": "missing",
}

WORKERS = pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])


#: The end of the line of totals of a session priced with the pinned data (``_pin``).
PRICED = f" (genai-prices {metadata.version('genai-prices')}, prices of 2026-11-29, pinned)"


def _pin(project: pytest.Pytester) -> None:
    """Pin the project's price data, so its totals line is the same on every day."""
    ini = project.path / "tox.ini"
    pin = f"genai-prices=={metadata.version('genai-prices')} 2026-11-29"
    ini.write_text(ini.read_text().rstrip("\n") + f"\nagent_price_data = {pin}\n")


@pytest.fixture
def calc(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(test_calc=CALC_TESTS)
    _pin(agent_pytester)
    return agent_pytester


@pytest.fixture
def recorded(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """CASSETTE_TESTS with cassettes recorded (AGENT_RUNS=2) from a loopback provider that
    is stopped afterwards; the tests then run with AGENT_RUNS=1."""
    agent_pytester.makepyfile(test_echo=CASSETTE_TESTS)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-reports-e2e")
    with LoopbackProvider() as provider:
        for _ in range(5):
            provider.reply("fine", usage={"input_tokens": 10, "output_tokens": 5})
        monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
        monkeypatch.setenv("AGENT_RUNS", "2")
        agent_pytester.runpytest("--agent-record", "-p", "no:cacheprovider").assert_outcomes(
            passed=4
        )
        provider.verify()
    monkeypatch.setenv("AGENT_RUNS", "1")
    return agent_pytester


def _table(result: pytest.RunResult) -> list[str]:
    """The lines of the agentctx section: from its header to the totals line."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "- agentctx -" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("agentctx: "))
    return lines[start + 1 : end + 1]


def _properties(xml_path: Any) -> dict[str, dict[str, str]]:
    root = ET.parse(xml_path).getroot()
    return {
        case.get("name", ""): {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        for case in root.iter("testcase")
    }


def _test(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(test for test in report["tests"] if test["nodeid"].endswith(f"::{name}"))


# -- the terminal ----------------------------------------------------------------------


@WORKERS
def test_terminal_table_shows_each_agent_test_once(calc: pytest.Pytester, workers) -> None:
    result = calc.runpytest(*workers, "-p", "no:cacheprovider")

    result.assert_outcomes(passed=3)
    assert _table(result) == [
        "outcome  test                                 iters  tokens       cost  cassette",
        "passed   test_calc.py::test_answer                1      50  $0.000012  -",
        "passed   test_calc.py::test_tool_then_answer      2     250  $0.000051  -",
        "not shown at 80 columns: tools (COLUMNS=87 shows them)",
        "agentctx: 2 agent tests, 2 runs, 3 iterations, 1 tool call, 300 tokens, cost $0.000063"
        + PRICED,
    ]
    assert sum(line.startswith("agentctx: 2 agent tests") for line in result.stdout.lines) == 1


@WORKERS
def test_quiet_run_prints_one_summary_line(calc: pytest.Pytester, workers) -> None:
    result = calc.runpytest(*workers, "-q", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=3)
    assert [line for line in result.stdout.lines if line.startswith("agentctx:")] == [
        "agentctx: 2 agent tests, 2 runs, 3 iterations, 1 tool call, 300 tokens, cost $0.000063"
        + PRICED
    ]


def test_a_session_without_agent_tests_prints_nothing(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(test_plain="def test_plain():\n    pass\n")

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)
    assert not [line for line in result.stdout.lines if "- agentctx -" in line]
    assert not [line for line in result.stdout.lines if line.startswith("agentctx:")]


def test_a_long_table_shows_problems_first_and_says_how_many_are_left_out(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(
        test_many=CALC_TESTS.split("async def test_tool_then_answer")[0]
        + """
import pytest


@pytest.mark.parametrize("n", range(32))
async def test_many(agent_runtime, fake_llm, n):
    fake_llm.reply("ok", usage={"input_tokens": n, "output_tokens": 1})
    await agent_runtime.run(AGENT, "go")
    assert n != 31
"""
    )

    short = agent_pytester.runpytest("-p", "no:cacheprovider")
    full = agent_pytester.runpytest("-p", "no:cacheprovider", "-v")

    short.assert_outcomes(passed=31, failed=1)
    rows = _table(short)
    assert len(rows) == 1 + 30 + 2  # header, 30 rows, the line left out, the totals
    assert rows[-2] == "... and 2 more agent tests: -v or --agent-report=PATH shows them"
    assert any(row.startswith("FAILED   test_many.py::test_many[31]") for row in rows)
    assert len(_table(full)) == 1 + 32 + 1


WEATHER_TESTS = (
    CALC_TESTS.split("async def test_tool_then_answer")[0]
    + """
import pytest

FAILS = {fails}


async def test_weather_paris_in_celsius(agent_runtime, fake_llm):
    fake_llm.reply("4", usage={{"input_tokens": 40, "output_tokens": 10}})
    await agent_runtime.run(AGENT, "2 + 2?")
    assert not FAILS


@pytest.mark.xfail(reason="the agent cannot do this yet", strict=True)
async def test_weather_rome(agent_runtime, fake_llm):
    fake_llm.reply("5", usage={{"input_tokens": 40, "output_tokens": 10}})
    await agent_runtime.run(AGENT, "2 + 2?")
    assert False
"""
)


@WORKERS
def test_at_80_columns_every_row_fits_can_be_told_apart_and_says_failed(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers
) -> None:
    folder = "tests/agents/weather/providers"
    agent_pytester.makepyfile(
        **{
            f"{folder}/test_openai_forecast_agent": WEATHER_TESTS.format(fails=True),
            f"{folder}/test_anthropic_forecast_agent": WEATHER_TESTS.format(fails=False),
        }
    )
    monkeypatch.setenv("COLUMNS", "80")
    _pin(agent_pytester)

    result = agent_pytester.runpytest(*workers, "-p", "no:cacheprovider")

    result.assert_outcomes(passed=1, failed=1, xfailed=2)
    assert _table(result) == [
        "outcome  test                                                   tokens  cassette",
        "passed   test_anth...t_agent.py::test_weather_paris_in_celsius      50  -",
        "xfail    test_anthropic_forecast_agent.py::test_weather_rome        50  -",
        "FAILED   test_open...t_agent.py::test_weather_paris_in_celsius      50  -",
        "xfail    test_openai_forecast_agent.py::test_weather_rome           50  -",
        "test names are relative to tests/agents/weather/providers/",
        "not shown at 80 columns: tools, iters, cost (COLUMNS=146 shows them)",
        "agentctx: 4 agent tests, 4 runs, 4 iterations, 0 tool calls, 200 tokens, cost $0.000048"
        + PRICED,
    ]


# -- cassettes -------------------------------------------------------------------------


def test_the_table_says_recorded_for_every_test_of_a_recording(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_pytester.makepyfile(test_echo=CASSETTE_TESTS)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-reports-e2e")
    with LoopbackProvider() as provider:
        provider.reply("fine", usage={"input_tokens": 10, "output_tokens": 5})
        provider.reply("fine", usage={"input_tokens": 10, "output_tokens": 5})
        provider.reply("fine", usage={"input_tokens": 10, "output_tokens": 5})
        monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
        result = agent_pytester.runpytest("--agent-record", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=4)
    statuses = {row.split()[1].split("::")[1]: row.split()[-1] for row in _table(result)[1:-1]}
    assert statuses == dict.fromkeys(REPLAYED_STATUSES, "recorded")


@WORKERS
def test_cassette_statuses_in_the_table_junit_and_json(recorded: pytest.Pytester, workers) -> None:
    result = recorded.runpytest(
        *workers, "-p", "no:cacheprovider", "--agent-report=report.json", "--junitxml=junit.xml"
    )

    result.assert_outcomes(passed=3, failed=1)
    rows = {row.split()[1].split("::")[1]: row.split() for row in _table(result)[1:-1]}
    assert {name: row[-1] for name, row in rows.items()} == REPLAYED_STATUSES
    assert rows["test_replayed"][2:6] == ["1", "0", "15", "$0.000005"]
    assert rows["test_stale"][0] == "FAILED"
    assert _table(result)[-1].endswith("; cassettes: 1 replayed, 1 stale, 1 unused, 1 missing")
    properties = _properties(recorded.path / "junit.xml")
    assert {name: props["agentctx.cassette"] for name, props in properties.items()} == (
        REPLAYED_STATUSES
    )
    report = json.loads((recorded.path / "report.json").read_text())
    match _test(report, "test_unused")["cassette"]:
        case {
            "path": "cassettes/test_echo/test_unused.json",
            "mode": "none",
            "status": "unused",
            "interactions": 2,
            "unused": [1],
        }:
            pass
        case other:
            pytest.fail(f"unexpected cassette entry: {other}")
    assert _test(report, "test_missing")["cassette"]["interactions"] == 0


def test_json_report_has_the_same_bytes_with_and_without_xdist(
    recorded: pytest.Pytester,
) -> None:
    recorded.makepyfile(test_calc=CALC_TESTS)

    recorded.runpytest("-p", "no:cacheprovider", "--agent-report=serial.json")
    recorded.runpytest("-p", "no:cacheprovider", "-n", "2", "--agent-report=xdist.json")

    serial = (recorded.path / "serial.json").read_bytes()
    assert serial == (recorded.path / "xdist.json").read_bytes()
    assert len(json.loads(serial)["tests"]) == 7


# -- JUnit XML -------------------------------------------------------------------------


@WORKERS
def test_junit_xml_has_the_figures_of_agent_tests(calc: pytest.Pytester, workers) -> None:
    calc.runpytest(*workers, "-p", "no:cacheprovider", "--junitxml=junit.xml").assert_outcomes(
        passed=3
    )

    assert _properties(calc.path / "junit.xml") == {
        "test_tool_then_answer": {
            "agentctx.iterations": "2",
            "agentctx.tool_calls": "1",
            "agentctx.tokens": "250",
            "agentctx.cost_usd": "0.00005100",
        },
        "test_answer": {
            "agentctx.iterations": "1",
            "agentctx.tool_calls": "0",
            "agentctx.tokens": "50",
            "agentctx.cost_usd": "0.00001200",
        },
        "test_plain": {},
    }


# -- the JSON report -------------------------------------------------------------------


@WORKERS
def test_json_report_follows_the_schema(calc: pytest.Pytester, workers) -> None:
    result = calc.runpytest(*workers, "-p", "no:cacheprovider", "--agent-report=out/r.json")

    result.assert_outcomes(passed=3)
    path = calc.path / "out" / "r.json"
    result.stdout.fnmatch_lines([f"agentctx: JSON report written to {path}"])
    report = json.loads(path.read_text())
    match report:
        case {
            "format": "pytest-agentctx-report",
            "version": 2,
            "summary": {
                "tests": 3,
                "passed": 3,
                "failed": 0,
                "skipped": 0,
                "unit": 3,
                "integration": 0,
                "stats": {"runs": 2, "iterations": 3, "total_tokens": 300},
                "gate": {"enabled": False, "passed": True, "failures": [], "records": []},
            },
            "tests": [
                {"nodeid": "test_calc.py::test_answer"},
                {"nodeid": "test_calc.py::test_plain", "runs": [], "cassette": None},
                {
                    "nodeid": "test_calc.py::test_tool_then_answer",
                    "outcome": "passed",
                    "suite": "unit",
                    "budget": None,
                    "repeat": None,
                    "stats": {"iterations": 2, "tool_calls": 1, "trajectory": ["add"]},
                    "runs": [
                        {
                            "name": "calc",
                            "source": "runtime",
                            "stats": {"input_tokens": 220, "output_tokens": 30},
                            "context": {"iterations": [{"number": 1}, {"number": 2}]},
                        }
                    ],
                },
            ],
        }:
            pass
        case _:
            pytest.fail(f"unexpected report: {json.dumps(report, indent=1)[:3000]}")
    assert report["summary"]["stats"]["cost_usd"] == pytest.approx(0.000063)


def test_json_report_is_the_same_on_every_run(calc: pytest.Pytester) -> None:
    calc.runpytest("-p", "no:cacheprovider", "--agent-report=first.json")
    calc.runpytest("-p", "no:cacheprovider", "--agent-report=second.json")

    assert (calc.path / "first.json").read_bytes() == (calc.path / "second.json").read_bytes()


def test_json_report_counts_failed_and_skipped_tests(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(
        test_outcomes="""
        import pytest

        def test_fails():
            assert False

        @pytest.mark.skip(reason="not today")
        def test_skipped():
            pass

        @pytest.fixture
        def broken():
            yield
            raise RuntimeError("teardown")

        def test_teardown_error(broken):
            pass
        """
    )

    agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-report=r.json")

    report = json.loads((agent_pytester.path / "r.json").read_text())
    summary = {k: v for k, v in report["summary"].items() if k not in ("stats", "gate")}
    assert summary == {
        "tests": 3,
        "passed": 0,
        "failed": 2,
        "skipped": 1,
        "unit": 3,
        "integration": 0,
    }
    outcomes = {t["nodeid"].split("::")[1]: t["outcome"] for t in report["tests"]}
    assert outcomes == {
        "test_fails": "failed",
        "test_skipped": "skipped",
        "test_teardown_error": "failed",
    }


def test_json_report_tells_unit_from_integration_tests(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(
        test_suites="""
        import pytest

        def test_unit():
            pass

        @pytest.mark.integration
        def test_live():
            pass
        """
    )

    agent_pytester.runpytest(
        "-p", "no:cacheprovider", "--agent-integration", "--agent-report=r.json"
    )

    report = json.loads((agent_pytester.path / "r.json").read_text())
    assert [(t["nodeid"], t["suite"]) for t in report["tests"]] == [
        ("test_suites.py::test_live", "integration"),
        ("test_suites.py::test_unit", "unit"),
    ]
    assert (report["summary"]["unit"], report["summary"]["integration"]) == (1, 1)


# -- the HTML page ---------------------------------------------------------------------


@WORKERS
def test_html_report_is_written(calc: pytest.Pytester, workers) -> None:
    result = calc.runpytest(*workers, "-p", "no:cacheprovider", "--agent-report-html=r.html")

    result.assert_outcomes(passed=3)
    page = (calc.path / "r.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "test_tool_then_answer" in page
    result.stdout.fnmatch_lines([f"agentctx: HTML report written to {calc.path / 'r.html'}"])


def test_help_lists_the_report_options(agent_pytester: pytest.Pytester) -> None:
    result = agent_pytester.runpytest("--help")

    result.stdout.fnmatch_lines(
        [
            "*--agent-report=PATH*",
            "*--agent-report-html=PATH*",
            "*--agent-gate*",
            "*--agent-baseline=PATH*",
        ]
    )
