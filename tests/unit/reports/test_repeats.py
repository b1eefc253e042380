"""The pass rate of an ``agent_repeat`` test and its gate: the marker read, the repetitions
tallied, the interval's lower bound (or the rate itself) held against ``min_pass_rate``,
pass@k and pass^k, the runs a target needs, and the judges' mean scores."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st

from pytest_agentctx.reports.errors import RepeatError
from pytest_agentctx.reports.estimators import clopper_pearson, wilson, z_quantile
from pytest_agentctx.reports.repeats import RepeatSpec, RepeatTally, entry_met, score_means

WHERE = "tests/test_x.py::test_y"


def tally(outcomes: str, spec: RepeatSpec) -> RepeatTally:
    """``outcomes``: one letter per repetition, p passed, f failed, s skipped."""
    counted = RepeatTally(spec)
    words = {"p": "passed", "f": "failed", "s": "skipped"}
    for index, letter in enumerate(outcomes, start=1):
        counted.observe(index, "call", words[letter])
    return counted


def phases(*reports: tuple[int, str, str]) -> RepeatTally:
    counted = RepeatTally(RepeatSpec(4, 0.5))
    for index, when, outcome in reports:
        counted.observe(index, when, outcome)
    return counted


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((5,), {}, RepeatSpec(5, 1.0)),
        ((5, 0.8), {}, RepeatSpec(5, 0.8)),
        ((3,), {"min_pass_rate": 0}, RepeatSpec(3, 0.0)),
        ((), {"n": 4, "min_pass_rate": 0.5}, RepeatSpec(4, 0.5)),
        ((10, 0.8), {"rule": "point"}, RepeatSpec(10, 0.8, rule="point")),
        ((10,), {"interval": "clopper_pearson"}, RepeatSpec(10, interval="clopper_pearson")),
        ((10,), {"confidence": 0.9}, RepeatSpec(10, confidence=0.9)),
        ((10,), {"k": 3}, RepeatSpec(10, k=(3,))),
        ((10,), {"k": [5, 1, 5]}, RepeatSpec(10, k=(1, 5))),
    ],
)
def test_the_repeat_marker_takes_a_count_a_rate_and_its_options(
    args: tuple[object, ...], kwargs: dict[str, object], expected: RepeatSpec
) -> None:
    assert RepeatSpec.from_marker(args, kwargs, where=WHERE) == expected


def test_a_pass_hat_k_target_alone_sets_no_pass_rate() -> None:
    spec = RepeatSpec.from_marker((10,), {"k": 3, "min_pass_hat_k": 0.5}, where=WHERE)

    assert (spec.min_pass_rate, spec.k, spec.min_pass_hat_k) == (0.0, (3,), 0.5)


@pytest.mark.parametrize(
    ("args", "kwargs", "problem"),
    [
        ((), {}, r"run count None; expected a whole number >= 1"),
        ((0,), {}, r"run count 0; expected a whole number >= 1"),
        ((2.5,), {}, r"run count 2\.5"),
        ((True,), {}, r"run count True"),
        ((3,), {"min_pass_rate": 1.2}, r"min_pass_rate=1\.2; expected a number from 0 to 1"),
        ((3,), {"min_pass_rate": "0.5"}, r"min_pass_rate='0\.5'"),
        ((3,), {"rate": 0.5}, r"agent_repeat\(3, rate=0\.5\) is not understood"),
        ((3,), {"rule": "mean"}, r"rule='mean'; expected one of 'lower_bound', 'point'"),
        ((3,), {"interval": "wald"}, r"interval='wald'; expected one of 'wilson'"),
        ((3,), {"confidence": 95}, r"confidence=95; expected a level between 0 and 1"),
        ((3,), {"k": 4}, r"k=4 with 3 runs; expected a whole number from 1 to 3"),
        ((3,), {"k": 0}, r"k=0 with 3 runs"),
        ((3,), {"min_pass_hat_k": 0.5}, r"min_pass_hat_k=0\.5 with k=None; expected one k"),
        ((9,), {"k": (1, 3), "min_pass_hat_k": 0.5}, r"min_pass_hat_k=0\.5 with k=\(1, 3\)"),
        ((9,), {"k": 3, "min_pass_hat_k": 2}, r"min_pass_hat_k=2; expected a number"),
    ],
)
def test_a_bad_repeat_marker_names_the_test(
    args: tuple[object, ...], kwargs: dict[str, object], problem: str
) -> None:
    with pytest.raises(RepeatError, match=rf"^{WHERE}: (agent_repeat )?{problem}"):
        RepeatSpec.from_marker(args, kwargs, where=WHERE)


def test_a_repetition_passes_when_each_of_its_phases_passed() -> None:
    counted = phases((1, "setup", "passed"), (1, "call", "passed"), (1, "teardown", "passed"))

    assert counted.outcomes == {1: "passed"}


def test_a_failed_call_or_teardown_fails_the_repetition() -> None:
    counted = phases(
        (1, "setup", "passed"),
        (1, "call", "failed"),
        (2, "setup", "passed"),
        (2, "call", "passed"),
        (2, "teardown", "failed"),
    )

    assert counted.outcomes == {1: "failed", 2: "failed"}


def test_a_skip_in_setup_or_call_skips_the_repetition() -> None:
    counted = phases((1, "setup", "skipped"), (1, "teardown", "passed"), (2, "call", "skipped"))

    assert counted.outcomes == {1: "skipped", 2: "skipped"}
    assert counted.all_skipped


def test_the_entry_counts_the_repetitions_that_were_not_skipped() -> None:
    counted = tally("pfsp", RepeatSpec(4, 0.5, rule="point"))

    assert counted.to_dict() == {
        "runs": 3,
        "passed": 2,
        "pass_rate": 0.666667,
        "min_pass_rate": 0.5,
        "rule": "point",
        "outcomes": ["passed", "failed", "skipped", "passed"],
        "interval": [0.094299, 0.991596],
        "method": "clopper_pearson",
        "confidence": 0.95,
        "stability": "stochastic",
    }
    assert counted.describe() == (
        "2 of 3 runs passed (67%; 95% interval 9-99%, stochastic), 1 skipped, "
        "min_pass_rate 50% (rule point): passed"
    )


def test_the_lower_bound_rule_fails_a_rate_the_runs_do_not_show() -> None:
    counted = tally("ppppf", RepeatSpec(5, 0.8))

    assert not counted.met
    assert counted.describe() == (
        "4 of 5 runs passed (80%; 95% interval 28-99%, stochastic), min_pass_rate 80% "
        "(lower bound 28%): failed: the runs leave the rate as low as 28%; more runs narrow "
        'the interval, or add rule="point" to hold the pass rate itself against the target '
        "(docs/statistics.md#how-many-runs)"
    )


def test_the_point_rule_holds_the_rate_itself() -> None:
    assert tally("ppppf", RepeatSpec(5, 0.8, rule="point")).met


def test_runs_that_all_pass_but_are_too_few_name_the_runs_needed() -> None:
    counted = tally("ppppp", RepeatSpec(5, 0.8))

    assert not counted.met
    assert counted.describe().endswith(
        "(lower bound 48%): failed: 5 runs cannot show it at 95% confidence even when all "
        'pass; agent_repeat(17, ...) can, when all 17 pass; or add rule="point" to hold the '
        "pass rate itself against the target (docs/statistics.md#how-many-runs)"
    )


def test_enough_runs_that_all_pass_meet_the_lower_bound() -> None:
    counted = tally("p" * 17, RepeatSpec(17, 0.8))

    assert counted.met
    assert counted.interval.low >= 0.8


@pytest.mark.parametrize("rate", [0.5, 0.8, 0.9, 0.95])
def test_the_runs_needed_under_wilson_follow_its_closed_form(rate: float) -> None:
    # all n pass: Wilson's lower bound is n / (n + z^2), at least rate from z^2 rate/(1-rate)
    z = z_quantile(0.975)
    counted = RepeatTally(RepeatSpec(5, rate, interval="wilson"))

    assert counted.runs_needed() == math.ceil(z * z * rate / (1 - rate) - 1e-9)


@pytest.mark.parametrize("rate", [0.5, 0.8, 0.9, 0.95])
def test_the_runs_needed_by_default_follow_clopper_pearsons_closed_form(rate: float) -> None:
    # all n pass: the exact lower bound is 0.025 ** (1 / n)
    counted = RepeatTally(RepeatSpec(5, rate))

    assert counted.runs_needed() == math.ceil(math.log(0.025) / math.log(rate))


@given(st.sampled_from(["wilson", "clopper_pearson"]), st.floats(0.05, 0.97))
def test_the_runs_needed_are_the_fewest_that_meet_the_target(method: str, rate: float) -> None:
    spec = RepeatSpec(1, rate, interval=method)  # type: ignore[arg-type]
    needed = RepeatTally(spec).runs_needed()

    assert needed is not None
    assert tally("p" * needed, spec).met
    assert needed == 1 or not tally("p" * (needed - 1), spec).met


@given(st.integers(1, 40), st.data())
def test_the_lower_bound_rule_never_passes_what_the_point_rule_fails(
    runs: int, data: st.DataObject
) -> None:
    passed = data.draw(st.integers(0, runs))
    rate = data.draw(st.floats(0, 1))
    outcomes = "p" * passed + "f" * (runs - passed)

    if tally(outcomes, RepeatSpec(runs, rate)).met:
        assert tally(outcomes, RepeatSpec(runs, rate, rule="point")).met


def test_every_run_must_pass_at_a_minimum_of_one_under_either_rule() -> None:
    assert tally("ppppp", RepeatSpec(5)).met
    assert not tally("ppppf", RepeatSpec(5, rule="point")).met
    assert not tally("ppppf", RepeatSpec(5)).met


def test_the_interval_follows_the_method_and_confidence() -> None:
    counted = tally("ppppppppfp", RepeatSpec(10, 0.6, interval="wilson", confidence=0.9))

    assert counted.interval == wilson(9, 10, 0.9)
    assert counted.describe().startswith(
        "9 of 10 runs passed (90%; 90% Wilson interval 65-98%, stochastic)"
    )


def test_the_default_interval_is_clopper_pearson_at_95_percent() -> None:
    counted = tally("ppppppppfp", RepeatSpec(10, 0.6))

    assert counted.interval == clopper_pearson(9, 10, 0.95)
    assert counted.to_dict()["method"] == "clopper_pearson"


def test_pass_at_k_and_pass_hat_k_are_reported_for_each_k() -> None:
    entry = tally("pppfpppfpp", RepeatSpec(10, 0.5, rule="point", k=(1, 3))).to_dict()

    assert (entry["pass_at_k"], entry["pass_hat_k"]) == (
        {"1": 0.8, "3": 1.0},
        {"1": 0.8, "3": 0.466667},
    )


def test_a_k_above_the_runs_counted_has_no_estimate() -> None:
    entry = tally("ppsss", RepeatSpec(5, k=(3,))).to_dict()

    assert sorted(set(entry) & {"pass_at_k", "pass_hat_k"}) == []


def test_a_pass_hat_k_target_holds_the_lower_bound_to_the_power_k() -> None:
    counted = tally("ppppppppfp", RepeatSpec(10, 0.0, k=(3,), min_pass_hat_k=0.5))

    assert counted.pass_hat_figure == pytest.approx(clopper_pearson(9, 10).low ** 3)
    assert not counted.met
    assert "pass^3 target 50% (lower bound 17%): failed: the runs leave pass^3 as low as 17%" in (
        counted.describe()
    )


def test_a_pass_hat_k_target_under_the_point_rule_holds_the_estimate() -> None:
    counted = tally("ppppppppfp", RepeatSpec(10, 0.0, rule="point", k=(3,), min_pass_hat_k=0.5))

    assert counted.pass_hat_figure == pytest.approx(0.7)  # C(9,3)/C(10,3)
    assert counted.met


def test_a_pass_hat_k_target_with_fewer_runs_counted_than_k_is_not_met() -> None:
    assert not tally("ppsss", RepeatSpec(5, 0.0, k=(3,), min_pass_hat_k=0.1)).met


def test_a_test_whose_runs_all_failed_is_a_stable_fail() -> None:
    counted = tally("fff", RepeatSpec(3, 0.5))

    assert (counted.stability, counted.to_dict()["interval"]) == ("stable fail", [0.0, 0.707598])


def test_a_test_whose_runs_all_skipped_has_no_interval() -> None:
    counted = tally("ss", RepeatSpec(2, 0.5))

    assert counted.stability is None
    assert "interval" not in counted.to_dict()
    assert not counted.met


def _verdict(judge: str, rubric: str, score: float) -> dict[str, object]:
    return {"judge": judge, "rubric_id": rubric, "score": score}


def test_the_judges_scores_get_a_mean_and_a_bootstrap_interval() -> None:
    verdicts = [_verdict("judge", "polite", score) for score in (0.8, 0.9, 0.7, 0.6)]

    (entry,) = score_means(verdicts)

    assert (entry["n"], entry["mean"]) == (4, 0.75)
    low, high = entry["interval"]
    assert 0.6 <= low < 0.75 < high <= 0.9


def test_a_rubric_judged_once_has_no_mean() -> None:
    verdicts = [_verdict("judge", "polite", 0.8), _verdict("judge", "cites", 0.9)]

    assert score_means(verdicts) == []


@given(st.integers(1, 30), st.data())
def test_a_report_entry_reads_as_met_exactly_when_the_tally_met(
    runs: int, data: st.DataObject
) -> None:
    passed = data.draw(st.integers(0, runs))
    spec = RepeatSpec(
        runs,
        data.draw(st.sampled_from([0.0, 0.3, 0.5, 0.8, 0.95, 1.0])),
        rule=data.draw(st.sampled_from(["lower_bound", "point"])),
        interval=data.draw(st.sampled_from(["wilson", "clopper_pearson"])),
    )
    counted = tally("p" * passed + "f" * (runs - passed), spec)

    assert entry_met(dict(counted.to_dict())) == counted.met
