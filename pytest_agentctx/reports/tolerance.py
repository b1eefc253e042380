"""The baseline options read (:func:`parse_tolerance`): how far a test may move from its
baseline before the gate fails it, the figures of a
:class:`~pytest_agentctx.reports.gate.GateTolerance` (a bad option is a usage error)."""

from __future__ import annotations

import math
from typing import Literal

from pytest_agentctx.reports.errors import ReportError

TrajectoryMode = Literal["exact", "unordered", "ignore"]
_TRAJECTORY_MODES: tuple[TrajectoryMode, ...] = ("exact", "unordered", "ignore")
_IGNORE = ("ignore", "off", "none")


def parse_tolerance(
    *, tokens: str, iterations: str, trajectory: str
) -> tuple[float | None, int | None, TrajectoryMode]:
    """The tolerance's figures from option text: ``tokens`` like ``10`` or ``10%``,
    ``iterations`` like ``1``, either ``ignore``; ``trajectory`` one of exact, unordered,
    ignore. A bad value raises :class:`ReportError` naming the option."""
    where = "--agent-baseline-tokens / agent_baseline_tokens"
    token_text = tokens.strip().lower().removesuffix("%").strip()
    tokens_percent: float | None = None
    if token_text not in _IGNORE:
        try:
            tokens_percent = float(token_text)
        except ValueError:
            raise ReportError(
                f"{where} = {tokens!r}: expected a percentage such as 10 or 10% (or "
                "ignore). Fix the option and run pytest again."
            ) from None
        if not tokens_percent >= 0:  # negative or nan
            raise ReportError(
                f"{where} = {tokens!r}: tokens tolerance {tokens_percent!r}%: expected a "
                "percentage of 0 or more, e.g. 10 (or ignore). Fix the option and run "
                "pytest again."
            )
    where = "--agent-baseline-iterations / agent_baseline_iterations"
    iteration_text = iterations.strip().lower()
    iteration_count: int | None = None
    if iteration_text not in _IGNORE:
        try:
            iteration_count = int(iteration_text)
        except ValueError:
            raise ReportError(
                f"{where} = {iterations!r}: expected a whole number such as 0 or 1 (or "
                "ignore). Fix the option and run pytest again."
            ) from None
        if iteration_count < 0:
            raise ReportError(
                f"{where} = {iterations!r}: iterations tolerance {iteration_count!r}: "
                "expected a count of 0 or more, e.g. 0 or 1 (or ignore). Fix the option "
                "and run pytest again."
            )
    mode = trajectory.strip().lower()
    if mode not in _TRAJECTORY_MODES:
        raise ReportError(
            f"--agent-baseline-trajectory / agent_baseline_trajectory = {trajectory!r}: "
            f"expected one of {', '.join(_TRAJECTORY_MODES)}. Fix the option and run "
            "pytest again."
        )
    return tokens_percent, iteration_count, mode


def parse_significance(
    *, level: str, margin: str, flips: str = "report"
) -> tuple[float, float | None, bool]:
    """The pass rate comparison's figures from option text: ``level`` like ``0.05`` (a
    probability between 0 and 1), ``margin`` like ``2`` or ``2%`` (points of pass rate from
    0 to 100) or empty (none), ``flips`` ``report`` or ``fail`` (whether a pass that fails
    now fails the gate). A bad value raises :class:`ReportError` naming the option, what
    was given, what was expected and an example."""
    return (*_level_and_margin(level, margin), _fail_on_flips(flips))


def _fail_on_flips(flips: str) -> bool:
    text = flips.strip().lower()
    if text not in ("report", "fail"):
        raise ReportError(
            f"--agent-baseline-flips / agent_baseline_flips = {flips!r}: expected report (the "
            "flips are listed; the pass rate decides) or fail (a test that passed in the "
            "baseline and fails now fails the gate), e.g. agent_baseline_flips = fail. Fix "
            "the option and run pytest again."
        )
    return text == "fail"


def _level_and_margin(level: str, margin: str) -> tuple[float, float | None]:
    where = "--agent-baseline-level / agent_baseline_level"
    try:
        significance = float(level.strip())
    except ValueError:
        significance = math.nan
    if not 0 < significance < 1:  # nan included
        raise ReportError(
            f"{where} = {level!r}: expected a significance level between 0 and 1 (the "
            "chance of failing on noise), e.g. 0.05 or 0.01. Fix the option and run pytest "
            "again."
        )
    where = "--agent-baseline-margin / agent_baseline_margin"
    text = margin.strip().lower().removesuffix("%").strip()
    if text in ("", *_IGNORE):
        return significance, None
    try:
        points = float(text)
    except ValueError:
        points = math.nan
    if not 0 <= points <= 100:
        raise ReportError(
            f"{where} = {margin!r}: expected points of pass rate from 0 to 100 (how far the "
            "pass rate may drop before the gate fails on a significant drop), e.g. 2 for "
            "'no worse than 2 points'. Fix the option and run pytest again."
        )
    return significance, points
