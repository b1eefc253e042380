"""The pytest plugin (the ``pytest11`` entry point): hooks, options and fixtures only.

All behaviour lives in the package's modules; this file wires them into pytest.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from .cassettes import Cassette, NetworkGuard, Redactor
from .cassettes.redact import DEFAULT_SECRET_ENV
from .cassettes.session import RecordMode
from .cassettes.settings import CassetteSettings, TestOptions, cassette_path
from .clock import ClockSettings, SequentialIds, StepClock
from .exceptions import CassetteError, CassetteMiss, NetworkBlocked
from .fakes import FakeLLM, FakeTools
from .freeze import FrozenClock
from .matching import assertrepr_compare
from .runtime import AgentRuntime
from .snapshot import AgentSnapshotAssertion, SnapshotOptions
from .stats import RunLog, RunRecord

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
    ``allowed_hosts`` and ``redact_values`` (more literal secrets)."""
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
    config = dict(request.getfixturevalue("agent_cassette_config"))
    try:
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
    )
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
    if cassette.records:
        call = item.stash.get(_REPORT_KEY, {}).get("call")
        if call is not None and (call.passed or settings.record_failing):
            cassette.save(settings.run_id)


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

    If the test also uses ``fake_tools``, the runtime answers tools through it.
    """
    settings = request.config.stash[_CLOCK_KEY]
    clock = StepClock(settings.start, settings.step)
    overrides = (
        request.getfixturevalue("fake_tools") if "fake_tools" in request.fixturenames else None
    )
    runtime = AgentRuntime(clock=clock, ids=SequentialIds(), tool_overrides=overrides)
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
