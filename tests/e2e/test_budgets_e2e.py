"""End-to-end tests of behaviour budgets: ``@pytest.mark.agent_budget`` and the ini
defaults, failures with the measured and allowed figures, prices, bad values, xdist, and
budgets measured from a replayed cassette."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_agentctx import LoopbackProvider

AGENT_MODULE = '''
from pytest_agentctx import Agent, tool

@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

CALC = Agent(name="calc", model="openai:gpt-4o-mini", tools=[add])
'''

#: The option that writes the JSON report, where each test's budget entry is.
REPORT = "--agent-report=report.json"

#: Two model calls: a tool call, then the answer; 100 + 20 and 150 + 30 tokens.
RUN = """
async def run(agent_runtime, fake_llm):
    fake_llm.reply_tool_call("add", a=1, b=2).reply(
        "3", usage={"input_tokens": 150, "output_tokens": 30}
    )
    return await agent_runtime.run(CALC, "1 + 2?")
"""


#: A test module of one test, NAME, whose run used 30 tokens of ``house-model`` (priced at
#: 1000 USD per million tokens: 0.03 USD), with a budget of 0.01 USD.
HOUSE_MODEL_TEST = """
import pytest
from calc_mod import CALC

@pytest.mark.agent_budget(max_cost_usd=0.01)
async def {name}(agent_runtime, fake_llm):
    usage = {{"input_tokens": 20, "output_tokens": 10}}
    fake_llm.reply("a", usage=usage, model="house-model")
    await agent_runtime.run(CALC, "first")
"""


@pytest.fixture
def project(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(calc_mod=AGENT_MODULE + RUN)
    return agent_pytester


def _entries(project: pytest.Pytester) -> dict[str, object]:
    """The budget entry of each test (by its name), from the JSON report (``REPORT``)."""
    report = json.loads((project.path / "report.json").read_text())
    return {test["nodeid"].rsplit("::", 1)[-1]: test["budget"] for test in report["tests"]}


def test_a_test_within_its_budget_passes_and_records_its_limits(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_ok="""
        import pytest
        from calc_mod import run

        @pytest.mark.agent_budget(max_iterations=2, max_tool_calls=1, max_tokens=1000)
        async def test_ok(agent_runtime, fake_llm):
            await run(agent_runtime, fake_llm)
        """
    )

    result = project.runpytest("-p", "no:cacheprovider", REPORT)

    result.assert_outcomes(passed=1)
    assert _entries(project) == {
        "test_ok": {
            "limits": {"max_iterations": 2, "max_tool_calls": 1, "max_tokens": 1000},
            "exceeded": [],
        }
    }


def test_a_test_over_budget_fails_with_the_measured_and_allowed_figures(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_over="""
        import pytest
        from calc_mod import run

        @pytest.mark.agent_budget(max_iterations=1, max_tokens=100, max_tool_calls=5)
        async def test_over(agent_runtime, fake_llm):
            await run(agent_runtime, fake_llm)
        """
    )

    result = project.runpytest("-p", "no:cacheprovider", REPORT)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*agent budget exceeded: max_iterations 2 > 1, max_tokens * > 100 "
            "(test_over.py::test_over)",
            "  max_iterations: measured 2, allowed 1 (runs: #1 calc 2)",
            "  max_tokens: measured *, allowed 100 (runs: #1 calc *)",
        ]
    )
    match _entries(project)["test_over"]:
        case {
            "limits": {"max_iterations": 1, "max_tokens": 100, "max_tool_calls": 5},
            "exceeded": [
                {"name": "max_iterations", "measured": 2, "allowed": 1},
                {"name": "max_tokens", "measured": int(tokens), "allowed": 100},
            ],
        } if tokens > 100:
            pass
        case other:
            raise AssertionError(other)


def test_every_run_of_the_test_counts_and_is_listed(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_two_runs="""
        import pytest
        from calc_mod import CALC

        @pytest.mark.agent_budget(max_tokens=50)
        async def test_two_runs(agent_runtime, fake_llm):
            fake_llm.reply("a", usage={"input_tokens": 20, "output_tokens": 10})
            fake_llm.reply("b", usage={"input_tokens": 25, "output_tokens": 5})
            await agent_runtime.run(CALC, "first")
            await agent_runtime.run(CALC, "second")
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["  max_tokens: measured 60, allowed 50 (runs: #1 calc 30, #2 calc 30)"]
    )


def test_the_closest_marker_wins_for_each_limit(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_levels="""
        import pytest
        from calc_mod import run

        pytestmark = pytest.mark.agent_budget(max_tokens=10, max_iterations=1)

        class TestLevels:
            pytestmark = pytest.mark.agent_budget(max_tokens=10_000)

            @pytest.mark.agent_budget(max_iterations=None)
            async def test_inherits(self, agent_runtime, fake_llm):
                await run(agent_runtime, fake_llm)
        """
    )

    result = project.runpytest("-p", "no:cacheprovider", REPORT)

    result.assert_outcomes(passed=1)
    assert _entries(project)["test_inherits"] == {
        "limits": {"max_tokens": 10_000},
        "exceeded": [],
    }


def test_ini_defaults_apply_to_agent_tests_and_markers_override_them(
    project: pytest.Pytester,
) -> None:
    project.makeini(
        """
        [pytest]
        asyncio_mode = auto
        asyncio_default_fixture_loop_scope = function
        filterwarnings = error
        agent_budget_max_tokens = 100
        agent_budget_max_iterations = 5
        """
    )
    project.makepyfile(
        test_ini="""
        import pytest
        from calc_mod import run

        async def test_default(agent_runtime, fake_llm):
            await run(agent_runtime, fake_llm)

        @pytest.mark.agent_budget(max_tokens=1000)
        async def test_raised(agent_runtime, fake_llm):
            await run(agent_runtime, fake_llm)

        def test_no_agent():
            pass
        """
    )

    result = project.runpytest("-p", "no:cacheprovider", REPORT)

    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*agent budget exceeded: max_tokens * > 100 (*test_default)"])
    entries = _entries(project)
    assert entries["test_raised"] == {
        "limits": {"max_iterations": 5, "max_tokens": 1000},
        "exceeded": [],
    }
    assert entries["test_no_agent"] is None


def test_the_cost_uses_prices_from_the_ini(project: pytest.Pytester) -> None:
    project.makeini(
        """
        [pytest]
        asyncio_mode = auto
        asyncio_default_fixture_loop_scope = function
        filterwarnings = error
        agent_prices =
            house-model = 1000 1000
        """
    )
    project.makepyfile(test_cost=HOUSE_MODEL_TEST.format(name="test_expensive"))

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    # 30 tokens at 1000 dollars per million tokens
    result.stdout.fnmatch_lines(
        ["  max_cost_usd: measured 0.03, allowed 0.01 (runs: #1 calc 0.03)"]
    )


def test_the_price_fixture_extends_the_table_in_code(project: pytest.Pytester) -> None:
    project.makeconftest(
        """
import pytest

@pytest.fixture(scope="session")
def agent_prices(agent_prices):
    return agent_prices.with_prices({"house-model": (1000.0, 1000.0)})
"""
    )
    project.makepyfile(
        test_cost="""
        import pytest
        from calc_mod import CALC

        @pytest.mark.agent_budget(max_cost_usd=0.05)
        async def test_cheap_enough(agent_runtime, fake_llm):
            usage = {"input_tokens": 20, "output_tokens": 10}
            fake_llm.reply("a", usage=usage, model="house-model")
            await agent_runtime.run(CALC, "first")
        """
    )

    result = project.runpytest("-p", "no:cacheprovider", REPORT)

    result.assert_outcomes(passed=1)
    assert _entries(project)["test_cheap_enough"] == {
        "limits": {"max_cost_usd": 0.05},
        "exceeded": [],
    }


def test_each_test_is_priced_by_its_own_agent_prices_fixture(project: pytest.Pytester) -> None:
    # the override of one test module prices that module's tests only
    override = """
@pytest.fixture
def agent_prices(agent_prices):
    return agent_prices.with_prices({"house-model": (1000.0, 1000.0)})
"""
    project.makepyfile(
        test_priced=HOUSE_MODEL_TEST.format(name="test_priced_here") + override,
        test_unpriced_elsewhere=HOUSE_MODEL_TEST.format(name="test_not_priced_here"),
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_priced_here*",
            "  max_cost_usd: measured 0.03, allowed 0.01 (runs: #1 calc 0.03)",
            "*test_not_priced_here*",
            "*max_cost_usd*house-model*",
        ]
    )


def test_an_agent_prices_fixture_that_gives_no_price_table_fails_the_test_that_made_runs(
    project: pytest.Pytester,
) -> None:
    project.makeconftest(
        """
import pytest

@pytest.fixture(scope="session")
def agent_prices():
    return {"house-model": (1.0, 1.0)}
"""
    )
    project.makepyfile(
        test_mixed="""
        from calc_mod import CALC

        async def test_with_runs(agent_runtime, fake_llm):
            fake_llm.reply("a", usage={"input_tokens": 20, "output_tokens": 10})
            await agent_runtime.run(CALC, "first")

        def test_plain():
            assert 1 + 1 == 2
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*BudgetError: the agent_prices fixture gave a dict; it must return a PriceTable, "
            "e.g. return agent_prices.with_prices*",
            "FAILED test_mixed.py::test_with_runs - *",
        ]
    )


def test_a_cost_budget_on_an_unpriced_model_fails_and_says_how_to_price_it(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_unpriced="""
        import pytest
        from calc_mod import CALC

        @pytest.mark.agent_budget(max_cost_usd=1)
        async def test_unpriced(agent_runtime, fake_llm):
            fake_llm.reply("a", usage={"input_tokens": 20, "output_tokens": 10}, model="mystery-1")
            await agent_runtime.run(CALC, "first")
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*max_cost_usd: cannot be measured: no price for model 'mystery-1': the price data*"]
    )


def test_the_duration_is_the_runs_clock(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_duration="""
        import pytest
        from calc_mod import run

        @pytest.mark.agent_budget(max_duration_s=1)
        async def test_slow(agent_runtime, fake_llm):
            await run(agent_runtime, fake_llm)
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    # the stepping clock moves one second per read: two iterations take several seconds
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  max_duration_s: measured *, allowed 1 (runs: #1 calc *)"])


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("max_tokens=-1", "max_tokens=-1 is not allowed; expected a whole number >= 0*"),
        ("max_tokens=1.5", "max_tokens=1.5 is a float; expected a whole number >= 0*"),
        ("max_cost_usd='1'", "max_cost_usd='1' is a str; expected a number >= 0*"),
        ("max_tokenz=10", "agent_budget has no limit 'max_tokenz' (did you mean max_tokens?)*"),
        ("100", "agent_budget(100,) has positional arguments; name each limit*"),
    ],
)
def test_a_bad_budget_is_an_error_naming_the_test_and_the_key(
    project: pytest.Pytester, marker: str, message: str
) -> None:
    project.makepyfile(
        test_bad=f"""
        import pytest

        @pytest.mark.agent_budget({marker})
        def test_bad():
            pass
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"E   *BudgetError: test_bad.py::test_bad: {message}"])


def test_a_bad_ini_budget_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makeini(
        """
        [pytest]
        agent_budget_max_iterations = many
        """
    )
    project.makepyfile(test_x="def test_x(): pass")

    result = project.runpytest("-p", "no:cacheprovider")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: ini option agent_budget_max_iterations = 'many'; expected a whole number*"]
    )


def test_budgets_fail_and_pass_the_same_under_xdist(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_mixed="""
        import pytest
        from calc_mod import run

        @pytest.mark.agent_budget(max_tokens=1000)
        async def test_within(agent_runtime, fake_llm):
            await run(agent_runtime, fake_llm)

        @pytest.mark.agent_budget(max_tool_calls=0)
        async def test_over(agent_runtime, fake_llm):
            await run(agent_runtime, fake_llm)

        @pytest.mark.agent_budget(max_tokens=-5)
        def test_bad():
            pass
        """
    )

    result = project.runpytest("-p", "no:cacheprovider", "-p", "xdist", "-n", "2")

    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*agent budget exceeded: max_tool_calls 1 > 0 (test_mixed.py::test_over)",
            "*max_tool_calls: measured 1, allowed 0 (runs: #1 calc 1)",
        ]
    )


# -- offline: the figures come from the recorded responses --------------------------------

RECORDED = """
import pytest
from calc_mod import CALC

@pytest.mark.agent_budget(max_tokens=BUDGET)
async def test_recorded(agent_runtime):
    result = await agent_runtime.run(CALC, "1 + 2?")
    assert result.output == "3"
"""


def test_budgets_hold_offline_on_the_usage_recorded_in_the_cassette(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_recorded=RECORDED.replace("BUDGET", "10000"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LoopbackProvider() as provider:
        provider.reply_tool_call("add", a=1, b=2).reply(
            "3", usage={"input_tokens": 400, "output_tokens": 40}
        )
        monkeypatch.setenv("OPENAI_BASE_URL", provider.base_url)
        project.runpytest("-p", "no:cacheprovider", "--agent-record").assert_outcomes(passed=1)
    cassette = Path(project.path / "cassettes" / "test_recorded" / "test_recorded.json")
    assert cassette.exists(), os.listdir(project.path / "cassettes")
    project.makepyfile(test_recorded=RECORDED.replace("BUDGET", "100"))

    replayed = project.runpytest("-p", "no:cacheprovider")

    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(["  max_tokens: measured 4*, allowed 100 (runs: #1 calc 4*)"])
