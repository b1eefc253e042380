"""The plugin's start-up: a session of tests that use nothing of the plugin loads the
plugin's modules with hooks and what they read at start-up (options, markers, the session's
settings), never the machinery of agent tests, reports or cassettes, nor a library of its
own (pydantic, httpx2, syrupy, yaml, an SDK).

Every pytest run of a project with the plugin installed pays for what it imports, agent
tests or not; without a bytecode cache (``PYTHONDONTWRITEBYTECODE=1``, common in CI
images) every module is compiled again on every run. pytest runs in a process of its own,
with a probe plugin loaded before this one that notes which module imported each module,
and lists, when the session ends, the modules loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

#: The modules of the package a session of plain tests loads: the facade (the plugin's
#: parent package), the plugin's modules and packages with hooks, and what they read at
#: configure time or for every test. Anything else is imported where it is used. A module added here
#: costs every pytest run of every project that installs the plugin: before adding one,
#: import it inside the hook or fixture that needs it.
STARTUP_MODULES = {
    "pytest_agentctx",
    "pytest_agentctx._lazy",
    "pytest_agentctx._public",
    "pytest_agentctx.exceptions",
    "pytest_agentctx.plugin",
    "pytest_agentctx.plugin.async_tests",
    "pytest_agentctx.plugin.budgets",
    "pytest_agentctx.plugin.caches",
    "pytest_agentctx.plugin.capture",
    "pytest_agentctx.plugin.cassettes",
    "pytest_agentctx.plugin.fixtures",
    "pytest_agentctx.plugin.keys",
    "pytest_agentctx.plugin.options",
    "pytest_agentctx.plugin.repeat",
    "pytest_agentctx.plugin.reports",
    "pytest_agentctx.plugin.snapshots",
    "pytest_agentctx.plugin.suites",
    "pytest_agentctx.plugin.suites.integration",
    "pytest_agentctx.plugin.vcr_compat",
    # agent_clock_* options, read and checked at configure
    "pytest_agentctx.context",
    "pytest_agentctx.context.clock",
    # the session's secrets: the active redactor between tests (made when first asked for)
    "pytest_agentctx.redaction",
    "pytest_agentctx.redaction.active",
    # the session's cassette options, read and checked at configure
    "pytest_agentctx.traffic",
    "pytest_agentctx.traffic.errors",
    "pytest_agentctx.traffic.cassettes",
    "pytest_agentctx.traffic.cassettes.defaults",
    "pytest_agentctx.traffic.cassettes.options",
    # the reports' hooks, the baseline tolerance options and each test's record
    "pytest_agentctx.reports",
    "pytest_agentctx.reports.errors",
    "pytest_agentctx.reports.limits",
    "pytest_agentctx.reports.record",
    "pytest_agentctx.reports.tolerance",
}

#: Libraries the plugin uses for agent tests: never imported by a session without one.
HEAVY = ("pydantic", "httpx", "httpx2", "openai", "anthropic", "yaml", "syrupy", "freezegun")

PROBE = '''
"""Notes which module imported each module, and lists the loaded modules at the end."""
import json
import os
import sys

IMPORTERS = {}


class Probe:
    def find_spec(self, name, path=None, target=None):
        if name not in sys.modules and name not in IMPORTERS:
            frame = sys._getframe(1)
            while frame is not None:
                module = frame.f_globals.get("__name__", "")
                if module != __name__ and not module.startswith(("importlib", "_frozen")):
                    break
                frame = frame.f_back
            IMPORTERS[name] = "?" if frame is None else f"{module}:{frame.f_lineno}"
        return None


sys.meta_path.insert(0, Probe())

import _pytest.config

LOOKUPS = []
_load = _pytest.config.PytestPluginManager.load_setuptools_entrypoints


def _noted(self, group, name=None):
    LOOKUPS.append(name)
    return _load(self, group, name)


_pytest.config.PytestPluginManager.load_setuptools_entrypoints = _noted


def pytest_unconfigure(config):
    with open(os.environ["STARTUP_PROBE_OUT"], "w", encoding="utf-8") as out:
        loaders = {
            name: type(getattr(module, "__loader__", None)).__name__
            for name, module in sys.modules.items()
            if name.split(".")[0] == "pytest_agentctx"
        }
        json.dump(
            {
                "modules": sorted(sys.modules),
                "importers": IMPORTERS,
                "loaders": loaders,
                "lookups": LOOKUPS,
            },
            out,
        )
'''


def loaded_modules(root: Path, *plugins: str) -> dict[str, Any]:
    """The modules loaded by ``pytest`` in ``root``, in a process of its own with plugin
    autoloading off and the probe and ``plugins`` loaded, and who imported each."""
    out = root / "modules.json"
    env = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        # the probe, then the package under test (a checkout on PYTHONPATH, if any)
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
        "STARTUP_PROBE_OUT": str(out),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    args = ["-W", "error", "-p", "startup_probe"]
    args += [arg for name in plugins for arg in ("-p", name)]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return data


def how(module: str, importers: dict[str, str]) -> str:
    """``module`` <- its importer <- that one's importer ..., up to a module not noted."""
    chain = [module]
    name = module
    while name in importers and len(chain) < 12:
        importer = importers[name]
        chain.append(importer)
        name = importer.rpartition(":")[0]
    return " <- ".join(chain)


@pytest.fixture(scope="module")
def plain_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plain")
    (root / "startup_probe.py").write_text(PROBE, encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    return root


@pytest.fixture(scope="module")
def with_plugin(plain_project: Path) -> dict[str, Any]:
    return loaded_modules(plain_project, "pytest_agentctx.plugin")


@pytest.fixture(scope="module")
def without_plugin(plain_project: Path) -> dict[str, Any]:
    return loaded_modules(plain_project)


def test_plain_tests_load_only_the_plugins_start_up_modules(
    with_plugin: dict[str, Any],
) -> None:
    modules = set(with_plugin["modules"])
    importers: dict[str, str] = with_plugin["importers"]
    assert "pytest_agentctx.plugin.options" in modules, "the plugin did not load"
    ours = sorted(m for m in modules if m.split(".")[0] == "pytest_agentctx")
    extra = [m for m in ours if m not in STARTUP_MODULES]
    assert not extra, (
        "a session of plain tests imported modules of the package it does not use, which "
        "every pytest run of every project with the plugin then pays for:\n"
        + "\n".join(how(m, importers) for m in extra)
        + "\nImport them inside the hook or fixture that uses them (or, if every session "
        "needs one at start-up, add it to STARTUP_MODULES in tests/e2e/test_startup.py "
        "with the reason), then run: pytest tests/e2e/test_startup.py"
    )


def test_plain_tests_import_no_library_of_the_plugins(
    with_plugin: dict[str, Any], without_plugin: dict[str, Any]
) -> None:
    modules = set(with_plugin["modules"])
    before = set(without_plugin["modules"])
    importers: dict[str, str] = with_plugin["importers"]
    assert "pytest_agentctx.plugin.options" in modules, "the plugin did not load"
    new = modules - before
    libraries: dict[str, list[str]] = {}  # by top-level package
    for module in sorted(new):
        top = module.split(".")[0]
        ours = top in ("pytest_agentctx", "_pytest", "pytest", "pluggy")
        if top in HEAVY or not (ours or top in sys.stdlib_module_names):
            libraries.setdefault(top, []).append(module)
    assert not libraries, (
        "a session of plain tests imported libraries through the plugin (its start-up "
        "then costs their import on every pytest run):\n"
        + "\n".join(
            f"{top} ({len(found)} modules): {how(top if top in found else found[0], importers)}"
            for top, found in libraries.items()
        )
        + "\nImport them inside the hook or fixture that uses them, then run: "
        "pytest tests/e2e/test_startup.py"
    )


#: The modules Python imports before the package can take itself off pytest's assertion
#: rewriting: its ``__init__`` alone (rewritten when pytest loads the plugin from its entry
#: point, which marks the whole package; ``-p pytest_agentctx.plugin``, as here, marks that
#: module only, and nothing is rewritten).
REWRITTEN = {"pytest_agentctx"}


def test_pytest_rewrites_only_the_modules_loaded_before_the_plugin(
    with_plugin: dict[str, Any],
) -> None:
    """Rewriting a module parses its source on every run, pip's ``.pyc`` unused: the
    plugin's modules are imported as Python compiles them (and the run, with ``-W error``,
    has no warning that they were imported before pytest could rewrite them)."""
    loaders: dict[str, str] = with_plugin["loaders"]
    rewritten = {name for name, loader in loaders.items() if loader == "AssertionRewritingHook"}
    assert "pytest_agentctx.plugin.options" in loaders, "the plugin did not load"
    assert rewritten <= REWRITTEN, (
        f"pytest rewrote {sorted(rewritten - REWRITTEN)}: "
        "see _off_assertion_rewriting in pytest_agentctx/__init__.py, then run: "
        "pytest tests/e2e/test_startup.py"
    )


def test_the_plugins_modules_are_registered_without_an_entry_point_lookup(
    with_plugin: dict[str, Any],
) -> None:
    """pytest looks a name of ``pytest_plugins`` up in the entry points of every installed
    distribution, reading each one's metadata: a lookup per module would cost every run in
    proportion to the size of the environment. Only the name given to ``-p`` is looked up."""
    lookups: list[str | None] = with_plugin["lookups"]
    assert "pytest_agentctx.plugin.options" in with_plugin["modules"], "the plugin did not load"
    assert "pytest_agentctx.plugin" in lookups, lookups  # the probe saw -p's own lookup
    ours = [name for name in lookups if name and name.startswith("pytest_agentctx.plugin.")]
    assert not ours, (
        f"pytest looked up {ours} in every distribution's entry points: register the "
        "plugin's modules in pytest_addhooks (pytest_agentctx/plugin/__init__.py), not "
        "through pytest_plugins, then run: pytest tests/e2e/test_startup.py"
    )


def test_pytests_rewriting_hook_keeps_what_the_package_takes_itself_off_with(
    pytestconfig: pytest.Config,
) -> None:
    """``_off_assertion_rewriting`` (pytest_agentctx/__init__.py) works on two private
    attributes of pytest's rewriting hook: the names marked for rewriting
    (``_must_rewrite``, a set) and the cache of its answers (``_marked_for_rewrite_cache``, a
    dict). A pytest that renames or retypes them fails here, not silently: the package would
    then be rewritten on every run, its plugin modules kept as they are by the supported
    ``PYTEST_DONT_REWRITE`` of their docstrings only."""
    from importlib import import_module

    from _pytest.assertion.rewrite import AssertionRewritingHook

    hook = AssertionRewritingHook(pytestconfig)  # a hook of its own, on no session

    assert type(hook).__name__ == "AssertionRewritingHook"
    assert isinstance(hook._must_rewrite, set), "pytest's rewriting hook changed"
    assert isinstance(hook._marked_for_rewrite_cache, dict), "pytest's rewriting hook changed"
    hook.mark_rewrite("pytest_agentctx", "pytest_agentctx.plugin", "other_plugin")
    hook._marked_for_rewrite_cache["pytest_agentctx.plugin"] = True
    sys.meta_path.insert(0, hook)
    try:
        import_module("pytest_agentctx")._off_assertion_rewriting()
    finally:
        sys.meta_path.remove(hook)

    assert hook._must_rewrite == {"other_plugin"}
    assert hook._marked_for_rewrite_cache == {}


def test_the_plugins_start_up_modules_say_pytest_dont_rewrite() -> None:
    """The fallback where the package cannot reach pytest's hook: pytest leaves a module
    whose docstring says ``PYTEST_DONT_REWRITE`` as it is. Every module of the plugin a
    session loads (the entry point and what it registers) says it."""
    from importlib import import_module

    from pytest_agentctx import plugin

    missing = [
        name
        for name in ["pytest_agentctx.plugin", *plugin.PLUGIN_MODULES]
        if "PYTEST_DONT_REWRITE" not in (import_module(name).__doc__ or "")
    ]
    assert not missing, f"{missing}: say PYTEST_DONT_REWRITE in the module's docstring"
