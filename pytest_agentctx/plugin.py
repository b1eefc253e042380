"""The pytest plugin (the ``pytest11`` entry point): hooks, options and fixtures only.

All behaviour lives in the package's modules; this file wires them into pytest.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import os
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, Literal, cast

import pytest
from syrupy.assertion import SnapshotAssertion

from ._files import atomic_write_text
from .artifacts import LocalArtifactStore
from .budgets import BUDGET_LIMITS, Budget, BudgetCheck, ini_name
from .capture import CapturedRuns, TrafficRecorder
from .cassettes import Cassette, NetworkGuard, Redactor
from .cassettes.redact import DEFAULT_SECRET_ENV
from .cassettes.session import RecordMode
from .cassettes.settings import CassetteSettings, TestOptions, cassette_config, cassette_path
from .clock import ClockSettings, SequentialIds, StepClock
from .exceptions import (
    AgentCtxError,
    BudgetError,
    CassetteError,
    CassetteMiss,
    NetworkBlocked,
    RepeatError,
    ReportError,
    StaleCassette,
)
from .fakes import FakeLLM, FakeTools
from .freeze import FrozenClock
from .gate import GateResult, GateTolerance, evaluate_gate, gate_lines
from .matching import assertrepr_compare
from .report import (
    RECORD_ATTRIBUTE,
    ReportCollector,
    build_record,
    cassette_entry,
    junit_properties,
    load_report,
    summary_line,
    table_lines,
    write_report,
)
from .report_html import render_html
from .retrieval import InMemoryVectorStore
from .runtime import AgentRuntime
from .snapshot import AgentSnapshotAssertion, SnapshotOptions
from .stats import PriceTable, RunLog, RunRecord
from .suites import (
    INTEGRATION_GROUP,
    OTHER_ASYNC_MARKERS,
    RepeatSpec,
    RepeatTally,
    SuiteCounts,
    in_integration_folder,
    integration_last,
    named_on_command_line,
    repeat_cassette_path,
    serial_lock,
    uses_plugin_fixture,
)

_REPORT_KEY = pytest.StashKey[dict[str, pytest.TestReport]]()
_CASSETTE_SETTINGS_KEY = pytest.StashKey[CassetteSettings]()
_CASSETTE_KEY = pytest.StashKey[Cassette | None]()
_GUARD_KEY = pytest.StashKey[NetworkGuard | None]()
#: Fixtures whose use makes a test an agent test (its HTTP traffic goes to a cassette).
_AGENT_FIXTURES = frozenset({"agent_runtime", "agent_cassette", "agent_context"})
_CLOCK_KEY = pytest.StashKey[ClockSettings]()
#: The runs each test made (runtime results, captured conversations): budgets and reports.
_RUNS_KEY = pytest.StashKey[RunLog]()
_FAKE_KEYS = {"OPENAI_API_KEY": "sk-agentctx-fake", "ANTHROPIC_API_KEY": "sk-ant-agentctx-fake"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentctx", "pytest-agentctx: deterministic tests of LLM agents")
    group.addoption(
        "--agent-clock-start",
        dest="agent_clock_start",
        default=None,
        metavar="ISO8601",
        help="Instant the deterministic clocks start at (ini: agent_clock_start).",
    )
    parser.addini(
        "agent_clock_start",
        "Instant agent_runtime's clock and frozen_clock start at (ISO 8601).",
        default="2025-01-01T00:00:00Z",
    )
    parser.addini(
        "agent_clock_step",
        "Seconds agent_runtime's clock moves forward on every read.",
        default="1",
    )
    parser.addini(
        "agent_clock_ignore",
        "Module prefixes whose calls see real time under frozen_clock (freezegun's ignore).",
        type="linelist",
        default=[],
    )
    group.addoption(
        "--agent-record",
        dest="agent_record",
        nargs="?",
        const="rewrite",
        default=None,
        metavar="MODE",
        help="Record agent tests' HTTP traffic: rewrite (default when given), missing, new. "
        "Without it, cassettes are replayed offline (ini: agent_record_mode).",
    )
    group.addoption(
        "--agent-cassette-dir",
        dest="agent_cassette_dir",
        default=None,
        metavar="DIR",
        help="Folder of the cassettes, relative to the rootdir (ini: agent_cassette_dir).",
    )
    group.addoption(
        "--agent-record-failing",
        dest="agent_record_failing",
        action="store_true",
        default=False,
        help="Also save recordings of tests that fail (by default a failing test keeps "
        "its old cassette).",
    )
    parser.addini("agent_cassette_dir", "Folder of the cassettes.", default="cassettes")
    parser.addini(
        "agent_record_mode", "Record mode when --agent-record is not given.", default="none"
    )
    parser.addini("agent_all_tests", "Treat every test as an agent test (cassettes).", type="bool")
    parser.addini(
        "agent_allow_unused",
        "Do not fail tests that leave recorded interactions unused.",
        type="bool",
    )
    parser.addini(
        "agent_allowed_hosts",
        "Hosts (names or addresses) agent tests may reach while replaying.",
        type="linelist",
        default=[],
    )
    parser.addini(
        "agent_match_ignore",
        "Request body fields (dotted paths) left out of cassette matching.",
        type="linelist",
        default=[],
    )
    parser.addini("agent_cassette_format", "Format of new cassettes: json or yaml.", default="json")
    parser.addini(
        "agent_secret_env",
        "More environment variables whose values are redacted from cassettes.",
        type="linelist",
        default=[],
    )
    _add_report_options(parser, group)


def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    """``--agent-record`` takes an optional MODE: make ``pytest --agent-record tests/x.py``
    (and the command the miss message prints) record that test instead of taking the path
    for a mode."""
    modes = {mode.value for mode in RecordMode}
    for index, arg in enumerate(args[:-1]):
        following = args[index + 1]
        if arg == "--agent-record" and not following.startswith("-") and following not in modes:
            args[index] = "--agent-record=rewrite"


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_CLOCK_KEY] = _clock_settings(config)
    config.stash[_CASSETTE_SETTINGS_KEY] = _cassette_settings(config)
    config.addinivalue_line(
        "markers",
        "agent(**options): an agent test; options configure pytest-agentctx for this test.",
    )
    config.addinivalue_line(
        "markers", "integration: an integration test (slow, talks to real services)."
    )
    _configure_reports(config)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(_REPORT_KEY, {})[report.when] = report
    return report


def _clock_settings(config: pytest.Config) -> ClockSettings:
    """Read and check the clock options once, at configure time (bad values: usage error)."""
    try:
        return ClockSettings.build(
            start=str(config.getoption("agent_clock_start") or config.getini("agent_clock_start")),
            step=str(config.getini("agent_clock_step")),
            ignore=(str(line) for line in config.getini("agent_clock_ignore")),
        )
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _cassette_settings(config: pytest.Config) -> CassetteSettings:
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput["testrunuid"] if workerinput else uuid.uuid4().hex
    try:
        return CassetteSettings.build(
            rootpath=config.rootpath,
            directory=config.getoption("agent_cassette_dir")
            or str(config.getini("agent_cassette_dir")),
            cli_mode=config.getoption("agent_record"),
            ini_mode=str(config.getini("agent_record_mode")),
            all_tests=bool(config.getini("agent_all_tests")),
            allow_unused=bool(config.getini("agent_allow_unused")),
            allowed_hosts=[str(h) for h in config.getini("agent_allowed_hosts")],
            ignore_fields=[str(f) for f in config.getini("agent_match_ignore")],
            cassette_format=str(config.getini("agent_cassette_format")),
            secret_env=[str(e) for e in config.getini("agent_secret_env")],
            record_failing=bool(config.getoption("agent_record_failing")),
            run_id=run_id,
        )
    except CassetteError as exc:
        raise pytest.UsageError(str(exc)) from None


def _is_agent_test(item: pytest.Item, settings: CassetteSettings) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    if "fake_llm" in fixtures:
        return False
    return (
        settings.all_tests
        or item.get_closest_marker("agent") is not None
        or bool(fixtures & _AGENT_FIXTURES)
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    try:
        result = yield
    except BaseException as exc:
        cassette = item.stash.get(_CASSETTE_KEY, None)
        if cassette is not None and cassette.misses:
            raise CassetteMiss(cassette.miss_message(cassette.misses[0])) from exc
        guard = item.stash.get(_GUARD_KEY, None)
        if guard is not None and guard.blocked:
            # The test failed because a connection was refused: say so.
            raise NetworkBlocked(guard.message(guard.blocked[0])) from exc
        raise
    cassette = item.stash.get(_CASSETTE_KEY, None)
    guard = item.stash.get(_GUARD_KEY, None)
    if cassette is not None and cassette.misses:
        cassette.check()
    if guard is not None:
        guard.verify()
    if cassette is not None:
        cassette.check()
    return result


@pytest.fixture
def agent_cassette_config() -> dict[str, object]:
    """Override to configure this package's cassettes for a folder or module, like
    pytest-recording's ``vcr_config``: ``match_ignore`` (dotted body paths),
    ``body_hook`` (a function normalising request bodies before matching),
    ``allowed_hosts``, ``redact_values`` (more literal secrets) and ``directory`` (a
    folder for these tests' cassettes, e.g. one beside them)."""
    return {}


@pytest.fixture(autouse=True)
def _agentctx_cassette(request: pytest.FixtureRequest) -> Iterator[Cassette | None]:
    item = request.node
    settings = request.config.stash[_CASSETTE_SETTINGS_KEY]
    if not isinstance(item, pytest.Item) or not _is_agent_test(item, settings):
        yield None
        return
    marker_kwargs: dict[str, object] = {}
    for marker in reversed(list(item.iter_markers("agent"))):
        marker_kwargs.update(marker.kwargs)
    try:
        config = cassette_config(
            request.getfixturevalue("agent_cassette_config"), where=item.nodeid
        )
        options = TestOptions.resolve(settings, marker_kwargs, where=f"{item.nodeid}")
    except CassetteError as exc:
        raise pytest.UsageError(str(exc)) from None
    cls = getattr(item, "cls", None)
    path = cassette_path(
        settings,
        rootpath=request.config.rootpath,
        module_path=Path(str(item.path)),
        test_name=item.name,
        class_name=cls.__name__ if cls is not None else None,
        override=options.cassette,
        directory=config.get("directory"),
    )
    repetition = item.stash.get(_REPEAT_INDEX_KEY, None)
    if repetition is not None:  # agent_repeat: one cassette per repetition (issue 5)
        path = repeat_cassette_path(path, repetition)
    redactor = Redactor(
        env=(*DEFAULT_SECRET_ENV, *settings.secret_env),
        extra_values=tuple(str(v) for v in config.get("redact_values", ())),
    )
    body_hook = config.get("body_hook")
    cassette = Cassette(
        path,
        mode=options.mode,
        test_id=item.nodeid,
        redactor=redactor,
        ignored_fields=(*options.ignore_fields, *config.get("match_ignore", ())),
        body_hook=body_hook if callable(body_hook) else None,
        allow_unused=options.allow_unused,
        shared=options.cassette is not None,
        run_id=settings.run_id,
    )
    guard = (
        NetworkGuard(
            (*options.allowed_hosts, *config.get("allowed_hosts", ())),
            reason=f"replaying {path.name}",
        )
        if cassette.mode is RecordMode.NONE
        else None
    )
    item.stash[_CASSETTE_KEY] = cassette
    item.stash[_GUARD_KEY] = guard
    cassette.start()
    if guard is not None:
        guard.start()
    try:
        yield cassette
    finally:
        if guard is not None:
            guard.stop()
        cassette.stop()
        item.stash[_CASSETTE_KEY] = None
        item.stash[_GUARD_KEY] = None
    call = item.stash.get(_REPORT_KEY, {}).get("call")
    saved = False
    if cassette.records and call is not None and (call.passed or settings.record_failing):
        saved = cassette.save(settings.run_id)
    judged = bool(call and call.passed) or item.stash.get(_STALE_KEY, False)
    item.stash[_CASSETTE_ENTRY_KEY] = cassette_entry(  # for the reports (issue 5)
        cassette, rootpath=request.config.rootpath, judged=judged, saved=saved
    )


@pytest.fixture
def agent_cassette(_agentctx_cassette: Cassette | None) -> Cassette:
    """The test's cassette: its path, mode and interactions, recorded or replayed."""
    if _agentctx_cassette is None:
        raise CassetteError(
            "agent_cassette is not available in a test that uses fake_llm: the fake model "
            "answers its requests, so it has no cassette. Remove one of the two fixtures."
        )
    return _agentctx_cassette


@pytest.fixture
def fake_tools() -> FakeTools:
    """Replace tools by name (``replace(name, result | raises= | fn=)``); ledger in ``calls``."""
    return FakeTools()


@pytest.fixture
def agent_runtime(request: pytest.FixtureRequest) -> AgentRuntime:
    """An :class:`AgentRuntime` with a stepping clock and sequential ids.

    If the test also uses ``fake_tools``, the runtime answers tools through it; if it uses
    ``fake_vector_store`` or ``artifact_store``, the runtime searches and stores in them.
    """
    settings = request.config.stash[_CLOCK_KEY]
    clock = StepClock(settings.start, settings.step)
    overrides = (
        request.getfixturevalue("fake_tools") if "fake_tools" in request.fixturenames else None
    )
    runtime = AgentRuntime(
        clock=clock,
        ids=SequentialIds(),
        tool_overrides=overrides,
        **_workspace_fixtures(request),  # retrieval and artifact fixtures (issue 8)
    )
    request.node.stash.setdefault(_RUNS_KEY, RunLog()).add_source(
        lambda: [RunRecord(r.agent.name, "runtime", r.context) for r in runtime.results]
    )
    return runtime


@pytest.fixture
def fake_llm(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    """A scripted model that answers the openai/anthropic SDKs at the HTTP transport.

    Script replies with ``fake_llm.reply(...)``. The test fails if the agent makes more
    model calls than scripted or leaves scripted replies unused.
    """
    import os

    for name, value in _FAKE_KEYS.items():
        if not os.environ.get(name):
            monkeypatch.setenv(name, value)
    fake = FakeLLM(ids=SequentialIds())
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
    reports = request.node.stash.get(_REPORT_KEY, {})
    call_report = reports.get("call")
    if call_report is not None and call_report.passed:
        fake.verify()


@pytest.fixture
def frozen_clock(request: pytest.FixtureRequest) -> Iterator[FrozenClock]:
    """The wall clock frozen (freezegun, ``real_asyncio=True``) at ``agent_clock_start``."""
    settings = request.config.stash[_CLOCK_KEY]
    clock = FrozenClock(settings.start, ignore=settings.ignore)
    with clock:
        yield clock


@pytest.hookimpl(tryfirst=True)
def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    """For ``==`` on the context's models or a pattern: the count, then every mismatch."""
    return assertrepr_compare(op, left, right)


@pytest.fixture
def agent_snapshot_config() -> SnapshotOptions:
    """Options of ``agent_snapshot`` (volatile values, projections); override to change."""
    return SnapshotOptions()


@pytest.fixture
def agent_snapshot(
    snapshot: SnapshotAssertion, agent_snapshot_config: SnapshotOptions
) -> AgentSnapshotAssertion:
    """A syrupy snapshot of an agent run: ``assert result.context == agent_snapshot``.

    Stored as ``__snapshots__/<module>/<test>.agentctx``; ``--snapshot-update`` writes it.
    """
    return AgentSnapshotAssertion.from_snapshot(snapshot, agent_snapshot_config)


# -- agent_context (issue 7) --


@pytest.fixture
def agent_context(
    request: pytest.FixtureRequest, _agentctx_cassette: Cassette | None
) -> Iterator[CapturedRuns]:
    """The conversations of this test, rebuilt from its LLM traffic (any SDK or framework).

    ``agent_context.context`` is the one conversation, ``agent_context.contexts`` all of
    them in the order they started, ``agent_context.non_llm`` the other exchanges. They are
    read from the test's cassette (replayed or recorded), or, with ``fake_llm``, from the
    traffic the fake model answered; timestamps come from the ``agent_clock_*`` clock.
    """
    settings = request.config.stash[_CLOCK_KEY]
    recorder: TrafficRecorder | None = None
    if _agentctx_cassette is not None:
        cassette = _agentctx_cassette
        runs = CapturedRuns(
            lambda: cassette.exchange_log, clock_start=settings.start, clock_step=settings.step
        )
    else:
        if "fake_llm" in request.fixturenames:
            request.getfixturevalue("fake_llm")  # started first: the recorder sees its replies
        recorder = TrafficRecorder()
        live = recorder
        runs = CapturedRuns(
            lambda: live.exchanges, clock_start=settings.start, clock_step=settings.step
        )
        recorder.start()
    if "agent_runtime" not in request.fixturenames:
        # With the runtime, its own results are the runs (captured ones would count twice).
        request.node.stash.setdefault(_RUNS_KEY, RunLog()).add_source(runs.records)
    try:
        yield runs
    finally:
        if recorder is not None:
            recorder.stop()


# -- reports and gate (issue 5) --------------------------------------------------------

#: The cassette's report entry (status, unused recordings), set when its fixture ends.
_CASSETTE_ENTRY_KEY = pytest.StashKey[dict[str, Any]]()
#: Whether the test failed because its cassette is stale (its unused recordings count).
_STALE_KEY = pytest.StashKey[bool]()


def _add_report_options(parser: pytest.Parser, group: Any) -> None:
    group.addoption(
        "--agent-report",
        dest="agent_report",
        default=None,
        metavar="PATH",
        help="Write the JSON report of the session (every test's runs, figures, cassette, "
        "budget) to PATH.",
    )
    group.addoption(
        "--agent-report-html",
        dest="agent_report_html",
        default=None,
        metavar="PATH",
        help="Write a self-contained HTML page of the agent runs to PATH.",
    )
    group.addoption(
        "--agent-gate",
        dest="agent_gate",
        action="store_true",
        default=False,
        help="Fail the session when a budget is exceeded, a cassette is stale or unused, "
        "or (with --agent-baseline) a test drifted from its baseline.",
    )
    group.addoption(
        "--agent-baseline",
        dest="agent_baseline",
        default=None,
        metavar="PATH",
        help="A report written earlier by --agent-report: compare every test's iterations, "
        "tool trajectory and tokens with it.",
    )
    group.addoption(
        "--agent-baseline-tokens",
        dest="agent_baseline_tokens",
        default=None,
        metavar="PCT",
        help="Allowed change of a test's tokens from the baseline, in percent, or ignore "
        "(ini: agent_baseline_tokens; default 10).",
    )
    group.addoption(
        "--agent-baseline-iterations",
        dest="agent_baseline_iterations",
        default=None,
        metavar="N",
        help="Allowed change of a test's iterations from the baseline, or ignore "
        "(ini: agent_baseline_iterations; default 0).",
    )
    group.addoption(
        "--agent-baseline-trajectory",
        dest="agent_baseline_trajectory",
        default=None,
        metavar="MODE",
        help="How a test's tool calls are compared with the baseline: exact, unordered or "
        "ignore (ini: agent_baseline_trajectory; default exact).",
    )
    parser.addini(
        "agent_baseline_tokens", "Allowed change of tokens from the baseline (%).", default="10"
    )
    parser.addini(
        "agent_baseline_iterations", "Allowed change of iterations from the baseline.", default="0"
    )
    parser.addini(
        "agent_baseline_trajectory",
        "Tool trajectory comparison with the baseline: exact, unordered or ignore.",
        default="exact",
    )


def _configure_reports(config: pytest.Config) -> None:
    config.pluginmanager.register(_AgentReports(config), "agentctx-reports")


class _AgentReports:
    """Hooks of the reports and the gate. Every process records its tests' figures on
    their teardown reports; the process that reports (not an xdist worker) collects them,
    writes the reports and runs the gate."""

    def __init__(self, config: pytest.Config) -> None:
        self.worker = hasattr(config, "workerinput")
        base = config.invocation_params.dir
        self.json_path = _path_option(config, "agent_report", base)
        self.html_path = _path_option(config, "agent_report_html", base)
        self.contexts = self.json_path is not None or self.html_path is not None
        self.gate_enabled = bool(config.getoption("agent_gate"))
        self.collector = ReportCollector()
        self.report: dict[str, Any] | None = None
        self.result: GateResult | None = None
        self.baseline: dict[str, Any] | None = None
        self.baseline_path = _path_option(config, "agent_baseline", base)
        try:
            self.tolerance = GateTolerance.parse(
                tokens=_option_or_ini(config, "agent_baseline_tokens"),
                iterations=_option_or_ini(config, "agent_baseline_iterations"),
                trajectory=_option_or_ini(config, "agent_baseline_trajectory"),
            )
        except ReportError as exc:
            raise pytest.UsageError(str(exc)) from None
        if self.baseline_path is not None and not self.worker:
            try:
                self.baseline = load_report(self.baseline_path)
            except ReportError as exc:
                raise pytest.UsageError(f"--agent-baseline: {exc}") from None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call":
            error = call.excinfo
            item.stash[_STALE_KEY] = error is not None and error.errisinstance(StaleCassette)
        if report.when == "teardown":
            runs = item.stash[_RUNS_KEY].records() if _RUNS_KEY in item.stash else []
            config_prices = item.config.stash.get(_PRICES_KEY, None)
            record = build_record(
                runs=runs,
                suite="integration" if item.get_closest_marker("integration") else "unit",
                cassette=item.stash.get(_CASSETTE_ENTRY_KEY, None),
                budget=item.stash.get(_BUDGET_KEY, None),
                repeat=item.stash.get(_REPEAT_KEY, None),
                prices=item.stash.get(_PRICES_KEY, None) or config_prices,
                contexts=self.contexts,
            )
            setattr(report, RECORD_ATTRIBUTE, record)
            report.user_properties.extend(junit_properties(record))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.worker:
            self.collector.add(
                report.nodeid,
                report.outcome,
                record=getattr(report, RECORD_ATTRIBUTE, None),
                keywords=report.keywords,
            )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.worker:
            return
        report = self.collector.build()
        result = evaluate_gate(
            report,
            baseline=self.baseline,
            baseline_path=str(self.baseline_path) if self.baseline_path else None,
            tolerance=self.tolerance,
        )
        report["summary"]["gate"] = {
            "enabled": self.gate_enabled,
            "passed": result.passed,
            "failures": list(result.failures),
        }
        self.report, self.result = report, result
        if self.json_path is not None:
            write_report(self.json_path, report)
        if self.html_path is not None:
            atomic_write_text(self.html_path, render_html(report))
        if self.gate_enabled and not result.passed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(
        self, terminalreporter: Any, exitstatus: int, config: pytest.Config
    ) -> None:
        if self.worker or self.report is None or self.result is None:
            return
        verbosity = config.get_verbosity()
        if verbosity >= 0:
            width = config.get_terminal_writer().fullwidth
            table = table_lines(self.report, width=width, limit=None if verbosity > 0 else 30)
            if table:
                terminalreporter.write_sep("-", "agentctx")
                for row in table:
                    terminalreporter.write_line(row)
        totals = summary_line(self.report)
        if totals is not None:
            terminalreporter.write_line(totals)
        if self.gate_enabled or self.baseline is not None:
            failed = self.gate_enabled and not self.result.passed
            for number, text in enumerate(gate_lines(self.result, enabled=self.gate_enabled)):
                terminalreporter.write_line(text, red=failed, bold=failed and number == 0)
        if verbosity >= 0:
            for kind, path in (("JSON", self.json_path), ("HTML", self.html_path)):
                if path is not None:
                    terminalreporter.write_line(f"agentctx: {kind} report written to {path}")


def _path_option(config: pytest.Config, name: str, base: Path) -> Path | None:
    value = config.getoption(name)
    return None if not value else base / str(value)


def _option_or_ini(config: pytest.Config, name: str) -> str:
    value = config.getoption(name)
    return str(value if value is not None else config.getini(name))


# -- retrieval and artifact fixtures (issue 8) --


@pytest.fixture
def fake_vector_store() -> InMemoryVectorStore:
    """An empty in-memory vector store with deterministic scores; seed it in the test with
    ``fake_vector_store.add("kb", [Document("id", "text"), ...])``."""
    return InMemoryVectorStore()


@pytest.fixture
def artifact_store(tmp_path: Path) -> LocalArtifactStore:
    """A :class:`LocalArtifactStore` on ``tmp_path / "workspace"``, for the artifact tools."""
    return LocalArtifactStore(tmp_path / "workspace")


def _workspace_fixtures(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The ``agent_runtime`` arguments for the test's ``fake_vector_store`` and
    ``artifact_store`` fixtures, when it uses them."""
    names = {"fake_vector_store": "vector_store", "artifact_store": "artifacts"}
    return {
        argument: request.getfixturevalue(fixture)
        for fixture, argument in names.items()
        if fixture in request.fixturenames
    }


# -- suites, budgets, repeat (issue 5) --
#
# Suites: async tests using these fixtures get the asyncio marker at collection;
# integration tests are auto-marked, deselected by default, ordered last and grouped for
# xdist. Budgets: checked after the call phase of each test. Repeat: the test's protocol
# runs n times and reports once.

#: The budget outcome of a test after its call phase: {"limits": {...}, "exceeded": [...]}.
_BUDGET_KEY = pytest.StashKey[dict[str, Any]]()
#: The pass rate of an agent_repeat test: {"runs", "passed", "pass_rate", "min_pass_rate"}.
_REPEAT_KEY = pytest.StashKey[dict[str, Any]]()
#: The price table: on config.stash from the agent_prices ini option, on an item's stash
#: the one its agent_prices fixture gave (overrides included).
_PRICES_KEY = pytest.StashKey[PriceTable]()
_BUDGET_DEFAULTS_KEY = pytest.StashKey[Budget]()
_BUDGET_SPEC_KEY = pytest.StashKey[tuple[Budget, bool]]()
_BUDGET_CHECK_KEY = pytest.StashKey[BudgetCheck]()
_SUITES_KEY = pytest.StashKey[SuiteCounts]()
#: The repetition in progress (from 1) of an agent_repeat test, its tally, and how many
#: runs the test had logged before the repetition started.
_REPEAT_INDEX_KEY = pytest.StashKey[int]()
_REPEAT_TALLY_KEY = pytest.StashKey[RepeatTally]()
_RUNS_OFFSET_KEY = pytest.StashKey[int]()
_REPEAT_ERROR_KEY = pytest.StashKey[RepeatError]()
#: Report attribute carrying a repeated test's tally to the process that prints.
_REPEAT_ATTRIBUTE = "agentctx_repeat"
_DESELECTED_OUTPUT = "agentctx_integration_deselected"
_LOADGROUP_INPUT = "agentctx_loadgroup"


@pytest.hookimpl(specname="pytest_addoption")
def pytest_addoption_suites(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentctx")
    group.addoption(
        "--agent-integration",
        dest="agent_integration",
        action="store_true",
        default=False,
        help="Run the integration tests (marked integration, or under tests/integration/) "
        "with the unit tests; without it they are deselected unless -m names them.",
    )
    for limit in BUDGET_LIMITS:
        parser.addini(
            ini_name(limit),
            f"Budget of every agent test: {limit} (empty: no limit; "
            "@pytest.mark.agent_budget overrides it).",
            default="",
        )
    parser.addini(
        "agent_prices",
        "Model prices for budgets and reports, one per line: "
        "'model = <input USD per million tokens> <output USD per million tokens>'.",
        type="linelist",
        default=[],
    )


@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_suites(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "agent_budget(max_iterations=, max_tool_calls=, max_tokens=, max_cost_usd=, "
        "max_duration_s=): fail the test when its agent runs use more.",
    )
    config.addinivalue_line(
        "markers",
        "agent_repeat(n, min_pass_rate=1.0): run the test n times; it passes when at least "
        "min_pass_rate of the runs pass.",
    )
    try:
        config.stash[_BUDGET_DEFAULTS_KEY] = Budget.from_ini(
            {limit: str(config.getini(ini_name(limit))) for limit in BUDGET_LIMITS}
        )
        config.stash[_PRICES_KEY] = PriceTable.parse_lines(
            str(line) for line in config.getini("agent_prices")
        )
    except AgentCtxError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_SUITES_KEY] = SuiteCounts()
    config.pluginmanager.register(_SuitesReporter(config), "agentctx-suites")
    _group_integration_tests(config)


def _integration_requested(config: pytest.Config) -> bool:
    markexpr = str(config.getoption("markexpr", "") or "")
    if config.getoption("agent_integration") or "integration" in markexpr:
        return True
    return any(in_integration_folder(path, config.rootpath) for path in _named_paths(config))


def _named_paths(config: pytest.Config) -> list[Path]:
    """Paths (files or folders) the command line names, not from testpaths."""
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        return []
    base = config.invocation_params.dir
    return [Path(os.path.abspath(base / arg.split("::", 1)[0])) for arg in config.args]


def _group_integration_tests(config: pytest.Config) -> None:
    """Under ``pytest -n N`` without a --dist choice, switch xdist to ``loadgroup`` when
    integration tests may run, so their xdist_group runs them on one worker, in order."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        # a worker reads --dist from the command line: take the controller's switch
        if workerinput.get(_LOADGROUP_INPUT):
            config.option.loadgroup = True
        return
    if not config.pluginmanager.hasplugin("xdist"):
        return
    chosen = config.known_args_namespace
    user_chose = getattr(chosen, "dist", "no") != "no" or getattr(chosen, "distload", False)
    if (
        getattr(config.option, "dist", "no") == "load"
        and not user_chose
        and _integration_requested(config)
    ):
        config.option.dist = "loadgroup"


@pytest.hookimpl(wrapper=True, trylast=True, specname="pytest_pycollect_makeitem")
def pytest_pycollect_makeitem_asyncio(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> Generator[None, Any, Any]:
    """Mark ``async def`` tests that use this plugin's fixtures for pytest-asyncio, before
    its own wrapper (outside this one) turns marked coroutines into its items."""
    result = yield
    if not inspect.iscoroutinefunction(obj) or not collector.config.pluginmanager.hasplugin(
        "asyncio"
    ):
        return result
    nodes = result if isinstance(result, list) else [result]
    for node in nodes:
        if isinstance(node, pytest.Function) and _needs_asyncio_marker(node):
            node.add_marker("asyncio")
    return result


def _needs_asyncio_marker(item: pytest.Function) -> bool:
    if item.get_closest_marker("asyncio") is not None:
        return False
    if any(item.get_closest_marker(name) is not None for name in OTHER_ASYNC_MARKERS):
        return False
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    used = list(info.argnames)
    for marker in item.iter_markers("usefixtures"):
        used.extend(str(name) for name in marker.args)
    return uses_plugin_fixture(used, info.name2fixturedefs, __name__)


@pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_suites(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Mark integration tests, put them in one xdist group, deselect them by default."""
    rootpath = config.rootpath
    grouped = config.pluginmanager.hasplugin("xdist")
    found: list[pytest.Item] = []
    for item in items:
        marked = item.get_closest_marker("integration") is not None
        if not marked and in_integration_folder(Path(str(item.path)), rootpath):
            item.add_marker("integration")
            marked = True
        if marked:
            found.append(item)
            if grouped:
                item.add_marker(pytest.mark.xdist_group(INTEGRATION_GROUP))
    if not found:
        return
    markexpr = str(config.getoption("markexpr", "") or "")
    if config.getoption("agent_integration") or "integration" in markexpr:
        return
    named = _named_paths(config)
    dropped = [i for i in found if not named_on_command_line(Path(str(i.path)), named, rootpath)]
    if dropped:
        leaving = set(map(id, dropped))
        items[:] = [item for item in items if id(item) not in leaving]
        config.hook.pytest_deselected(items=dropped)
        config.stash[_SUITES_KEY].deselected_integration = len(dropped)


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_order(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Integration tests run after the unit tests (after any other plugin's reordering)."""
    items[:] = integration_last(items, lambda i: i.get_closest_marker("integration") is not None)


class _SuitesReporter:
    """Counts the unit and integration tests that ran (in the process that reports) and
    prints them, with the pass rate of every repeated test, at the end of the session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.worker = hasattr(config, "workerinput")
        self.repeats: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.worker:
            return
        counts = self.config.stash[_SUITES_KEY]
        counts.add(report.nodeid, integration="integration" in report.keywords)
        tally = getattr(report, _REPEAT_ATTRIBUTE, None)
        if report.when == "call" and isinstance(tally, dict):
            self.repeats[report.nodeid] = str(tally.get("line", ""))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: tell each worker whether the session groups tests (see loadgroup)."""
        node.workerinput[_LOADGROUP_INPUT] = getattr(self.config.option, "dist", "") == "loadgroup"

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """xdist: every worker deselected the same tests; keep the count once."""
        output = getattr(node, "workeroutput", {}) or {}
        counts = self.config.stash[_SUITES_KEY]
        counts.deselected_integration = max(
            counts.deselected_integration, int(output.get(_DESELECTED_OUTPUT, 0))
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            counts = self.config.stash[_SUITES_KEY]
            workeroutput[_DESELECTED_OUTPUT] = counts.deselected_integration

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker or self.config.get_verbosity() < -1:
            return
        counts = self.config.stash[_SUITES_KEY]
        if counts.unit or counts.integration or counts.deselected_integration:
            terminalreporter.write_line(counts.line())
        for nodeid, line in sorted(self.repeats.items()):
            terminalreporter.write_line(f"agent_repeat {nodeid}: {line}")


@pytest.fixture(scope="session")
def agent_prices(pytestconfig: pytest.Config) -> PriceTable:
    """Model prices (USD per million tokens) for budgets and reports: the defaults plus the
    ``agent_prices`` ini lines. Override it in a conftest.py to add prices in code::

        @pytest.fixture(scope="session")
        def agent_prices(agent_prices):
            return agent_prices.with_prices({"my-model": (0.50, 1.50)})
    """
    return pytestconfig.stash[_PRICES_KEY]


@pytest.fixture(autouse=True)
def _agentctx_prices(request: pytest.FixtureRequest, agent_prices: PriceTable) -> None:
    if not isinstance(agent_prices, PriceTable):
        raise BudgetError(
            f"the agent_prices fixture gave a {type(agent_prices).__name__}; it must return a "
            "PriceTable, e.g. return agent_prices.with_prices({'my-model': (0.50, 1.50)})."
        )
    request.node.stash[_PRICES_KEY] = agent_prices


@pytest.hookimpl(tryfirst=True, specname="pytest_runtest_setup")
def pytest_runtest_setup_budget(item: pytest.Item) -> None:
    """Read the test's budget before its fixtures run: a bad marker is an error of the test
    (naming it and the key), in every process, also under xdist."""
    __tracebackhide__ = True  # the message says it all: no frames of the plugin
    error = item.stash.get(_REPEAT_ERROR_KEY, None)
    if error is not None:
        raise RepeatError(str(error)) from None
    marks = [(m.args, m.kwargs) for m in item.iter_markers("agent_budget")]
    try:
        budget = Budget.from_markers(
            marks, defaults=item.config.stash[_BUDGET_DEFAULTS_KEY], where=item.nodeid
        )
    except BudgetError as exc:
        raise BudgetError(str(exc)) from None
    item.stash[_BUDGET_SPEC_KEY] = (budget, bool(marks))


@pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_runtest_call")
def pytest_runtest_call_budget(item: pytest.Item) -> Generator[None, None, None]:
    """After the test (and the cassette checks) ran, measure its runs against its budget;
    a test over budget fails with the measured and allowed figures."""
    try:
        result = yield
    except BaseException:
        with contextlib.suppress(Exception):  # never hide the test's own failure
            _check_budget(item)
        raise
    check = _check_budget(item)
    if check is not None and not check.passed:
        pytest.fail(check.failure_message(item.nodeid), pytrace=False)
    return result


def _check_budget(item: pytest.Item) -> BudgetCheck | None:
    spec = item.stash.get(_BUDGET_SPEC_KEY, None)
    if spec is None or not spec[0]:
        return None
    budget, explicit = spec
    log = item.stash.get(_RUNS_KEY, None)
    records = log.records()[item.stash.get(_RUNS_OFFSET_KEY, 0) :] if log is not None else []
    if not records and not explicit:
        return None  # the ini defaults are for agent tests: tests that made runs
    prices = item.stash.get(_PRICES_KEY, None) or item.config.stash[_PRICES_KEY]
    runs = [
        (f"#{number} {record.name}", record.stats(prices))
        for number, record in enumerate(records, start=1)
    ]
    check = budget.check(runs, prices=prices)
    earlier = item.stash.get(_BUDGET_CHECK_KEY, None)
    if earlier is not None and item.stash.get(_REPEAT_INDEX_KEY, 1) > 1:
        check = earlier.merged(check)
    item.stash[_BUDGET_CHECK_KEY] = check
    item.stash[_BUDGET_KEY] = check.to_dict()
    return check


@pytest.hookimpl(wrapper=True, trylast=True, specname="pytest_runtest_makereport")
def pytest_runtest_makereport_repeat(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Innermost: count each repetition's outcome as its reports are made, so the
    repeat entry is final when the last repetition's teardown is reported."""
    report = yield
    tally = item.stash.get(_REPEAT_TALLY_KEY, None)
    if tally is not None:
        tally.observe(item.stash.get(_REPEAT_INDEX_KEY, 1), report.when, report.outcome)
        item.stash[_REPEAT_KEY] = tally.to_dict()
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_runtest_protocol")
def pytest_runtest_protocol_serial(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """On an xdist worker, an integration test runs under the session's integration lock,
    so integration tests run one at a time even where xdist_group cannot group them
    (pytest 9 with pytest-xdist 3.8: pytest-dev/pytest-xdist#1386)."""
    workerinput = getattr(item.config, "workerinput", None)
    if workerinput is None or item.get_closest_marker("integration") is None:
        return (yield)
    with serial_lock(str(workerinput["testrunuid"])):
        return (yield)


@pytest.hookimpl(tryfirst=True, specname="pytest_runtest_protocol")
def pytest_runtest_protocol_repeat(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Run an agent_repeat test n times with fresh function fixtures (and cassettes) each
    time; log one outcome for it, passed when the pass rate reaches min_pass_rate."""
    marker = item.get_closest_marker("agent_repeat")
    if marker is None:
        return None
    try:
        spec = RepeatSpec.from_marker(marker.args, marker.kwargs, where=item.nodeid)
    except RepeatError as exc:
        item.stash[_REPEAT_ERROR_KEY] = exc  # raised at setup: an error of this test
        return None
    from _pytest.runner import runtestprotocol  # what pytest-rerunfailures uses as well

    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    tally = RepeatTally(spec)
    item.stash[_REPEAT_TALLY_KEY] = tally
    repetitions: list[list[pytest.TestReport]] = []
    for index in range(1, spec.runs + 1):
        item.stash[_REPEAT_INDEX_KEY] = index
        item.stash[_REPORT_KEY] = {}
        log = item.stash.get(_RUNS_KEY, None)
        item.stash[_RUNS_OFFSET_KEY] = len(log.records()) if log is not None else 0
        # Between repetitions tear down the test's own fixtures only (its parent stays
        # set up); after the last one, what the next test does not need.
        last = index == spec.runs
        following = nextitem if last else cast("pytest.Item", item.parent)
        repetitions.append(runtestprotocol(item, log=False, nextitem=following))
    for report in _repeat_reports(repetitions, tally):
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _repeat_reports(
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
            reason = _failure_reason(failed)
            lines.append(f"run {number}: failed ({failed.when}): {reason}")
        elif skipped is not None:
            lines.append(f"run {number}: skipped")
        else:
            lines.append(f"run {number}: passed")
    setup = _with_outcome(last[0], "passed")
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
    setattr(call, _REPEAT_ATTRIBUTE, {**tally.to_dict(), "line": tally.describe()})
    teardown = _with_outcome(last[-1], "passed") if tally.met else last[-1]
    return [setup, call, teardown]


def _failure_reason(report: pytest.TestReport) -> str:
    """The exception line of a failed report (``AssertionError: ...``), shortened."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = str(getattr(crash, "message", "") or "")
    lines = message.strip().splitlines() or report.longreprtext.strip().splitlines()
    return (lines[0] if message else lines[-1] if lines else "failed")[:200]


def _with_outcome(report: pytest.TestReport, outcome: Literal["passed"]) -> pytest.TestReport:
    if report.outcome == outcome:
        return report
    changed = copy.copy(report)
    changed.outcome, changed.longrepr = outcome, None
    return changed
