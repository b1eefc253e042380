"""The hooks that run the integration tests after the other tests, and one at a time under
xdist.

Which tests are integration tests, and which of them run, is the package's: its hooks mark
and deselect them at collection. This module puts the ones that run last
(:func:`pytest_collection_modifyitems`) and, on an xdist worker, runs each under the
session's integration lock (:func:`pytest_runtest_protocol`). Under xdist's load modes,
the controller's scheduler holds them until every unit test has ended (the private
``_scheduling`` module; :func:`pytest_xdist_make_scheduler`), from the list each worker
writes of them (:func:`pytest_collection_finish`).

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import pytest

from ..keys import SUITE_SCOPE_KEY, release

if TYPE_CHECKING:
    from ._scheduling import Scheduling, WorkerNode

#: xdist workerinput key: whether the controller holds the integration tests back, so the
#: worker lists them (:func:`pytest_collection_finish`).
HOLD_INPUT = "agentctx_hold_integration"
#: The xdist run whose integration lists the controller read, for their removal.
_HELD_RUNS: pytest.StashKey[str] = pytest.StashKey()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Sorted integration tests run after the other tests (after any other plugin's
    reordering); with no such test the order is left as it is."""
    scope = config.stash[SUITE_SCOPE_KEY]
    if any(scope.integration(item) for item in items):
        from ._sorting import integration_last

        items[:] = integration_last(items, scope.integration)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """On an xdist worker, a sorted integration test runs under the session's integration
    lock, so integration tests run one at a time even where xdist_group cannot group them
    (pytest 9 with pytest-xdist 3.8: pytest-dev/pytest-xdist#1386). The test's keys are
    released (:func:`~pytest_agentctx.plugin.keys.release`) before the lock is let go."""
    workerinput = getattr(item.config, "workerinput", None)
    if workerinput is None or not item.config.stash[SUITE_SCOPE_KEY].integration(item):
        return (yield)
    from ._sorting import serial_lock

    with serial_lock(str(workerinput["testrunuid"])):
        try:
            return (yield)
        finally:  # under the lock, whichever of the two wrappers pytest calls first
            release(item)


def holds_integration(config: pytest.Config) -> bool:
    """Whether the xdist controller holds the integration tests until the unit tests have
    ended: a load mode of :data:`~._scheduling.WRAPPED`, and integration tests may run
    (asked for, or the command line names tests)."""
    if not config.pluginmanager.has_plugin("dsession"):
        return False
    from ._scheduling import WRAPPED
    from ._sorting import integration_requested, named_paths

    if str(config.getvalue("dist")) not in WRAPPED:
        return False
    return integration_requested(config) or bool(named_paths(config))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: WorkerNode) -> None:
    """xdist controller: tell each worker whether to list its integration tests."""
    node.workerinput[HOLD_INPUT] = holds_integration(node.config)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """xdist worker: list the sorted integration tests among the collected ones, before
    xdist reports the collection to the controller, whose scheduler reads the list."""
    config = session.config
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or not workerinput.get(HOLD_INPUT):
        return
    scope = config.stash[SUITE_SCOPE_KEY]
    integration = [i for i, item in enumerate(session.items) if scope.integration(item)]
    from ._scheduling import integration_file, write_integration

    path = integration_file(
        str(workerinput["testrunuid"]), str(workerinput["workerid"]), writer=True
    )
    write_integration(path, [item.nodeid for item in session.items], integration)


@pytest.hookimpl(wrapper=True, optionalhook=True)
def pytest_xdist_make_scheduler(
    config: pytest.Config, log: object
) -> Generator[None, Scheduling | None, Scheduling | None]:
    """xdist controller: the scheduler xdist made, wrapped to hold the integration tests
    until every unit test has ended (:func:`~._scheduling.wrap_scheduler`), when
    :func:`holds_integration`; else as xdist made it."""
    scheduler = yield
    if scheduler is None or not holds_integration(config):
        return scheduler
    run_id = str(config.pluginmanager.getplugin("dsession").nodemanager.testrunuid)
    config.stash[_HELD_RUNS] = run_id
    from ._scheduling import wrap_scheduler

    return wrap_scheduler(scheduler, run_id)


def pytest_unconfigure(config: pytest.Config) -> None:
    """xdist controller: remove the run's integration lists once its workers have ended."""
    run_id = config.stash.get(_HELD_RUNS, None)
    if run_id is not None:
        from pytest_agentctx.traffic.cassettes.runs import end_runs

        end_runs(run_id)
