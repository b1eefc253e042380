"""The paired comparisons (pytest_agentctx/reports/pairing.py) agree with scipy and
statsmodels, development dependencies the package does not import at run time. make
test-lowest, which installs the test extra only, leaves this file out (``*_reference*``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as stats
import statsmodels.stats.weightstats as weightstats

from pytest_agentctx.reports.pairing import mcnemar_exact, non_inferior

#: Paired figures of 40 tests: after = before moved a little, differently per test.
BEFORE = [0.5 + 0.4 * ((i * 37) % 11) / 11 for i in range(40)]
AFTER = [b - 0.01 + 0.06 * ((i * 53) % 7 - 3) / 7 for i, b in enumerate(BEFORE)]


def test_mcnemar_agrees_with_scipy_binomtest() -> None:
    counts = [(b, c) for b in range(41) for c in range(41)] + [
        (300, 250),
        (4_000, 3_900),
        (6_100, 5_800),  # above the exact sum: through the incomplete beta
    ]
    pairs = [
        (mcnemar_exact(b, c), stats.binomtest(min(b, c), b + c, 0.5).pvalue)
        for b, c in counts
        if b + c
    ]

    assert max(abs(ours - theirs) / theirs for ours, theirs in pairs) < 1e-9


def test_non_inferior_p_value_agrees_with_scipys_one_sided_t_test() -> None:
    shifted = np.array(AFTER) - np.array(BEFORE) + 0.02

    result = non_inferior(BEFORE, AFTER, margin=0.02)

    expected = stats.ttest_1samp(shifted, 0.0, alternative="greater").pvalue
    assert result.p_value == pytest.approx(expected, rel=1e-9)


def test_non_inferior_equivalence_agrees_with_statsmodels_tost() -> None:
    result = non_inferior(BEFORE, AFTER, margin=0.02)

    p_value, lower, upper = weightstats.ttost_paired(np.array(AFTER), np.array(BEFORE), -0.02, 0.02)

    assert (result.p_value, result.p_upper) == pytest.approx((lower[1], upper[1]), rel=1e-9)
    assert result.equivalent == (p_value <= 0.05)


def test_non_inferior_lower_bound_is_the_one_sided_t_bound() -> None:
    differences = np.array(AFTER) - np.array(BEFORE)
    error = stats.sem(differences)

    result = non_inferior(BEFORE, AFTER, margin=0.02, alpha=0.05)

    expected = differences.mean() - stats.t.ppf(0.95, len(differences) - 1) * error
    assert result.lower_bound == pytest.approx(expected, rel=1e-9)
