"""End-to-end tests of pricing: the same run priced on two days gives the same dollars
when the price data is pinned, a recording is priced at the day it was recorded (and a
run with no recording at the session's day when not pinned), the report and the
terminal say which price data priced the session, and a pin of another release stops the
session."""

from __future__ import annotations

import json
from datetime import UTC, datetime, tzinfo
from importlib import metadata

import pytest

from pytest_agentctx import LoopbackProvider

INSTALLED = metadata.version("genai-prices")

#: One run of a model whose price genai-prices' data doubles from 2027-01-01: a million
#: input tokens, 0.75 USD before, 1.50 after.
PRICED_TEST = """
from pytest_agentctx import Agent

helper = Agent(name="helper", model="openai:gpt-4o-mini")


async def test_priced(agent_runtime, fake_llm):
    fake_llm.reply("ok", usage={"input_tokens": 1_000_000, "output_tokens": 0},
                   model="gemini-3.8-flash")
    await agent_runtime.run(helper, "hello")
"""


def _session_day(monkeypatch: pytest.MonkeyPatch, year: int, month: int, day: int) -> None:
    """Make the inner session start on that day (UTC): the day its unpinned prices are of."""

    class Day(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> Day:
            return cls(year, month, day, 12, tzinfo=tz or UTC)

    monkeypatch.setattr("pytest_agentctx.plugin.keys.datetime", Day)


def _cost(project: pytest.Pytester) -> tuple[object, object]:
    report = json.loads((project.path / "report.json").read_text())
    return report["summary"]["stats"]["cost_usd"], report["summary"]["price_data"]


def _pin(project: pytest.Pytester, line: str) -> None:
    ini = project.path / "tox.ini"
    ini.write_text(ini.read_text().rstrip("\n") + f"\nagent_price_data = {line}\n")


@pytest.fixture
def project(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(test_priced=PRICED_TEST)
    return agent_pytester


RECORDED_TEST = """
from pytest_agentctx import Agent

helper = Agent(name="helper", model="openai:gemini-3.8-flash")


async def test_recorded(agent_runtime):
    await agent_runtime.run(helper, "hello")
"""


def _record(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, on: tuple[int, int, int]
) -> None:
    """Record the project's test against a provider that answers a million input tokens,
    in a session that starts on the day ``on``."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    _session_day(monkeypatch, *on)
    with LoopbackProvider() as provider:
        provider.reply("ok", usage={"input_tokens": 1_000_000, "output_tokens": 0})
        monkeypatch.setenv("OPENAI_BASE_URL", provider.base_url)
        project.runpytest("-p", "no:cacheprovider", "--agent-record").assert_outcomes(passed=1)


def test_a_pinned_cassette_priced_on_two_days_gives_the_same_dollars(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_pytester.makepyfile(test_recorded=RECORDED_TEST)
    _pin(agent_pytester, f"genai-prices=={INSTALLED} 2026-11-29")
    _record(agent_pytester, monkeypatch, on=(2026, 11, 29))
    costs = []
    for day in ((2026, 11, 29), (2027, 6, 1)):
        _session_day(monkeypatch, *day)
        replayed = agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-report=report.json")
        replayed.assert_outcomes(passed=1)
        costs.append(_cost(agent_pytester))

    pinned = {"source": "genai-prices", "version": INSTALLED, "day": "2026-11-29", "pinned": True}
    # genai-prices doubles this model's price from 2027-01-01: the pin keeps the dollars
    assert costs == [(0.75, pinned), (0.75, pinned)]


def test_a_recording_is_priced_at_the_day_it_was_recorded(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_pytester.makepyfile(test_recorded=RECORDED_TEST)
    _record(agent_pytester, monkeypatch, on=(2026, 11, 29))
    _session_day(monkeypatch, 2027, 6, 1)

    result = agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-report=report.json")

    (cassette,) = (agent_pytester.path / "cassettes").rglob("*.json")
    (stored,) = json.loads(cassette.read_text())["interactions"]
    (test,) = json.loads((agent_pytester.path / "report.json").read_text())["tests"]
    # genai-prices doubles this model's price from 2027-01-01: the recording's day applies
    assert (stored["recorded_on"], test["cassette"]["recorded_on"]) == ("2026-11-29",) * 2
    assert _cost(agent_pytester) == (
        0.75,
        {"source": "genai-prices", "version": INSTALLED, "day": "2027-06-01", "pinned": False},
    )
    result.stdout.fnmatch_lines(
        [
            f"agentctx: 1 agent test, *, cost $0.750000 (genai-prices {INSTALLED}, prices of "
            "the day each cassette was recorded, else of 2027-06-01, not pinned: "
            "pytest-agentctx prices pin)*"
        ]
    )


def test_a_dollar_budget_holds_a_recording_at_the_day_it_was_recorded(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_pytester.makepyfile(
        test_recorded=RECORDED_TEST.replace(
            "async def", "import pytest\n\n@pytest.mark.agent_budget(max_cost_usd=1.0)\nasync def"
        )
    )
    _record(agent_pytester, monkeypatch, on=(2026, 11, 29))
    _session_day(monkeypatch, 2027, 6, 1)

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    # $0.75 at the recording's prices; $1.50 at the session's day would break the budget
    result.assert_outcomes(passed=1)


def test_without_a_pin_a_run_is_priced_at_the_sessions_day(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session_day(monkeypatch, 2027, 6, 1)

    result = project.runpytest("-p", "no:cacheprovider", "--agent-report=report.json")

    assert _cost(project) == (
        1.5,
        {"source": "genai-prices", "version": INSTALLED, "day": "2027-06-01", "pinned": False},
    )
    result.stdout.fnmatch_lines(
        [
            f"agentctx: 1 agent test, *, cost $1.500000 (genai-prices {INSTALLED}, prices of "
            "2027-06-01, not pinned: pytest-agentctx prices pin)*"
        ]
    )


def test_a_pin_of_another_release_stops_the_session_saying_what_to_do(
    project: pytest.Pytester,
) -> None:
    _pin(project, "genai-prices==0.0.1 2026-11-29")

    result = project.runpytest("-p", "no:cacheprovider")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*agent_price_data pins genai-prices 0.0.1, but {INSTALLED} is installed*"
            "pip install 'genai-prices==0.0.1'*pytest-agentctx prices pin*"
        ]
    )


def test_a_session_that_priced_nothing_says_nothing_of_prices(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")

    result = agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-report=report.json")

    report = json.loads((agent_pytester.path / "report.json").read_text())
    assert "price_data" not in report["summary"]
    assert "genai-prices" not in result.stdout.str()


#: A cache-warm call of claude-sonnet-4-6: 100,000 input tokens of which 90,000 read from
#: the prompt cache, and 1,000 output tokens. At the prices of 2026-11-29: 10,000 at 3 USD
#: per million, 90,000 at 0.30 and 1,000 at 15: 0.072 USD (0.315 if the cache were
#: ignored, 0.015 if its reads were free).
CACHE_WARM_TEST = """
import pytest
from pytest_agentctx import Agent

helper = Agent(name="helper", model="anthropic:claude-sonnet-4-6")


@pytest.mark.agent_budget(max_cost_usd={limit})
async def test_cache_warm(agent_runtime, fake_llm):
    fake_llm.reply("ok", usage={{"input_tokens": 100_000, "cache_read_tokens": 90_000,
                                "output_tokens": 1_000}})
    await agent_runtime.run(helper, "hello")
"""


def test_a_cache_warm_agent_over_its_dollar_budget_fails_with_the_cache_priced_cost(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(test_warm=CACHE_WARM_TEST.format(limit=0.05))
    _pin(agent_pytester, f"genai-prices=={INSTALLED} 2026-11-29")

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*max_cost_usd: measured 0.072, allowed 0.05 (runs: *); input tokens: 10,000 uncached, "
            "90,000 read from the prompt cache, 0 written to it; 1,000 output"
        ]
    )


def test_cache_reads_are_priced_below_fresh_input(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(test_warm=CACHE_WARM_TEST.format(limit=0.1))
    _pin(agent_pytester, f"genai-prices=={INSTALLED} 2026-11-29")

    result = agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-report=report.json")

    result.assert_outcomes(passed=1)
    stats = json.loads((agent_pytester.path / "report.json").read_text())["summary"]["stats"]
    assert (stats["cost_usd"], stats["cache_read_tokens"], stats["uncached_input_tokens"]) == (
        0.072,
        90_000,
        10_000,
    )


#: Says at the session's end whether genai-prices' data was loaded in its process.
LOADED_PLUGIN = """
import sys


def pytest_unconfigure(config):
    print(f"genai-prices loaded: {'genai_prices' in sys.modules}")
"""


def test_a_session_whose_prices_were_kept_never_loads_the_price_data(
    project: pytest.Pytester,
) -> None:
    project.makeconftest(LOADED_PLUGIN)
    _pin(project, f"genai-prices=={INSTALLED} 2026-11-29")
    loaded, costs = [], []
    for _ in range(2):
        run = project.runpytest_subprocess("--agent-report=report.json")
        run.assert_outcomes(passed=1)
        loaded.append("genai-prices loaded: True" in run.stdout.str())
        costs.append(_cost(project)[0])

    assert loaded == [True, False]
    assert costs[0] == costs[1] == 0.75
