"""The hooks of the suites: tests sorted into the unit and integration suites, counted, and
integration tests deselected unless asked for.

* Unit tests are ``async def`` tests; those that use this plugin's fixtures get pytest-asyncio's
  ``asyncio`` marker at collection (:func:`~._sorting.uses_plugin_fixture`), so they run even
  in pytest-asyncio's strict mode. Tests marked for anyio or trio are left alone.
* Integration tests are marked ``integration`` or live under a ``tests/integration/`` folder
  (:func:`~._sorting.in_integration_folder`). They are deselected unless ``-m`` names the
  marker, ``--agent-integration`` is given, or the command line names their file or folder;
  they run after the unit tests and, under xdist, one at a time (the :mod:`.integration`
  module's hooks).
* The sorting applies to the agent tests only (:class:`SuiteScope`: marked ``agent``, using
  an agent fixture, or every test with ``agent_all_tests``), and to every test when the
  project opts in with ``agent_suites = true``; the ``--dist loadgroup`` switch, a choice
  for the whole session, is made only then. A project without agent tests that does not
  opt in runs as without the plugin.

This module's hooks sort the tests at configure and collection time
(:func:`configure`: the scope, the counts, a :class:`SuitesReporter`, the xdist
grouping; :func:`pytest_collection_modifyitems`:
:func:`~._sorting.deselect_integration_tests`). What sorts the tests is in the private
``_sorting`` module, imported once a session has a test to sort (or runs under xdist, or
collects an ``async def`` test); the xdist scheduler that holds the integration tests back
is in the private ``_scheduling`` module.

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

from collections.abc import (
    Generator,
    Iterable,
)
from typing import TYPE_CHECKING, NamedTuple

import pytest

from pytest_agentctx.traffic.cassettes.options import AGENT_FIXTURES

from ..keys import REPEAT_ATTRIBUTE, SUITE_SCOPE_KEY, SUITES_KEY

if TYPE_CHECKING:
    from ._scheduling import WorkerNode

#: xdist workeroutput key: how many integration tests the worker deselected.
DESELECTED_OUTPUT = "agentctx_integration_deselected"
#: xdist workerinput key: whether the controller switched the session to ``loadgroup``.
LOADGROUP_INPUT = "agentctx_loadgroup"
#: Report attribute naming the suite ("unit" or "integration") of a test the plugin sorts;
#: reports of the tests it leaves alone do not carry it.
SUITE_ATTRIBUTE = "agentctx_suite"
#: Fixtures whose use makes a test an agent test for the suites (besides the ``agent``
#: marker): the cassette's agent fixtures and the fake model.
SUITE_FIXTURES = AGENT_FIXTURES | {"fake_llm"}


class SuiteScope(NamedTuple):
    """Which tests the plugin sorts into suites (marks, deselects, orders and serialises as
    integration tests, and counts): every test when the project opts in
    (``agent_suites = true``, or ``agent_all_tests``, which makes every test an agent test);
    otherwise only the agent tests (:meth:`sorts`), so that a project without agent tests
    runs as it does without the plugin. (A named tuple: made at start-up, where a
    dataclass would cost every run the compiling of its methods.)"""

    every_test: bool = False
    all_agent_tests: bool = False

    @classmethod
    def from_config(cls, config: pytest.Config) -> SuiteScope:
        """The scope the ``agent_suites`` and ``agent_all_tests`` ini options give."""
        return cls(
            every_test=bool(config.getini("agent_suites")),
            all_agent_tests=bool(config.getini("agent_all_tests")),
        )

    @property
    def everything(self) -> bool:
        """Whether every test of the session is sorted."""
        return self.every_test or self.all_agent_tests

    def sorts(self, fixturenames: Iterable[str], *, marked: bool) -> bool:
        """Whether a test using ``fixturenames`` (and ``marked`` ``agent`` or not) is sorted:
        every test when :attr:`everything`, else one marked ``agent`` or using one of
        :data:`SUITE_FIXTURES` (directly or through other fixtures)."""
        return self.everything or marked or not SUITE_FIXTURES.isdisjoint(fixturenames)

    def sorts_item(self, item: pytest.Item) -> bool:
        """:meth:`sorts` for a collected test."""
        return self.sorts(
            getattr(item, "fixturenames", ()), marked=item.get_closest_marker("agent") is not None
        )

    def integration(self, item: pytest.Item) -> bool:
        """Whether ``item`` is a sorted integration test (marked ``integration``, by hand or
        by :func:`~._sorting.deselect_integration_tests`)."""
        return item.get_closest_marker("integration") is not None and self.sorts_item(item)


class SuiteCounts:
    """How many unit and integration tests ran, and how many integration tests were left
    out by default; ``agent_only`` when only the agent tests were sorted and counted. (A
    plain class: made at start-up, where a dataclass would cost every run the compiling of
    its methods.)"""

    __slots__ = ("agent_only", "deselected_integration", "integration", "unit")

    def __init__(self, *, deselected_integration: int = 0, agent_only: bool = False) -> None:
        self.unit: set[str] = set()
        self.integration: set[str] = set()
        self.deselected_integration = deselected_integration
        self.agent_only = agent_only

    def add(self, nodeid: str, *, integration: bool) -> None:
        (self.integration if integration else self.unit).add(nodeid)

    def line(self) -> str:
        """``agentctx suites: 12 unit, 2 integration tests ran; ...`` (``agent tests`` when
        only the agent tests were counted)."""
        unit, integration = len(self.unit), len(self.integration)
        text = (
            f"agentctx suites: {unit} unit, {integration} integration "
            f"{self._tests(integration)} ran"
        )
        if self.deselected_integration:
            left = self.deselected_integration
            text += (
                f"; {left} integration {self._tests(left)} deselected (run them with "
                "-m integration, or both suites with --agent-integration)"
            )
        return text

    def _tests(self, count: int) -> str:
        noun = "test" if count == 1 else "tests"
        return f"agent {noun}" if self.agent_only else noun


class SuitesReporter:
    """Counts the unit and integration tests the session sorts (:class:`SuiteScope`) that
    ran (in the process that reports) and prints them, with the pass rate of every repeated
    test, at the end of the session; a session that sorted no test prints no suites line.

    The plugin registers one per session; ``counts`` is the session's :class:`SuiteCounts`.
    """

    def __init__(self, config: pytest.Config, counts: SuiteCounts, scope: SuiteScope) -> None:
        self.config = config
        self.counts = counts
        self.scope = scope
        self.worker = hasattr(config, "workerinput")
        self.repeats: dict[str, str] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Name the suite of a sorted test on its reports (they travel to xdist's controller)."""
        report = yield
        if self.scope.sorts_item(item):
            suite = "integration" if item.get_closest_marker("integration") else "unit"
            setattr(report, SUITE_ATTRIBUTE, suite)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count a sorted test in its suite; keep the pass-rate line of a repeated test."""
        if self.worker:
            return
        suite = getattr(report, SUITE_ATTRIBUTE, None)
        if suite is not None:
            self.counts.add(report.nodeid, integration=suite == "integration")
        tally = getattr(report, REPEAT_ATTRIBUTE, None)
        if report.when == "call" and isinstance(tally, dict):
            self.repeats[report.nodeid] = str(tally.get("line", ""))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: WorkerNode) -> None:
        """xdist: tell each worker whether the session groups tests (see loadgroup)."""
        node.workerinput[LOADGROUP_INPUT] = getattr(self.config.option, "dist", "") == "loadgroup"

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: object, error: object) -> None:
        """xdist: every worker deselected the same tests; keep the count once."""
        output = getattr(node, "workeroutput", {}) or {}
        self.counts.deselected_integration = max(
            self.counts.deselected_integration, int(output.get(DESELECTED_OUTPUT, 0))
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """xdist worker: hand the deselected count to the controller."""
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[DESELECTED_OUTPUT] = self.counts.deselected_integration

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Print the suites line and every repeated test's pass rate."""
        if self.worker or self.config.get_verbosity() < -1:
            return
        counts = self.counts
        if counts.unit or counts.integration or counts.deselected_integration:
            terminalreporter.write_line(counts.line())
        for nodeid, line in sorted(self.repeats.items()):
            terminalreporter.write_line(f"agent_repeat {nodeid}: {line}")


def configure(config: pytest.Config) -> None:
    """The session's suite scope and counts; the reporter that prints them; the xdist
    grouping of the integration tests (:func:`~._sorting.group_integration_tests`)."""
    scope = config.stash[SUITE_SCOPE_KEY] = SuiteScope.from_config(config)
    config.stash[SUITES_KEY] = SuiteCounts(agent_only=not scope.everything)
    reporter = SuitesReporter(config, config.stash[SUITES_KEY], scope)
    config.pluginmanager.register(reporter, "agentctx-suites")
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        # a worker reads --dist from the command line: take the controller's switch
        if workerinput.get(LOADGROUP_INPUT):
            config.option.loadgroup = True
    elif scope.everything and config.pluginmanager.hasplugin("xdist"):
        from ._sorting import group_integration_tests

        group_integration_tests(config)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Mark the sorted integration tests, put them in one xdist group, deselect them by
    default (the agent tests only, or every test with agent_suites)."""
    scope = config.stash[SUITE_SCOPE_KEY]
    if any(scope.sorts_item(item) for item in items):  # else there is nothing to sort
        from ._sorting import deselect_integration_tests

        deselect_integration_tests(config, items, config.stash[SUITES_KEY], scope)
