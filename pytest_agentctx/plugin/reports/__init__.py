"""The hooks of the session's reports and gate (``--agent-report``, ``--agent-report-html``,
``--agent-gate``, ``--agent-baseline``): each test's reports as pytest makes them, and its
record.

:func:`configure` decides whether the session measures every agent test (a report
file, the gate or a baseline asks for it) and registers the :class:`AgentReports` plugin,
which records each test's figures on its teardown report (:func:`item_record`; a failed
test's record says why it failed: :func:`item_failure`) and, in the process that reports
(not an xdist worker), writes the reports, runs the gate and prints the summary when the
session ends (the private ``_end`` module, imported only when there is a report file, the
gate, a baseline or an agent test). :func:`pytest_runtest_makereport` keeps a test's
reports by phase (its cassette and the fake model read the call's outcome), redacts them
with the test's redactor, and notes a stale cassette; :class:`ShownIds` shows a test id
that holds a secret redacted. The figures themselves are built by
:mod:`pytest_agentctx.reports`, which stays free of pytest.

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_agentctx.reports.errors import ReportError
from pytest_agentctx.reports.record import RECORD_ATTRIBUTE, is_agent_test, junit_properties
from pytest_agentctx.reports.tolerance import parse_significance, parse_tolerance

from ..capture import redactor_of
from ..keys import (
    BUDGET_CHECK_KEY,
    BUDGET_KEY,
    CAPTURED_KEY,
    CASSETTE_ENTRY_KEY,
    MEASURE_KEY,
    REDACTOR_KEY,
    REPEAT_INDEX_KEY,
    REPEAT_KEY,
    REPEAT_TALLY_KEY,
    REPORT_KEY,
    RUNS_KEY,
    SECRETS_KEY,
    STALE_KEY,
    TRANSCRIPTS_KEY,
    VERDICTS_KEY,
)

#: Name of the report attribute that carries the id a report shows for a test whose id holds
#: a secret, and its location's name, redacted (set where the test ran: see ShownIds).
SHOWN_ID_ATTRIBUTE = "agentctx_shown_id"

if TYPE_CHECKING:
    from pytest_agentctx.context.runs import RunRecord
    from pytest_agentctx.redaction.redactor import Redactor
    from pytest_agentctx.reports.gate import GateResult
    from pytest_agentctx.reports.schema import FailureEntry, RepeatEntry


def configure(config: pytest.Config) -> None:
    """Whether the session reads every agent test's runs, and the reports' plugin."""
    config.stash[MEASURE_KEY] = any(
        config.getoption(name)
        for name in ("agent_report", "agent_report_html", "agent_gate", "agent_baseline")
    )
    config.pluginmanager.register(AgentReports(config, item_record), "agentctx-reports")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(ShownIds(config), "agentctx-shown-ids")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep the test's report of each phase, redacted by its redactor; note whether its
    call failed on a stale cassette."""
    report = yield
    item.stash.setdefault(REPORT_KEY, {})[report.when] = report
    redactor = item.stash.get(REDACTOR_KEY, None)
    if redactor is not None:  # the failure text and output of a test that uses the plugin
        from pytest_agentctx.redaction.output import redact_report

        redact_report(report, redactor)
    _redact_nodeid(item, report, redactor)
    if report.when == "teardown":
        _fail_for_late_requests(item, report)
        from ..cassettes import list_not_sent

        list_not_sent(item, report)
    if call.when == "call":  # for the reports: a stale cassette's unused recordings count
        error = call.excinfo
        if error is None:
            item.stash[STALE_KEY] = False
        else:
            from pytest_agentctx.traffic.errors import StaleCassette

            item.stash[STALE_KEY] = error.errisinstance(StaleCassette)
    return report


def _last_repetition(item: pytest.Item) -> bool:
    """Whether ``item`` is a test run once, or the last repetition of an ``agent_repeat``
    test: the one whose teardown report is logged, with the record of every repetition."""
    tally = item.stash.get(REPEAT_TALLY_KEY, None)
    return tally is None or item.stash.get(REPEAT_INDEX_KEY, 1) >= tally.spec.runs


def _fail_for_late_requests(item: pytest.Item, report: pytest.TestReport) -> None:
    """The requests that the test's work (a task, a thread) made after its scope ended,
    refused so far, fail its teardown (the others fail the session when it ends)."""
    from ..cassettes import take_late

    late = take_late(item.nodeid)
    if not late:
        return
    text = "\n".join(late)
    report.sections.append(("agentctx: late requests refused", text))
    if report.passed:
        report.outcome = "failed"
        report.longrepr = text


def _redact_nodeid(item: pytest.Item, report: pytest.TestReport, redactor: Redactor | None) -> None:
    """A secret in the test's id (a ``parametrize`` value) is not in its reports: their id
    is the one :func:`~pytest_agentctx.redaction.names.shown_id` shows (``REDACTED`` and a
    digest of the id), so the report files, the HTML page and JUnit XML never hold it. A
    test without a redactor of its own passes the session's when a report file is
    written."""
    if redactor is None:
        config = item.config
        if not (config.stash[MEASURE_KEY] or getattr(config.option, "xmlpath", None)):
            return
        redactor = config.stash[SECRETS_KEY].redactor
    if not redactor.secret_values:
        return
    from pytest_agentctx.redaction.names import shown_id

    shown = shown_id(item.nodeid, redactor.text)
    if shown != item.nodeid:  # the process that reports shows it (see ShownIds)
        setattr(report, SHOWN_ID_ATTRIBUTE, [shown, redactor.text(report.location[2])])


class ShownIds:
    """In the process that reports (not an xdist worker, whose reports keep the ids the
    controller knows its tests by): a report whose test id holds a secret gets the id
    :func:`_redact_nodeid` made before any other plugin sees it (the terminal, JUnit XML,
    the report files, ``--lf``), and pytest's list of known test ids in its cache folder
    gets it too when the session ends."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.renamed: dict[str, str] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        shown = getattr(report, SHOWN_ID_ATTRIBUTE, None)
        if not shown:
            return
        nodeid, domain = shown
        self.renamed[report.nodeid] = nodeid
        report.nodeid = nodeid
        path, line, _ = report.location
        report.location = (path, line, domain)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        cache = getattr(self.config, "cache", None)
        if not self.renamed or cache is None:
            return
        known = cache.get("cache/nodeids", None)
        if isinstance(known, list):
            shown = {self.renamed.get(nodeid, nodeid) for nodeid in known}
            cache.set("cache/nodeids", sorted(str(nodeid) for nodeid in shown))


def item_record(item: pytest.Item, contexts: bool) -> dict[str, object]:
    """The report record of ``item`` (:func:`build_record`) from what its fixtures and
    hooks stashed: its runs, cassette, budget, repeat figures and prices."""
    from pytest_agentctx.reports.record import build_record, record_json

    log = item.stash.get(RUNS_KEY, None)
    measured = True
    rebuilt = False
    # the runs of each repetition (one part for a test that is not repeated), read once
    parts: list[list[RunRecord]] = []
    if log is not None:
        rebuilt = item.config.stash[MEASURE_KEY] or BUDGET_CHECK_KEY in item.stash
        # when nothing reads this test's captured runs, they are not rebuilt
        parts = log.records_by_part(captured=rebuilt)
        measured = rebuilt or any(parts) or not log.captures
    runs = [run for part in parts for run in part]
    role_runs = _role_runs(item) if rebuilt else []
    prices = None
    if runs or role_runs:  # a test without runs needs no price table
        from ..budgets import prices_of

        prices = prices_of(item)
    wanted = contexts or bool(getattr(item.config.option, "xmlpath", None))
    transcripts = item.stash.get(TRANSCRIPTS_KEY, [])
    repeat: RepeatEntry | None = item.stash.get(REPEAT_KEY, None)
    if repeat is not None and log is not None and measured:
        from pytest_agentctx.reports.session_report import per_run_figures

        repeat = {**repeat, "per_run": per_run_figures(parts, prices)}
    verdicts = [verdict.to_dict() for verdict in item.stash.get(VERDICTS_KEY, [])]
    if repeat is not None and len(verdicts) > 1:
        from pytest_agentctx.reports.repeats import CONFIDENCE, score_means

        scores = score_means(verdicts, repeat.get("confidence", CONFIDENCE))
        if scores:
            repeat = {**repeat, "scores": scores}
    record = build_record(
        runs=runs,
        suite="integration" if item.get_closest_marker("integration") else "unit",
        cassette=item.stash.get(CASSETTE_ENTRY_KEY, None),
        budget=item.stash.get(BUDGET_KEY, None),
        repeat=repeat,
        prices=prices,
        contexts=contexts,
        measured=measured,
        redactor=redactor_of(item) if runs or transcripts or REDACTOR_KEY in item.stash else None,
        failure=item_failure(item) if wanted else None,
        mcp_contract=_tool_contract(item) if rebuilt else None,
        verdicts=verdicts,
        role_runs=role_runs,
        transcripts=transcripts,
    )
    return record_json(record)


def _role_runs(item: pytest.Item) -> list[RunRecord]:
    """The runs of ``item``'s captured traffic made under another role than the agent's
    (a judge's, a simulated user's): listed apart in its record, never in its budgets."""
    captured = item.stash.get(CAPTURED_KEY, None)
    return captured.role_records() if captured is not None else []


def _tool_contract(item: pytest.Item) -> dict[str, list[dict[str, object]]] | None:
    """The MCP servers' tool contract of ``item``'s captured traffic (its runs were built
    already: they were measured)."""
    captured = item.stash.get(CAPTURED_KEY, None)
    return captured.tool_contract if captured is not None else None


def item_failure(item: pytest.Item) -> FailureEntry | None:
    """Why ``item`` failed, for its record (:func:`failure_entry`): the failure text of
    its first failed phase as pytest shows it, scrubbed by the test's redactor (or the
    session's, for a test that uses nothing of the plugin: the report is a file the
    plugin writes); ``None`` when no phase failed."""
    reports = item.stash.get(REPORT_KEY, {})
    if not any(report.failed for report in reports.values()):
        return None
    from pytest_agentctx.reports.failure_entry import FAILURE_PHASES, failure_entry

    for phase in FAILURE_PHASES:
        report = reports.get(phase)
        if report is None or not report.failed:
            continue
        redactor = redactor_of(item)
        crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
        message = getattr(crash, "message", None)
        return failure_entry(
            phase,
            redactor.text(report.longreprtext),
            message=redactor.text(message) if isinstance(message, str) else None,
        )
    return None


#: Builds a test's record (:func:`~.report.build_record`) when its teardown report is made;
#: the flag says whether the runs' contexts go into it.
RecordOf = Callable[[pytest.Item, bool], Mapping[str, object]]


def path_option(config: pytest.Config, name: str, base: Path) -> Path | None:
    """The path option ``name`` relative to ``base``, or ``None`` when it is not given."""
    value = config.getoption(name)
    return None if not value else base / str(value)


def option_or_ini(config: pytest.Config, name: str) -> str:
    """The command-line option ``name`` when given, otherwise the ini option of that name."""
    value = config.getoption(name)
    return str(value if value is not None else config.getini(name))


class AgentReports:
    """Hooks of the reports and the gate. Every process records its tests' figures on
    their teardown reports; the process that reports (not an xdist worker) collects them,
    writes the reports and runs the gate.

    ``record_of(item, contexts)`` gives a test's record from what the plugin knows of it.
    Bad report options are usage errors, raised when the object is made (at configure).
    """

    def __init__(self, config: pytest.Config, record_of: RecordOf) -> None:
        self.record_of = record_of
        self.worker = hasattr(config, "workerinput")
        base = config.invocation_params.dir
        self.json_path = path_option(config, "agent_report", base)
        self.html_path = path_option(config, "agent_report_html", base)
        for name, path, example in (
            ("agent_report", self.json_path, "agentctx-report.json"),
            ("agent_report_html", self.html_path, "agentctx-report.html"),
        ):
            problem = None if path is None or self.worker else _unwritable_reason(path)
            if problem is not None:  # found now, not after the whole run
                option = "--" + name.replace("_", "-")
                raise pytest.UsageError(
                    f"{option}={config.getoption(name)}: the report cannot be written to "
                    f"{path}: {problem}. Give a file path in a writable folder, for example "
                    f"{option}={example}."
                )
        self.contexts = self.json_path is not None or self.html_path is not None
        self.gate_enabled = bool(config.getoption("agent_gate"))
        #: Every report's (nodeid, outcome, record, integration, when, xfail), collected
        #: when the session ends: a session without agent tests, report files, gate or
        #: baseline then never imports the report's machinery.
        self.reports: list[tuple[str, str, Mapping[str, object] | None, bool, str, bool]] = []
        self.agent_tests = False
        self.outcomes: dict[str, str] = {}
        self.report: Mapping[str, object] | None = None
        self.result: GateResult | None = None
        self.baseline: Mapping[str, object] | None = None
        self.baseline_path = path_option(config, "agent_baseline", base)
        try:  # checked now; the gate's GateTolerance is made when the session ends
            self.tolerance = parse_tolerance(
                tokens=option_or_ini(config, "agent_baseline_tokens"),
                iterations=option_or_ini(config, "agent_baseline_iterations"),
                trajectory=option_or_ini(config, "agent_baseline_trajectory"),
            )
            self.significance = parse_significance(
                level=option_or_ini(config, "agent_baseline_level"),
                margin=option_or_ini(config, "agent_baseline_margin"),
                flips=option_or_ini(config, "agent_baseline_flips"),
            )
        except ReportError as exc:
            raise pytest.UsageError(str(exc)) from None
        if self.baseline_path is not None and not self.worker:
            from pytest_agentctx.reports.session_report import load_report

            try:
                self.baseline = load_report(self.baseline_path)
            except ReportError as exc:
                raise pytest.UsageError(f"--agent-baseline: {exc}") from None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Attach the test's record (and its JUnit properties) to its teardown report."""
        report = yield
        if report.when == "teardown" and _last_repetition(item):
            record = self.record_of(item, self.contexts)
            setattr(report, RECORD_ATTRIBUTE, record)
            report.user_properties.extend(junit_properties(record))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect every report (in the process that reports)."""
        if not self.worker:
            record = getattr(report, RECORD_ATTRIBUTE, None)
            if record is not None and is_agent_test(record):
                self.agent_tests = True
            integration = "integration" in report.keywords
            xfail = hasattr(report, "wasxfail")
            self.reports.append(
                (report.nodeid, report.outcome, record, integration, report.when, xfail)
            )

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file: the gate's properties
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Build the report, run the gate, write the files; a failed gate fails the session."""
        if self.worker or not self._wanted():
            return
        from ._end import finish

        finish(self, session)

    def _wanted(self) -> bool:
        """Whether the session's end has anything to do: a report file to write, the gate
        or a baseline to compare with, or an agent test to show in the table. Without
        them the report would be built to print nothing."""
        return bool(
            self.json_path is not None
            or self.html_path is not None
            or self.gate_enabled
            or self.baseline is not None
            or self.agent_tests
        )

    def pytest_terminal_summary(
        self, terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
    ) -> None:
        """Print the table of agent tests, the totals, the gate and the reports written."""
        if self.worker or self.report is None or self.result is None:
            return
        from ._end import summarise

        summarise(self, self.report, self.result, terminalreporter, config)


def _unwritable_reason(path: Path) -> str | None:
    from pytest_agentctx._files import unwritable_reason

    return unwritable_reason(path)
