"""The estimators (pytest_agentctx/reports/estimators.py) agree with scipy and statsmodels,
which the package does not import at run time (they are development dependencies), over
grids of counts and confidence levels. make test-lowest, which installs the test extra
only, leaves this file out (``*_reference*``)."""

from __future__ import annotations

import math

import pytest
import scipy.special as special
import scipy.stats as stats
from statsmodels.stats.proportion import proportion_confint

from pytest_agentctx.reports.estimators import (
    beta_quantile,
    clopper_pearson,
    normal_interval,
    pass_at_k,
    pass_hat_k,
    regularized_beta,
    student_t_cdf,
    student_t_quantile,
    wilson,
    z_quantile,
)

CONFIDENCES = [0.8, 0.9, 0.95, 0.99]
#: Every count up to 40 runs, and a few counts of large numbers of runs.
SMALL = [(successes, n) for n in range(1, 41) for successes in range(n + 1)]
LARGE = [
    (successes, n)
    for n in (100, 1_000, 10_000)
    for successes in sorted({0, 1, 2, n // 10, n // 2, n - n // 10, n - 2, n - 1, n})
]


def _worst(pairs: list[tuple[float, float]]) -> float:
    return max(abs(a - b) for a, b in pairs)


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_wilson_agrees_with_statsmodels(confidence: float) -> None:
    pairs = []
    for successes, n in SMALL + LARGE:
        ours = wilson(successes, n, confidence)
        theirs = proportion_confint(successes, n, 1 - confidence, method="wilson")
        pairs += [(ours.low, theirs[0]), (ours.high, theirs[1])]

    assert _worst(pairs) < 1e-12


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_clopper_pearson_agrees_with_statsmodels(confidence: float) -> None:
    pairs = []
    for successes, n in SMALL + LARGE:
        ours = clopper_pearson(successes, n, confidence)
        theirs = proportion_confint(successes, n, 1 - confidence, method="beta")
        pairs += [(ours.low, theirs[0]), (ours.high, theirs[1])]

    assert _worst(pairs) < 1e-10


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_normal_interval_agrees_with_statsmodels(confidence: float) -> None:
    pairs = []
    for successes, n in SMALL:
        ours = normal_interval(successes, n, confidence)
        low, high = proportion_confint(successes, n, 1 - confidence, method="normal")
        pairs += [(ours.low, max(0.0, low)), (ours.high, min(1.0, high))]

    assert _worst(pairs) < 1e-12


def test_pass_at_k_agrees_with_chens_product_form() -> None:
    # the numerically stable form of Chen et al.'s code: 1 - prod(1 - k / i), i from n-c+1 to n
    pairs = []
    for c, n in SMALL:
        for k in range(1, n + 1):
            product = math.prod(1 - k / i for i in range(n - c + 1, n + 1))
            pairs.append((pass_at_k(n, c, k), 1.0 if n - c < k else 1 - product))

    assert _worst(pairs) < 1e-12


def test_pass_hat_k_agrees_with_scipy_comb() -> None:
    pairs = [
        (pass_hat_k(n, c, k), special.comb(c, k, exact=True) / special.comb(n, k, exact=True))
        for c, n in SMALL + LARGE
        for k in {1, 2, 3, 5, n // 2, n} - {0}
        if k <= n
    ]

    assert _worst(pairs) < 1e-15


def test_regularized_beta_agrees_with_scipy() -> None:
    pairs = [
        (regularized_beta(x, a, b), float(special.betainc(a, b, x)))
        for a in (0.5, 1, 2.5, 10, 300, 5_000)
        for b in (0.5, 1, 3, 40, 5_000)
        for x in (1e-6, 0.01, 0.2, 0.5, 0.7, 0.99, 1 - 1e-6)
    ]

    assert _worst(pairs) < 1e-10


def test_beta_quantile_agrees_with_scipy() -> None:
    pairs = [
        (beta_quantile(q, a, b), float(stats.beta.ppf(q, a, b)))
        for a in (0.3, 1, 3, 50, 9_000)
        for b in (0.4, 1, 2, 70, 1_000)
        for q in (1e-6, 0.005, 0.025, 0.5, 0.975, 1 - 1e-6)
    ]

    assert _worst(pairs) < 1e-10


def test_z_quantile_agrees_with_scipy() -> None:
    pairs = [(z_quantile(p), float(stats.norm.ppf(p))) for p in (1e-9, 0.025, 0.5, 0.9, 0.995)]

    assert _worst(pairs) < 1e-9


def test_student_t_cdf_agrees_with_scipy() -> None:
    pairs = [
        (student_t_cdf(t, df), float(stats.t.cdf(t, df)))
        for df in (1, 2, 5, 29, 99, 1_000)
        for t in (-40.0, -3.1, -1.0, 0.0, 0.4, 1.7, 12.0)
    ]

    assert _worst(pairs) < 1e-12


def test_student_t_quantile_agrees_with_scipy() -> None:
    pairs = [
        (student_t_quantile(p, df), float(stats.t.ppf(p, df)))
        for df in (1, 3, 29, 500)
        for p in (0.01, 0.05, 0.5, 0.95, 0.999)
    ]

    assert _worst(pairs) < 1e-9
