"""The pytest plugin (the ``pytest11`` entry point): hooks, options and fixtures only.

All behaviour lives in the package's modules; this file wires them into pytest.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from pytest_agentctx.context.clock import StepClock
from pytest_agentctx.context.figures import PriceTable, RunRecord
from pytest_agentctx.doubles.clock import ClockSettings, SequentialIds
from pytest_agentctx.exceptions import (
    AgentCtxError,
    BudgetError,
    CassetteError,
    CassetteMiss,
    NetworkBlocked,
    RepeatError,
    StaleCassette,
)
from pytest_agentctx.reports.budgets import (
    BUDGET_LIMITS,
    Budget,
    BudgetCheck,
    check_budget,
    ini_name,
)
from pytest_agentctx.reports.stats import RunLog
from pytest_agentctx.traffic.cassettes.settings import (
    CassetteSettings,
    TestOptions,
    build_cassette,
    cassette_config,
    cassette_path,
    is_agent_test,
    marker_options,
    normalise_record_args,
)

from .suites import (
    RepeatSpec,
    RepeatTally,
    SuiteCounts,
    SuiteScope,
    SuitesReporter,
    deselect_integration_tests,
    group_integration_tests,
    integration_last,
    needs_asyncio_marker,
    repeat_cassette_path,
    serial_lock,
)

if TYPE_CHECKING:
    # Imported where they are used: loading the plugin at pytest's start-up then costs
    # little, and a session that never uses a fixture never pays for it.
    from syrupy.assertion import SnapshotAssertion

    from pytest_agentctx.assertions.snapshots.assertion import AgentSnapshotAssertion
    from pytest_agentctx.assertions.snapshots.options import SnapshotOptions
    from pytest_agentctx.doubles.fake_llm import FakeLLM
    from pytest_agentctx.doubles.fake_tools import FakeTools
    from pytest_agentctx.doubles.frozen_clock import FrozenClock
    from pytest_agentctx.redaction.active import SessionSecrets
    from pytest_agentctx.redaction.redactor import Redactor
    from pytest_agentctx.runtime.artifacts import LocalArtifactStore
    from pytest_agentctx.runtime.loop import AgentRuntime
    from pytest_agentctx.runtime.retrieval import InMemoryVectorStore
    from pytest_agentctx.traffic.capture import CapturedRuns, Exchange
    from pytest_agentctx.traffic.cassettes import Cassette, NetworkGuard
    from pytest_agentctx.traffic.cassettes.store import Interaction

T = TypeVar("T")

#: What the plugin stashes on a test while it runs (its runs and their contexts, cassette,
#: reports, budget and repeat figures): every key made with ``_test_key`` is dropped from the
#: test once its reports are made (pytest keeps every item until the session ends).
_TEST_KEYS: list[pytest.StashKey[Any]] = []


def _test_key(key: pytest.StashKey[T]) -> pytest.StashKey[T]:
    """``key``, registered as one of a test's own: released after the test's protocol."""
    _TEST_KEYS.append(key)
    return key


_REPORT_KEY = _test_key(pytest.StashKey[dict[str, pytest.TestReport]]())
_CASSETTE_SETTINGS_KEY = pytest.StashKey[CassetteSettings]()
_CASSETTE_KEY: pytest.StashKey[Cassette | None] = _test_key(pytest.StashKey())
_GUARD_KEY: pytest.StashKey[NetworkGuard | None] = _test_key(pytest.StashKey())
_CLOCK_KEY = pytest.StashKey[ClockSettings]()
#: The runs each test made (runtime results, captured conversations): budgets and reports.
_RUNS_KEY = _test_key(pytest.StashKey[RunLog]())
#: The runs rebuilt from the test's traffic (its cassette, the fake model, or a recorder):
#: measured for budgets, reports and the gate, and what ``agent_context`` gives.
_CAPTURED_KEY: pytest.StashKey[CapturedRuns] = _test_key(pytest.StashKey())
#: Whether the session reads every agent test's runs (a report file, the gate, a baseline).
_MEASURE_KEY = pytest.StashKey[bool]()
#: The session's secrets (secret environment values, values learned from traffic) and each
#: test's redactor (its cassette's): snapshots, records and failure text pass it.
_SECRETS_KEY: pytest.StashKey[SessionSecrets] = pytest.StashKey()
_REDACTOR_KEY: pytest.StashKey[Redactor] = _test_key(pytest.StashKey())


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
        "Hosts (names or addresses) agent tests may reach while replaying or using fake_llm.",
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
    normalise_record_args(args)


@pytest.hookimpl(tryfirst=True, specname="pytest_configure")
def pytest_configure_asyncio_warning(config: pytest.Config) -> None:
    """Installing the plugin installs pytest-asyncio, which warns (and, under
    ``filterwarnings = error``, stops pytest) when a project never configured it. A project
    that does not use pytest-asyncio must run as without the plugin: that one warning is
    ignored. The filter goes into the warning filters pytest sets up for its configuration,
    which it restores when the session ends; it matches that one message only."""
    import warnings

    warnings.filterwarnings(
        "ignore",
        message=r'The configuration option "asyncio_default_fixture_loop_scope" is unset',
        category=pytest.PytestDeprecationWarning,
    )


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[_CLOCK_KEY] = ClockSettings.from_config(config)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    try:
        config.stash[_CASSETTE_SETTINGS_KEY] = CassetteSettings.from_config(config)
    except CassetteError as exc:
        raise pytest.UsageError(str(exc)) from None
    from pytest_agentctx.redaction.active import SessionSecrets, set_active

    secrets = SessionSecrets(config.stash[_CASSETTE_SETTINGS_KEY].secret_env)
    config.stash[_SECRETS_KEY] = secrets
    secrets.outer = set_active(secrets)  # the redactor is made when first asked for
    config.addinivalue_line(
        "markers",
        "agent(**options): an agent test; options configure pytest-agentctx for this test.",
    )
    config.addinivalue_line(
        "markers", "integration: an integration test (slow, talks to real services)."
    )
    config.stash[_MEASURE_KEY] = any(
        config.getoption(name)
        for name in ("agent_report", "agent_report_html", "agent_gate", "agent_baseline")
    )
    from pytest_agentctx.reports.terminal import AgentReports

    config.pluginmanager.register(AgentReports(config, _test_record), "agentctx-reports")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(_REPORT_KEY, {})[report.when] = report
    redactor = item.stash.get(_REDACTOR_KEY, None)
    if redactor is not None:  # the failure text and output of a test that uses the plugin
        from pytest_agentctx.redaction.active import redact_report

        redact_report(report, redactor)
    if call.when == "call":  # for the reports: a stale cassette's unused recordings count
        error = call.excinfo
        item.stash[_STALE_KEY] = error is not None and error.errisinstance(StaleCassette)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    try:
        result = yield
    except BaseException as exc:
        cassette = item.stash.get(_CASSETTE_KEY, None)
        if cassette is not None and cassette.misses:
            message = cassette.miss_message(cassette.misses[0])
            raise CassetteMiss(_redacted(item, message)) from exc
        guard = item.stash.get(_GUARD_KEY, None)
        if guard is not None and guard.blocked:
            # The test failed because a connection was refused: say so.
            raise NetworkBlocked(_redacted(item, guard.message(guard.blocked[0]))) from exc
        raise
    cassette = item.stash.get(_CASSETTE_KEY, None)
    guard = item.stash.get(_GUARD_KEY, None)
    if cassette is not None:  # a stream the agent stopped reading: while its client is open
        cassette.finish_streams()
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


def _redactor_of(item: pytest.Item) -> Redactor:
    """The redactor of ``item``: its own (:func:`_test_redactor`), else the session's."""
    redactor = item.stash.get(_REDACTOR_KEY, None)
    return redactor if redactor is not None else item.config.stash[_SECRETS_KEY].redactor


def _redacted(item: pytest.Item, text: str) -> str:
    """``text`` (a failure message) scrubbed of the secrets of ``item``."""
    return _redactor_of(item).text(text)


def _use_redactor(item: pytest.Item, redactor: Redactor) -> Redactor:
    """Make ``redactor`` the test's: its snapshots, record, reports and the assertion
    explanations printed while it runs pass it."""
    from pytest_agentctx.redaction.active import set_active

    item.stash[_REDACTOR_KEY] = redactor
    set_active(redactor)
    return redactor


def _test_redactor(request: pytest.FixtureRequest) -> Redactor:
    """The test's redactor: its cassette's when it has one, else one of the session's
    secrets and the ``redact_values`` of its ``agent_cassette_config``."""
    item: pytest.Item = request.node
    redactor = item.stash.get(_REDACTOR_KEY, None)
    if redactor is not None:
        return redactor
    config = cassette_config(request.getfixturevalue("agent_cassette_config"), where=item.nodeid)
    secrets = request.config.stash[_SECRETS_KEY]
    return _use_redactor(item, secrets.for_test(config.get("redact_values", ())))


def _capture(item: pytest.Item, source: Callable[[], Sequence[Exchange | Interaction]]) -> None:
    """Measure the runs of ``item`` from the exchanges ``source`` gives (built when read)."""
    from pytest_agentctx.traffic.capture import CapturedRuns

    clock = item.config.stash[_CLOCK_KEY]
    runs = CapturedRuns(source, clock_start=clock.start, clock_step=clock.step)
    item.stash[_CAPTURED_KEY] = runs
    item.stash.setdefault(_RUNS_KEY, RunLog()).set_captured(runs.records)


def _record_traffic(item: pytest.Item) -> Iterator[None]:
    """Capture the live traffic of a test that has a budget but no cassette or fake model
    (an agent talking to a loopback server or a real provider), so the budget is measured."""
    from pytest_agentctx.traffic.capture import TrafficRecorder

    recorder = TrafficRecorder()
    _capture(item, lambda: recorder.exchanges)
    recorder.start()
    try:
        yield
    finally:
        recorder.stop()


@pytest.fixture(autouse=True)
def _agentctx_cassette(request: pytest.FixtureRequest) -> Iterator[Cassette | None]:
    item = request.node
    settings = request.config.stash[_CASSETTE_SETTINGS_KEY]
    fixtures = getattr(item, "fixturenames", ())
    if not isinstance(item, pytest.Item) or not is_agent_test(
        fixtures, marked=item.get_closest_marker("agent") is not None, settings=settings
    ):
        if (
            isinstance(item, pytest.Item)
            and "fake_llm" not in fixtures
            and item.get_closest_marker("agent_budget") is not None
        ):
            _test_redactor(request)
            for _ in _record_traffic(item):
                yield None
            return
        yield None
        return
    try:  # a bad marker option or config value is an error of this test, naming it
        marks = [(marker.args, marker.kwargs) for marker in item.iter_markers("agent")]
        options = TestOptions.resolve(
            settings, marker_options(marks, where=item.nodeid), where=item.nodeid
        )
        config = cassette_config(
            request.getfixturevalue("agent_cassette_config"), where=item.nodeid
        )
    except CassetteError as exc:  # the message says it all: no frames of the plugin
        raise pytest.fail.Exception(f"CassetteError: {exc}", pytrace=False) from None
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
    if repetition is not None:  # agent_repeat: one cassette per repetition
        path = repeat_cassette_path(path, repetition)
    # The cassette's redactor is the test's: it also knows what earlier tests learned.
    secrets = request.config.stash[_SECRETS_KEY]
    own_secrets = config.get("redact_values", ())
    cassette, guard = build_cassette(
        path,
        settings=settings,
        options=options,
        config={**config, "redact_values": (*own_secrets, *secrets.learned)},
        test_id=item.nodeid,
    )
    _use_redactor(item, cassette.redactor)
    item.stash[_CASSETTE_KEY] = cassette
    item.stash[_GUARD_KEY] = guard
    _capture(item, lambda: cassette.exchange_log)
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
        secrets.absorb(cassette.redactor, own_secrets)  # what it learned, for later tests
    call = item.stash.get(_REPORT_KEY, {}).get("call")
    saved = False
    unsaved: CassetteError | None = None
    if cassette.records and call is not None and (call.passed or settings.record_failing):
        try:
            saved = cassette.save(settings.run_id)
        except CassetteError as exc:  # a read-only or full disk: the old cassette is kept
            unsaved = exc
    judged = bool(call and call.passed) or item.stash.get(_STALE_KEY, False)
    from pytest_agentctx.reports.records import cassette_entry

    item.stash[_CASSETTE_ENTRY_KEY] = cassette_entry(  # for the reports
        cassette,
        rootpath=request.config.rootpath,
        judged=judged,
        saved=saved,
        unsaved=unsaved is not None,
    )
    if unsaved is not None:  # the message says it all: no frames of the plugin
        raise pytest.fail.Exception(f"{type(unsaved).__name__}: {unsaved}", pytrace=False)


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
    from pytest_agentctx.doubles.fake_tools import FakeTools

    return FakeTools()


@pytest.fixture
def agent_runtime(request: pytest.FixtureRequest) -> AgentRuntime:
    """An :class:`AgentRuntime` with a stepping clock and sequential ids.

    If the test also uses ``fake_tools``, the runtime answers tools through it; if it uses
    ``fake_vector_store`` or ``artifact_store``, the runtime searches and stores in them.
    """
    from pytest_agentctx.runtime.loop import AgentRuntime

    settings = request.config.stash[_CLOCK_KEY]
    clock = StepClock(settings.start, settings.step)
    overrides = (
        request.getfixturevalue("fake_tools") if "fake_tools" in request.fixturenames else None
    )
    runtime = AgentRuntime(
        clock=clock,
        ids=SequentialIds(),
        tool_overrides=overrides,
        **{  # retrieval and artifact fixtures, when the test uses them
            argument: request.getfixturevalue(fixture)
            for fixture, argument in _WORKSPACE_FIXTURES.items()
            if fixture in request.fixturenames
        },
    )
    request.node.stash.setdefault(_RUNS_KEY, RunLog()).add_source(
        lambda: [RunRecord(r.agent.name, "runtime", r.context) for r in runtime.results]
    )
    return runtime


def _fake_llm_guard(request: pytest.FixtureRequest) -> NetworkGuard:
    """The guard that keeps a fake_llm test offline, allowing the hosts that
    ``agent_allowed_hosts``, the ``agent`` marker and ``agent_cassette_config`` allow."""
    from pytest_agentctx.traffic.cassettes.network import NetworkGuard

    marker_kwargs: dict[str, object] = {}
    for marker in reversed(list(request.node.iter_markers("agent"))):
        marker_kwargs.update(marker.kwargs)
    where = request.node.nodeid
    settings = request.config.stash[_CASSETTE_SETTINGS_KEY]
    options = TestOptions.resolve(settings, marker_kwargs, where=where)
    config = cassette_config(request.getfixturevalue("agent_cassette_config"), where=where)
    return NetworkGuard.for_fake_llm((*options.allowed_hosts, *config.get("allowed_hosts", ())))


@pytest.fixture
def fake_llm(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    """A scripted model that answers the openai/anthropic SDKs at the HTTP transport.

    Script replies with ``fake_llm.reply(...)``. The test fails if the agent makes more
    model calls than scripted or leaves scripted replies unused, and runs offline: like a
    replay, it may reach only loopback and the allowed hosts.
    """
    import os

    from pytest_agentctx.doubles.fake_llm import PLACEHOLDER_KEYS, FakeLLM

    for name, value in PLACEHOLDER_KEYS.items():
        if not os.environ.get(name):
            monkeypatch.setenv(name, value)
    fake = FakeLLM(ids=SequentialIds())
    _capture(request.node, lambda: fake.exchanges)
    guard = _fake_llm_guard(request)
    _test_redactor(request)
    request.node.stash[_GUARD_KEY] = guard  # verified and reported as a cassette's guard is
    with guard:
        fake.start()
        try:
            yield fake
        finally:
            fake.stop()
    request.node.stash[_GUARD_KEY] = None
    reports = request.node.stash.get(_REPORT_KEY, {})
    call_report = reports.get("call")
    if call_report is not None and call_report.passed:
        fake.verify()


@pytest.fixture
def frozen_clock(request: pytest.FixtureRequest) -> Iterator[FrozenClock]:
    """The wall clock frozen (freezegun, ``real_asyncio=True``) at ``agent_clock_start``."""
    from pytest_agentctx.doubles.frozen_clock import FrozenClock

    settings = request.config.stash[_CLOCK_KEY]
    clock = FrozenClock(settings.start, ignore=settings.ignore)
    with clock:
        yield clock


@pytest.hookimpl(tryfirst=True)
def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    """For ``==`` on the context's models or a pattern: the count, then every mismatch,
    with the running test's secrets redacted (only in the text: what compared equal, and
    what did not, is unchanged)."""
    from pytest_agentctx.assertions.patterns.report import assertrepr_compare

    lines = assertrepr_compare(op, left, right)
    if lines is None:
        return None
    from pytest_agentctx.redaction.active import active, redact_lines

    redactor = active()
    return lines if redactor is None else redact_lines(lines, redactor)


@pytest.fixture
def agent_snapshot_config() -> SnapshotOptions:
    """Options of ``agent_snapshot`` (volatile values, projections); override to change."""
    from pytest_agentctx.assertions.snapshots.options import SnapshotOptions

    return SnapshotOptions()


@pytest.fixture
def agent_snapshot(
    request: pytest.FixtureRequest,
    snapshot: SnapshotAssertion,
    agent_snapshot_config: SnapshotOptions,
) -> AgentSnapshotAssertion:
    """A syrupy snapshot of an agent run: ``assert result.context == agent_snapshot``.

    Stored as ``__snapshots__/<module>/<test>.agentctx``; ``--snapshot-update`` writes it.
    Secrets are written as ``REDACTED`` by the test's redactor, the one its cassette uses.
    """
    from pytest_agentctx.assertions.snapshots.assertion import AgentSnapshotAssertion

    return AgentSnapshotAssertion.from_snapshot(
        snapshot, agent_snapshot_config, _test_redactor(request)
    )


# -- agent_context --


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
    from pytest_agentctx.traffic.capture import TrafficRecorder

    item = request.node
    if _agentctx_cassette is not None:  # the cassette fixture captures its exchange log
        yield item.stash[_CAPTURED_KEY]
        return
    if "fake_llm" in request.fixturenames:
        request.getfixturevalue("fake_llm")  # started first: the recorder sees its replies
    # A recorder also sees the exchanges that are no model call (agent_context.non_llm).
    recorder = TrafficRecorder()
    _capture(item, lambda: recorder.exchanges)
    runs = item.stash[_CAPTURED_KEY]
    recorder.start()
    try:
        yield runs
    finally:
        recorder.stop()


# -- reports and gate ----------------------------------------------------------------

#: The cassette's report entry (status, unused recordings), set when its fixture ends.
_CASSETTE_ENTRY_KEY = _test_key(pytest.StashKey[dict[str, Any]]())
#: Whether the test failed because its cassette is stale (its unused recordings count).
_STALE_KEY = _test_key(pytest.StashKey[bool]())


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


def _test_record(item: pytest.Item, contexts: bool) -> dict[str, Any]:
    """The report record of ``item`` (:func:`build_record`) from what its fixtures and
    hooks stashed: its runs, cassette, budget, repeat figures and prices."""
    from pytest_agentctx.reports.records import build_record

    log = item.stash.get(_RUNS_KEY, None)
    measured = True
    if log is None:
        runs = []
    elif item.config.stash[_MEASURE_KEY] or _BUDGET_CHECK_KEY in item.stash:
        runs = log.records()
    else:  # nothing reads this test's captured runs: do not rebuild them
        runs = log.exact_records()
        measured = bool(runs) or not log.captures
    config_prices = item.config.stash.get(_PRICES_KEY, None)
    return build_record(
        runs=runs,
        suite="integration" if item.get_closest_marker("integration") else "unit",
        cassette=item.stash.get(_CASSETTE_ENTRY_KEY, None),
        budget=item.stash.get(_BUDGET_KEY, None),
        repeat=item.stash.get(_REPEAT_KEY, None),
        prices=item.stash.get(_PRICES_KEY, None) or config_prices,
        contexts=contexts,
        measured=measured,
        redactor=_redactor_of(item) if runs or _REDACTOR_KEY in item.stash else None,
    )


# -- retrieval and artifact fixtures --


@pytest.fixture
def fake_vector_store() -> InMemoryVectorStore:
    """An empty in-memory vector store with deterministic scores; seed it in the test with
    ``fake_vector_store.add("kb", [Document("id", "text"), ...])``."""
    from pytest_agentctx.runtime.retrieval import InMemoryVectorStore

    return InMemoryVectorStore()


@pytest.fixture
def artifact_store(tmp_path: Path) -> LocalArtifactStore:
    """A :class:`LocalArtifactStore` on ``tmp_path / "workspace"``, for the artifact tools."""
    from pytest_agentctx.runtime.artifacts import LocalArtifactStore

    return LocalArtifactStore(tmp_path / "workspace")


#: The workspace fixtures ``agent_runtime`` takes when the test uses them, with the
#: runtime's argument for each.
_WORKSPACE_FIXTURES = {"fake_vector_store": "vector_store", "artifact_store": "artifacts"}


# -- suites, budgets, repeat --
#
# Suites: async tests using these fixtures get the asyncio marker at collection;
# integration tests are auto-marked, deselected by default, ordered last and grouped for
# xdist: the agent tests only, or every test with agent_suites = true. Budgets: checked
# after the call phase of each test. Repeat: the test's protocol runs n times and reports
# once.

#: The budget outcome of a test after its call phase: {"limits": {...}, "exceeded": [...]}.
_BUDGET_KEY = _test_key(pytest.StashKey[dict[str, Any]]())
#: The pass rate of an agent_repeat test: {"runs", "passed", "pass_rate", "min_pass_rate"}.
_REPEAT_KEY = _test_key(pytest.StashKey[dict[str, Any]]())
#: The price table: on config.stash from the agent_prices ini option, on an item's stash
#: the one its agent_prices fixture gave (overrides included).
_PRICES_KEY = _test_key(pytest.StashKey[PriceTable]())
_BUDGET_DEFAULTS_KEY = pytest.StashKey[Budget]()
_BUDGET_SPEC_KEY = _test_key(pytest.StashKey[tuple[Budget, bool]]())
_BUDGET_CHECK_KEY = _test_key(pytest.StashKey[BudgetCheck]())
_SUITES_KEY = pytest.StashKey[SuiteCounts]()
_SUITE_SCOPE_KEY = pytest.StashKey[SuiteScope]()
#: The repetition in progress (from 1) of an agent_repeat test, and its tally.
_REPEAT_INDEX_KEY = _test_key(pytest.StashKey[int]())
_REPEAT_TALLY_KEY = _test_key(pytest.StashKey[RepeatTally]())
_REPEAT_ERROR_KEY = _test_key(pytest.StashKey[RepeatError]())


@pytest.hookimpl(specname="pytest_addoption")
def pytest_addoption_suites(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentctx")
    group.addoption(
        "--agent-integration",
        dest="agent_integration",
        action="store_true",
        default=False,
        help="Run the integration tests (marked integration, or under tests/integration/) "
        "with the unit tests; without it they are deselected unless -m names them "
        "(agent tests only, unless the agent_suites ini option is true).",
    )
    parser.addini(
        "agent_suites",
        "Sort every test into the unit and integration suites (auto-mark, deselect, order "
        "last, run one at a time, --dist loadgroup under xdist); without it, only agent tests.",
        type="bool",
        default=False,
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
    scope = config.stash[_SUITE_SCOPE_KEY] = SuiteScope.from_config(config)
    config.stash[_SUITES_KEY] = SuiteCounts(agent_only=not scope.everything)
    reporter = SuitesReporter(config, config.stash[_SUITES_KEY], scope)
    config.pluginmanager.register(reporter, "agentctx-suites")
    group_integration_tests(config, scope)


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
        if isinstance(node, pytest.Function) and needs_asyncio_marker(node, __name__):
            node.add_marker("asyncio")
    return result


@pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_suites(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Mark the sorted integration tests, put them in one xdist group, deselect them by
    default (the agent tests only, or every test with agent_suites)."""
    deselect_integration_tests(
        config, items, config.stash[_SUITES_KEY], config.stash[_SUITE_SCOPE_KEY]
    )


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_order(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Sorted integration tests run after the other tests (after any other plugin's
    reordering); with no such test the order is left as it is."""
    scope = config.stash[_SUITE_SCOPE_KEY]
    if any(scope.integration(item) for item in items):
        items[:] = integration_last(items, scope.integration)


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
        pytest.fail(_redacted(item, check.failure_message(item.nodeid)), pytrace=False)
    return result


def _check_budget(item: pytest.Item) -> BudgetCheck | None:
    """Check the test's runs (of this repetition) against its budget (:func:`check_budget`)
    and stash the outcome for the reports."""
    log = item.stash.get(_RUNS_KEY, None)
    repeated = item.stash.get(_REPEAT_INDEX_KEY, 1) > 1
    check = check_budget(
        item.stash.get(_BUDGET_SPEC_KEY, None),
        lambda: log.records(last_part=True) if log is not None else [],
        prices=item.stash.get(_PRICES_KEY, None) or item.config.stash[_PRICES_KEY],
        earlier=item.stash.get(_BUDGET_CHECK_KEY, None) if repeated else None,
        agent_test=log is not None and log.measurable,
    )
    if check is not None:
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
    """On an xdist worker, a sorted integration test runs under the session's integration
    lock, so integration tests run one at a time even where xdist_group cannot group them
    (pytest 9 with pytest-xdist 3.8: pytest-dev/pytest-xdist#1386)."""
    workerinput = getattr(item.config, "workerinput", None)
    if workerinput is None or not item.config.stash[_SUITE_SCOPE_KEY].integration(item):
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
    tally = RepeatTally(spec)
    item.stash[_REPEAT_TALLY_KEY] = tally

    def before_each(index: int) -> None:
        item.stash[_REPEAT_INDEX_KEY] = index
        item.stash[_REPORT_KEY] = {}
        item.stash.setdefault(_RUNS_KEY, RunLog()).new_part()

    from .repeat import run_repetitions

    run_repetitions(item, nextitem, tally, before_each)
    return True


@pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_runtest_protocol")
def pytest_runtest_protocol_release(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """Drop what the plugin stashed on a test once its reports are made and sent: a long
    session then keeps no agent run alive, so its memory, the garbage collector's passes
    and the interpreter's exit do not grow with the number of tests run. The session's
    redactor is the active one again."""
    try:
        return (yield)
    finally:
        for key in _TEST_KEYS:
            with contextlib.suppress(KeyError):
                del item.stash[key]
        from pytest_agentctx.redaction.active import set_active

        set_active(item.config.stash[_SECRETS_KEY])


def pytest_unconfigure(config: pytest.Config) -> None:
    """The redactor active before this session (an outer session's) is active again. The
    run's cassette markers are removed (by the xdist controller once its workers ended)."""
    secrets = config.stash.get(_SECRETS_KEY, None)
    if secrets is not None:
        from pytest_agentctx.redaction.active import set_active

        set_active(secrets.outer)
    settings = config.stash.get(_CASSETTE_SETTINGS_KEY, None)
    cassettes_used = "pytest_agentctx.traffic.cassettes.store" in sys.modules
    if (
        settings is not None
        and not hasattr(config, "workerinput")
        and (cassettes_used or config.pluginmanager.has_plugin("dsession"))
    ):
        from pytest_agentctx.traffic.cassettes.store import end_runs

        end_runs(settings.run_id)
