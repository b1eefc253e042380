"""Unit tests for pytest_agentctx.assertions.trajectory: modes, argument checks and nested runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pytest_agentctx import (
    ANY,
    AgentContext,
    Like,
    Mismatch,
    PatternError,
    Regex,
    ToolCall,
    ToolResult,
    Trajectory,
    matches,
    mismatches,
    nested_runs,
    tool_calls,
)
from pytest_agentctx.assertions.patterns.report import assertrepr_compare

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def run(
    *steps: list[tuple[str, dict[str, Any]]], metadata: Mapping[str, Any] | None = None
) -> AgentContext:
    """A run with one iteration per step of tool calls, then a final answer."""
    ctx = AgentContext.new("Plan my trip", at=at(0))
    clock = 0
    for number, step in enumerate(steps, start=1):
        if metadata and number == 1:
            ctx = ctx.with_iteration_metadata(metadata)
        calls = [
            ToolCall(id=f"call_{number}_{i}", name=name, arguments=arguments)
            for i, (name, arguments) in enumerate(step)
        ]
        clock += 1
        ctx = ctx.add_assistant_message(None, calls, at=at(clock))
        results = [ToolResult(tool_call_id=c.id, name=c.name, content="ok") for c in calls]
        clock += 1
        ctx = ctx.add_tool_results(results, at=at(clock))
    return ctx.add_assistant_message("Done.", at=at(clock + 1))


def trip() -> AgentContext:
    return run(
        [("search_flights", {"to": "Rome", "day": "mon"})],
        [("book", {"flight": "AZ1", "seat": "12A"}), ("send_email", {"to": "ann@example.com"})],
    )


def texts(found: list[Mismatch]) -> list[str]:
    return [str(mismatch) for mismatch in found]


# -- modes -------------------------------------------------------------------------------


def test_strict_passes_the_same_calls_in_the_same_order() -> None:
    expected = [
        ("search_flights", {"to": "Rome", "day": "mon"}),
        ("book", {"flight": "AZ1", "seat": "12A"}),
        ("send_email", {"to": "ann@example.com"}),
    ]

    assert matches(trip(), Trajectory(expected))


def test_strict_reports_calls_out_of_order_at_their_paths() -> None:
    found = mismatches(trip(), Trajectory(["search_flights", "send_email", "book"]))

    assert texts(found) == [
        "iterations[1].tool_calls[0].name: 'book' != 'send_email'",
        "iterations[1].tool_calls[1].name: 'send_email' != 'book'",
    ]


def test_strict_reports_a_missing_call_by_its_place_in_the_trajectory() -> None:
    found = mismatches(trip(), Trajectory(["search_flights", "book", "send_email", "pay"]))

    assert texts(found) == ["tool_calls[3]: missing call pay(…)"]


def test_strict_reports_an_unexpected_call_at_its_path() -> None:
    found = mismatches(trip(), Trajectory(["search_flights", "book"]))

    assert texts(found) == [
        "iterations[1].tool_calls[1]: unexpected call send_email({'to': 'ann@example.com'})"
    ]


def test_unordered_passes_the_same_calls_in_any_order() -> None:
    expected = ["send_email", "search_flights", "book"]

    assert matches(trip(), Trajectory(expected, mode="unordered"))


def test_unordered_reports_the_missing_and_the_unexpected_calls() -> None:
    found = mismatches(trip(), Trajectory(["book", "pay", "search_flights"], mode="unordered"))

    assert texts(found) == [
        "tool_calls: no call matches pay(…); pay was never called",
        "iterations[1].tool_calls[1]: unexpected call: send_email({'to': 'ann@example.com'})",
    ]


def test_subset_allows_fewer_calls_than_expected() -> None:
    expected = ["search_flights", "book", "send_email", "pay"]

    assert matches(trip(), Trajectory(expected, mode="subset"))


def test_subset_rejects_a_call_that_is_not_expected() -> None:
    found = mismatches(trip(), Trajectory(["search_flights", "book"], mode="subset"))

    assert texts(found) == [
        "iterations[1].tool_calls[1]: call not expected: send_email({'to': 'ann@example.com'})"
    ]


def test_superset_allows_other_calls() -> None:
    assert matches(trip(), Trajectory(["book"], mode="superset"))


def test_superset_reports_an_expected_call_that_was_not_made() -> None:
    found = mismatches(trip(), Trajectory([("book", {"flight": "LH3"})], mode="superset"))

    assert texts(found) == [
        "tool_calls: no call matches book({'flight': 'LH3'}); the closest is "
        "iterations[1].tool_calls[0], with 2 mismatches:",
        "iterations[1].tool_calls[0].arguments.flight: 'AZ1' != 'LH3'",
        "iterations[1].tool_calls[0].arguments.seat: unexpected key, with value '12A'",
    ]


# -- arguments ---------------------------------------------------------------------------


def test_exact_arguments_reject_an_extra_argument() -> None:
    found = mismatches(trip(), Trajectory([("search_flights", {"to": "Rome"})], mode="superset"))

    assert found[-1] == Mismatch(
        "iterations[0].tool_calls[0].arguments.day", "unexpected key, with value 'mon'"
    )


def test_ignored_arguments_compare_names_only() -> None:
    expected = [("search_flights", {}), ("book", {}), ("send_email", {"to": "bob"})]

    assert matches(trip(), Trajectory(expected, args="ignore"))


def test_subset_arguments_must_all_be_expected() -> None:
    expected = [("book", {"flight": "AZ1", "seat": "12A", "meal": "veg"})]

    assert matches(trip(), Trajectory(expected, mode="superset", args="subset"))


def test_subset_arguments_report_an_argument_that_is_not_expected() -> None:
    expected = [("book", {"flight": "AZ1"})]

    found = mismatches(trip(), Trajectory(expected, mode="superset", args="subset"))

    assert found[-1] == Mismatch(
        "iterations[1].tool_calls[0].arguments.seat",
        "argument not among the expected ones, with value '12A'",
    )


def test_superset_arguments_need_the_expected_ones_only() -> None:
    expected = [("book", {"flight": "AZ1"})]

    assert matches(trip(), Trajectory(expected, mode="superset", args="superset"))


def test_override_sets_the_argument_check_of_one_tool() -> None:
    expected = [("search_flights", {"to": "Rome"}), ("book", {}), ("send_email", ANY)]

    assert matches(
        trip(),
        Trajectory(
            expected, overrides={"search_flights": "superset", "book": "ignore"}, args="exact"
        ),
    )


def test_override_may_be_a_function_of_both_arguments() -> None:
    def same_destination(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
        return actual["to"].lower() == expected["to"].lower()

    expected = [("search_flights", {"to": "ROME"}), "book", "send_email"]

    assert matches(trip(), Trajectory(expected, overrides={"search_flights": same_destination}))


def test_override_function_that_raises_is_a_mismatch() -> None:
    def broken(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
        raise KeyError("to")

    expected: list[Any] = [("search_flights", {}), "book", "send_email"]
    found = mismatches(trip(), Trajectory(expected, overrides={"search_flights": broken}))

    assert found[0].message.startswith("the argument check for 'search_flights' raised KeyError")


def test_expected_argument_values_may_be_patterns() -> None:
    expected = [("search_flights", {"to": Regex("^Ro"), "day": ANY}), "book", "send_email"]

    assert matches(trip(), Trajectory(expected))


# -- expected calls ------------------------------------------------------------------------


def test_expected_calls_may_be_written_in_every_supported_form() -> None:
    expected = [
        {"name": "search_flights", "arguments": {"to": "Rome", "day": "mon"}},
        ToolCall(id="ignored", name="book", arguments={"flight": "AZ1", "seat": "12A"}),
        Like(ToolCall, name="send_email"),
    ]

    assert matches(trip(), Trajectory(expected))


def test_an_unreadable_expected_call_is_a_pattern_error() -> None:
    with pytest.raises(PatternError, match=r"cannot read expected call 1, 42, as a tool call"):
        Trajectory(["book", 42])


def test_an_unknown_mode_is_a_pattern_error() -> None:
    with pytest.raises(PatternError, match=r"the modes are strict, unordered, subset, superset"):
        Trajectory(["book"], mode="loose")  # type: ignore[arg-type]


def test_an_unknown_argument_mode_is_a_pattern_error() -> None:
    with pytest.raises(PatternError, match=r"overrides\['book'\]='same'"):
        Trajectory(["book"], overrides={"book": "same"})  # type: ignore[dict-item]


def test_a_string_is_not_a_list_of_expected_calls() -> None:
    with pytest.raises(PatternError, match=r"takes a list of expected calls, got str"):
        Trajectory("book")


# -- nested runs ---------------------------------------------------------------------------


def supervised() -> AgentContext:
    """A supervisor whose first iteration holds a researcher's run in its metadata."""
    research = run([("search_web", {"q": "Rome"})])
    return run(
        [("ask_researcher", {"topic": "Rome"})],
        [("book", {"flight": "AZ1"})],
        metadata={"subagents": {"researcher": research}},
    )


def test_nested_runs_are_left_out_by_default() -> None:
    assert matches(supervised(), Trajectory(["ask_researcher", "book"], args="ignore"))


def test_nested_calls_follow_the_iteration_that_holds_them() -> None:
    expected = ["ask_researcher", "search_web", "book"]

    assert matches(supervised(), Trajectory(expected, args="ignore", nested=True))


def test_nested_call_mismatch_has_the_path_into_the_sub_run() -> None:
    expected = ["ask_researcher", ("search_web", {"q": "Paris"}), "book"]

    found = mismatches(supervised(), Trajectory(expected, nested=True))

    assert texts(found) == [
        "iterations[0].metadata.subagents.researcher.iterations[0].tool_calls[0].arguments.q: "
        "'Rome' != 'Paris'"
    ]


def test_a_dict_shaped_like_a_context_is_a_nested_run() -> None:
    dumped = run([("search_web", {"q": "Rome"})]).model_dump(mode="json")
    ctx = run([("ask_researcher", {})], metadata={"research": dumped})

    assert matches(ctx, Trajectory(["ask_researcher", "search_web"], args="ignore", nested=True))


def test_an_invalid_context_shaped_dict_is_a_pattern_error() -> None:
    ctx = run([("ask", {})], metadata={"research": {"iterations": [{}], "current_iteration": 1}})

    with pytest.raises(PatternError, match=r"iterations\[0\]\.metadata\.research looks like"):
        tool_calls(ctx, nested=True)


def test_tool_calls_lists_each_call_with_its_path() -> None:
    located = tool_calls(supervised(), nested=True)

    assert [(c.path, c.call.name, c.depth) for c in located] == [
        ("iterations[0].tool_calls[0]", "ask_researcher", 0),
        (
            "iterations[0].metadata.subagents.researcher.iterations[0].tool_calls[0]",
            "search_web",
            1,
        ),
        ("iterations[1].tool_calls[0]", "book", 0),
    ]


def test_nested_runs_lists_the_sub_runs_with_their_paths() -> None:
    match nested_runs(supervised()):
        case [("iterations[0].metadata.subagents.researcher", AgentContext(current_iteration=2))]:
            pass
        case other:
            pytest.fail(f"unexpected nested runs: {other}")


# -- where a trajectory can be used ----------------------------------------------------------


@dataclass
class _Result:
    context: AgentContext


def test_a_run_result_is_checked_through_its_context() -> None:
    assert matches(
        _Result(trip()), Trajectory(["search_flights", "book", "send_email"], args="ignore")
    )


def test_a_value_that_is_not_a_run_is_a_mismatch() -> None:
    assert texts(mismatches("text", Trajectory([]))) == [
        "(root): expected an AgentContext (or a RunResult), got 'text'"
    ]


def test_a_trajectory_inside_a_larger_pattern() -> None:
    pattern = Trajectory(["search_flights", "book", "send_email"], args="ignore") & {
        "final_output": "Done."
    }

    assert matches(trip(), pattern)


def test_the_hook_explains_a_failed_comparison_with_a_trajectory() -> None:
    lines = assertrepr_compare("==", trip(), Trajectory(["pay"], mode="superset"))

    assert lines == [
        "AgentContext(3 iterations) == Trajectory(['pay(…)'], mode='superset')",
        "1 mismatch:",
        "  tool_calls: no call matches pay(…); pay was never called",
    ]
