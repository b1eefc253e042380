"""The hooks of repeated tests (``@pytest.mark.agent_repeat``): run n times, logged as one.

:func:`pytest_runtest_protocol` runs a repeated test's protocol n times (with
:class:`~pytest_agentctx.reports.repeats.RepeatSpec` and
:class:`~pytest_agentctx.reports.repeats.RepeatTally`),
:func:`pytest_runtest_makereport` counts each repetition's outcome as its reports are made,
and :func:`~._runs.repeat_reports` turns the repetitions' reports into one setup, call and
teardown report, with the outcome of the pass rate. What the hooks run is in the private
``_runs`` module, imported for a test marked ``agent_repeat`` only.

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_agentctx.reports.errors import RepeatError

from ..keys import (
    REPEAT_ERROR_KEY,
    REPEAT_INDEX_KEY,
    REPEAT_KEY,
    REPEAT_TALLY_KEY,
    REPORT_KEY,
    RUNS_KEY,
)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Run an agent_repeat test n times with fresh function fixtures (and cassettes) each
    time; log one outcome for it, passed when the pass rate reaches min_pass_rate."""
    marker = item.get_closest_marker("agent_repeat")
    if marker is None:
        return None
    from pytest_agentctx.reports.repeats import RepeatSpec, RepeatTally

    from ._runs import run_repetitions

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
        index = item.stash.get(REPEAT_INDEX_KEY, 1)
        tally.observe(index, report.when, report.outcome)
        if report.when == "teardown" and index == tally.spec.runs:  # the record reads it
            item.stash[REPEAT_KEY] = tally.to_dict()
    return report
