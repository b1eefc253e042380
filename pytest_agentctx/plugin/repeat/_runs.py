"""How an ``agent_repeat`` test runs: its marker read (:class:`RepeatSpec`), its
repetitions run with fresh function fixtures (:func:`run_repetitions`) and tallied
(:class:`RepeatTally`), and one setup, call and teardown report logged for them
(:func:`repeat_reports`); each repetition gets its own cassette
(:func:`repeat_cassette_path`). The package's hooks import it for a test marked
``agent_repeat`` only.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

import pytest

from pytest_agentctx.reports.errors import RepeatError
from pytest_agentctx.reports.estimators import Interval, Stability, stability, wilson

from ..keys import REPEAT_ATTRIBUTE

if TYPE_CHECKING:
    from pytest_agentctx.reports.schema import RepeatEntry


def repeat_cassette_path(path: Path, index: int) -> Path:
    """The cassette of repetition ``index`` (from 1): ``name.json`` -> ``name-repeat-2.json``."""
    return path.with_name(f"{path.stem}-repeat-{index}{path.suffix}")


@dataclass(frozen=True)
class RepeatSpec:
    """``@pytest.mark.agent_repeat(runs, min_pass_rate=1.0)``: run a test ``runs`` times;
    it passes when at least ``min_pass_rate`` of the runs (that were not skipped) pass."""

    runs: int
    min_pass_rate: float = 1.0

    @classmethod
    def from_marker(
        cls, args: Sequence[object], kwargs: Mapping[str, object], *, where: str
    ) -> RepeatSpec:
        """Read the marker's arguments; a bad one is a :class:`RepeatError` naming ``where``."""
        example = "e.g. @pytest.mark.agent_repeat(5, min_pass_rate=0.8)"
        unknown = sorted(set(kwargs) - {"n", "runs", "min_pass_rate"})
        if unknown or len(args) > 2:
            given = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
            raise RepeatError(
                f"{where}: agent_repeat({given}) is not understood; it takes the number of "
                f"runs and min_pass_rate, {example}."
            )
        runs: object = args[0] if args else kwargs.get("runs", kwargs.get("n"))
        rate: object = args[1] if len(args) > 1 else kwargs.get("min_pass_rate", 1.0)
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
            raise RepeatError(
                f"{where}: agent_repeat run count {runs!r}; expected a whole number >= 1, "
                f"{example}."
            )
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
            raise RepeatError(
                f"{where}: agent_repeat min_pass_rate={rate!r}; expected a number from 0 to 1 "
                f"(the share of runs that must pass), {example}."
            )
        return cls(runs, float(rate))


Outcome = Literal["passed", "failed", "skipped"]

#: The confidence of a repeated test's pass-rate interval (docs/statistics.md).
CONFIDENCE = 0.95


@dataclass
class RepeatTally:
    """The outcomes of the repetitions of one test, as their reports come in."""

    spec: RepeatSpec
    outcomes: dict[int, Outcome] = field(default_factory=dict)

    def observe(self, index: int, when: str, outcome: str) -> None:
        """Record a phase report (``when``: setup/call/teardown) of repetition ``index``.

        A repetition passes when each of its phases passed; a skip in setup or call skips it.
        """
        current = self.outcomes.get(index)
        if outcome == "failed":
            self.outcomes[index] = "failed"
        elif outcome == "skipped" and when != "teardown" and current != "failed":
            self.outcomes[index] = "skipped"
        elif current is None:
            self.outcomes[index] = "passed"

    @property
    def passed(self) -> int:
        return sum(1 for outcome in self.outcomes.values() if outcome == "passed")

    @property
    def counted(self) -> int:
        """Repetitions that ran to an outcome other than a skip."""
        return sum(1 for outcome in self.outcomes.values() if outcome != "skipped")

    @property
    def pass_rate(self) -> float:
        return round(self.passed / self.counted, 6) if self.counted else 0.0

    @property
    def interval(self) -> Interval:
        """The pass rate's 95% Wilson interval (``[0, 1]`` before any run counted)."""
        return wilson(self.passed, self.counted, CONFIDENCE)

    @property
    def stability(self) -> Stability | None:
        """``stable pass``, ``stable fail`` or ``stochastic`` (the interval excludes both 0
        and 1); ``None`` before any run counted."""
        return stability(self.passed, self.counted, self.interval) if self.counted else None

    @property
    def all_skipped(self) -> bool:
        return bool(self.outcomes) and self.counted == 0

    @property
    def met(self) -> bool:
        """Whether the pass rate reaches ``min_pass_rate``."""
        return self.counted > 0 and self.passed >= self.spec.min_pass_rate * self.counted - 1e-9

    def to_dict(self) -> RepeatEntry:
        """``{"runs", "passed", "pass_rate", "min_pass_rate", "outcomes"}`` (runs: those not
        skipped; outcomes: each repetition's, in order),
        and once a run counted the pass rate's ``interval`` (95% Wilson, ``[low, high]``)
        with its ``confidence`` and the test's ``stability``."""
        entry: RepeatEntry = {
            "runs": self.counted,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "min_pass_rate": self.spec.min_pass_rate,
            "outcomes": [self.outcomes[index] for index in sorted(self.outcomes)],
        }
        if self.stability is not None:
            low, high = self.interval
            entry["interval"] = [round(low, 6), round(high, 6)]
            entry["confidence"] = CONFIDENCE
            entry["stability"] = self.stability
        return entry

    def describe(self) -> str:
        """``4 of 5 runs passed (80%; 95% interval 38-96%, stochastic), min_pass_rate 80%:
        passed``."""
        verdict = "passed" if self.met else "failed"
        skipped = len(self.outcomes) - self.counted
        extra = f", {skipped} skipped" if skipped else ""
        spread = ""
        if self.stability is not None:
            low, high = self.interval
            spread = f"; {CONFIDENCE:.0%} interval {low * 100:.0f}-{high:.0%}, {self.stability}"
        return (
            f"{self.passed} of {self.counted} runs passed ({self.pass_rate:.0%}{spread}){extra}, "
            f"min_pass_rate {self.spec.min_pass_rate:.0%}: {verdict}"
        )


def run_repetitions(
    item: pytest.Item,
    nextitem: pytest.Item | None,
    tally: RepeatTally,
    before_each: Callable[[int], None],
) -> None:
    """Run ``item``'s protocol ``tally.spec.runs`` times with fresh function fixtures (and
    cassettes) each time, then log it once (:func:`repeat_reports`).

    ``before_each(index)`` (from 1) runs before each repetition; the reports of the
    repetitions must reach ``tally`` as they are made (the plugin's makereport hook).
    """
    from _pytest.runner import runtestprotocol  # what pytest-rerunfailures uses as well

    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    runs = tally.spec.runs
    repetitions: list[list[pytest.TestReport]] = []
    for index in range(1, runs + 1):
        before_each(index)
        # Between repetitions tear down the test's own fixtures only (its parent stays
        # set up); after the last one, what the next test does not need.
        last = index == runs
        following = nextitem if last else cast("pytest.Item", item.parent)
        repetitions.append(runtestprotocol(item, log=False, nextitem=following))
    for report in repeat_reports(repetitions, tally):
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def repeat_reports(
    repetitions: list[list[pytest.TestReport]], tally: RepeatTally
) -> list[pytest.TestReport]:
    """One setup, call and teardown report for the repeated test: the last repetition's
    (its teardown report carries what the reports collected), with the outcome of the
    pass rate, the first failure's traceback, and a section listing every repetition."""
    last = repetitions[-1]
    if tally.all_skipped:
        return last
    lines = [tally.describe()]
    first_failure: pytest.TestReport | None = None
    for number, reports in enumerate(repetitions, start=1):
        failed = next((r for r in reports if r.failed), None)
        skipped = next((r for r in reports if r.skipped), None)
        if failed is not None:
            first_failure = first_failure or failed
            reason = failure_reason(failed)
            lines.append(f"run {number}: failed ({failed.when}): {reason}")
        elif skipped is not None:
            lines.append(f"run {number}: skipped")
        else:
            lines.append(f"run {number}: passed")
    setup = with_outcome(last[0], "passed")
    calls = [r for reports in repetitions for r in reports if r.when == "call"]
    call = copy.copy(next((r for r in reversed(last) if r.when == "call"), None) or last[0])
    call.when = "call"
    call.sections = [*call.sections, ("agent_repeat", "\n".join(lines))]
    call.duration = sum(r.duration for r in calls)
    if tally.met:
        call.outcome, call.longrepr = "passed", None
    else:
        call.outcome = "failed"
        call.longrepr = first_failure.longrepr if first_failure is not None else "\n".join(lines)
    setattr(call, REPEAT_ATTRIBUTE, {**tally.to_dict(), "line": tally.describe()})
    teardown = with_outcome(last[-1], "passed") if tally.met else last[-1]
    return [setup, call, teardown]


def failure_reason(report: pytest.TestReport) -> str:
    """The exception line of a failed report (``AssertionError: ...``), shortened."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = str(getattr(crash, "message", "") or "")
    lines = message.strip().splitlines() or report.longreprtext.strip().splitlines()
    return (lines[0] if message else lines[-1] if lines else "failed")[:200]


def with_outcome(report: pytest.TestReport, outcome: Literal["passed"]) -> pytest.TestReport:
    """``report`` with ``outcome`` and no failure text (a copy, when it had another one)."""
    if report.outcome == outcome:
        return report
    changed = copy.copy(report)
    changed.outcome, changed.longrepr = outcome, None
    return changed
