"""The end of a session's reports: the report built from every test's record, the gate
run, the files written (:func:`finish`), and the summary printed (:func:`summarise`). What
:class:`~pytest_agentctx.plugin.reports.AgentReports` does when the session ends, imported
then, and only when there is something to do (a report file, the gate, a baseline or an
agent test).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pytest

from pytest_agentctx._untrusted import visible
from pytest_agentctx.reports.gate import (
    GateResult,
    GateTolerance,
    attach_baselines,
    evaluate_gate,
    gate_lines,
)
from pytest_agentctx.reports.session_report import ReportCollector, summary_line, write_report
from pytest_agentctx.reports.table import OutcomeWords, table_lines

if TYPE_CHECKING:
    from . import AgentReports


def finish(reports: AgentReports, session: pytest.Session) -> None:
    """Build the report, run the gate, write the files; a failed gate fails the session."""
    collector, words = ReportCollector(), OutcomeWords()
    for nodeid, outcome, record, integration, when, xfail in reports.reports:
        keywords = ("integration",) if integration else ()
        collector.add(nodeid, outcome, record=record, keywords=keywords)
        words.add(nodeid, when, outcome, xfail=xfail)
    reports.reports = []
    reports.outcomes = words.words
    report = collector.build()
    if report["summary"]["stats"].get("models"):  # the session priced calls: with what
        from pytest_agentctx.plugin.budgets import price_data

        report["summary"]["price_data"] = price_data(session.config).to_dict()
    tolerance = GateTolerance(*reports.tolerance, *reports.significance)
    result = evaluate_gate(
        report,
        baseline=reports.baseline,
        baseline_path=str(reports.baseline_path) if reports.baseline_path else None,
        tolerance=tolerance,
    )
    report["summary"]["gate"] = result.to_dict(enabled=reports.gate_enabled)
    _junit_properties(session.config, result)
    if reports.baseline is not None:  # each drifted test keeps the baseline's figures
        attach_baselines(report, reports.baseline, tolerance)
    reports.report, reports.result = report, result
    unwritten: list[str] = []  # a report that could not be written fails the session
    for option, path, html in (
        ("--agent-report", reports.json_path, False),
        ("--agent-report-html", reports.html_path, True),
    ):
        if path is None:
            continue
        try:
            if html:
                from pytest_agentctx._files import atomic_write_text
                from pytest_agentctx.reports.html import render_html

                atomic_write_text(path, render_html(report))
            else:
                write_report(path, report)
        except OSError as exc:
            unwritten.append(
                f"agentctx: ERROR: {option}: the report could not be written to {path} "
                f"({exc.strerror or exc}); the tests' results stand. Free some disk space "
                f"or give {option} a path in a writable folder, then run pytest again."
            )
            if html:  # not listed as written in the summary
                reports.html_path = None
            else:
                reports.json_path = None
    terminal = session.config.pluginmanager.get_plugin("terminalreporter")
    for line in unwritten:
        if terminal is not None:
            terminal.write_line(line, red=True, bold=True)
        else:
            print(line, file=sys.stderr)
    failed = unwritten or (reports.gate_enabled and not result.passed)
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _junit_properties(config: pytest.Config, result: GateResult) -> None:
    """Give the JUnit XML file (``--junitxml``) the gate's properties, from its records,
    when pytest writes one: its test suite's properties (the gate runs after the tests'
    cases are written)."""
    from pytest_agentctx.reports.gate_records import junit_gate_properties

    for plugin in config.pluginmanager.get_plugins():
        add = getattr(plugin, "add_global_property", None)
        if add is not None and type(plugin).__name__ == "LogXML":
            for name, value in junit_gate_properties(result.passed, result.records):
                add(name, value)


def summarise(
    reports: AgentReports,
    report: Mapping[str, object],
    result: GateResult,
    terminalreporter: pytest.TerminalReporter,
    config: pytest.Config,
) -> None:
    """Print the table of agent tests, the totals, the gate and the reports written (of
    the session's ``report`` and its gate's ``result``)."""

    verbosity = config.get_verbosity()
    if verbosity >= 0:
        width = config.get_terminal_writer().fullwidth
        table = table_lines(
            report,
            width=width,
            limit=None if verbosity > 0 else 30,
            outcomes=reports.outcomes,
        )
        if table:
            terminalreporter.write_sep("-", "agentctx")
            for row in table:
                terminalreporter.write_line(visible(row))
    from pytest_agentctx.reports.migration import eased_lines

    eased = eased_lines(
        report, report_path=None if reports.json_path is None else str(reports.json_path)
    )
    if eased:
        terminalreporter.write_sep("-", "agentctx: let pass under agent_migration_until")
        for line in eased:
            terminalreporter.write_line(visible(line), yellow=True)
    totals = summary_line(report)
    if totals is not None:
        terminalreporter.write_line(visible(totals))
    if reports.gate_enabled or reports.baseline is not None:
        failed = reports.gate_enabled and not result.passed
        for number, text in enumerate(gate_lines(result, enabled=reports.gate_enabled)):
            # the baseline is a report from anywhere: its text is shown, never obeyed
            terminalreporter.write_line(visible(text), red=failed, bold=failed and number == 0)
    if verbosity >= 0:
        for kind, path in (("JSON", reports.json_path), ("HTML", reports.html_path)):
            if path is not None:
                terminalreporter.write_line(f"agentctx: {kind} report written to {path}")
