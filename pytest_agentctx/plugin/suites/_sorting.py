"""How the suites' tests are sorted once a session has some: integration tests found
(:func:`in_integration_folder`), marked, grouped and deselected
(:func:`deselect_integration_tests`), put last (:func:`integration_last`) and serialised
(:func:`serial_lock`); the xdist grouping (:func:`group_integration_tests`); which ``async
def`` tests get pytest-asyncio's marker (:func:`needs_asyncio_marker`). The hooks of the
``suites`` package and of ``async_tests`` import it when a session sorts a test, runs under
xdist or collects an ``async def`` test.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest

if TYPE_CHECKING:
    from . import SuiteCounts, SuiteScope

T = TypeVar("T")

#: Tests below a folder with these two parts are integration tests.
INTEGRATION_FOLDER = ("tests", "integration")
#: The xdist group every integration test joins (``--dist loadgroup``): one worker, in order.
INTEGRATION_GROUP = "agentctx-integration"
#: Markers of other async test runners: such tests are not given the asyncio marker.
OTHER_ASYNC_MARKERS = ("anyio", "trio")


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
    fixturedefs: Mapping[str, Sequence[object]],
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


@contextlib.contextmanager
def serial_lock(run_id: str) -> Iterator[None]:
    """Hold the session's integration lock: across the xdist workers of run ``run_id``,
    one integration test runs at a time, whichever worker it was sent to."""
    import tempfile

    from pytest_agentctx.traffic.cassettes.runs import locked

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


def group_integration_tests(config: pytest.Config) -> None:
    """Under ``pytest -n N`` without a --dist choice, switch xdist to ``loadgroup`` when
    integration tests may run, so their xdist_group runs them on one worker, in order. The
    switch changes how the whole session is spread: the plugin makes it only for a session
    that sorts every test (:attr:`SuiteScope.everything`), on xdist's controller."""
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
