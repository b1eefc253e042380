"""A session compared with its baseline test by test: the same tests (and repetitions) run
before and after a change are pairs, and paired comparisons see a regression that totals
compared apart would take for noise.

- :func:`flips`: the tests that broke (passed before, fail now) and those that were fixed.
- :func:`mcnemar_exact`: the exact McNemar test on the flips: could they be chance?
- :func:`paired_bootstrap_difference`: an interval of the mean change of a figure (pass
  rate, cost, tokens, iterations), pairs resampled together.
- :func:`non_inferior`: whether the change is no worse than a margin ("no worse than 2
  points"), and whether it lies within the margin both ways (equivalence, TOST).
- :func:`check_drop`: a drop held against its tolerance and its significance; the gate
  fails on a drop past its tolerance that is also significant.

Pure Python, like :mod:`~pytest_agentctx.reports.estimators`, whose errors it raises.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_agentctx.reports.errors import StatisticsError
from pytest_agentctx.reports.estimators import (
    Interval,
    bootstrap_mean,
    check_confidence,
    check_values,
    regularized_beta,
    student_t_cdf,
    student_t_quantile,
)

#: Which of the two conditions of a failing drop held (:func:`check_drop`).
Significance = Literal["both", "past tolerance", "significant", "neither"]

#: Up to this many discordant pairs the McNemar p-value is summed exactly in whole numbers;
#: above it, it comes from the regularized incomplete beta function (relative error about
#: 1e-12).
_EXACT_PAIRS = 10_000


@dataclass(frozen=True)
class Flips:
    """The outcomes of the tests run both before and after, compared pair by pair.

    ``broke``: the ids that passed before and fail now; ``fixed``: those that failed before
    and pass now; ``paired``: how many ids both sides have; ``new``: the ids of the after
    side only, ``not_run``: those of the before side only. Each tuple is sorted."""

    broke: tuple[str, ...]
    fixed: tuple[str, ...]
    paired: int
    new: tuple[str, ...] = ()
    not_run: tuple[str, ...] = ()

    @property
    def unpaired(self) -> tuple[str, ...]:
        """The ids present on one side only, sorted: ``new`` and ``not_run`` together."""
        return tuple(sorted((*self.new, *self.not_run)))

    @property
    def change(self) -> float:
        """The change of the pass rate over the paired ids, ``(fixed - broke) / paired``
        (negative: a drop); 0.0 with no pairs."""
        return (len(self.fixed) - len(self.broke)) / self.paired if self.paired else 0.0

    @property
    def p_value(self) -> float:
        """The exact McNemar p-value of the flips (:func:`mcnemar_exact`)."""
        return mcnemar_exact(len(self.broke), len(self.fixed))


def _outcome(value: object, side: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise StatisticsError(
            f"flips: {side}[{key!r}]={value!r}; expected True (passed) or False (failed). "
            "Leave out the tests that were skipped or did not run."
        )
    return value


def flips(before: Mapping[str, bool], after: Mapping[str, bool]) -> Flips:
    """Pair ``before`` and ``after`` (test id, or test id and repetition, to whether it
    passed) by id, and list the pairs that changed: :class:`Flips`."""
    broke: list[str] = []
    fixed: list[str] = []
    paired = 0
    for key, now in after.items():
        if key not in before:
            continue
        paired += 1
        was = _outcome(before[key], "before", key)
        if was != _outcome(now, "after", key):
            (broke if was else fixed).append(key)
    return Flips(
        broke=tuple(sorted(broke)),
        fixed=tuple(sorted(fixed)),
        paired=paired,
        new=tuple(sorted(key for key in after if key not in before)),
        not_run=tuple(sorted(key for key in before if key not in after)),
    )


def _check_count(value: int, name: str, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StatisticsError(
            f"{where}: {name}={value!r}; expected a whole number of 0 or more (a count of "
            "pairs). Pass the number of flips, e.g. len(flips(before, after).broke)."
        )


def _binomial_half_cdf(k: int, m: int) -> float:
    """``P(X <= k)`` for ``X`` binomial of ``m`` trials of rate 1/2."""
    if k >= m:
        return 1.0
    if m > _EXACT_PAIRS:
        return regularized_beta(0.5, m - k, k + 1)
    term = total = 1
    for i in range(k):
        term = term * (m - i) // (i + 1)
        total += term
    return float(total / 2**m)  # whole numbers divided once: correctly rounded


def mcnemar_exact(broke: int, fixed: int) -> float:
    """The exact two-sided McNemar p-value of ``broke`` pass-to-fail and ``fixed``
    fail-to-pass pairs: the binomial test of the discordant pairs, ``min(1, 2·P(X <=
    min(broke, fixed)))`` with ``X`` binomial of ``broke + fixed`` trials of rate 1/2.
    With no discordant pair it is 1.0. The pairs that did not change carry no
    information on the direction of a change, and are left out, as the test prescribes.

    It assumes independent pairs. Each pair is one test (or one repetition of a test) run
    before and after, so the outcomes of the tests may differ in rate freely: if nothing
    changed, each discordant pair is as likely one way as the other whatever its rate."""
    _check_count(broke, "broke", "mcnemar_exact")
    _check_count(fixed, "fixed", "mcnemar_exact")
    if broke + fixed == 0:
        return 1.0
    return min(1.0, 2 * _binomial_half_cdf(min(broke, fixed), broke + fixed))


def _differences(before: Sequence[float], after: Sequence[float], where: str) -> list[float]:
    was = check_values(before, where, "before")
    now = check_values(after, where, "after")
    if len(was) != len(now):
        raise StatisticsError(
            f"{where}: {len(was)} values before and {len(now)} after; expected one after "
            "for each before, in the same order (pairs). Pass the values of the tests that "
            "ran on both sides only."
        )
    return [b - a for a, b in zip(was, now, strict=True)]


def paired_bootstrap_difference(
    before: Sequence[float],
    after: Sequence[float],
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """The percentile bootstrap interval of the mean change ``after[i] - before[i]``: the
    pairs are resampled together (their differences are), so what the tests share on both
    sides cancels out. Seeded like
    :func:`~pytest_agentctx.reports.estimators.bootstrap_mean`: the same values give the
    same interval in any process."""
    differences = _differences(before, after, "paired_bootstrap_difference")
    return bootstrap_mean(differences, confidence, resamples, seed)


@dataclass(frozen=True)
class NonInferiority:
    """What :func:`non_inferior` found.

    ``difference``: the mean of ``after - before`` over ``n`` pairs; ``lower_bound``: its
    one-sided ``1 - alpha`` lower confidence bound; ``p_value``: the p-value of "the change
    is ``-margin`` or worse" (``holds`` when it is at most ``alpha``, that is when
    ``lower_bound >= -margin``); ``p_upper``: the p-value of "the change is ``+margin`` or
    more"; ``equivalent``: both p-values at most ``alpha`` (TOST: the change lies within
    ``±margin``)."""

    difference: float
    lower_bound: float
    p_value: float
    p_upper: float
    holds: bool
    equivalent: bool
    margin: float
    alpha: float
    n: int


def _one_sided(mean: float, bound: float, error: float, df: int) -> tuple[float, float]:
    """The p-values of ``mean <= bound`` against ``mean > bound`` and of ``mean >= bound``
    against ``mean < bound``, by Student's t; with no spread, 0 or 1 by the side."""
    if error == 0:
        above = 0.0 if mean > bound else 1.0
        below = 0.0 if mean < bound else 1.0
        return above, below
    t = (mean - bound) / error
    return 1 - student_t_cdf(t, df), student_t_cdf(t, df)


def non_inferior(
    before: Sequence[float], after: Sequence[float], margin: float, alpha: float = 0.05
) -> NonInferiority:
    """Whether ``after`` is no worse than ``before`` by more than ``margin``, pair by pair:
    a non-inferiority test, and the two one-sided tests (TOST) of equivalence within
    ``±margin``. ``margin`` is in the values' unit: for pass rates from 0 to 1, ``0.02``
    is "no worse than 2 points". Higher values are better; for costs, pass them negated.

    The test is the paired t test on the differences ``after[i] - before[i]`` (``n - 1``
    degrees of freedom): it assumes independent pairs and a mean difference close to
    normal, which holds for a few dozen pairs or more (the central limit theorem) even
    when each difference is -1, 0 or 1 (a test's pass or fail), and is rough below that.
    With all differences equal there is no spread, and each p-value is 0 or 1."""
    differences = _differences(before, after, "non_inferior")
    if len(differences) < 2:
        raise StatisticsError(
            f"non_inferior: {len(differences)} pair; expected at least 2 pairs (the test "
            "estimates their spread). Compare more tests or repetitions."
        )
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not margin >= 0:
        raise StatisticsError(
            f"non_inferior: margin={margin!r}; expected a number of 0 or more in the values' "
            "unit, e.g. 0.02 for 2 points of pass rate."
        )
    alpha = check_confidence(alpha, "non_inferior", "alpha", "0.05")
    n = len(differences)
    mean = math.fsum(differences) / n
    error = statistics.stdev(differences) / math.sqrt(n)
    p_value, _ = _one_sided(mean, -margin, error, n - 1)
    _, p_upper = _one_sided(mean, margin, error, n - 1)
    lower_bound = mean - student_t_quantile(1 - alpha, n - 1) * error
    return NonInferiority(
        difference=mean,
        lower_bound=lower_bound,
        p_value=p_value,
        p_upper=p_upper,
        holds=p_value <= alpha,
        equivalent=max(p_value, p_upper) <= alpha,
        margin=float(margin),
        alpha=alpha,
        n=n,
    )


@dataclass(frozen=True)
class DropCheck:
    """A drop of a figure (before minus now; positive is worse) held against its
    tolerance and its p-value. ``past_tolerance``: ``drop > tolerance``;
    ``significant``: ``p_value <= level``."""

    drop: float
    tolerance: float
    p_value: float
    level: float

    @property
    def past_tolerance(self) -> bool:
        return self.drop > self.tolerance

    @property
    def significant(self) -> bool:
        return self.p_value <= self.level

    @property
    def held(self) -> Significance:
        """Which held: ``"both"``, ``"past tolerance"``, ``"significant"`` or
        ``"neither"``."""
        if self.past_tolerance:
            return "both" if self.significant else "past tolerance"
        return "significant" if self.significant else "neither"

    @property
    def fails(self) -> bool:
        """Whether the gate fails on it: the drop is past its tolerance and significant."""
        return self.held == "both"


def check_drop(drop: float, tolerance: float, p_value: float, level: float = 0.05) -> DropCheck:
    """A :class:`DropCheck` of ``drop`` (before minus now, e.g. 0.10 for a pass rate 10
    points lower) against ``tolerance`` (0 or more, the same unit) and ``p_value`` (of the
    test of the change, e.g. :func:`mcnemar_exact`) at ``level``."""
    if isinstance(drop, bool) or not isinstance(drop, int | float) or math.isnan(drop):
        raise StatisticsError(
            f"check_drop: drop={drop!r}; expected a number (before minus now). Pass the "
            "drop of the figure."
        )
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or not tolerance >= 0:
        raise StatisticsError(
            f"check_drop: tolerance={tolerance!r}; expected a number of 0 or more in the "
            "drop's unit, e.g. 0.02 for 2 points of pass rate."
        )
    if isinstance(p_value, bool) or not isinstance(p_value, int | float) or not 0 <= p_value <= 1:
        raise StatisticsError(
            f"check_drop: p_value={p_value!r}; expected a probability from 0 to 1. Pass "
            "the p-value of the comparison, e.g. mcnemar_exact(broke, fixed)."
        )
    level = check_confidence(level, "check_drop", "level", "0.05")
    return DropCheck(float(drop), float(tolerance), float(p_value), level)
