"""pytest-asyncio and the plugin: its warning silenced, ``async def`` tests marked for it.

Installing the plugin installs pytest-asyncio. A project that never configured it must run
as without the plugin (:func:`pytest_configure`), and an ``async def`` test that uses the
plugin's fixtures runs even in pytest-asyncio's strict mode (:func:`pytest_pycollect_makeitem`,
deciding with :func:`~.suites._sorting.needs_asyncio_marker`).

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

import inspect
from collections.abc import Generator

import pytest

from . import PLUGIN_MODULES


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
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


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> Generator[None, object, object]:
    """Mark ``async def`` tests that use this plugin's fixtures for pytest-asyncio, before
    its own wrapper (outside this one) turns marked coroutines into its items."""
    result = yield
    if not inspect.iscoroutinefunction(obj) or not collector.config.pluginmanager.hasplugin(
        "asyncio"
    ):
        return result
    from .suites._sorting import needs_asyncio_marker

    nodes = result if isinstance(result, list) else [result]
    for node in nodes:
        if isinstance(node, pytest.Function) and needs_asyncio_marker(node, PLUGIN_MODULES):
            node.add_marker("asyncio")
    return result
