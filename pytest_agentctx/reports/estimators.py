"""Estimators of a test's pass rate from repeated runs, in plain Python (``math`` and
``statistics`` only, so a session imports no numerical library for them).

- Intervals of a pass rate from ``successes`` of ``n`` runs: :func:`wilson` (the default
  interval: close to its nominal coverage for small ``n``), :func:`clopper_pearson` (exact:
  never below its nominal coverage, wider) and :func:`normal_interval` (the Wald interval,
  kept only to show how it under-covers).
- Chen et al.'s unbiased estimators of "at least one of k runs passes", :func:`pass_at_k`,
  and of "all k runs pass", :func:`pass_hat_k`.
- A test's verdict from its interval, :func:`stability`: stable pass, stable fail or
  stochastic.
- The percentile bootstrap interval of a mean, :func:`bootstrap_mean` (seeded, so the same
  values give the same interval in any process).
- The distributions they rest on: :func:`z_quantile` (the standard normal's),
  :func:`regularized_beta` (the binomial's and Student's t's cumulative distributions are
  written with it), :func:`beta_quantile`, :func:`student_t_cdf`.

Every bad input raises :class:`~pytest_agentctx.reports.errors.StatisticsError` (a
``ValueError``) saying what was given, what is expected and what to change.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Sequence
from statistics import NormalDist
from typing import Literal, NamedTuple

from pytest_agentctx.reports.errors import StatisticsError

#: A test's verdict from the interval of its pass rate (:func:`stability`).
Stability = Literal["stable pass", "stable fail", "stochastic"]

_STANDARD_NORMAL = NormalDist()
#: The continued fraction of :func:`regularized_beta` stops when a step changes it by less
#: than this (relative), or after ``_MAX_STEPS`` steps; both are far from binding for the
#: counts of a test suite (it converges in about the square root of the larger parameter).
_EPSILON = 1e-16
_MAX_STEPS = 100_000
_TINY = 1e-300


class Interval(NamedTuple):
    """A confidence interval ``[low, high]``."""

    low: float
    high: float

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the interval, bounds included."""
        return self.low <= value <= self.high

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low


def check_confidence(
    confidence: float,
    where: str,
    name: str = "confidence",
    example: str = "0.95 for a 95% interval",
) -> float:
    """``confidence`` (a level strictly between 0 and 1, called ``name``) as a float, or a
    :class:`StatisticsError` naming ``where``."""
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 < confidence < 1
    ):
        raise StatisticsError(
            f"{where}: {name}={confidence!r}; expected a number strictly between 0 and 1, "
            f"e.g. {example}. Pass the level as a fraction."
        )
    return float(confidence)


def check_counts(successes: int, n: int, where: str, name: str = "successes") -> None:
    """A :class:`StatisticsError` naming ``where`` unless ``0 <= successes <= n``, whole
    numbers (``successes`` called ``name`` in the message)."""
    for label, value in (("n", n), (name, successes)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise StatisticsError(
                f"{where}: {label}={value!r}; expected a whole number (a count of runs). "
                f"Pass {label} as an int."
            )
    if n < 0:
        raise StatisticsError(
            f"{where}: n={n}; expected a count of runs of 0 or more. Pass the number of runs "
            "that counted (those not skipped)."
        )
    if not 0 <= successes <= n:
        raise StatisticsError(
            f"{where}: {name}={successes} of n={n}; expected 0 <= {name} <= n. Pass "
            "the number of runs that passed, out of the runs that counted."
        )


def z_quantile(p: float) -> float:
    """The standard normal's quantile: the ``z`` with ``P(Z <= z) = p``, for ``0 < p < 1``
    (``z_quantile(0.975)`` is about 1.96)."""
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0 < p < 1:
        raise StatisticsError(
            f"z_quantile: p={p!r}; expected a probability strictly between 0 and 1, e.g. "
            "0.975. Pass a probability."
        )
    return _STANDARD_NORMAL.inv_cdf(p)


def _two_sided_z(confidence: float) -> float:
    return _STANDARD_NORMAL.inv_cdf(1 - (1 - confidence) / 2)


def wilson(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """The Wilson score interval of a pass rate: ``successes`` of ``n`` runs passed.

    Its coverage stays near ``confidence`` for small ``n`` (on average over the rates; at
    some rates close to 0 or 1 it falls a few points below), and it is never empty or
    outside ``[0, 1]``. Its low bound is 0 exactly when no run passed, its high bound 1
    exactly when every run passed. No runs (``n == 0``) give ``[0, 1]``: nothing is known.
    """
    check_counts(successes, n, "wilson")
    confidence = check_confidence(confidence, "wilson")
    if n == 0:
        return Interval(0.0, 1.0)
    z = _two_sided_z(confidence)
    rate = successes / n
    z2n = z * z / n
    denominator = 1 + z2n
    center = (rate + z2n / 2) / denominator
    half = z * math.sqrt(rate * (1 - rate) / n + z2n / (4 * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return Interval(low, high)


def normal_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """The normal-approximation (Wald) interval ``rate ± z·sqrt(rate·(1-rate)/n)``, cut to
    ``[0, 1]``. It under-covers for small ``n`` and rates near 0 or 1 (it is a single point
    when every run passed or none did): it is here to be shown beside :func:`wilson`, not
    to gate on. No runs give ``[0, 1]``."""
    check_counts(successes, n, "normal_interval")
    confidence = check_confidence(confidence, "normal_interval")
    if n == 0:
        return Interval(0.0, 1.0)
    rate = successes / n
    half = _two_sided_z(confidence) * math.sqrt(rate * (1 - rate) / n)
    return Interval(max(0.0, rate - half), min(1.0, rate + half))


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the incomplete beta function, by the modified Lentz
    method (Numerical Recipes, ``betacf``); it converges fast for ``x < (a+1)/(a+b+2)``."""
    c = 1.0
    d = 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, _MAX_STEPS):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a - 1 + m2) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > _TINY else _TINY)
            c = 1 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            step = c * d
            fraction *= step
        if abs(step - 1) < _EPSILON:
            break
    return fraction


def _log_beta_front(x: float, a: float, b: float) -> float:
    return (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )


def regularized_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)``, for ``a, b > 0``: the
    cumulative distribution of a Beta(a, b) variable at ``x``. With it, for ``X`` binomial
    of ``n`` trials of rate ``p``, ``P(X >= k) = I_p(k, n - k + 1)``."""
    if not (a > 0 and b > 0):
        raise StatisticsError(
            f"regularized_beta: a={a!r}, b={b!r}; expected both shape parameters above 0. "
            "Pass positive parameters (for a binomial tail: a count of passes and of fails "
            "plus one)."
        )
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(_log_beta_front(x, a, b))
    if x < (a + 1) / (a + b + 2):
        return min(1.0, front * _beta_fraction(x, a, b) / a)
    return max(0.0, 1 - front * _beta_fraction(1 - x, b, a) / b)


def beta_quantile(q: float, a: float, b: float) -> float:
    """The ``x`` with ``I_x(a, b) = q`` (the Beta(a, b) quantile), by Newton's method on
    :func:`regularized_beta` (its derivative is the Beta density) inside a bracket that
    every step narrows: a step that would leave the bracket bisects it instead, so it
    cannot diverge, and it ends when the step or the bracket is below ``1e-15``."""
    low, high = 0.0, 1.0
    x = a / (a + b)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    for _ in range(_MAX_STEPS):
        miss = regularized_beta(x, a, b) - q
        if miss == 0:
            return x
        low, high = (x, high) if miss < 0 else (low, x)
        log_density = log_front + (a - 1) * math.log(x) + (b - 1) * math.log1p(-x)
        step = x - miss / math.exp(log_density) if -700 < log_density < 700 else low
        if not low < step < high:
            step = (low + high) / 2
        if abs(step - x) <= 1e-15 or high - low <= 1e-15:
            return step
        x = step
    return x


@functools.lru_cache(maxsize=4096)
def _clopper_pearson(successes: int, n: int, confidence: float) -> Interval:
    tail = (1 - confidence) / 2
    # Beta(k, 1)'s quantile is q ** (1 / k): the bounds when every run passed (or none did)
    # in closed form
    if successes == 0:
        low = 0.0
    elif successes == n:
        low = tail ** (1 / n)
    else:
        low = beta_quantile(tail, successes, n - successes + 1)
    # the high bound through the failures' low bound: the small tail keeps its precision
    if successes == n:
        high = 1.0
    elif successes == 0:
        high = 1 - tail ** (1 / n)
    else:
        high = 1 - beta_quantile(tail, n - successes, successes + 1)
    return Interval(low, high)


def clopper_pearson(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """The exact (Clopper-Pearson) interval of a pass rate: its bounds are the rates at
    which seeing ``successes`` or more (``successes`` or fewer) of ``n`` has probability
    ``(1 - confidence) / 2``, the quantiles of Beta(successes, n - successes + 1) and
    Beta(successes + 1, n - successes). Its coverage is never below ``confidence`` (it is
    wider than :func:`wilson`). The quantiles are found by :func:`beta_quantile` on the
    binomial's cumulative distribution (:func:`regularized_beta`), accurate to about ``1e-12``, and
    kept for the counts asked again (a suite's tests share a few). No runs give
    ``[0, 1]``."""
    check_counts(successes, n, "clopper_pearson")
    confidence = check_confidence(confidence, "clopper_pearson")
    if n == 0:
        return Interval(0.0, 1.0)
    return _clopper_pearson(successes, n, confidence)


def _check_k(n: int, c: int, k: int, where: str) -> None:
    check_counts(c, n, where, "c")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise StatisticsError(
            f"{where}: k={k!r} with n={n} runs; expected a whole number from 1 to n (the "
            "estimate of k runs needs at least k runs). Ask for a smaller k, or run the "
            "test more times."
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k, the chance that at least one of ``k`` runs passes,
    from ``c`` passes in ``n`` runs (Chen et al., 2021): ``1 - C(n-c, k) / C(n, k)``, the
    share of the ``k``-run subsets of the runs with at least one pass. Exact: the binomial
    coefficients are whole numbers, divided once. ``1 <= k <= n``."""
    _check_k(n, c, k, "pass_at_k")
    return 1 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass^k, the chance that all of ``k`` runs pass, from ``c``
    passes in ``n`` runs: ``C(c, k) / C(n, k)``, the share of the ``k``-run subsets of the
    runs that passed whole. Its expectation is ``rate**k`` exactly, where the plug-in
    ``(c / n)**k`` overstates it (Jensen). ``1 <= k <= n``."""
    _check_k(n, c, k, "pass_hat_k")
    return math.comb(c, k) / math.comb(n, k)


def stability(successes: int, n: int, interval: Interval | None = None) -> Stability:
    """A test's verdict from the interval of its pass rate (:func:`wilson` when ``interval``
    is not given):

    - ``"stochastic"``: the interval excludes both 0 and 1 (``0 < low`` and
      ``high < 1``): the runs show the test both passes and fails;
    - ``"stable pass"``: the interval reaches 1 and excludes 0 (``high >= 1`` and
      ``low > 0``): the runs are consistent with a test that always passes;
    - ``"stable fail"``: the interval reaches 0 and excludes 1 (``low <= 0`` and
      ``high < 1``): the runs are consistent with a test that always fails.

    With the Wilson or Clopper-Pearson interval this is: every run passed, no run passed,
    or some of each (``n >= 1``). An interval that reaches both 0 and 1 (no runs, or a
    normal interval of very few runs) says nothing, and raises :class:`StatisticsError`.
    """
    check_counts(successes, n, "stability")
    if interval is None:
        interval = wilson(successes, n)
    low, high = interval
    if not 0 <= low <= high <= 1:
        raise StatisticsError(
            f"stability: interval ({low!r}, {high!r}); expected 0 <= low <= high <= 1. Pass "
            "the interval of the pass rate, e.g. wilson(successes, n)."
        )
    if low > 0 and high < 1:
        return "stochastic"
    if low > 0:
        return "stable pass"
    if high < 1:
        return "stable fail"
    raise StatisticsError(
        f"stability: {successes} of {n} runs passed and the interval ({low:g}, {high:g}) "
        "reaches both 0 and 1, which tells nothing about the test; expected at least one "
        "run and an interval that excludes 0 or 1. Run the test at least once, and use "
        "wilson() or clopper_pearson() for the interval."
    )


def _percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly between order statistics
    (the default of numpy's ``percentile`` and of ``statistics.quantiles``' inclusive
    method)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    fraction = position - below
    return ordered[below] + (ordered[above] - ordered[below]) * fraction


def check_values(values: Sequence[float], where: str, name: str = "values") -> list[float]:
    """``values`` as a list of finite floats, or a :class:`StatisticsError` naming
    ``where``."""
    if isinstance(values, str | bytes) or len(values) == 0:
        raise StatisticsError(
            f"{where}: {name}={values!r}; expected a non-empty sequence of numbers (one per "
            "run). Pass at least one value."
        )
    checked: list[float] = []
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise StatisticsError(
                f"{where}: {name}[{index}]={value!r}; expected a number. Pass numbers only "
                "(True and False: as 1 and 0)."
            )
        if not math.isfinite(value):
            raise StatisticsError(
                f"{where}: {name}[{index}]={value!r}; expected a finite number. Leave out "
                "the runs without a value."
            )
        checked.append(float(value))
    return checked


def check_resamples(resamples: int, where: str) -> None:
    """A :class:`StatisticsError` naming ``where`` unless ``resamples`` is a whole number of
    at least 1."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise StatisticsError(
            f"{where}: resamples={resamples!r}; expected a whole number of 1 or more (2000 "
            "is usual). Pass a positive int."
        )


def bootstrap_mean(
    values: Sequence[float], confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> Interval:
    """The percentile bootstrap interval of the mean of ``values`` (e.g. a judge's scores
    over repeated runs): ``resamples`` samples of ``len(values)`` values drawn with
    replacement, and the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles
    of their means. The draws come from ``random.Random(seed)``, so the same values give
    the same interval in any process. Equal values give a single point."""
    checked = check_values(values, "bootstrap_mean")
    confidence = check_confidence(confidence, "bootstrap_mean")
    check_resamples(resamples, "bootstrap_mean")
    if min(checked) == max(checked):
        return Interval(checked[0], checked[0])
    generator = random.Random(seed)
    size = len(checked)
    means = sorted(math.fsum(generator.choices(checked, k=size)) / size for _ in range(resamples))
    tail = (1 - confidence) / 2
    # a mean cannot leave the values' range; the rounding of a sum can, by an ulp
    smallest, largest = min(checked), max(checked)
    return Interval(
        min(max(_percentile(means, tail), smallest), largest),
        min(max(_percentile(means, 1 - tail), smallest), largest),
    )


def student_t_cdf(t: float, df: float) -> float:
    """``P(T <= t)`` for Student's t with ``df > 0`` degrees of freedom, through
    :func:`regularized_beta`: the tail beyond ``|t|`` is ``I_{df/(df+t²)}(df/2, 1/2) / 2``."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = regularized_beta(df / (df + t * t), df / 2, 0.5) / 2
    return 1 - tail if t > 0 else tail


def student_t_quantile(p: float, df: float) -> float:
    """The ``t`` with ``P(T <= t) = p`` (``0 < p < 1``), by bisection on
    :func:`student_t_cdf`."""
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -student_t_quantile(1 - p, df)
    high = 1.0
    while student_t_cdf(high, df) < p:
        high *= 2
    low = 0.0
    while high - low > 1e-12 * max(1.0, high):
        middle = (low + high) / 2
        if student_t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2
