"""Unit tests for the plugin's suites and repeat packages: integration folders, ordering,
asyncio marking, which tests are sorted, repeated runs' cassettes and the suite counts (the
pass rate of repeated runs: tests/unit/reports/test_repeats.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_agentctx.plugin.repeat._runs import repeat_cassette_path
from pytest_agentctx.plugin.suites import SuiteCounts, SuiteScope
from pytest_agentctx.plugin.suites._sorting import (
    in_integration_folder,
    integration_last,
    named_on_command_line,
    uses_plugin_fixture,
)

ROOT = Path("/project")


@pytest.mark.parametrize(
    "relative",
    ["tests/integration/test_a.py", "tests/integration/deep/test_b.py", "pkg/tests/integration"],
)
def test_paths_under_tests_integration_are_integration(relative: str) -> None:
    assert in_integration_folder(ROOT / relative, ROOT)


@pytest.mark.parametrize(
    "relative", ["tests/test_integration.py", "integration/test_a.py", "tests/unit/test_a.py"]
)
def test_other_paths_are_not(relative: str) -> None:
    assert not in_integration_folder(ROOT / relative, ROOT)


def test_the_folders_above_the_rootdir_do_not_count() -> None:
    root = Path("/home/me/tests/integration/project")

    assert not in_integration_folder(root / "tests" / "test_a.py", root)


def test_a_named_file_or_integration_folder_selects_its_tests() -> None:
    test = ROOT / "tests" / "integration" / "test_a.py"
    marked = ROOT / "tests" / "test_marked.py"

    assert named_on_command_line(test, [ROOT / "tests" / "integration"], ROOT)
    assert named_on_command_line(marked, [marked], ROOT)


def test_a_named_folder_outside_integration_does_not_select_them() -> None:
    test = ROOT / "tests" / "integration" / "test_a.py"

    assert not named_on_command_line(test, [ROOT / "tests"], ROOT)


def test_integration_tests_move_last_keeping_each_parts_order() -> None:
    items = ["u1", "i1", "u2", "i2", "u3"]

    assert integration_last(items, lambda name: name.startswith("i")) == [
        "u1",
        "u2",
        "u3",
        "i1",
        "i2",
    ]


@dataclass
class FakeDef:
    """What uses_plugin_fixture reads off pytest's FixtureDef: func and argnames."""

    func: object
    argnames: tuple[str, ...] = ()


def plugin_fixture() -> None:
    """Stands for a fixture defined in a plugin module (this module, in these tests)."""


def other_plugin_fixture() -> None:
    """Stands for a fixture defined in another of the plugin's modules."""


other_plugin_fixture.__module__ = "pytest_agentctx.plugin.fixtures"
#: The plugin's modules, in these tests.
PLUGIN_MODULES = frozenset({__name__, "pytest_agentctx.plugin.fixtures"})


def user_fixture() -> None:
    """Stands for a fixture of the user's conftest."""


user_fixture.__module__ = "conftest"
DEFS = {
    "agent_runtime": [FakeDef(plugin_fixture)],
    "_agentctx_cassette": [FakeDef(plugin_fixture)],
    "runtime": [FakeDef(user_fixture, ("agent_runtime",))],
    "tmp_path": [FakeDef(user_fixture)],
}


def test_a_test_asking_for_a_plugin_fixture_uses_it() -> None:
    assert uses_plugin_fixture(["agent_runtime"], DEFS, PLUGIN_MODULES)


def test_a_fixture_of_any_of_the_plugin_modules_counts() -> None:
    defs = {"frozen_clock": [FakeDef(other_plugin_fixture)]}

    assert uses_plugin_fixture(["frozen_clock"], defs, PLUGIN_MODULES)
    assert not uses_plugin_fixture(["frozen_clock"], defs, frozenset({__name__}))


def test_a_plugin_fixture_reached_through_a_user_fixture_counts() -> None:
    assert uses_plugin_fixture(["runtime"], DEFS, PLUGIN_MODULES)


def test_private_plugin_fixtures_and_other_fixtures_do_not_count() -> None:
    assert not uses_plugin_fixture(["_agentctx_cassette", "tmp_path"], DEFS, PLUGIN_MODULES)


def test_a_user_fixture_named_like_a_plugin_fixture_hides_it() -> None:
    defs = {"frozen_clock": [FakeDef(plugin_fixture), FakeDef(user_fixture)]}

    assert not uses_plugin_fixture(["frozen_clock"], defs, PLUGIN_MODULES)


def test_a_user_fixture_asking_for_the_plugin_fixture_it_overrides_uses_it() -> None:
    defs = {"agent_runtime": [FakeDef(plugin_fixture), FakeDef(user_fixture, ("agent_runtime",))]}

    assert uses_plugin_fixture(["agent_runtime"], defs, PLUGIN_MODULES)


def test_without_agent_suites_a_plain_test_is_not_sorted() -> None:
    assert not SuiteScope().sorts(["tmp_path", "frozen_clock", "fake_tools"], marked=False)


@pytest.mark.parametrize(
    "fixture", ["agent_runtime", "agent_cassette", "agent_context", "fake_llm"]
)
def test_a_test_using_an_agent_fixture_is_sorted(fixture: str) -> None:
    assert SuiteScope().sorts(["tmp_path", fixture], marked=False)


def test_a_test_marked_agent_is_sorted() -> None:
    assert SuiteScope().sorts([], marked=True)


@pytest.mark.parametrize(
    "scope", [SuiteScope(every_test=True), SuiteScope(all_agent_tests=True)], ids=repr
)
def test_agent_suites_or_agent_all_tests_sort_every_test(scope: SuiteScope) -> None:
    assert scope.everything
    assert scope.sorts([], marked=False)


def test_without_them_the_session_does_not_sort_every_test() -> None:
    assert not SuiteScope().everything


def test_each_repetition_has_its_own_cassette_file() -> None:
    path = Path("cassettes/tests/test_a/test_weather.json")

    assert repeat_cassette_path(path, 2) == Path(
        "cassettes/tests/test_a/test_weather-repeat-2.json"
    )


def test_the_suite_line_counts_each_test_once_by_suite() -> None:
    counts = SuiteCounts()
    for nodeid, integration in [("a", False), ("a", False), ("b", True), ("c", False)]:
        counts.add(nodeid, integration=integration)

    assert counts.line() == "agentctx suites: 2 unit, 1 integration test ran"


def test_the_suite_line_says_how_to_run_the_deselected_tests() -> None:
    counts = SuiteCounts(deselected_integration=3)

    assert counts.line() == (
        "agentctx suites: 0 unit, 0 integration tests ran; 3 integration tests deselected "
        "(run them with -m integration, or both suites with --agent-integration)"
    )


def test_the_suite_line_of_agent_tests_only_says_so() -> None:
    counts = SuiteCounts(deselected_integration=1, agent_only=True)
    counts.add("a", integration=False)
    counts.add("b", integration=False)

    assert counts.line() == (
        "agentctx suites: 2 unit, 0 integration agent tests ran; 1 integration agent test "
        "deselected (run them with -m integration, or both suites with --agent-integration)"
    )
