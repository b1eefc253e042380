"""How far a test may move from its baseline before the gate fails it
(:class:`GateTolerance`): a module of its own, so that reading the baseline options at
start-up (bad ones are usage errors) does not import the gate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_agentctx.reports.errors import ReportError

__all__ = ["GateTolerance", "TrajectoryMode"]

TrajectoryMode = Literal["exact", "unordered", "ignore"]
_TRAJECTORY_MODES: tuple[TrajectoryMode, ...] = ("exact", "unordered", "ignore")
_IGNORE = ("ignore", "off", "none")


@dataclass(frozen=True)
class GateTolerance:
    """How far a test may move from its baseline before the gate fails it.

    ``tokens_percent``: allowed change of the test's total tokens, in percent of the
    baseline's (either way); ``iterations``: allowed change of its iterations, as a count;
    ``trajectory``: ``exact`` (the same tool calls in the same order), ``unordered`` (the
    same calls, any order) or ``ignore``. ``None`` ignores tokens or iterations.
    """

    tokens_percent: float | None = 10.0
    iterations: int | None = 0
    trajectory: TrajectoryMode = "exact"

    def __post_init__(self) -> None:
        if self.tokens_percent is not None and not self.tokens_percent >= 0:
            raise ReportError(
                f"tokens tolerance {self.tokens_percent!r}%: expected a percentage of 0 or "
                "more, e.g. 10 (or 'ignore')."
            )
        if self.iterations is not None and self.iterations < 0:
            raise ReportError(
                f"iterations tolerance {self.iterations!r}: expected a count of 0 or more "
                "(or 'ignore')."
            )
        if self.trajectory not in _TRAJECTORY_MODES:
            raise ReportError(
                f"trajectory tolerance {self.trajectory!r}: expected one of "
                f"{', '.join(_TRAJECTORY_MODES)}."
            )

    @classmethod
    def parse(cls, *, tokens: str, iterations: str, trajectory: str) -> GateTolerance:
        """A tolerance from option text: ``tokens`` like ``10`` or ``10%``, ``iterations``
        like ``1``, either ``ignore``; ``trajectory`` one of exact, unordered, ignore."""
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
        return cls(tokens_percent, iteration_count, mode)

    def describe(self) -> str:
        """The tolerance in words, for the gate's summary."""
        tokens = "ignored" if self.tokens_percent is None else f"±{self.tokens_percent:g}%"
        iterations = "ignored" if self.iterations is None else f"±{self.iterations}"
        return f"tokens {tokens}, iterations {iterations}, trajectory {self.trajectory}"
