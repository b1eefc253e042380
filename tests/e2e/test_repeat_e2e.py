"""End-to-end tests of ``@pytest.mark.agent_repeat``: n runs, one outcome on the pass
rate, fresh fixtures and a cassette per run, the rate reported, and xdist."""

from __future__ import annotations

import json
from typing import Any

import pytest

#: The option that writes the JSON report, where each test's repeat entry is.
REPORT = "--agent-report=report.json"

#: ``run_number(name)``: 1, 2, 3... on each call, counted in a file (each run is new).
FLAKY = """
from pathlib import Path

def run_number(name):
    path = Path(f"{name}.count")
    number = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(number))
    return number
"""


@pytest.fixture
def project(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(flaky=FLAKY)
    return agent_pytester


def _entries(project: pytest.Pytester) -> dict[str, dict[str, Any]]:
    """The repeat entry of each repeated test (by its name) from the JSON report (``REPORT``),
    without the figures of each run (``per_run``, which the baseline comparison reads)."""
    report = json.loads((project.path / "report.json").read_text())
    return {
        test["nodeid"].rsplit("::", 1)[-1]: {
            key: value for key, value in test["repeat"].items() if key != "per_run"
        }
        for test in report["tests"]
        if test["repeat"] is not None
    }


def test_a_pass_rate_at_the_minimum_passes_under_the_point_rule_and_is_reported(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_rate="""
        import pytest
        from flaky import run_number

        @pytest.mark.agent_repeat(5, min_pass_rate=0.6, rule="point")
        def test_mostly():
            assert run_number("mostly") in (1, 2, 4)
        """
    )

    result = project.runpytest("-p", "no:cacheprovider", REPORT)

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "agent_repeat test_rate.py::test_mostly: 3 of 5 runs passed (60%; 95% interval "
            "15-95%, stochastic), min_pass_rate 60% (rule point): passed"
        ]
    )
    assert _entries(project)["test_mostly"] == {
        "runs": 5,
        "passed": 3,
        "pass_rate": 0.6,
        "min_pass_rate": 0.6,
        "rule": "point",
        "outcomes": ["passed", "passed", "failed", "passed", "failed"],
        "interval": [0.146633, 0.947255],
        "method": "clopper_pearson",
        "confidence": 0.95,
        "stability": "stochastic",
    }


def test_a_pass_rate_below_the_minimum_fails_with_the_first_failure_and_each_run(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_rate="""
        import pytest
        from flaky import run_number

        @pytest.mark.agent_repeat(4, min_pass_rate=0.75)
        def test_flaky():
            number = run_number("flaky")
            assert number % 2 == 0, f"odd run {number}"
        """
    )

    result = project.runpytest("-p", "no:cacheprovider", REPORT)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: odd run 1",
            "*- agent_repeat -*",
            "2 of 4 runs passed (50%; 95% interval 7-93%, stochastic), min_pass_rate 75% "
            "(lower bound 7%): failed*",
            "run 1: failed (call): *odd run 1*",
            "run 2: passed",
            "run 3: failed (call): *odd run 3*",
            "run 4: passed",
        ]
    )
    assert _entries(project)["test_flaky"] == {
        "runs": 4,
        "passed": 2,
        "pass_rate": 0.5,
        "min_pass_rate": 0.75,
        "rule": "lower_bound",
        "outcomes": ["failed", "passed", "failed", "passed"],
        "interval": [0.067586, 0.932414],
        "method": "clopper_pearson",
        "confidence": 0.95,
        "stability": "stochastic",
    }


def test_the_lower_bound_rule_passes_runs_that_show_the_rate_and_names_the_runs_needed(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_rate="""
        import pytest

        @pytest.mark.agent_repeat(17, min_pass_rate=0.8, k=3, min_pass_hat_k=0.5)
        def test_enough():
            pass

        @pytest.mark.agent_repeat(5, min_pass_rate=0.8)
        def test_too_few():
            pass
        """
    )

    result = project.runpytest("-p", "no:cacheprovider", REPORT)

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "agent_repeat test_rate.py::test_enough: 17 of 17 runs passed (100%; 95% interval "
            "80-100%, stable pass, pass@3 100%, pass^3 100%), min_pass_rate 80% (lower bound "
            "80%), pass^3 target 50% (lower bound 52%): passed",
            "agent_repeat test_rate.py::test_too_few: 5 of 5 runs passed (100%; 95% interval "
            "48-100%, stable pass), min_pass_rate 80% (lower bound 48%): failed: 5 runs cannot "
            "show it at 95% confidence even when all pass; agent_repeat(17, ...) can*",
        ]
    )
    entry = _entries(project)["test_enough"]
    assert (entry["pass_at_k"], entry["pass_hat_k"], entry["min_pass_hat_k"]) == (
        {"3": 1.0},
        {"3": 1.0},
        {"k": 3, "target": 0.5},
    )


def test_a_repeated_test_without_agent_runs_reports_each_repetition(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_rate="""
        import pytest

        @pytest.mark.agent_repeat(3)
        def test_plain():
            assert True
        """
    )

    project.runpytest("-p", "no:cacheprovider", REPORT).assert_outcomes(passed=1)

    [test] = json.loads((project.path / "report.json").read_text())["tests"]
    assert [run["iterations"] for run in test["repeat"]["per_run"]] == [0, 0, 0]


def test_the_default_minimum_is_every_run(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_rate="""
        import pytest
        from flaky import run_number

        @pytest.mark.agent_repeat(3)
        def test_once_wrong():
            assert run_number("once") != 3
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*2 of 3 runs passed (67%; 95% interval 9-99%, stochastic), min_pass_rate 100%: failed"]
    )


def test_each_run_gets_fresh_function_fixtures_and_keeps_the_module_ones(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_fixtures="""
        import pytest

        SETUPS = {"function": 0, "module": 0}
        SEEN = []

        @pytest.fixture
        def per_test():
            SETUPS["function"] += 1
            yield []

        @pytest.fixture(scope="module")
        def per_module():
            SETUPS["module"] += 1
            return object()

        @pytest.mark.agent_repeat(3)
        def test_repeated(per_test, per_module):
            per_test.append(1)
            assert per_test == [1]  # a new list every run
            SEEN.append(id(per_module))

        def test_after():
            assert SETUPS == {"function": 3, "module": 1}
            assert len(set(SEEN)) == 1
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=2)


def test_each_run_has_its_own_cassette(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_cassettes="""
        import json
        from pathlib import Path
        import pytest

        @pytest.mark.agent
        @pytest.mark.agent_repeat(3)
        def test_recorded(agent_cassette):
            with open("paths.txt", "a") as handle:
                handle.write(agent_cassette.path.name + "\\n")
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)
    assert (project.path / "paths.txt").read_text().split() == [
        "test_recorded-repeat-1.json",
        "test_recorded-repeat-2.json",
        "test_recorded-repeat-3.json",
    ]


def test_a_test_skipped_in_every_run_is_skipped(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_skip="""
        import pytest

        @pytest.mark.agent_repeat(3)
        def test_skipping():
            pytest.skip("not here")
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(skipped=1)


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("0", "agent_repeat run count 0; expected a whole number >= 1*"),
        ("3, min_pass_rate=1.5", "agent_repeat min_pass_rate=1.5; expected a number from 0 to 1*"),
        ("3, rate=0.5", "agent_repeat(3, rate=0.5) is not understood*"),
    ],
)
def test_a_bad_repeat_marker_is_an_error_naming_the_test(
    project: pytest.Pytester, marker: str, message: str
) -> None:
    project.makepyfile(
        test_bad=f"""
        import pytest

        @pytest.mark.agent_repeat({marker})
        def test_bad():
            pass
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"E   *RepeatError: test_bad.py::test_bad: {message}"])


def test_repeated_agent_runs_under_xdist_report_one_outcome_and_the_rate_once(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        calc_mod="""
        from pytest_agentctx import Agent

        CALC = Agent(name="calc", model="openai:gpt-4o-mini")
        """
    )
    project.makepyfile(
        test_xdist="""
        import pytest
        from calc_mod import CALC
        from flaky import run_number

        @pytest.mark.agent_repeat(4, min_pass_rate=0.5, rule="point")
        async def test_agent(agent_runtime, fake_llm):
            fake_llm.reply("ok")
            await agent_runtime.run(CALC, "hello")
            assert run_number("agent") <= 2

        @pytest.mark.agent_repeat(2)
        def test_always():
            pass

        def test_plain():
            pass
        """
    )

    result = project.runpytest("-p", "no:cacheprovider", "-p", "xdist", "-n", "2")

    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "agent_repeat test_xdist.py::test_agent: 2 of 4 runs passed (50%; 95% interval "
            "7-93%, stochastic), min_pass_rate 50% (rule point): passed",
            "agent_repeat test_xdist.py::test_always: 2 of 2 runs passed (100%; 95% interval "
            "16-100%, stable pass), min_pass_rate 100%: passed",
        ]
    )
    assert result.stdout.str().count("agent_repeat test_xdist.py::test_agent") == 1


#: An agent that makes one more model call on every run after the first ``extra`` runs.
REPEATED_AGENT = """
import os

import pytest
from pytest_agentctx import Agent, tool
from flaky import run_number


@tool
def search(query: str) -> str:
    \"\"\"Search.\"\"\"
    return "found"


helper = Agent(name="helper", model="openai:gpt-4o-mini", tools=[search])


@pytest.mark.agent_repeat(4)
async def test_helper(agent_runtime, fake_llm):
    searches = 2 if run_number("helper") > int(os.environ.get("EXTRA_AFTER", "99")) else 1
    for _ in range(searches):
        fake_llm.reply_tool_call("search", query="q")
    fake_llm.reply("Done.")

    result = await agent_runtime.run(helper, "Help")

    assert result.output == "Done."
"""


def test_a_repeated_test_is_compared_with_its_baseline_per_run(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_helper=REPEATED_AGENT)
    project.runpytest("-p", "no:cacheprovider", "--agent-report=base.json").assert_outcomes(
        passed=1
    )
    (project.path / "helper.count").unlink()
    options = ("-p", "no:cacheprovider", "--agent-baseline=base.json", "--agent-gate")

    ignored = ("--agent-baseline-tokens=ignore", "--agent-baseline-trajectory=ignore")
    monkeypatch.setenv("EXTRA_AFTER", "0")  # every run searches twice: +1 iteration per run
    within = project.runpytest(*options, *ignored, "--agent-baseline-iterations=1")
    (project.path / "helper.count").unlink()
    monkeypatch.setenv("EXTRA_AFTER", "2")  # runs 3 and 4 search twice
    beyond = project.runpytest(*options, *ignored)

    [test] = json.loads((project.path / "base.json").read_text())["tests"]
    per_run = test["repeat"]["per_run"]
    assert [run["iterations"] for run in per_run] == [2, 2, 2, 2]
    within.assert_outcomes(passed=1)
    assert within.ret == 0
    assert beyond.ret == 1
    beyond.stdout.fnmatch_lines(
        [
            "*test_helper.py::test_helper (mean run): iterations 2 -> 2.5 (allowed change ±0)",
            "*test_helper.py::test_helper (largest run): iterations 2 -> 3 (allowed change ±0)",
        ]
    )


def test_a_repeated_judged_test_reports_each_judges_mean_score(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_judged="""
        import pytest
        from flaky import run_number
        from pytest_agentctx import Agent

        HELPER = Agent(name="helper", model="openai:gpt-4o-mini")
        SCORES = {1: 0.6, 2: 0.9, 3: 0.8, 4: 0.7}

        @pytest.mark.agent_repeat(4)
        async def test_polite(agent_runtime, fake_llm, agent_judge):
            score = SCORES[run_number("judged")]
            fake_llm.reply("Hello!")
            fake_llm.reply('{"score": %s, "rationale": "polite enough"}' % score)
            result = await agent_runtime.run(HELPER, "Say hello")
            verdict = await agent_judge(
                rubric="The answer is polite.", subject=result.output, rubric_name="polite",
                threshold=0.5,
            )
            verdict.assert_passed()
        """
    )

    project.runpytest("-p", "no:cacheprovider", REPORT).assert_outcomes(passed=1)

    (score,) = _entries(project)["test_polite"]["scores"]
    assert {key: score[key] for key in ("judge", "rubric_id", "n", "mean")} == {
        "judge": "judge",
        "rubric_id": "polite",
        "n": 4,
        "mean": 0.75,
    }
    low, high = score["interval"]
    assert 0.6 <= low < 0.75 < high <= 0.9
