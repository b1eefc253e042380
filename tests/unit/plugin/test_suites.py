"""Unit tests for the plugin's suites and repeat packages: integration folders, ordering,
asyncio marking, which tests are sorted, repeated runs and the suite counts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_agentctx.plugin.repeat._runs import RepeatSpec, RepeatTally, repeat_cassette_path
from pytest_agentctx.plugin.suites import SuiteCounts, SuiteScope
from pytest_agentctx.plugin.suites._sorting import (
    in_integration_folder,
    integration_last,
    named_on_command_line,
    uses_plugin_fixture,
)
from pytest_agentctx.reports.errors import RepeatError

ROOT = Path("/project")
WHERE = "tests/test_x.py::test_y"


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


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((5,), {}, RepeatSpec(5, 1.0)),
        ((5, 0.8), {}, RepeatSpec(5, 0.8)),
        ((3,), {"min_pass_rate": 0}, RepeatSpec(3, 0.0)),
        ((), {"n": 4, "min_pass_rate": 0.5}, RepeatSpec(4, 0.5)),
    ],
)
def test_the_repeat_marker_takes_a_count_and_a_rate(
    args: tuple[object, ...], kwargs: dict[str, object], expected: RepeatSpec
) -> None:
    assert RepeatSpec.from_marker(args, kwargs, where=WHERE) == expected


@pytest.mark.parametrize(
    ("args", "kwargs", "problem"),
    [
        ((), {}, r"run count None; expected a whole number >= 1"),
        ((0,), {}, r"run count 0; expected a whole number >= 1"),
        ((2.5,), {}, r"run count 2\.5"),
        ((True,), {}, r"run count True"),
        ((3,), {"min_pass_rate": 1.2}, r"min_pass_rate=1\.2; expected a number from 0 to 1"),
        ((3,), {"min_pass_rate": "0.5"}, r"min_pass_rate='0\.5'"),
        ((3,), {"rate": 0.5}, r"agent_repeat\(3, rate=0\.5\) is not understood"),
    ],
)
def test_a_bad_repeat_marker_names_the_test(
    args: tuple[object, ...], kwargs: dict[str, object], problem: str
) -> None:
    with pytest.raises(RepeatError, match=rf"^{WHERE}: (agent_repeat )?{problem}"):
        RepeatSpec.from_marker(args, kwargs, where=WHERE)


def tally(*phases: tuple[int, str, str], runs: int = 4, rate: float = 0.5) -> RepeatTally:
    counted = RepeatTally(RepeatSpec(runs, rate))
    for index, when, outcome in phases:
        counted.observe(index, when, outcome)
    return counted


def test_a_repetition_passes_when_each_of_its_phases_passed() -> None:
    counted = tally((1, "setup", "passed"), (1, "call", "passed"), (1, "teardown", "passed"))

    assert counted.outcomes == {1: "passed"}


def test_a_failed_call_or_teardown_fails_the_repetition() -> None:
    counted = tally(
        (1, "setup", "passed"),
        (1, "call", "failed"),
        (2, "setup", "passed"),
        (2, "call", "passed"),
        (2, "teardown", "failed"),
    )

    assert counted.outcomes == {1: "failed", 2: "failed"}


def test_a_skip_in_setup_or_call_skips_the_repetition() -> None:
    counted = tally((1, "setup", "skipped"), (1, "teardown", "passed"), (2, "call", "skipped"))

    assert counted.outcomes == {1: "skipped", 2: "skipped"}
    assert counted.all_skipped


def test_the_rate_counts_the_repetitions_that_were_not_skipped() -> None:
    counted = tally(
        (1, "call", "passed"), (2, "call", "failed"), (3, "call", "skipped"), (4, "call", "passed")
    )

    assert counted.to_dict() == {
        "runs": 3,
        "passed": 2,
        "pass_rate": 0.666667,
        "min_pass_rate": 0.5,
        "interval": [0.20766, 0.938508],
        "confidence": 0.95,
        "stability": "stochastic",
    }
    assert counted.describe() == (
        "2 of 3 runs passed (67%; 95% interval 21-94%, stochastic), 1 skipped, "
        "min_pass_rate 50%: passed"
    )


def test_a_rate_below_the_minimum_is_not_met() -> None:
    counted = tally((1, "call", "passed"), (2, "call", "failed"), rate=0.75)

    assert not counted.met
    assert counted.describe().endswith("min_pass_rate 75%: failed")


def test_a_rate_exactly_at_the_minimum_is_met() -> None:
    counted = tally(*[(i, "call", "passed" if i <= 3 else "failed") for i in range(1, 6)], rate=0.6)

    assert counted.met


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


def test_a_test_whose_runs_all_failed_is_a_stable_fail() -> None:
    counted = tally((1, "call", "failed"), (2, "call", "failed"), (3, "call", "failed"))

    assert (counted.stability, counted.to_dict()["interval"]) == ("stable fail", [0.0, 0.561497])


def test_a_test_whose_runs_all_skipped_has_no_interval() -> None:
    counted = tally((1, "setup", "skipped"), (2, "setup", "skipped"))

    assert counted.stability is None
    assert "interval" not in counted.to_dict()
