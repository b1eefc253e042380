"""The pytest plugin (the ``pytest11`` entry point ``agentctx``): it registers one module per
feature, each holding that feature's hooks and fixtures (the behaviour is in the package's
layers below; these modules wire it into pytest):

* ``options``: every command-line and ini option, the markers, ``--agent-record``'s MODE.
* ``keys``: every key the plugin stashes on the config and on tests, and the release of a
  test's own once its reports are made.
* ``reports``: each test's reports kept and redacted, its record, the reports' plugin.
* ``cassettes``: each agent test's cassette (recorded or replayed) and network guard, the
  session's cassette settings and secrets, ``agent_cassette`` and ``agent_cassette_config``.
* ``capture``: a test's traffic made into runs, ``agent_context``, the test's redactor.
* ``fixtures``: ``fake_tools``, ``fake_llm``, ``agent_runtime``, ``frozen_clock``, the
  workspace fixtures, the clocks' settings.
* ``snapshots``: ``agent_snapshot``, ``agent_snapshot_config``, ``==`` explained.
* ``integration``: integration tests run last, and one at a time under xdist.
* ``suites``: tests sorted into the unit and integration suites, counted and deselected.
* ``budgets``: behaviour budgets read and checked, ``agent_prices``.
* ``repeat``: ``agent_repeat`` tests run n times and logged once.
* ``async_tests``: pytest-asyncio's warning silenced, async tests marked for it.

This module registers the modules of :data:`PLUGIN_MODULES`, in their order, while pytest
registers it (:func:`pytest_addhooks`). It does not list them in ``pytest_plugins``: pytest
would look for an entry point of each of their names in the metadata of every installed
distribution, reading every ``entry_points.txt`` of the environment once per module on every
run. The order is the order their hooks run in: pytest calls a hook's implementations of
equal priority (and wrappers of equal priority, from the outside in) from the plugin registered
last to the one registered first, so here from the bottom of the list up: ``options``
registers the markers, then ``budgets``, ``suites``, ``fixtures``, ``cassettes`` (whose
secrets need its settings) and ``reports`` read their options, in that order; the
``integration`` lock is taken outside the release of ``keys``; the repeat error is raised
before the budget is read. Fixtures are found in the order the modules are registered: the
autouse cassette is set up before the autouse prices.

pytest rewrites the ``assert`` statements of every module of a plugin's distribution, which
means parsing each module's source again on every run: the ``.pyc`` files pip wrote are not
used, and under ``PYTHONDONTWRITEBYTECODE=1`` (common in CI images) nor are pytest's own.
The package's asserts are internal checks, with nothing for pytest to explain, so the
package's ``__init__`` takes the package off pytest's list before any other of its modules
loads; they are imported as Python compiles them, with their ``.pyc`` (only the package's
``__init__`` is rewritten, loaded before it can act). Each plugin module also says
``PYTEST_DONT_REWRITE`` in its docstring, so that a pytest whose rewriting hook the package
cannot reach leaves its asserts as they are too. Tests and conftest files are rewritten as
always.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

#: The plugin's modules, registered in this order (see above).
PLUGIN_MODULES = [
    "pytest_agentctx.plugin.keys",
    "pytest_agentctx.plugin.reports",
    "pytest_agentctx.plugin.cassettes",
    "pytest_agentctx.plugin.capture",
    "pytest_agentctx.plugin.fixtures",
    "pytest_agentctx.plugin.snapshots",
    "pytest_agentctx.plugin.integration",
    "pytest_agentctx.plugin.suites",
    "pytest_agentctx.plugin.budgets",
    "pytest_agentctx.plugin.repeat",
    "pytest_agentctx.plugin.async_tests",
    "pytest_agentctx.plugin.options",
]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Imports and registers the plugin's modules, each under its module name, in the order
    of :data:`PLUGIN_MODULES` (the package is off pytest's assertion rewriting by then: see
    the module docstring). pytest calls this hook as it registers this module (the hook is
    historic: pytest calls it for a plugin registered after the hook's own call). A module
    blocked with ``-p no:NAME`` is left out by the plugin manager, as pytest leaves out a
    blocked plugin."""
    for name in PLUGIN_MODULES:
        pluginmanager.register(importlib.import_module(name), name)
