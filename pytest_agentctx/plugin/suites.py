"""How a test suite of agents runs: unit and integration tests, and repeated runs.

* Unit tests are ``async def`` tests; those that use this plugin's fixtures get pytest-asyncio's
  ``asyncio`` marker at collection (:func:`uses_plugin_fixture`), so they run even in
  pytest-asyncio's strict mode. Tests marked for anyio or trio are left alone.
* Integration tests are marked ``integration`` or live under a ``tests/integration/`` folder
  (:func:`in_integration_folder`). They are deselected unless ``-m`` names the marker,
  ``--agent-integration`` is given, or the command line names their file or folder; they run
  after the unit tests (:func:`integration_last`) and, under xdist, one at a time.
* The sorting applies to the agent tests only (:class:`SuiteScope`: marked ``agent``, using
  an agent fixture, or every test with ``agent_all_tests``), and to every test when the
  project opts in with ``agent_suites = true``; the ``--dist loadgroup`` switch, a choice
  for the whole session, is made only then. A project without agent tests that does not
  opt in runs as without the plugin.
* ``@pytest.mark.agent_repeat(n, min_pass_rate=1.0)`` runs a test n times and passes on the
  pass rate; each repetition gets its own cassette (the ``repetition`` module: what this
  module's names ``RepeatSpec``, ``RepeatTally`` and ``repeat_cassette_path`` give).

This module's hooks sort the tests at configure and collection time
(:func:`pytest_configure`: the scope, the counts, a :class:`SuitesReporter`, the xdist
grouping; :func:`pytest_collection_modifyitems`: :func:`deselect_integration_tests`); the
``integration`` module orders and serialises the integration tests, ``async_tests`` marks
async tests with :func:`needs_asyncio_marker`, and ``repeat`` runs repeated tests. As it works
on pytest's own objects, only the plugin imports it (importing the package does not).
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import (
    Callable,
    Collection,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_agentctx._lazy import lazy_getattr
from pytest_agentctx.traffic.cassettes.options import AGENT_FIXTURES

from .keys import SUITE_SCOPE_KEY, SUITES_KEY

__all__ = [
    "DESELECTED_OUTPUT",
    "INTEGRATION_FOLDER",
    "INTEGRATION_GROUP",
    "LOADGROUP_INPUT",
    "REPEAT_ATTRIBUTE",
    "SUITE_ATTRIBUTE",
    "SUITE_FIXTURES",
    "SuiteCounts",
    "SuiteScope",
    "SuitesReporter",
    "deselect_integration_tests",
    "group_integration_tests",
    "in_integration_folder",
    "integration_last",
    "integration_requested",
    "named_on_command_line",
    "named_paths",
    "needs_asyncio_marker",
    "serial_lock",
    "uses_plugin_fixture",
]

#: Tests below a folder with these two parts are integration tests.
INTEGRATION_FOLDER = ("tests", "integration")
#: The xdist group every integration test joins (``--dist loadgroup``): one worker, in order.
INTEGRATION_GROUP = "agentctx-integration"
#: Markers of other async test runners: such tests are not given the asyncio marker.
OTHER_ASYNC_MARKERS = ("anyio", "trio")
#: Report attribute carrying a repeated test's tally to the process that prints.
REPEAT_ATTRIBUTE = "agentctx_repeat"
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

T = TypeVar("T")

#: What ``agent_repeat`` tests use, in the ``repetition`` module (imported on first use: a
#: session without such a test never loads it); importable from here as well.
__getattr__ = lazy_getattr(
    "pytest_agentctx.plugin",
    {name: "repetition" for name in ("RepeatSpec", "RepeatTally", "repeat_cassette_path")},
)


def in_integration_folder(path: Path, rootpath: Path | None = None) -> bool:
    """Whether ``path`` (a test file or a folder) lies under a ``tests/integration/``
    folder; the parts above ``rootpath`` are not looked at."""
    parts = path.parts
    if rootpath is not None:
        with contextlib.suppress(ValueError):
            parts = path.relative_to(rootpath).parts
    first, second = INTEGRATION_FOLDER
    return any(a == first and b == second for a, b in itertools.pairwise(parts))


def named_on_command_line(path: Path, named: Iterable[Path], rootpath: Path | None = None) -> bool:
    """Whether a test in the file ``path`` was asked for by name: its file (or one of its
    node ids) is on the command line, or a folder inside ``tests/integration/`` holding it."""
    for target in named:
        if target == path:
            return True
        if target in path.parents and in_integration_folder(target, rootpath):
            return True
    return False


def integration_last(items: Sequence[T], is_integration: Callable[[T], bool]) -> list[T]:
    """``items`` with the integration tests moved after the others, each part in order."""
    unit = [item for item in items if not is_integration(item)]
    later = [item for item in items if is_integration(item)]
    return [*unit, *later]


def uses_plugin_fixture(
    argnames: Iterable[str],
    fixturedefs: Mapping[str, Sequence[Any]],
    modules: Collection[str],
) -> bool:
    """Whether a test asking for ``argnames`` uses a public fixture defined in one of
    ``modules`` (the plugin's), directly or through the fixtures it asks for.

    ``fixturedefs`` maps a fixture name to its definitions (pytest's ``FixtureDef``
    objects, with ``func`` and ``argnames``), the closest last, as pytest resolves them.
    Only the definition pytest gives the test counts: a fixture of the user's that takes
    the name of one of ``modules``' without asking for it hides it; one that asks for its
    own name gets the next definition out, as in pytest.
    """
    seen: set[tuple[str, int]] = set()
    pending = [(name, -1) for name in argnames]
    while pending:
        name, index = pending.pop()
        definitions = fixturedefs.get(name, ())
        if (name, index) in seen or -index > len(definitions):
            continue
        seen.add((name, index))
        definition = definitions[index]
        if not name.startswith("_") and _defined_in(definition, modules):
            return True
        for asked in getattr(definition, "argnames", ()):
            pending.append((asked, index - 1 if asked == name else -1))
    return False


def _defined_in(definition: object, modules: Collection[str]) -> bool:
    return getattr(getattr(definition, "func", None), "__module__", None) in modules


@dataclass(frozen=True)
class SuiteScope:
    """Which tests the plugin sorts into suites (marks, deselects, orders and serialises as
    integration tests, and counts): every test when the project opts in
    (``agent_suites = true``, or ``agent_all_tests``, which makes every test an agent test);
    otherwise only the agent tests (:meth:`sorts`), so that a project without agent tests
    runs as it does without the plugin."""

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
        by :func:`deselect_integration_tests`)."""
        return item.get_closest_marker("integration") is not None and self.sorts_item(item)


@dataclass
class SuiteCounts:
    """How many unit and integration tests ran, and how many integration tests were left
    out by default; ``agent_only`` when only the agent tests were sorted and counted."""

    unit: set[str] = field(default_factory=set)
    integration: set[str] = field(default_factory=set)
    deselected_integration: int = 0
    agent_only: bool = False

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


@contextlib.contextmanager
def serial_lock(run_id: str) -> Iterator[None]:
    """Hold the session's integration lock: across the xdist workers of run ``run_id``,
    one integration test runs at a time, whichever worker it was sent to."""
    import tempfile

    from pytest_agentctx.traffic.cassettes.store import locked

    with locked(Path(tempfile.gettempdir()) / f"pytest-agentctx-integration-{run_id}"):
        yield


def needs_asyncio_marker(item: pytest.Function, plugin_modules: Collection[str]) -> bool:
    """Whether the ``async def`` test ``item`` should get pytest-asyncio's marker: it has
    no async marker of its own (asyncio, anyio, trio) and uses a fixture defined in
    one of ``plugin_modules``, directly or through other fixtures (:func:`uses_plugin_fixture`)."""
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
    return uses_plugin_fixture(used, info.name2fixturedefs, plugin_modules)


def named_paths(config: pytest.Config) -> list[Path]:
    """Paths (files or folders) the command line names, not from testpaths."""
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        return []
    base = config.invocation_params.dir
    return [Path(os.path.abspath(base / arg.split("::", 1)[0])) for arg in config.args]


def integration_requested(config: pytest.Config) -> bool:
    """Whether integration tests may run: ``--agent-integration``, ``-m`` naming the
    marker, or the command line naming a path under a ``tests/integration/`` folder."""
    markexpr = str(config.getoption("markexpr", "") or "")
    if config.getoption("agent_integration") or "integration" in markexpr:
        return True
    return any(in_integration_folder(path, config.rootpath) for path in named_paths(config))


def group_integration_tests(config: pytest.Config, scope: SuiteScope) -> None:
    """Under ``pytest -n N`` without a --dist choice, switch xdist to ``loadgroup`` when
    integration tests may run and the session sorts every test (:attr:`SuiteScope.everything`),
    so their xdist_group runs them on one worker, in order. The switch changes how the whole
    session is spread: it is never made for a session that sorts its agent tests only."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        # a worker reads --dist from the command line: take the controller's switch
        if workerinput.get(LOADGROUP_INPUT):
            config.option.loadgroup = True
        return
    if not scope.everything or not config.pluginmanager.hasplugin("xdist"):
        return
    chosen = config.known_args_namespace
    user_chose = getattr(chosen, "dist", "no") != "no" or getattr(chosen, "distload", False)
    if (
        getattr(config.option, "dist", "no") == "load"
        and not user_chose
        and integration_requested(config)
    ):
        config.option.dist = "loadgroup"


def deselect_integration_tests(
    config: pytest.Config, items: list[pytest.Item], counts: SuiteCounts, scope: SuiteScope
) -> None:
    """Mark the integration tests ``scope`` sorts (also those under ``tests/integration/``),
    put them in one xdist group, and deselect them from ``items`` unless the session asks
    for them (:func:`integration_requested`, or the command line names their file);
    ``counts`` keeps how many were deselected. Tests ``scope`` does not sort are left as
    they are."""
    rootpath = config.rootpath
    grouped = config.pluginmanager.hasplugin("xdist")
    found: list[pytest.Item] = []
    for item in items:
        if not scope.sorts_item(item):
            continue
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
    named = named_paths(config)
    dropped = [i for i in found if not named_on_command_line(Path(str(i.path)), named, rootpath)]
    if dropped:
        leaving = set(map(id, dropped))
        items[:] = [item for item in items if id(item) not in leaving]
        config.hook.pytest_deselected(items=dropped)
        counts.deselected_integration = len(dropped)


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
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: tell each worker whether the session groups tests (see loadgroup)."""
        node.workerinput[LOADGROUP_INPUT] = getattr(self.config.option, "dist", "") == "loadgroup"

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
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

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Print the suites line and every repeated test's pass rate."""
        if self.worker or self.config.get_verbosity() < -1:
            return
        counts = self.counts
        if counts.unit or counts.integration or counts.deselected_integration:
            terminalreporter.write_line(counts.line())
        for nodeid, line in sorted(self.repeats.items()):
            terminalreporter.write_line(f"agent_repeat {nodeid}: {line}")


def pytest_configure(config: pytest.Config) -> None:
    """The session's suite scope and counts; the reporter that prints them; the xdist
    grouping of the integration tests (:func:`group_integration_tests`)."""
    scope = config.stash[SUITE_SCOPE_KEY] = SuiteScope.from_config(config)
    config.stash[SUITES_KEY] = SuiteCounts(agent_only=not scope.everything)
    reporter = SuitesReporter(config, config.stash[SUITES_KEY], scope)
    config.pluginmanager.register(reporter, "agentctx-suites")
    group_integration_tests(config, scope)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Mark the sorted integration tests, put them in one xdist group, deselect them by
    default (the agent tests only, or every test with agent_suites)."""
    deselect_integration_tests(
        config, items, config.stash[SUITES_KEY], config.stash[SUITE_SCOPE_KEY]
    )
