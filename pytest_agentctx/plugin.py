"""The pytest plugin (the ``pytest11`` entry point): hooks, options and fixtures only.

All behaviour lives in the package's modules; this file wires them into pytest.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from .clock import SequentialIds, StepClock, parse_datetime
from .fakes import FakeLLM, FakeTools
from .freeze import FrozenClock
from .runtime import AgentRuntime


@dataclass(frozen=True)
class _ClockSettings:
    start: datetime
    step: timedelta
    ignore: tuple[str, ...]


_REPORT_KEY = pytest.StashKey[dict[str, pytest.TestReport]]()
_CLOCK_KEY = pytest.StashKey[_ClockSettings]()
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


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_CLOCK_KEY] = _clock_settings(config)
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


def _clock_settings(config: pytest.Config) -> _ClockSettings:
    """Read and check the clock options once, at configure time (bad values: usage error)."""
    start_text = str(config.getoption("agent_clock_start") or config.getini("agent_clock_start"))
    try:
        start = parse_datetime(start_text, what="agent_clock_start")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    raw_step = str(config.getini("agent_clock_step"))
    try:
        seconds = float(raw_step)
    except ValueError:
        raise pytest.UsageError(
            f"agent_clock_step = {raw_step!r} is not a number of seconds; "
            "set it to e.g. 1 or 0.5 in your pytest configuration."
        ) from None
    if seconds < 0:
        raise pytest.UsageError(f"agent_clock_step = {raw_step!r} must not be negative.")
    ignore = tuple(str(line) for line in config.getini("agent_clock_ignore"))
    return _ClockSettings(start, timedelta(seconds=seconds), ignore)


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
    return AgentRuntime(clock=clock, ids=SequentialIds(), tool_overrides=overrides)


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
