"""Unit tests for pytest_agentctx.reports.gate_pairing: a session held against its baseline
pair by pair (tests by node id, repetitions by index) in the gate's records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_agentctx import GateTolerance, ReportError, evaluate_gate
from pytest_agentctx.reports.gate_pairing import paired_lines, paired_records
from pytest_agentctx.reports.tolerance import parse_significance

PASS, FAIL = "passed", "failed"


def _repeated(nodeid: str, outcomes: Sequence[str], tokens: int = 100) -> dict[str, Any]:
    runs = len(outcomes)
    return {
        "nodeid": nodeid,
        "outcome": "passed",
        "cassette": None,
        "budget": None,
        "repeat": {"runs": runs, "outcomes": list(outcomes)},
        "stats": {
            "runs": runs,
            "iterations": 2 * runs,
            "total_tokens": tokens * runs,
            "trajectory": [],
            "cost_usd": None,
        },
        "runs": [None] * runs,
    }


def _plain(nodeid: str, outcome: str) -> dict[str, Any]:
    return {"nodeid": nodeid, "outcome": outcome, "stats": {"runs": 0}, "repeat": None}


def _suite(outcomes: Sequence[str], tests: int = 10, tokens: int = 100) -> dict[str, Any]:
    return {"tests": [_repeated(f"t.py::t{i}", outcomes, tokens) for i in range(tests)]}


ALL_PASS = _suite([PASS] * 5)
TWO_FAIL = _suite([PASS, FAIL, PASS, FAIL, PASS])


def _kind(records: Sequence[Any], kind: str) -> list[Any]:
    return [record for record in records if record.kind == kind]


def test_repetitions_are_paired_by_index_and_each_flip_is_a_record() -> None:
    base = {"tests": [_repeated("t.py::a", [PASS, PASS, FAIL])]}
    now = {"tests": [_repeated("t.py::a", [PASS, FAIL, PASS])]}

    flips = _kind(paired_records(now, base, GateTolerance()), "flip")

    assert [(r.nodeid, r.measure, r.baseline, r.now, r.message) for r in flips] == [
        (
            "t.py::a",
            "outcome (repetition 2)",
            PASS,
            FAIL,
            "t.py::a (repetition 2): passed -> failed",
        ),
        (
            "t.py::a",
            "outcome (repetition 3)",
            FAIL,
            PASS,
            "t.py::a (repetition 3): failed -> passed",
        ),
    ]


def test_tests_without_repetitions_are_paired_by_their_outcome() -> None:
    base = {
        "tests": [_plain("t.py::a", PASS), _plain("t.py::b", PASS), _plain("t.py::c", "skipped")]
    }
    now = {"tests": [_plain("t.py::a", FAIL), _plain("t.py::b", PASS), _plain("t.py::c", PASS)]}

    [rate] = _kind(paired_records(now, base, GateTolerance()), "pass_rate")

    assert (rate.baseline, rate.now) == (1.0, 0.5)  # two pairs: the skipped one is left out


def test_many_flips_one_way_fail_the_gate_saying_both_conditions_held() -> None:
    result = evaluate_gate(TWO_FAIL, baseline=ALL_PASS)

    [rate] = _kind(result.records, "pass_rate")
    assert rate.verdict == "fail"
    assert rate.p_value == pytest.approx(2 * 0.5**20)
    assert (rate.baseline, rate.now, rate.allowed) == (1.0, 0.6, 0.0)
    assert rate.interval is not None
    assert rate.interval[1] < 0
    assert "past the margin and significant: the gate fails" in rate.message
    assert result.failures[-1] == rate.message


def test_the_same_outcomes_on_both_sides_pass_with_a_p_value_of_one() -> None:
    result = evaluate_gate(TWO_FAIL, baseline=TWO_FAIL)

    [rate] = _kind(result.records, "pass_rate")
    assert (rate.verdict, rate.p_value, rate.interval) == ("pass", 1.0, (0.0, 0.0))
    assert result.passed


def test_a_drop_past_the_margin_but_not_significant_passes_and_says_it_may_be_chance() -> None:
    base = {"tests": [_repeated("t.py::a", [PASS] * 5)]}
    now = {"tests": [_repeated("t.py::a", [PASS, PASS, PASS, PASS, FAIL])]}

    [rate] = _kind(paired_records(now, base, GateTolerance()), "pass_rate")

    assert rate.verdict == "pass"
    assert rate.message.endswith(
        "the drop is past the margin but not significant: it may be chance"
    )


def test_a_significant_drop_within_the_margin_passes() -> None:
    [rate] = _kind(paired_records(TWO_FAIL, ALL_PASS, GateTolerance(margin=50)), "pass_rate")

    assert rate.verdict == "pass"
    assert rate.message.endswith("the drop is significant but within the margin")


def test_a_margin_adds_the_non_inferiority_test() -> None:
    [margin] = _kind(paired_records(ALL_PASS, ALL_PASS, GateTolerance(margin=2)), "margin")

    assert (margin.verdict, margin.allowed) == ("info", 2)
    assert margin.message.startswith("no worse than 2 points: holds")


def test_the_figures_differences_have_paired_intervals() -> None:
    now = _suite([PASS] * 5, tokens=120)

    [tokens] = [
        r for r in paired_records(now, ALL_PASS, GateTolerance()) if r.measure == "total_tokens"
    ]

    assert (tokens.kind, tokens.baseline, tokens.now, tokens.interval) == (
        "difference",
        100.0,
        120.0,
        (20.0, 20.0),
    )


def test_the_records_are_the_same_in_every_run() -> None:
    mixed = {
        "tests": [_repeated(f"t.py::t{i}", [PASS, FAIL][: 1 + i % 2], 100 + i) for i in range(9)]
    }

    assert paired_records(mixed, ALL_PASS, GateTolerance()) == paired_records(
        mixed, ALL_PASS, GateTolerance()
    )


def test_no_test_on_both_sides_gives_no_comparison() -> None:
    assert paired_records({"tests": [_plain("t.py::new", PASS)]}, ALL_PASS, GateTolerance()) == []


def test_the_summary_lists_the_comparison_and_at_most_limit_flips() -> None:
    lines = paired_lines(paired_records(TWO_FAIL, ALL_PASS, GateTolerance()), limit=3)

    flips = lines.index("flips: 20 (20 passed -> failed, 0 failed -> passed)")
    assert lines[0] == "paired with the baseline:"
    assert lines[1].startswith("  pass rate 100.0% -> 60.0% over 50 pairs")
    assert lines[flips + 1 :] == [
        "  t.py::t0 (repetition 2): passed -> failed",
        "  t.py::t0 (repetition 4): passed -> failed",
        "  t.py::t1 (repetition 2): passed -> failed",
        "  ... and 17 more",
    ]


@pytest.mark.parametrize(
    ("level", "margin", "said"),
    [
        ("5%", "", r"agent_baseline_level = '5%': expected a significance level .* e\.g\. 0\.05"),
        ("1", "", r"agent_baseline_level = '1': expected"),
        ("0.05", "two", r"agent_baseline_margin = 'two': expected points .* e\.g\. 2"),
        ("0.05", "120", r"agent_baseline_margin = '120': expected points of pass rate from 0"),
    ],
)
def test_a_bad_level_or_margin_says_what_was_given_and_expected(
    level: str, margin: str, said: str
) -> None:
    with pytest.raises(ReportError, match=said):
        parse_significance(level=level, margin=margin)


def test_a_margin_reads_as_points() -> None:
    assert parse_significance(level="0.01", margin="2%") == (0.01, 2.0, False)


def test_with_flips_set_to_fail_a_pass_that_fails_now_fails_the_gate_alone() -> None:
    base = {"tests": [_repeated("t.py::a", [PASS, FAIL, PASS, PASS, PASS])]}
    now = {"tests": [_repeated("t.py::a", [PASS, PASS, PASS, PASS, FAIL])]}
    tolerance = GateTolerance(fail_on_flips=True)

    result = evaluate_gate(now, baseline=base, tolerance=tolerance)

    assert [(r.measure, r.verdict) for r in _kind(result.records, "flip")] == [
        ("outcome (repetition 2)", "info"),  # a fix never fails the gate
        ("outcome (repetition 5)", "fail"),
    ]
    assert result.failures == (
        "t.py::a (repetition 5): passed -> failed (--agent-baseline-flips=fail: a test that "
        "broke fails the gate)",
    )


def test_by_default_a_lone_flip_is_listed_and_the_pass_rate_decides() -> None:
    base = {"tests": [_repeated("t.py::a", [PASS] * 5)]}
    now = {"tests": [_repeated("t.py::a", [PASS, PASS, PASS, PASS, FAIL])]}

    assert evaluate_gate(now, baseline=base, tolerance=GateTolerance()).passed


@pytest.mark.parametrize(("text", "fail"), [("report", False), ("fail", True), (" FAIL ", True)])
def test_the_flips_option_reads_report_or_fail(text: str, fail: bool) -> None:
    assert parse_significance(level="0.05", margin="", flips=text)[2] is fail


def test_a_bad_flips_option_says_what_was_given_and_expected() -> None:
    with pytest.raises(ReportError, match=r"agent_baseline_flips = 'always': expected report"):
        parse_significance(level="0.05", margin="", flips="always")


def _cached(suite: dict[str, Any], read: int, uncached: int) -> dict[str, Any]:
    tests = []
    for test in suite["tests"]:
        stats = {**test["stats"], "cache_read_tokens": read, "uncached_input_tokens": uncached}
        tests.append({**test, "stats": stats})
    return {"tests": tests}


def test_the_share_of_cache_reads_is_compared_test_by_test() -> None:
    warm, cold = _cached(ALL_PASS, 900, 100), _cached(ALL_PASS, 200, 800)

    [share] = [
        r for r in paired_records(cold, warm, GateTolerance()) if r.measure == "cache_read_share"
    ]

    assert (share.baseline, share.now) == (pytest.approx(0.9), pytest.approx(0.2))
    assert share.message.startswith(
        "cache read share of a test: mean 90.0% -> 20.0% (-70.0 points, 95% interval"
    )


def test_tests_without_cache_figures_have_no_share_to_compare() -> None:
    records = paired_records(ALL_PASS, ALL_PASS, GateTolerance())

    assert [r for r in records if r.measure == "cache_read_share"] == []
