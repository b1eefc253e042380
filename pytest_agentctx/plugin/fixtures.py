"""The test doubles and workspaces a test asks for, and the clocks they run on.

``fake_tools``, ``fake_llm`` (the fake model, offline like a replay) and ``fake_mcp`` (a
scripted MCP server, in-process), ``agent_runtime``
(an :class:`AgentRuntime` on a stepping clock with sequential ids, using the other fixtures
the test asks for), ``frozen_clock``, and the workspace fixtures ``fake_vector_store`` and
``artifact_store``. The ``agent_clock_*`` options are read at configure time
(:func:`configure`, :func:`clock_settings`).

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_agentctx.context.clock import ClockSettings

from . import capture
from .keys import (
    CAPTURED_KEY,
    CASSETTE_SETTINGS_KEY,
    CLOCK_KEY,
    GUARD_KEY,
    REPORT_KEY,
    RUNS_KEY,
    VERDICTS_KEY,
)

if TYPE_CHECKING:
    from pytest_agentctx.doubles.fake_llm import FakeLLM
    from pytest_agentctx.doubles.fake_mcp.server import FakeMcp
    from pytest_agentctx.doubles.fake_tools import FakeTools
    from pytest_agentctx.doubles.freeze import FrozenClock
    from pytest_agentctx.evals.judge import Judge
    from pytest_agentctx.runtime.artifacts import LocalArtifactStore
    from pytest_agentctx.runtime.loop import AgentRuntime
    from pytest_agentctx.runtime.retrieval import InMemoryVectorStore


def configure(config: pytest.Config) -> None:
    """The deterministic clocks' settings, from the ``agent_clock_*`` options."""
    try:
        config.stash[CLOCK_KEY] = clock_settings(config)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def clock_settings(config: pytest.Config) -> ClockSettings:
    """The clocks' settings of a pytest session: ``--agent-clock-start`` over the
    ``agent_clock_*`` ini options (:meth:`ClockSettings.build`); a value that cannot be read
    raises ``ValueError``."""
    return ClockSettings.build(
        start=str(config.getoption("agent_clock_start") or config.getini("agent_clock_start")),
        step=str(config.getini("agent_clock_step")),
        ignore=(str(line) for line in config.getini("agent_clock_ignore")),
    )


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
    from pytest_agentctx.context.clock import StepClock
    from pytest_agentctx.context.runs import RunRecord
    from pytest_agentctx.doubles.ids import SequentialIds
    from pytest_agentctx.reports.stats import RunLog
    from pytest_agentctx.runtime.loop import AgentRuntime

    settings = request.config.stash[CLOCK_KEY]
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
    request.node.stash.setdefault(RUNS_KEY, RunLog()).add_source(
        lambda: [RunRecord(r.agent.name, "runtime", r.context) for r in runtime.results]
    )
    return runtime


@pytest.fixture
def fake_llm(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    """A scripted model that answers the openai/anthropic SDKs at the HTTP transport.

    Script replies with ``fake_llm.reply(...)``. The test fails if the agent makes more
    model calls than scripted or leaves scripted replies unused, and runs offline: like a
    replay, it may reach only loopback and the allowed hosts.
    """
    import os

    from pytest_agentctx.doubles.fake_llm import FakeLLM, missing_keys
    from pytest_agentctx.doubles.ids import SequentialIds
    from pytest_agentctx.traffic import lazy_tls, scopes

    from .cassettes._run import fake_llm_guard, fake_llm_ignoring

    placeholders = request.config.stash[CASSETTE_SETTINGS_KEY].placeholder_keys
    if placeholders:
        for name, value in missing_keys(os.environ).items():
            monkeypatch.setenv(name, value)
    fake = FakeLLM(ids=SequentialIds(), placeholder_keys=placeholders)
    capture.capture_runs(request.node, lambda: fake.exchanges)
    guard = fake_llm_guard(request)
    capture.redactor_for(request)
    request.node.stash[GUARD_KEY] = guard  # verified and reported as a cassette's guard is
    # The clients the test builds load their certificates only when a request of theirs
    # goes to the network (lazy_tls): the fake answers the model calls at the transport.
    with guard, lazy_tls.installed(), fake_llm_ignoring(request):
        scopes.hold()  # to the session's end: a late request is refused between tests too
        fake.start()
        try:
            yield fake
        finally:
            fake.stop()
    request.node.stash[GUARD_KEY] = None
    reports = request.node.stash.get(REPORT_KEY, {})
    call_report = reports.get("call")
    if call_report is not None and call_report.passed:
        fake.verify()


@pytest.fixture
def fake_mcp(request: pytest.FixtureRequest) -> Iterator[FakeMcp]:
    """A scripted MCP server (``fake_mcp.tool(...)``, ``.resource(...)``, ``.prompt(...)``)
    answering in-process: ``fake_mcp.url`` (streamable HTTP), ``fake_mcp.stdio_parameters()``
    and ``fake_mcp.session()`` (the SDK's in-memory streams). Nothing is spawned and no
    socket is opened. The test fails if a client asked for a tool, resource, prompt or
    method it has no script for.

    Its exchanges are in the test's context and never in a cassette: with ``fake_llm``
    they join the fake model's log in the order answered; ``agent_context`` and a
    cassette's exchange log see them as another tool's traffic; in a test with none of
    these, they are the test's captured traffic.
    """
    from pytest_agentctx.doubles.fake_mcp.server import FakeMcp

    clock = (
        request.getfixturevalue("frozen_clock") if "frozen_clock" in request.fixturenames else None
    )
    if "fake_llm" in request.fixturenames:
        model: FakeLLM = request.getfixturevalue("fake_llm")
        fake = FakeMcp(clock=clock, log=model.note)
    else:
        fake = FakeMcp(clock=clock)
        if "agent_context" not in request.fixturenames and CAPTURED_KEY not in request.node.stash:
            capture.capture_runs(request.node, lambda: fake.exchanges)
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
    reports = request.node.stash.get(REPORT_KEY, {})
    call_report = reports.get("call")
    if call_report is not None and call_report.passed:
        fake.verify()


@pytest.fixture
def frozen_clock(request: pytest.FixtureRequest) -> Iterator[FrozenClock]:
    """The wall clock frozen (freezegun, ``real_asyncio=True``) at ``agent_clock_start``."""
    from pytest_agentctx.doubles.freeze import FrozenClock

    settings = request.config.stash[CLOCK_KEY]
    clock = FrozenClock(settings.start, ignore=settings.ignore)
    with clock:
        yield clock


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


@pytest.fixture
def agent_judge(request: pytest.FixtureRequest) -> Judge:
    """A judge bound to this test: ``verdict = await agent_judge(rubric=..., subject=...)``
    (``threshold=``, ``model=``, ``rubric_name=``), or ``await agent_judge.assert_passes(...)``
    to fail the test on a verdict below its threshold. Its model calls are made under the
    role ``judge``: recorded and replayed by the test's cassette apart from the agent's, and
    its verdicts kept in the test's record (reports), never in the agent's budgets."""
    from pytest_agentctx.evals.judge import Judge

    verdicts = request.node.stash.setdefault(VERDICTS_KEY, [])
    return Judge(on_verdict=verdicts.append)
