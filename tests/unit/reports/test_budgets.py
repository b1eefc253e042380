"""Unit tests for pytest_agentctx.reports.budgets: limits from markers and ini, checks, messages."""

from __future__ import annotations

import pytest

from pytest_agentctx.context.runs import RunRecord
from pytest_agentctx.reports.budgets import (
    BUDGET_LIMITS,
    Budget,
    BudgetCheck,
    Exceeded,
    check_budget,
    ini_name,
)
from pytest_agentctx.reports.errors import BudgetError
from pytest_agentctx.reports.figures import PriceTable, RunStats

WHERE = "tests/test_x.py::test_y"


def runs(*figures: RunStats) -> list[tuple[str, RunStats]]:
    return [(f"#{n} agent", stats) for n, stats in enumerate(figures, start=1)]


def test_a_budget_lists_only_the_limits_it_sets_in_order() -> None:
    budget = Budget(max_tokens=100, max_iterations=3)

    assert list(budget.limits.items()) == [("max_iterations", 3), ("max_tokens", 100)]


def test_an_empty_budget_is_false() -> None:
    assert not Budget()


def test_markers_lay_the_closest_over_the_farther_and_the_defaults() -> None:
    module = ((), {"max_tokens": 10, "max_iterations": 1})
    cls = ((), {"max_tokens": 500})
    function = ((), {"max_iterations": None})

    budget = Budget.from_markers(
        [function, cls, module], defaults=Budget(max_tool_calls=4), where=WHERE
    )

    assert budget == Budget(max_tokens=500, max_tool_calls=4)


def test_positional_marker_arguments_are_refused() -> None:
    with pytest.raises(BudgetError, match=r"^tests/test_x.py::test_y: agent_budget\(100,\) has"):
        Budget.from_markers([((100,), {})], where=WHERE)


def test_an_unknown_limit_names_the_test_the_key_and_the_closest_name() -> None:
    with pytest.raises(
        BudgetError,
        match=r"test_y: agent_budget has no limit 'max_tools' \(did you mean max_tool_calls\?\)",
    ):
        Budget().updated({"max_tools": 3}, where=WHERE)


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("max_tokens", -1, r"max_tokens=-1 is not allowed"),
        ("max_tokens", 1.5, r"max_tokens=1.5 is a float; expected a whole number >= 0"),
        ("max_iterations", True, r"max_iterations=True is a bool"),
        ("max_cost_usd", "0.1", r"max_cost_usd='0.1' is a str; expected a number >= 0"),
        ("max_duration_s", float("inf"), r"max_duration_s=inf is not allowed"),
    ],
)
def test_a_bad_value_names_the_test_and_the_key_and_shows_an_example(
    key: str, value: object, problem: str
) -> None:
    with pytest.raises(BudgetError, match=rf"^{WHERE}: {problem}.*e\.g\. @pytest\.mark"):
        Budget().updated({key: value}, where=WHERE)


def test_float_limits_take_whole_numbers_too() -> None:
    assert Budget().updated({"max_cost_usd": 1}, where=WHERE).max_cost_usd == 1


def test_ini_defaults_are_parsed_and_empty_ones_are_unset() -> None:
    budget = Budget.from_ini({"max_tokens": " 2000 ", "max_cost_usd": "0.25", "max_iterations": ""})

    assert budget == Budget(max_tokens=2000, max_cost_usd=0.25)


@pytest.mark.parametrize(("limit", "raw"), [("max_tokens", "1.5"), ("max_cost_usd", "-1")])
def test_a_bad_ini_default_names_the_option(limit: str, raw: str) -> None:
    with pytest.raises(BudgetError, match=rf"^ini option agent_budget_{limit} = '{raw}'"):
        Budget.from_ini({limit: raw})


def test_each_limit_has_its_ini_option() -> None:
    assert [ini_name(limit) for limit in BUDGET_LIMITS] == [
        "agent_budget_max_iterations",
        "agent_budget_max_tool_calls",
        "agent_budget_max_tokens",
        "agent_budget_max_cost_usd",
        "agent_budget_max_duration_s",
        "agent_budget_max_mcp_calls",
        "agent_budget_max_cache_write_tokens",
        "agent_budget_min_cache_read_share",
    ]


def test_runs_within_the_budget_pass() -> None:
    check = Budget(max_tokens=100, max_iterations=2).check(
        runs(RunStats(runs=1, iterations=2, input_tokens=60, output_tokens=40))
    )

    match check:
        case BudgetCheck(exceeded=(), unpriced=()) if check.passed:
            pass
        case _:
            raise AssertionError(check)


def test_the_test_is_measured_over_all_its_runs_with_each_runs_share() -> None:
    check = Budget(max_tokens=100).check(
        runs(
            RunStats(input_tokens=50, output_tokens=10), RunStats(input_tokens=30, output_tokens=20)
        )
    )

    match check.exceeded:
        case (Exceeded("max_tokens", 110, 100, (("#1 agent", 60), ("#2 agent", 50))),):
            pass
        case other:
            raise AssertionError(other)


def test_every_limit_is_measured_from_its_figure() -> None:
    stats = RunStats(
        runs=1,
        iterations=4,
        tool_calls=3,
        input_tokens=7,
        cost_usd=0.5,
        duration_s=9.0,
        mcp_calls=5,
    )
    budget = Budget(
        max_iterations=3,
        max_tool_calls=2,
        max_tokens=6,
        max_cost_usd=0.25,
        max_duration_s=8,
        max_mcp_calls=4,
    )

    check = budget.check(runs(stats))

    assert [(e.name, e.measured, e.allowed) for e in check.exceeded] == [
        ("max_iterations", 4, 3),
        ("max_tool_calls", 3, 2),
        ("max_tokens", 7, 6),
        ("max_cost_usd", 0.5, 0.25),
        ("max_duration_s", 9.0, 8),
        ("max_mcp_calls", 5, 4),
    ]


def test_a_figure_equal_to_its_limit_is_within_it() -> None:
    assert Budget(max_tool_calls=3).check(runs(RunStats(tool_calls=3))).passed


def test_an_unpriced_model_fails_a_cost_budget_naming_the_model() -> None:
    stats = RunStats(
        runs=1, input_tokens=5, cost_usd=None, models=("house-model",), unpriced=("house-model",)
    )

    check = Budget(max_cost_usd=1.0).check(runs(stats), prices=PriceTable())

    match check:
        case BudgetCheck(exceeded=(), unpriced=("house-model",)) if not check.passed:
            pass
        case _:
            raise AssertionError(check)


def test_the_dict_has_the_limits_and_each_exceeded_figure() -> None:
    check = Budget(max_tokens=10, max_iterations=5).check(runs(RunStats(input_tokens=12)))

    assert check.to_dict() == {
        "limits": {"max_iterations": 5, "max_tokens": 10},
        "exceeded": [{"name": "max_tokens", "measured": 12, "allowed": 10}],
    }


def test_the_failure_message_leads_with_every_limit_then_details_and_advice() -> None:
    check = Budget(max_tokens=10, max_iterations=1).check(
        runs(RunStats(iterations=2, input_tokens=12))
    )

    lines = check.failure_message(WHERE).splitlines()

    match lines:
        case [
            "agent budget exceeded: max_iterations 2 > 1, max_tokens 12 > 10 "
            "(tests/test_x.py::test_y)",
            "  max_iterations: measured 2, allowed 1 (runs: #1 agent 2)",
            "  max_tokens: measured 12, allowed 10 (runs: #1 agent 12)",
            advice,
        ] if "raise the limit in @pytest.mark.agent_budget" in advice:
            pass
        case _:
            raise AssertionError(lines)


def test_the_unpriced_message_says_how_to_add_the_price() -> None:
    check = BudgetCheck(Budget(max_cost_usd=1.0), unpriced=("house",))

    assert "Price it yourself with a line 'house = <input USD per million tokens>" in (
        check.failure_message(WHERE)
    )


def test_merged_repetitions_keep_the_higher_figure_of_each_limit() -> None:
    budget = Budget(max_tokens=10, max_iterations=1)
    first = budget.check(runs(RunStats(iterations=3, input_tokens=11)))
    second = budget.check(runs(RunStats(iterations=2, input_tokens=30)))

    merged = first.merged(second)

    assert [(e.name, e.measured) for e in merged.exceeded] == [
        ("max_iterations", 3),
        ("max_tokens", 30),
    ]


def test_check_budget_without_limits_does_not_read_the_runs() -> None:
    read: list[bool] = []

    def records() -> list[RunRecord]:
        read.append(True)
        return []

    check = check_budget((Budget(), True), records, prices=PriceTable())

    assert (check, read) == (None, [])


def test_check_budget_leaves_a_test_without_runs_or_marker_unchecked() -> None:
    check = check_budget((Budget(max_tokens=10), False), list, prices=PriceTable())

    assert check is None


def test_check_budget_fails_a_marked_test_without_runs_as_unmeasured() -> None:
    check = check_budget((Budget(max_tokens=10), True), list, prices=PriceTable())

    assert check == BudgetCheck(Budget(max_tokens=10), unmeasured=True)
    assert not check.passed


def test_check_budget_fails_an_agent_test_without_runs_under_ini_defaults() -> None:
    check = check_budget((Budget(max_tokens=10), False), list, prices=PriceTable(), agent_test=True)

    assert check is not None
    assert check.unmeasured
    assert not check.passed


def test_an_unmeasured_budget_says_what_to_check_and_how_to_take_it_off() -> None:
    check = BudgetCheck(Budget(max_iterations=1, max_tokens=10), unmeasured=True)

    message = check.failure_message("test_x.py::test_agent")

    assert message.startswith("agent budget not measured: test_x.py::test_agent made no model call")
    assert "(max_iterations=1, max_tokens=10)" in message
    assert "@pytest.mark.agent_budget(max_iterations=None, max_tokens=None)" in message


def test_an_unmeasured_mcp_budget_says_mcp_traffic_alone_is_no_run() -> None:
    check = BudgetCheck(Budget(max_mcp_calls=2), unmeasured=True)

    message = check.failure_message("test_x.py::test_agent")

    assert "(max_mcp_calls=2)" in message
    assert "MCP traffic without a model call belongs to no run" in message


def test_an_unmeasured_budget_is_recorded_for_the_reports() -> None:
    check = BudgetCheck(Budget(max_iterations=1), unmeasured=True)

    assert check.to_dict() == {"limits": {"max_iterations": 1}, "exceeded": [], "unmeasured": True}


def test_a_repetition_without_runs_keeps_the_merged_check_unmeasured() -> None:
    measured = Budget(max_iterations=5).check(runs(RunStats(iterations=1)))

    merged = measured.merged(BudgetCheck(Budget(max_iterations=5), unmeasured=True))

    assert merged.unmeasured
    assert not merged.passed


def test_a_share_of_cache_reads_below_its_floor_fails_the_budget() -> None:
    stats = RunStats(runs=1, uncached_input_tokens=900, cache_read_tokens=100)

    check = Budget(min_cache_read_share=0.5).check(runs(stats))

    assert [item.describe() for item in check.exceeded] == [
        "min_cache_read_share: measured 0.1, required at least 0.5 (runs: #1 agent 0.1); "
        "input tokens: 900 uncached, 100 read from the prompt cache, 0 written to it; 0 output"
    ]


def test_a_share_of_cache_reads_at_its_floor_passes() -> None:
    stats = RunStats(runs=1, uncached_input_tokens=500, cache_read_tokens=500)

    assert Budget(min_cache_read_share=0.5).check(runs(stats)).passed


def test_cache_writes_past_their_limit_fail_the_budget() -> None:
    stats = RunStats(runs=1, cache_write_tokens=30_000)

    check = Budget(max_cache_write_tokens=20_000).check(runs(stats))

    assert "max_cache_write_tokens 30000 > 20000" in check.failure_message(WHERE)


def test_a_share_floor_above_one_is_refused() -> None:
    with pytest.raises(
        BudgetError,
        match=r"min_cache_read_share=1\.5 is not allowed; expected a number from 0 to 1",
    ):
        Budget().updated({"min_cache_read_share": 1.5}, where="t")


def test_two_repetitions_keep_the_lowest_share_of_a_floor() -> None:
    low = Budget(min_cache_read_share=0.5).check(
        runs(RunStats(runs=1, uncached_input_tokens=9, cache_read_tokens=1))
    )
    lower = Budget(min_cache_read_share=0.5).check(runs(RunStats(runs=1, uncached_input_tokens=1)))

    assert low.merged(lower).exceeded[0].measured == 0.0


def test_a_cost_over_budget_shows_the_input_by_kind_when_the_cache_was_used() -> None:
    stats = RunStats(
        runs=1,
        cost_usd=0.0099,
        uncached_input_tokens=90,
        cache_read_tokens=4000,
        cache_write_tokens=2000,
        output_tokens=60,
    )

    (item,) = Budget(max_cost_usd=0.005).check(runs(stats)).exceeded

    assert item.describe().endswith(
        "; input tokens: 90 uncached, 4,000 read from the prompt cache, 2,000 written to it; "
        "60 output"
    )


def test_a_cost_over_budget_without_cache_figures_shows_no_breakdown() -> None:
    (item,) = Budget(max_cost_usd=0.005).check(runs(RunStats(runs=1, cost_usd=0.01))).exceeded

    assert item.detail == ""
