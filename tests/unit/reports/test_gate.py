"""Unit tests for pytest_agentctx.reports.gate: tolerances, baseline comparison and the verdict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_agentctx import (
    BaselineComparison,
    GateResult,
    GateTolerance,
    ReportError,
    compare_reports,
    evaluate_gate,
)
from pytest_agentctx.reports.gate import gate_lines
from pytest_agentctx.reports.gate_records import GateKind, GateRecord


def _failing(*lines: str) -> tuple[GateRecord, ...]:
    """Failing drift records of ``lines`` (``nodeid: text`` each)."""
    return tuple(GateRecord(line.split(":")[0], "drift", "x", line) for line in lines)


def _listed(kind: GateKind, *nodeids: str) -> tuple[GateRecord, ...]:
    return tuple(GateRecord(nodeid, kind, "test", nodeid, "info") for nodeid in nodeids)


def _test(
    nodeid: str,
    *,
    iterations: int = 2,
    tokens: int = 1000,
    trajectory: tuple[str, ...] = ("search", "answer"),
    outcome: str = "passed",
    cassette: dict[str, Any] | None = None,
    budget: dict[str, Any] | None = None,
    runs: int = 1,
) -> dict[str, Any]:
    return {
        "nodeid": nodeid,
        "outcome": outcome,
        "suite": "unit",
        "cassette": cassette,
        "budget": budget,
        "repeat": None,
        "stats": {
            "runs": runs,
            "iterations": iterations,
            "total_tokens": tokens,
            "trajectory": list(trajectory),
        },
        "runs": [{"name": "agent"}] * runs,
    }


def _report(*tests: dict[str, Any]) -> dict[str, Any]:
    return {"format": "pytest-agentctx-report", "version": 1, "tests": list(tests)}


BASELINE = _report(_test("t.py::a"), _test("t.py::b"))


# -- tolerances ------------------------------------------------------------------------


def test_the_default_tolerance_allows_ten_percent_of_tokens_only() -> None:
    assert GateTolerance() == GateTolerance(tokens_percent=10.0, iterations=0, trajectory="exact")


@pytest.mark.parametrize(
    ("tokens", "iterations", "trajectory", "expected"),
    [
        ("10", "0", "exact", GateTolerance(10.0, 0, "exact")),
        (" 2.5% ", "3", "Unordered", GateTolerance(2.5, 3, "unordered")),
        ("ignore", "off", "ignore", GateTolerance(None, None, "ignore")),
    ],
)
def test_tolerances_are_read_from_option_text(
    tokens: str, iterations: str, trajectory: str, expected: GateTolerance
) -> None:
    assert GateTolerance.parse(tokens=tokens, iterations=iterations, trajectory=trajectory) == (
        expected
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tokens": "lots"}, r"--agent-baseline-tokens / agent_baseline_tokens = 'lots': "),
        ({"tokens": "-5"}, r"tokens tolerance -5.0%: expected a percentage of 0 or more"),
        ({"iterations": "1.5"}, r"agent_baseline_iterations = '1.5': expected a whole number"),
        ({"iterations": "-1"}, r"iterations tolerance -1: expected a count of 0 or more"),
        ({"trajectory": "fuzzy"}, r"'fuzzy': expected one of exact, unordered, ignore"),
    ],
)
def test_a_tolerance_that_cannot_work_is_refused(options: dict[str, str], message: str) -> None:
    text = {"tokens": "10", "iterations": "0", "trajectory": "exact", **options}

    with pytest.raises(ReportError, match=message):
        GateTolerance.parse(**text)


def test_a_tolerance_describes_itself() -> None:
    assert GateTolerance(5, None, "unordered", 0.01, 2).describe() == (
        "tokens ±5%, iterations ignored, trajectory unordered; pass rate: level 0.01, margin "
        "2 points"
    )


# -- the baseline ----------------------------------------------------------------------


def test_unchanged_tests_do_not_drift() -> None:
    assert compare_reports(BASELINE, BASELINE) == BaselineComparison()


def test_tokens_within_the_tolerance_do_not_drift() -> None:
    report = _report(_test("t.py::a", tokens=1100), _test("t.py::b", tokens=900))

    assert compare_reports(report, BASELINE).drifts == ()


def test_tokens_beyond_the_tolerance_drift_either_way() -> None:
    report = _report(_test("t.py::a", tokens=1101), _test("t.py::b", tokens=500))

    assert compare_reports(report, BASELINE).drifts == (
        "t.py::a: tokens 1000 -> 1101 (+10.1%, allowed ±10%)",
        "t.py::b: tokens 1000 -> 500 (-50.0%, allowed ±10%)",
    )


def test_tokens_where_the_baseline_had_none_drift() -> None:
    baseline = _report(_test("t.py::a", tokens=0))

    assert compare_reports(_report(_test("t.py::a", tokens=5)), baseline).drifts == (
        "t.py::a: tokens 0 -> 5 (new usage, allowed ±10%)",
    )


def test_iterations_beyond_the_tolerance_drift() -> None:
    report = _report(_test("t.py::a", iterations=4), _test("t.py::b", iterations=3))

    assert compare_reports(report, BASELINE, GateTolerance(iterations=1)).drifts == (
        "t.py::a: iterations 2 -> 4 (allowed change ±1)",
    )


def test_a_changed_trajectory_drifts() -> None:
    report = _report(_test("t.py::a", trajectory=("answer", "search")), _test("t.py::b"))

    assert compare_reports(report, BASELINE).drifts == (
        "t.py::a: tool trajectory [search, answer] -> [answer, search]",
    )


def test_a_long_trajectory_names_the_first_call_that_differs() -> None:
    calls = tuple(f"step{n}" for n in range(10))
    baseline = _report(_test("t.py::a", trajectory=calls))
    report = _report(_test("t.py::a", trajectory=(*calls[:4], "other", *calls[4:])))

    assert compare_reports(report, baseline).drifts == (
        "t.py::a: tool trajectory differs from call #5: step4 -> other (10 calls before, 11 now)",
    )


def test_an_unordered_trajectory_ignores_the_order_but_not_the_calls() -> None:
    report = _report(
        _test("t.py::a", trajectory=("answer", "search")),
        _test("t.py::b", trajectory=("search", "search")),
    )

    assert compare_reports(report, BASELINE, GateTolerance(trajectory="unordered")).drifts == (
        "t.py::b: tool calls changed (any order): +search -answer",
    )


def test_ignored_figures_never_drift() -> None:
    report = _report(_test("t.py::a", iterations=9, tokens=9, trajectory=()), _test("t.py::b"))
    tolerance = GateTolerance(tokens_percent=None, iterations=None, trajectory="ignore")

    assert compare_reports(report, BASELINE, tolerance).drifts == ()


def test_skipped_tests_are_not_compared() -> None:
    report = _report(_test("t.py::a", iterations=0, tokens=0, trajectory=(), outcome="skipped"))

    assert compare_reports(report, BASELINE).drifts == ()


def test_agent_tests_missing_from_the_baseline_are_new() -> None:
    report = _report(
        _test("t.py::a"), _test("t.py::b"), _test("t.py::c"), _test("t.py::plain", runs=0)
    )

    assert compare_reports(report, BASELINE).new == ("t.py::c",)


def test_baseline_tests_that_did_not_run_are_listed() -> None:
    assert compare_reports(_report(_test("t.py::b")), BASELINE).not_run == ("t.py::a",)


# -- the verdict -----------------------------------------------------------------------


def test_a_clean_report_passes_the_gate() -> None:
    assert evaluate_gate(BASELINE).passed


def test_every_exceeded_budget_is_a_failure() -> None:
    budget = {
        "limits": {"max_tokens": 500, "max_cost_usd": 0.001},
        "exceeded": [
            {"name": "max_tokens", "measured": 1000, "allowed": 500},
            {"name": "max_cost_usd", "measured": 0.0025, "allowed": 0.001},
        ],
    }

    result = evaluate_gate(_report(_test("t.py::a", budget=budget)))

    assert result.failures == (
        "t.py::a: over budget: max_tokens measured 1000, allowed 500",
        "t.py::a: over budget: max_cost_usd measured 0.0025, allowed 0.001",
    )


def _cassette(status: str, unused: list[int]) -> dict[str, Any]:
    return {
        "path": "cassettes/t/a.json",
        "mode": "none",
        "status": status,
        "interactions": 3,
        "unused": unused,
    }


@pytest.mark.parametrize(
    ("status", "unused", "said"),
    [
        ("stale", [], "is stale: the agent sent requests it has no recording for"),
        ("stale", [1, 2], "is stale: 2 recorded interaction(s) never used (#1, #2)"),
        ("unused", [0], "left 1 recorded interaction(s) unused (#0)"),
    ],
)
def test_stale_and_unused_cassettes_are_failures_with_the_record_command(
    status: str, unused: list[int], said: str
) -> None:
    result = evaluate_gate(_report(_test("t.py::a", cassette=_cassette(status, unused))))

    assert result.failures == (
        f"t.py::a: cassette cassettes/t/a.json {said}; "
        're-record with pytest --agent-record "t.py::a"',
    )


@pytest.mark.parametrize("status", ["replayed", "recorded", "missing"])
def test_other_cassette_statuses_pass(status: str) -> None:
    assert evaluate_gate(_report(_test("t.py::a", cassette=_cassette(status, [])))).passed


def test_failures_are_listed_test_by_test_with_drift_after_the_tests_own() -> None:
    budget = {"exceeded": [{"name": "max_iterations", "measured": 3, "allowed": 2}]}
    report = _report(
        _test("t.py::b", iterations=3, budget=budget),
        _test("t.py::a", cassette=_cassette("unused", [2]), tokens=2000),
    )

    result = evaluate_gate(report, baseline=BASELINE, baseline_path="base.json")

    assert [line[:40] for line in result.failures] == [
        "t.py::a: cassette cassettes/t/a.json lef",
        "t.py::a: tokens 1000 -> 2000 (+100.0%, a",
        "t.py::b: over budget: max_iterations mea",
        "t.py::b: iterations 2 -> 3 (allowed chan",
    ]


def test_the_verdict_keeps_the_new_tests_and_the_baseline() -> None:
    report = _report(_test("t.py::a"), _test("t.py::b"), _test("t.py::new"))

    result = evaluate_gate(report, baseline=BASELINE, baseline_path="base.json")

    assert (result.new, result.not_run, result.baseline, result.tolerance) == (
        ("t.py::new",),
        (),
        "base.json",
        GateTolerance(),
    )


# -- the summary block -----------------------------------------------------------------


def test_a_passing_gate_says_so_in_one_line() -> None:
    assert gate_lines(GateResult(), enabled=True) == ["agentctx gate: passed"]


def test_a_failing_gate_lists_every_reason_under_its_verdict() -> None:
    result = GateResult(_failing("t.py::a: x", "t.py::b: y"))

    assert gate_lines(result, enabled=True) == [
        "agentctx gate FAILED: 2 reasons",
        "  t.py::a: x",
        "  t.py::b: y",
    ]


def test_a_gate_that_is_off_says_it_would_fail() -> None:
    lines = gate_lines(GateResult(_failing("t.py::a: x")), enabled=False)

    assert lines[0] == (
        "agentctx: the gate would fail (1 reason; it is off: add --agent-gate to enforce it)"
    )


def test_the_block_names_the_baseline_and_lists_new_and_not_run_tests() -> None:
    result = GateResult(
        (*_listed("new", *(f"t.py::n{i}" for i in range(12))), *_listed("not_run", "t.py::gone")),
        baseline="base.json",
        tolerance=GateTolerance(),
    )

    assert gate_lines(result, enabled=True, limit=2) == [
        "agentctx gate: passed",
        "baseline: base.json (tokens ±10%, iterations ±0, trajectory exact; pass rate: level "
        "0.05, margin none)",
        "new (not in the baseline, not compared): 12",
        "  t.py::n0",
        "  t.py::n1",
        "  ... and 10 more",
        "in the baseline but not run: 1",
        "  t.py::gone",
    ]


def test_the_baseline_line_follows_the_failures() -> None:
    result = GateResult(_failing("t.py::a: x"), baseline="b.json", tolerance=GateTolerance())

    assert gate_lines(result, enabled=True) == [
        "agentctx gate FAILED: 1 reason",
        "  t.py::a: x",
        "baseline: b.json (tokens ±10%, iterations ±0, trajectory exact; pass rate: level "
        "0.05, margin none)",
    ]


# -- nothing measured ------------------------------------------------------------------


def test_an_unmeasured_budget_fails_the_gate() -> None:
    budget = {"limits": {"max_iterations": 1}, "exceeded": [], "unmeasured": True}

    result = evaluate_gate(_report(_test("t.py::a", runs=0, budget=budget)))

    assert result.failures == (
        "t.py::a: budget not measured: the test made no model call the plugin saw (see the "
        "test's failure for what to check)",
    )


def test_a_baseline_test_that_now_made_no_measured_run_fails() -> None:
    now = _report(_test("t.py::a", runs=0, iterations=0, tokens=0, trajectory=()))

    result = compare_reports(now, _report(_test("t.py::a")))

    [line] = result.drifts
    assert line.startswith("t.py::a: made no measured model call (the baseline has 1 run(s))")


def test_a_baseline_entry_without_runs_cannot_be_compared_and_fails() -> None:
    cassette = {"path": "c.json", "status": "replayed", "unused": []}
    before = _report(_test("t.py::a", runs=0, iterations=0, tokens=0, cassette=cassette))

    result = compare_reports(_report(_test("t.py::a", iterations=3, cassette=cassette)), before)

    [line] = result.drifts
    assert line.startswith("t.py::a: the baseline has no measured run for this test")


def test_plain_tests_without_runs_in_both_reports_are_not_compared() -> None:
    plain = _test("t.py::plain", runs=0, iterations=0, tokens=0, trajectory=())

    assert compare_reports(_report(plain), _report(plain)).drifts == ()


# -- the baseline's figures kept for the HTML page -------------------------------------


def test_a_drifted_test_keeps_the_baselines_figures() -> None:
    from pytest_agentctx.reports.gate import attach_baselines

    report = _report(
        _test("t.py::a", iterations=3, trajectory=("search", "lookup", "answer")), _test("t.py::b")
    )

    assert attach_baselines(report, BASELINE) == 1
    assert report["tests"][0]["baseline"] == {
        "stats": {
            "runs": 1,
            "iterations": 2,
            "total_tokens": 1000,
            "trajectory": ["search", "answer"],
        }
    }


def test_a_test_within_the_tolerance_keeps_no_baseline() -> None:
    from pytest_agentctx.reports.gate import attach_baselines

    report = _report(_test("t.py::a", tokens=1050), _test("t.py::c"))

    assert attach_baselines(report, BASELINE) == 0
    assert ["baseline" in test for test in report["tests"]] == [False, False]


# -- repeated tests: per run --------------------------------------------------------------


def _repeated(nodeid: str, runs: Sequence[tuple[int, int, tuple[str, ...]]]) -> dict[str, Any]:
    """An agent_repeat test of ``runs`` (iterations, tokens, trajectory) repetitions."""
    test = _test(
        nodeid,
        iterations=sum(run[0] for run in runs),
        tokens=sum(run[1] for run in runs),
        trajectory=tuple(name for run in runs for name in run[2]),
        runs=len(runs),
    )
    test["repeat"] = {
        "runs": len(runs),
        "passed": len(runs),
        "pass_rate": 1.0,
        "min_pass_rate": 1.0,
        "per_run": [
            {"iterations": i, "tool_calls": len(t), "total_tokens": k, "trajectory": list(t)}
            for i, k, t in runs
        ],
    }
    return test


SEARCH = ("search", "answer")


def test_one_extra_iteration_in_one_of_five_runs_passes_a_tolerance_of_one() -> None:
    # every run takes one iteration more: +1 per run, within the tolerance, though the
    # sums over the five runs differ by 5 (10 -> 15), which the tolerance would refuse
    baseline = _report(_repeated("t.py::r", [(2, 100, SEARCH)] * 5))
    report = _report(_repeated("t.py::r", [(3, 100, SEARCH)] * 5))

    drifts = compare_reports(report, baseline, GateTolerance(10.0, 1, "exact")).drifts

    assert drifts == ()


def test_repeated_runs_are_compared_by_their_mean_and_their_largest_run() -> None:
    baseline = _report(_repeated("t.py::r", [(2, 100, SEARCH)] * 4))
    report = _report(_repeated("t.py::r", [(2, 100, SEARCH)] * 3 + [(2, 300, SEARCH)]))

    drifts = compare_reports(report, baseline, GateTolerance(10.0, 0, "exact")).drifts

    assert drifts == (
        "t.py::r (mean run): tokens 100 -> 150 (+50.0%, allowed ±10%)",
        "t.py::r (largest run): tokens 100 -> 300 (+200.0%, allowed ±10%)",
    )


def test_repeated_runs_compare_the_trajectory_most_runs_took() -> None:
    other = ("search", "search", "answer")
    baseline = _report(_repeated("t.py::r", [(2, 100, SEARCH)] * 3))
    same_mostly = _report(_repeated("t.py::r", [(2, 100, SEARCH)] * 2 + [(2, 100, other)]))
    changed = _report(_repeated("t.py::r", [(2, 100, other)] * 2 + [(2, 100, SEARCH)]))

    assert compare_reports(same_mostly, baseline).drifts == ()
    assert compare_reports(changed, baseline).drifts == (
        "t.py::r (the trajectory most runs took): tool trajectory [search, answer] -> "
        "[search, search, answer]",
    )


def test_a_baseline_without_per_run_figures_is_compared_by_its_totals() -> None:
    old = _test("t.py::r", iterations=10, tokens=500, runs=5)
    report = _report(_repeated("t.py::r", [(3, 100, SEARCH)] * 5))

    drifts = compare_reports(report, _report(old), GateTolerance(10.0, 1, "ignore")).drifts

    assert drifts == ("t.py::r: iterations 10 -> 15 (allowed change ±1)",)
