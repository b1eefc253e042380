"""The estimators of a pass rate (pytest_agentctx/reports/estimators.py): values worked by
hand, laws that hold for every input (hypothesis), and the errors of bad input. Their
agreement with scipy and statsmodels is in test_estimators_reference.py."""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pytest_agentctx import ReportError, StatisticsError
from pytest_agentctx.reports.estimators import (
    Interval,
    bootstrap_mean,
    clopper_pearson,
    normal_interval,
    pass_at_k,
    pass_hat_k,
    regularized_beta,
    stability,
    wilson,
    z_quantile,
)

ROOT = Path(__file__).resolve().parents[3]
SETTINGS = settings(max_examples=200, deadline=None, database=None, derandomize=True)
INTERVALS = [wilson, clopper_pearson, normal_interval]


@st.composite
def counts(draw: st.DrawFn, max_n: int = 200) -> tuple[int, int]:
    n = draw(st.integers(1, max_n))
    return draw(st.integers(0, n)), n


confidences = st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999])


# -- values worked by hand ----------------------------------------------------------------


def test_wilson_of_4_of_5_is_the_textbook_interval() -> None:
    # z = 1.95996, z²/n = 0.76829: center 1.18415 / 1.76829 = 0.66966, half 0.29412
    low, high = wilson(4, 5)

    assert (round(low, 4), round(high, 4)) == (0.3755, 0.9638)


def test_clopper_pearson_of_0_of_10_reaches_one_minus_the_tail_root() -> None:
    # no pass in 10: the high bound p solves (1 - p)**10 = 0.025
    assert clopper_pearson(0, 10) == pytest.approx(Interval(0.0, 1 - 0.025 ** (1 / 10)), abs=1e-12)


def test_clopper_pearson_of_10_of_10_starts_at_the_tail_root() -> None:
    # every run passed: the low bound p solves p**10 = 0.025
    assert clopper_pearson(10, 10) == pytest.approx(Interval(0.025 ** (1 / 10), 1.0), abs=1e-12)


def test_normal_interval_of_every_run_passing_is_a_single_point() -> None:
    assert normal_interval(5, 5) == Interval(1.0, 1.0)


def test_no_runs_give_the_whole_range() -> None:
    assert [interval(0, 0) for interval in INTERVALS] == [Interval(0.0, 1.0)] * 3


def test_pass_at_k_of_2_passes_in_5_runs_for_k_2() -> None:
    # 1 - C(3, 2) / C(5, 2) = 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7, abs=1e-15)


def test_pass_at_k_is_one_when_fewer_runs_failed_than_k() -> None:
    assert pass_at_k(5, 4, 2) == 1.0


def test_pass_hat_k_of_4_passes_in_5_runs_for_k_2() -> None:
    # C(4, 2) / C(5, 2) = 6/10
    assert pass_hat_k(5, 4, 2) == pytest.approx(0.6, abs=1e-15)


def test_pass_hat_k_of_7_passes_in_10_runs_for_k_3() -> None:
    # C(7, 3) / C(10, 3) = 35/120, where the plug-in 0.7**3 gives 0.343
    assert pass_hat_k(10, 7, 3) == pytest.approx(35 / 120, abs=1e-15)


def test_pass_hat_k_is_the_share_of_k_subsets_that_passed_whole() -> None:
    outcomes = [True, True, False, True, True, False, True]
    subsets = list(itertools.combinations(outcomes, 3))

    expected = sum(all(subset) for subset in subsets) / len(subsets)

    assert pass_hat_k(7, 5, 3) == pytest.approx(expected, abs=1e-15)


def test_pass_at_k_is_the_share_of_k_subsets_with_a_pass() -> None:
    outcomes = [False, True, False, False, True, False, False]
    subsets = list(itertools.combinations(outcomes, 4))

    expected = sum(any(subset) for subset in subsets) / len(subsets)

    assert pass_at_k(7, 2, 4) == pytest.approx(expected, abs=1e-15)


def test_z_quantile_of_0_975_is_1_96() -> None:
    assert z_quantile(0.975) == pytest.approx(1.959963984540054, abs=1e-12)


def test_stability_of_some_passes_and_some_fails_is_stochastic() -> None:
    assert stability(4, 5) == "stochastic"


def test_stability_of_every_run_passing_is_stable_pass() -> None:
    assert stability(5, 5) == "stable pass"


def test_stability_of_no_run_passing_is_stable_fail() -> None:
    assert stability(0, 5) == "stable fail"


def test_stability_reads_the_interval_it_is_given() -> None:
    # the normal interval of 1 pass in 20 reaches 0: consistent with a test that never passes
    assert stability(1, 20, normal_interval(1, 20)) == "stable fail"


def test_bootstrap_mean_of_equal_values_is_that_value() -> None:
    assert bootstrap_mean([0.7, 0.7, 0.7]) == Interval(0.7, 0.7)


def test_bootstrap_mean_of_a_seed_is_the_same_in_another_process() -> None:
    values = [0.1, 0.9, 0.4, 0.75, 0.3, 0.55]
    code = (
        "from pytest_agentctx.reports.estimators import bootstrap_mean;"
        f"print(repr(tuple(bootstrap_mean({values!r}, seed=7))))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}

    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout

    assert output.strip() == repr(tuple(bootstrap_mean(values, seed=7)))


def test_bootstrap_mean_of_another_seed_differs() -> None:
    values = [0.0137 * i**2 % 1 for i in range(30)]

    assert bootstrap_mean(values, resamples=200, seed=1) != bootstrap_mean(
        values, resamples=200, seed=2
    )


# -- laws ---------------------------------------------------------------------------------


@SETTINGS
@given(counts(), confidences, st.sampled_from(INTERVALS))
def test_an_interval_lies_in_0_1_and_holds_the_observed_rate(count, confidence, interval):
    successes, n = count

    low, high = interval(successes, n, confidence)

    assert 0 <= low <= successes / n <= high <= 1


@SETTINGS
@given(counts(), st.sampled_from([wilson, clopper_pearson]))
def test_an_interval_moves_up_with_the_successes(count, interval):
    successes, n = count
    if successes == n:
        successes -= 1

    fewer, more = interval(successes, n), interval(successes + 1, n)

    assert fewer.low < more.low
    assert fewer.high < more.high


@SETTINGS
@given(counts(), st.sampled_from(INTERVALS))
def test_an_interval_of_the_failures_mirrors_that_of_the_passes(count, interval):
    successes, n = count

    low, high = interval(successes, n)
    mirror_low, mirror_high = interval(n - successes, n)

    assert (low, high) == pytest.approx((1 - mirror_high, 1 - mirror_low), abs=1e-12)


@SETTINGS
@given(counts(), st.sampled_from([wilson, clopper_pearson]))
def test_a_higher_confidence_gives_a_wider_interval_around_the_lower_ones(count, interval):
    successes, n = count

    narrow, wide = interval(successes, n, 0.9), interval(successes, n, 0.99)

    assert wide.low <= narrow.low
    assert narrow.high <= wide.high


@SETTINGS
@given(counts(max_n=60))
def test_clopper_pearson_bounds_leave_the_tail_probability(count):
    # the definition: at the low bound, P(X >= successes) is the tail; at the high bound,
    # P(X <= successes) is
    successes, n = count
    low, high = clopper_pearson(successes, n)

    def pmf(rate: float, k: int) -> float:
        return math.comb(n, k) * rate**k * (1 - rate) ** (n - k)

    if successes > 0:
        assert math.fsum(pmf(low, k) for k in range(successes, n + 1)) == pytest.approx(0.025)
    if successes < n:
        assert math.fsum(pmf(high, k) for k in range(successes + 1)) == pytest.approx(0.025)


@SETTINGS
@given(counts(max_n=60), st.sampled_from([wilson, clopper_pearson]))
def test_an_interval_excludes_both_ends_exactly_when_the_runs_differ(count, interval):
    successes, n = count

    verdict = stability(successes, n, interval(successes, n))

    assert (verdict == "stochastic") == (0 < successes < n)


@SETTINGS
@given(counts(max_n=40), st.data())
def test_pass_at_k_grows_with_k_from_the_pass_rate(count, data):
    successes, n = count
    k = data.draw(st.integers(1, n))

    assert pass_at_k(n, successes, 1) == pytest.approx(successes / n, abs=1e-15)
    assert pass_at_k(n, successes, k) >= successes / n - 1e-15


@SETTINGS
@given(counts(max_n=40), st.data())
def test_pass_hat_k_is_at_most_the_plug_in_rate_to_the_k(count, data):
    successes, n = count
    k = data.draw(st.integers(1, n))

    assert pass_hat_k(n, successes, k) <= (successes / n) ** k + 1e-15


@SETTINGS
@given(st.integers(1, 30), st.data(), st.sampled_from([0.3, 0.5, 0.8, 0.9, 0.95, 0.99]))
def test_pass_hat_k_averages_to_the_rate_to_the_k(n, data, rate):
    # unbiased: its expectation over every number of passes is rate**k exactly
    k = data.draw(st.integers(1, n))

    expectation = math.fsum(
        math.comb(n, c) * rate**c * (1 - rate) ** (n - c) * pass_hat_k(n, c, k)
        for c in range(n + 1)
    )

    assert expectation == pytest.approx(rate**k, abs=1e-12)


@SETTINGS
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=30),
    st.integers(0, 2**32),
)
def test_bootstrap_mean_lies_between_the_smallest_and_largest_value(values, seed):
    low, high = bootstrap_mean(values, resamples=200, seed=seed)

    assert min(values) <= low <= high <= max(values)


@SETTINGS
@given(st.lists(st.floats(0, 1), min_size=2, max_size=30), st.integers(0, 2**32))
def test_bootstrap_mean_is_the_same_for_the_same_seed(values, seed):
    assert bootstrap_mean(values, resamples=200, seed=seed) == bootstrap_mean(
        values, resamples=200, seed=seed
    )


@SETTINGS
@given(st.lists(st.floats(0, 1), min_size=2, max_size=30), st.integers(0, 2**32))
def test_bootstrap_mean_at_a_higher_confidence_holds_the_lower_one(values, seed):
    narrow = bootstrap_mean(values, 0.8, resamples=200, seed=seed)
    wide = bootstrap_mean(values, 0.99, resamples=200, seed=seed)

    assert wide.low <= narrow.low
    assert narrow.high <= wide.high


# -- errors -------------------------------------------------------------------------------


def test_a_statistics_error_is_a_value_error_of_the_reports() -> None:
    assert issubclass(StatisticsError, ValueError)
    assert issubclass(StatisticsError, ReportError)


@pytest.mark.parametrize("interval", INTERVALS, ids=lambda f: f.__name__)
def test_a_negative_run_count_is_refused(interval) -> None:
    with pytest.raises(
        StatisticsError,
        match=rf"^{interval.__name__}: n=-1; expected a count of runs of 0 or more\. Pass",
    ):
        interval(0, -1)


@pytest.mark.parametrize("interval", INTERVALS, ids=lambda f: f.__name__)
def test_more_successes_than_runs_are_refused(interval) -> None:
    with pytest.raises(
        StatisticsError,
        match=r"successes=6 of n=5; expected 0 <= successes <= n\. Pass the number of runs "
        "that passed",
    ):
        interval(6, 5)


def test_a_count_that_is_not_a_whole_number_is_refused() -> None:
    with pytest.raises(
        StatisticsError, match=r"^wilson: n=5\.0; expected a whole number .* Pass n as an int\."
    ):
        wilson(4, 5.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("confidence", [0, 1, 95, -0.5, float("nan"), True])
def test_a_confidence_outside_0_1_is_refused(confidence) -> None:
    with pytest.raises(
        StatisticsError,
        match=rf"^clopper_pearson: confidence={confidence!r}; expected a number strictly "
        r"between 0 and 1, e.g\. 0\.95 for a 95% interval\. Pass the level as a fraction\.",
    ):
        clopper_pearson(4, 5, confidence)


@pytest.mark.parametrize("k", [0, 6])
def test_a_k_outside_1_to_n_is_refused(k) -> None:
    with pytest.raises(
        StatisticsError,
        match=rf"^pass_hat_k: k={k} with n=5 runs; expected a whole number from 1 to n .* "
        "Ask for a smaller k, or run the test more times\\.",
    ):
        pass_hat_k(5, 3, k)


def test_pass_at_k_refuses_more_passes_than_runs() -> None:
    with pytest.raises(
        StatisticsError, match=r"^pass_at_k: c=4 of n=3; expected 0 <= c <= n\. Pass the number"
    ):
        pass_at_k(3, 4, 1)


def test_stability_of_no_runs_is_refused() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^stability: 0 of 0 runs passed and the interval \(0, 1\) reaches both 0 and 1"
        r".* Run the test at least once",
    ):
        stability(0, 0)


def test_stability_refuses_an_interval_outside_0_1() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^stability: interval \(-0\.1, 0\.5\); expected 0 <= low <= high <= 1\.",
    ):
        stability(1, 5, Interval(-0.1, 0.5))


def test_bootstrap_mean_of_no_values_is_refused() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^bootstrap_mean: values=\[\]; expected a non-empty sequence of numbers .* "
        r"Pass at least one value\.",
    ):
        bootstrap_mean([])


def test_bootstrap_mean_of_a_nan_is_refused() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^bootstrap_mean: values\[1\]=nan; expected a finite number\. Leave out",
    ):
        bootstrap_mean([0.5, float("nan")])


def test_bootstrap_mean_refuses_a_value_that_is_not_a_number() -> None:
    with pytest.raises(StatisticsError, match=r"^bootstrap_mean: values\[0\]='0\.5'; expected"):
        bootstrap_mean(["0.5"])  # type: ignore[list-item]


def test_bootstrap_mean_refuses_no_resamples() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^bootstrap_mean: resamples=0; expected a whole number of 1 or more",
    ):
        bootstrap_mean([0.5, 0.6], resamples=0)


def test_regularized_beta_refuses_a_parameter_of_0() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^regularized_beta: a=0, b=2; expected both shape parameters above 0\. Pass",
    ):
        regularized_beta(0.5, 0, 2)


def test_z_quantile_refuses_a_probability_of_1() -> None:
    with pytest.raises(
        StatisticsError, match=r"^z_quantile: p=1; expected a probability strictly between"
    ):
        z_quantile(1)
