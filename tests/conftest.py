"""Shared set-up of the test suite: real pytest runs through ``pytester``."""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from pathlib import Path

import pytest
from support.inner import INNER_ADDOPTS

import pytest_agentctx

ROOT = Path(__file__).resolve().parents[1]
INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings =
    error
    ignore:Inheritance class AiohttpClientSession from ClientSession:DeprecationWarning
"""


@pytest.fixture
def agent_pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester with an ini for async tests, no provider keys in the environment and an
    80-column terminal.

    When the suite itself runs under xdist, inner runs must not believe they are workers.
    """
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_XDIST_TESTRUNUID",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "80")  # the terminal of a CI log, whatever runs the suite
    # The YAML read cache's key is the user's, outside every project: pytester's HOME is
    # the project's folder, so it goes beside it.
    config_home = pytester.path.parent / f"{pytester.path.name}-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    pytester.makeini(INI)
    return pytester


@functools.cache
def _import_the_whole_package() -> None:
    """Import every module of pytest_agentctx in this process, once, before its first
    in-process pytester run. pytester drops the modules an inner run imported when the run
    ends, but the package keeps what its lazy attributes resolved (``pytest_agentctx.Agent``):
    the next inner run would import a second copy of the module, whose classes do not match
    the first (``run() takes an Agent, got Agent``) when a test file runs on its own."""
    for module in pkgutil.walk_packages(pytest_agentctx.__path__, "pytest_agentctx."):
        importlib.import_module(module.name)


@pytest.fixture(autouse=True)
def _inner_runs_import_their_own_modules(request: pytest.FixtureRequest) -> None:
    """An in-process pytester run imports its files by base name (``test_suites``,
    ``agents``): hide this suite's own top-level modules of those names while it runs, or
    the inner import finds ours and fails with "import file mismatch" (only when a worker
    has collected both, as under -n 2). Inner runs, in process or not, leave DeepEval's
    plugin out (``INNER_ADDOPTS``)."""
    if "pytester" not in request.fixturenames:
        return
    _import_the_whole_package()
    request.getfixturevalue("pytester")  # it clears PYTEST_ADDOPTS when it starts
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
    for name, module in list(sys.modules.items()):
        location = getattr(module, "__file__", None)
        if "." in name or location is None:
            continue
        path = Path(location)
        if path.is_relative_to(ROOT / "tests") or path.is_relative_to(ROOT / "examples"):
            monkeypatch.delitem(sys.modules, name)
