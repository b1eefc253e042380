"""Paired comparisons with a baseline (pytest_agentctx/reports/pairing.py): flips, the exact
McNemar test, the paired bootstrap, non-inferiority and equivalence, and a drop held
against its tolerance and significance; checked by hand and by laws that hold for every
input. Their agreement with scipy and statsmodels is in test_pairing_reference.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from pytest_agentctx import StatisticsError
from pytest_agentctx.reports.estimators import bootstrap_mean
from pytest_agentctx.reports.pairing import (
    DropCheck,
    Flips,
    check_drop,
    flips,
    mcnemar_exact,
    non_inferior,
    paired_bootstrap_difference,
)

SETTINGS = settings(max_examples=200, deadline=None, database=None, derandomize=True)
#: Paired figures of 40 tests: after = before moved a little, differently per test.
BEFORE = [0.5 + 0.4 * ((i * 37) % 11) / 11 for i in range(40)]
AFTER = [b - 0.01 + 0.06 * ((i * 53) % 7 - 3) / 7 for i, b in enumerate(BEFORE)]


# -- flips --------------------------------------------------------------------------------


def test_flips_lists_broken_and_fixed_tests_sorted() -> None:
    before = {"t::c": True, "t::a": True, "t::b": False, "t::d": True}
    after = {"t::a": False, "t::c": False, "t::b": True, "t::d": True}

    assert flips(before, after) == Flips(broke=("t::a", "t::c"), fixed=("t::b",), paired=4)


def test_flips_lists_the_tests_of_one_side_apart() -> None:
    found = flips({"old": True, "both": True}, {"both": True, "new": False})

    assert (found.new, found.not_run, found.unpaired, found.paired) == (
        ("new",),
        ("old",),
        ("new", "old"),
        1,
    )


def test_flips_change_is_the_pass_rate_change_over_pairs() -> None:
    found = flips(
        {"a": True, "b": True, "c": False, "d": True},
        {"a": False, "b": False, "c": True, "d": True},
    )

    assert found.change == pytest.approx(-0.25)


def test_flips_refuses_an_outcome_that_is_not_a_bool() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^flips: after\['t::a'\]='passed'; expected True \(passed\) or False \(failed\)\. "
        "Leave out",
    ):
        flips({"t::a": True}, {"t::a": "passed"})  # type: ignore[dict-item]


# -- McNemar ------------------------------------------------------------------------------


def test_mcnemar_of_5_broken_and_1_fixed() -> None:
    # P(X <= 1) for X ~ Bin(6, 1/2) is 7/64; two-sided: 14/64
    assert mcnemar_exact(5, 1) == 14 / 64


def test_mcnemar_of_10_broken_and_none_fixed() -> None:
    assert mcnemar_exact(10, 0) == 2 / 1024


def test_mcnemar_of_no_flips_is_1() -> None:
    assert mcnemar_exact(0, 0) == 1.0


def test_mcnemar_of_as_many_broken_as_fixed_is_1() -> None:
    assert mcnemar_exact(7, 7) == 1.0


@SETTINGS
@given(st.integers(0, 500), st.integers(0, 500))
def test_mcnemar_is_symmetric_in_broken_and_fixed(broke, fixed):
    assert mcnemar_exact(broke, fixed) == mcnemar_exact(fixed, broke)


@SETTINGS
@given(st.integers(0, 300), st.integers(0, 300))
def test_mcnemar_falls_as_the_flips_grow_more_one_sided(broke, fixed):
    if broke < fixed:
        broke, fixed = fixed, broke

    assert mcnemar_exact(broke + 1, fixed) <= mcnemar_exact(broke, fixed)


def test_mcnemar_refuses_a_negative_count() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^mcnemar_exact: fixed=-1; expected a whole number of 0 or more \(a count of "
        r"pairs\)\. Pass the number of flips",
    ):
        mcnemar_exact(3, -1)


def test_flips_p_value_is_mcnemar_of_its_counts() -> None:
    found = flips({"a": True, "b": True, "c": True}, {"a": False, "b": False, "c": False})

    assert found.p_value == mcnemar_exact(3, 0)


# -- paired bootstrap ---------------------------------------------------------------------


def test_paired_bootstrap_is_the_bootstrap_of_the_differences() -> None:
    differences = [b - a for a, b in zip(BEFORE, AFTER, strict=True)]

    assert paired_bootstrap_difference(BEFORE, AFTER, seed=3) == bootstrap_mean(differences, seed=3)


def test_paired_bootstrap_of_a_shift_shared_by_every_pair_is_that_shift() -> None:
    low, high = paired_bootstrap_difference(BEFORE, [b - 0.05 for b in BEFORE])

    assert (low, high) == pytest.approx((-0.05, -0.05))


def test_paired_bootstrap_refuses_sequences_of_different_lengths() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^paired_bootstrap_difference: 3 values before and 2 after; expected one after "
        "for each before",
    ):
        paired_bootstrap_difference([1.0, 2.0, 3.0], [1.0, 2.0])


def test_paired_bootstrap_refuses_no_pairs() -> None:
    with pytest.raises(
        StatisticsError, match=r"^paired_bootstrap_difference: before=\[\]; expected a non-empty"
    ):
        paired_bootstrap_difference([], [])


# -- non-inferiority and equivalence ------------------------------------------------------


def test_non_inferior_holds_for_a_small_drop_within_a_wide_margin() -> None:
    result = non_inferior(BEFORE, AFTER, margin=0.05)

    assert (result.holds, result.lower_bound > -0.05) == (True, True)


def test_non_inferior_fails_for_a_drop_past_the_margin() -> None:
    result = non_inferior(BEFORE, [b - 0.1 for b in AFTER], margin=0.02)

    assert (result.holds, result.p_value > 0.05) == (False, True)


@SETTINGS
@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=40),
    st.floats(0, 0.2),
)
def test_non_inferior_holds_exactly_when_the_lower_bound_clears_the_margin(pairs, margin):
    before, after = [a for a, _ in pairs], [b for _, b in pairs]

    result = non_inferior(before, after, margin)

    if abs(result.lower_bound + margin) > 1e-9:  # not on the boundary itself
        assert result.holds == (result.lower_bound >= -margin)


def test_non_inferior_without_spread_decides_by_the_side_of_the_margin() -> None:
    result = non_inferior([0.5, 0.5, 0.5], [0.49, 0.49, 0.49], margin=0.02)

    assert (result.p_value, result.holds) == (0.0, True)


def test_non_inferior_refuses_a_single_pair() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^non_inferior: 1 pair; expected at least 2 pairs .* Compare more tests",
    ):
        non_inferior([0.5], [0.5], margin=0.02)


def test_non_inferior_refuses_a_negative_margin() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^non_inferior: margin=-0\.02; expected a number of 0 or more in the values' unit",
    ):
        non_inferior(BEFORE, AFTER, margin=-0.02)


def test_non_inferior_refuses_an_alpha_outside_0_1() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^non_inferior: alpha=5; expected a number strictly between 0 and 1, e\.g\. 0\.05",
    ):
        non_inferior(BEFORE, AFTER, margin=0.02, alpha=5)


# -- a drop against its tolerance and significance ----------------------------------------


@pytest.mark.parametrize(
    ("drop", "p_value", "held"),
    [
        (0.10, 0.01, "both"),
        (0.10, 0.20, "past tolerance"),
        (0.01, 0.01, "significant"),
        (0.01, 0.20, "neither"),
    ],
)
def test_check_drop_says_which_held(drop, p_value, held) -> None:
    assert check_drop(drop, tolerance=0.02, p_value=p_value).held == held


def test_check_drop_fails_only_when_both_held() -> None:
    checks = [check_drop(d, 0.02, p) for d in (0.01, 0.1) for p in (0.01, 0.2)]

    assert [check.fails for check in checks] == [False, False, True, False]


def test_check_drop_allows_a_drop_equal_to_its_tolerance() -> None:
    assert check_drop(0.02, 0.02, 0.001).past_tolerance is False


def test_check_drop_counts_a_p_value_equal_to_the_level_as_significant() -> None:
    assert check_drop(0.1, 0.02, 0.05, level=0.05).significant is True


def test_check_drop_keeps_what_it_was_given() -> None:
    assert check_drop(0.1, 0, 0.5, 0.01) == DropCheck(0.1, 0.0, 0.5, 0.01)


def test_check_drop_refuses_a_p_value_above_1() -> None:
    with pytest.raises(
        StatisticsError,
        match=r"^check_drop: p_value=1\.5; expected a probability from 0 to 1\. Pass the "
        r"p-value of the comparison",
    ):
        check_drop(0.1, 0.02, 1.5)


def test_check_drop_refuses_a_negative_tolerance() -> None:
    with pytest.raises(StatisticsError, match=r"^check_drop: tolerance=-1; expected a number"):
        check_drop(0.1, -1, 0.01)


def test_check_drop_refuses_a_drop_that_is_nan() -> None:
    with pytest.raises(StatisticsError, match=r"^check_drop: drop=nan; expected a number"):
        check_drop(float("nan"), 0.02, 0.01)
