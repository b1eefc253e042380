"""Repeated tests (``@pytest.mark.agent_repeat``): run n times, logged as one test.

The plugin runs a repeated test's protocol n times (:func:`pytest_runtest_protocol`, with
:class:`~.suites.RepeatSpec` and :class:`~.suites.RepeatTally`), counts each repetition's
outcome as its reports are made (:func:`pytest_runtest_makereport`), and
:func:`repeat_reports` turns the repetitions' reports into one setup, call and teardown
report, with the outcome of the pass rate. Unlike most of the package this module works on
pytest's own objects, so only the plugin imports it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Generator
from typing import Literal, cast

import pytest

from pytest_agentctx.plugin.suites import REPEAT_ATTRIBUTE, RepeatSpec, RepeatTally
from pytest_agentctx.reports.errors import RepeatError

from .keys import (
    REPEAT_ERROR_KEY,
    REPEAT_INDEX_KEY,
    REPEAT_KEY,
    REPEAT_TALLY_KEY,
    REPORT_KEY,
    RUNS_KEY,
)

__all__ = [
    "REPEAT_ATTRIBUTE",
    "failure_reason",
    "repeat_reports",
    "run_repetitions",
    "with_outcome",
]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Run an agent_repeat test n times with fresh function fixtures (and cassettes) each
    time; log one outcome for it, passed when the pass rate reaches min_pass_rate."""
    marker = item.get_closest_marker("agent_repeat")
    if marker is None:
        return None
    try:
        spec = RepeatSpec.from_marker(marker.args, marker.kwargs, where=item.nodeid)
    except RepeatError as exc:
        item.stash[REPEAT_ERROR_KEY] = exc  # raised at setup: an error of this test
        return None
    from pytest_agentctx.reports.stats import RunLog

    tally = RepeatTally(spec)
    item.stash[REPEAT_TALLY_KEY] = tally

    def before_each(index: int) -> None:
        item.stash[REPEAT_INDEX_KEY] = index
        item.stash[REPORT_KEY] = {}
        item.stash.setdefault(RUNS_KEY, RunLog()).new_part()

    run_repetitions(item, nextitem, tally, before_each)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A bad agent_repeat marker is an error of its test, raised at its setup (before its
    budget is read and its fixtures run)."""
    __tracebackhide__ = True  # the message says it all: no frames of the plugin
    error = item.stash.get(REPEAT_ERROR_KEY, None)
    if error is not None:
        raise RepeatError(str(error)) from None


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Innermost: count each repetition's outcome as its reports are made, so the
    repeat entry is final when the last repetition's teardown is reported."""
    report = yield
    tally = item.stash.get(REPEAT_TALLY_KEY, None)
    if tally is not None:
        tally.observe(item.stash.get(REPEAT_INDEX_KEY, 1), report.when, report.outcome)
        item.stash[REPEAT_KEY] = tally.to_dict()
    return report


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
