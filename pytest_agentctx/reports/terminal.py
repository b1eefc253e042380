"""The session's reports and gate, as pytest hooks: ``--agent-report``,
``--agent-report-html``, ``--agent-gate`` and ``--agent-baseline``.

The plugin registers one :class:`AgentReports` per session. Every process records its tests'
figures on their teardown reports (:func:`~.record.build_record`); the process that reports
(not an xdist worker) collects them, writes the reports and runs the gate
(:func:`~.gate.evaluate_gate`) when the session ends (:mod:`.session_end`, imported only
when there is a report file, the gate, a baseline or an agent test). The figures themselves
are built in :mod:`.record`, :mod:`.session_report` and :mod:`.gate`, which stay free of pytest;
this module is imported by the plugin only.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentctx.reports.errors import ReportError
from pytest_agentctx.reports.record import RECORD_ATTRIBUTE, is_agent_test, junit_properties
from pytest_agentctx.reports.tolerance import parse_tolerance

if TYPE_CHECKING:
    from pytest_agentctx.reports.gate import GateResult

__all__ = ["AgentReports", "RecordOf", "option_or_ini", "path_option"]

#: Builds a test's record (:func:`~.report.build_record`) when its teardown report is made;
#: the flag says whether the runs' contexts go into it.
RecordOf = Callable[[pytest.Item, bool], dict[str, Any]]


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
        self.reports: list[tuple[str, str, dict[str, Any] | None, bool, str, bool]] = []
        self.agent_tests = False
        self.outcomes: dict[str, str] = {}
        self.report: dict[str, Any] | None = None
        self.result: GateResult | None = None
        self.baseline: dict[str, Any] | None = None
        self.baseline_path = path_option(config, "agent_baseline", base)
        try:  # checked now; the gate's GateTolerance is made when the session ends
            self.tolerance = parse_tolerance(
                tokens=option_or_ini(config, "agent_baseline_tokens"),
                iterations=option_or_ini(config, "agent_baseline_iterations"),
                trajectory=option_or_ini(config, "agent_baseline_trajectory"),
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
        if report.when == "teardown":
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

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Build the report, run the gate, write the files; a failed gate fails the session."""
        if self.worker or not self._wanted():
            return
        from pytest_agentctx.reports.session_end import finish

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
        self, terminalreporter: Any, exitstatus: int, config: pytest.Config
    ) -> None:
        """Print the table of agent tests, the totals, the gate and the reports written."""
        if self.worker or self.report is None or self.result is None:
            return
        from pytest_agentctx.reports.session_end import summarise

        summarise(self, self.report, self.result, terminalreporter, config)


def _unwritable_reason(path: Path) -> str | None:
    from pytest_agentctx._files import unwritable_reason

    return unwritable_reason(path)
