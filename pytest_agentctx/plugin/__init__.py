"""The pytest plugin (the ``pytest11`` entry point ``agentctx``): the feature modules and
packages it registers, each holding that feature's hooks and fixtures (the behaviour is in
the package's layers below; these wire it into pytest):

* ``options``: every command-line and ini option, the markers, ``--agent-record``'s MODE.
* ``keys``: every key the plugin stashes on the config and on tests, and the release of a
  test's own once its reports are made.
* ``reports`` (package): each test's reports kept and redacted, its record, the reports'
  and the gate's plugin; the session's end in the private ``_end``.
* ``cassettes`` (package): each agent test's cassette (recorded or replayed) and network
  guard, the session's cassette settings and secrets, ``agent_cassette`` and
  ``agent_cassette_config``; what runs a test's cassette in the private ``_run``.
* ``capture``: a test's traffic made into runs, ``agent_context``, the test's redactor.
* ``fixtures``: ``fake_tools``, ``fake_llm``, ``fake_mcp``, ``agent_runtime``,
  ``frozen_clock``, the workspace fixtures, the clocks' settings.
* ``snapshots``: ``agent_snapshot``, ``agent_snapshot_config``, ``==`` explained.
* ``suites`` (package): tests sorted into the unit and integration suites, counted and
  deselected; its ``integration`` module runs integration tests last, and one at a time
  under xdist; the private ``_sorting`` and ``_scheduling`` hold what they run.
* ``budgets``: behaviour budgets read and checked, ``agent_prices``.
* ``caches``: the prompt-cache prefix check and the declared cache breakpoints.
* ``repeat`` (package): ``agent_repeat`` tests run n times and logged once; what runs them
  in the private ``_runs``.
* ``async_tests``: pytest-asyncio's warning silenced, async tests marked for it.
* ``vcr_compat``: pytest-recording's and pytest-vcr's options and hook accepted when those
  tools are not loaded, with what each maps to.

A package's private modules are imported by its hooks on first use, so a session that does
not use a feature does not load them.

This module registers the modules of :data:`PLUGIN_MODULES` while pytest registers it
(:func:`pytest_addhooks`). It does not list them in ``pytest_plugins``: pytest would look for
an entry point of each of their names in the metadata of every installed distribution,
reading every ``entry_points.txt`` of the environment once per module on every run.

The order of :data:`PLUGIN_MODULES` decides nothing: pytest calls a hook's implementations of
equal priority from the plugin registered last to the one registered first, so every order
between the plugin's own hooks is stated where it matters:

* ``options`` registers the markers and puts the limits in force first (its
  ``pytest_configure`` is ``tryfirst``); then :func:`pytest_configure` has the features of
  :data:`CONFIGURED` read their options, in that order (the plugins they register,
  whose end-of-session summaries print in the reverse order, with them);
* a test's keys are released (``keys``) before the integration lock is let go: the
  ``integration`` wrapper releases them itself;
* the error of a bad ``agent_repeat`` marker is raised before the budget is read: the
  ``budgets`` hook reads no budget for a test with such an error;
* the autouse cassette is set up before the autouse prices: ``_agentctx_prices`` asks for
  ``_agentctx_cassette``.

pytest rewrites the ``assert`` statements of every module of a plugin's distribution, which
means parsing each module's source again on every run: the ``.pyc`` files pip wrote are not
used, and under ``PYTHONDONTWRITEBYTECODE=1`` (common in CI images) nor are pytest's own.
The package's asserts are internal checks, with nothing for pytest to explain, so the
package's ``__init__`` takes the package off pytest's list before any other of its modules
loads; they are imported as Python compiles them, with their ``.pyc`` (only the package's
``__init__`` is rewritten, loaded before it can act). Should a pytest keep its rewriting
hook where the package cannot reach it, the fallback is pytest's supported one: each module
of the plugin that every session loads (this one, and the modules and package ``__init__``
of :data:`PLUGIN_MODULES`) says ``PYTEST_DONT_REWRITE`` in its docstring, so their asserts
are left as they are; the package's other modules are then rewritten as pytest rewrites any
plugin's. Tests and conftest files are rewritten as always.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

#: The plugin's modules and packages, each registered under its name (in any order: see
#: above).
PLUGIN_MODULES = [
    "pytest_agentctx.plugin.keys",
    "pytest_agentctx.plugin.reports",
    "pytest_agentctx.plugin.cassettes",
    "pytest_agentctx.plugin.capture",
    "pytest_agentctx.plugin.fixtures",
    "pytest_agentctx.plugin.snapshots",
    "pytest_agentctx.plugin.suites.integration",
    "pytest_agentctx.plugin.suites",
    "pytest_agentctx.plugin.budgets",
    "pytest_agentctx.plugin.caches",
    "pytest_agentctx.plugin.repeat",
    "pytest_agentctx.plugin.async_tests",
    "pytest_agentctx.plugin.vcr_compat",
    "pytest_agentctx.plugin.options",
]

#: The features whose ``configure`` reads the session's options at configure time, in the
#: order they run: the first bad option stops the session, and the plugins they register
#: (the suites' counts, the late requests, the reports) print their summaries at the end of
#: the session from the last registered up.
CONFIGURED = [
    "pytest_agentctx.plugin.budgets",
    "pytest_agentctx.plugin.caches",
    "pytest_agentctx.plugin.suites",
    "pytest_agentctx.plugin.fixtures",
    "pytest_agentctx.plugin.cassettes",
    "pytest_agentctx.plugin.vcr_compat",
    "pytest_agentctx.plugin.reports",
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


def pytest_configure(config: pytest.Config) -> None:
    """The features of :data:`CONFIGURED` read the session's options, in that order (after
    ``options``' own ``tryfirst`` hook); a feature blocked with ``-p no:NAME`` is left out."""
    for name in CONFIGURED:
        feature = config.pluginmanager.get_plugin(name)
        if feature is not None:
            feature.configure(config)
