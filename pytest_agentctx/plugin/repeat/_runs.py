"""How an ``agent_repeat`` test runs: its repetitions run with fresh function fixtures
(:func:`run_repetitions`) and tallied (:class:`~pytest_agentctx.reports.repeats.RepeatTally`,
which reads the marker and holds the gate, free of pytest), and one setup, call and
teardown report logged for them (:func:`repeat_reports`); each repetition gets its own
cassette (:func:`repeat_cassette_path`). The package's hooks import it for a test marked
``agent_repeat`` only.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Literal, cast

import pytest

from pytest_agentctx.reports.repeats import RepeatTally

from ..keys import REPEAT_ATTRIBUTE


def repeat_cassette_path(path: Path, index: int) -> Path:
    """The cassette of repetition ``index`` (from 1): ``name.json`` -> ``name-repeat-2.json``."""
    return path.with_name(f"{path.stem}-repeat-{index}{path.suffix}")


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
    line, met = tally.describe(), tally.met
    lines = [line]
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
    if met:
        call.outcome, call.longrepr = "passed", None
    else:
        call.outcome = "failed"
        call.longrepr = first_failure.longrepr if first_failure is not None else "\n".join(lines)
    setattr(call, REPEAT_ATTRIBUTE, {**tally.to_dict(), "line": line})
    teardown = with_outcome(last[-1], "passed") if met else last[-1]
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
