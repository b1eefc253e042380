"""Unit tests for pytest_agentctx.reports.table: the table of agent tests printed at the end
of a session, fitted to the terminal's width, and the outcome word of each test."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_agentctx.reports.table import MIN_WIDTH, OutcomeWords, table_lines

WIDTHS = [200, 120, 80, 60, 40]

#: Two files with the same test, and two folders with the same file and a long
#: parametrize id: the names that a cut from the left made look the same.
COLLIDING = [
    "tests/test_a.py::test_weather_paris",
    "tests/test_b.py::test_weather_paris",
    "tests/integration/climate/test_forecast.py::test_week[paris-sunny-2025-01-01-celsius]",
    "tests/integration/weather/test_forecast.py::test_week[paris-sunny-2025-01-01-celsius]",
    "tests/agents/providers/test_openai_weather_agent.py::TestAgent::test_rome[fast]",
    "tests/agents/providers/test_anthropic_weather_agent.py::TestAgent::test_rome[fast]",
]


def _entry(nodeid: str, outcome: str = "passed", **fields: Any) -> dict[str, Any]:
    """A test of a report as ``--agent-report`` writes it: one run, 2 iterations, 1 tool
    call, 1500 tokens, $0.0075, no cassette, budget or repeat unless given."""
    stats = {"runs": 1, "iterations": 2, "tool_calls": 1, "total_tokens": 1500, "cost_usd": 0.0075}
    entry: dict[str, Any] = {"nodeid": nodeid, "outcome": outcome, "cassette": None}
    entry.update(budget=None, repeat=None, stats=stats, runs=[{"name": "weather", "stats": stats}])
    entry.update(fields)
    return entry


def _report(*tests: dict[str, Any]) -> dict[str, Any]:
    """A report of ``tests``, in node id order as the collector builds it."""
    ordered = sorted(tests, key=lambda test: str(test["nodeid"]))
    return {"format": "pytest-agentctx-report", "version": 1, "tests": ordered}


def _colliding() -> dict[str, Any]:
    budget = {"limits": {"max_tokens": 100}, "exceeded": [{"name": "max_tokens"}]}
    tests = [_entry(nodeid, cassette={"status": "replayed"}) for nodeid in COLLIDING]
    tests[1].update(outcome="failed", cassette={"status": "stale"}, budget=budget)
    tests[2].update(repeat={"runs": 3, "passed": 2})
    return _report(*tests)


def _rows(lines: list[str], count: int = len(COLLIDING)) -> list[list[str]]:
    """The cells of the ``count`` rows under the header."""
    return [line.split() for line in lines[1 : 1 + count]]


def _stands_for(shown: str, prefix: str, nodeids: list[str]) -> list[str]:
    """The node ids a name shown in the table could be: ``...`` stands for anything."""
    pattern = re.escape(prefix) + ".*".join(re.escape(part) for part in shown.split("..."))
    return [nodeid for nodeid in nodeids if re.fullmatch(pattern, nodeid)]


def _prefix(lines: list[str]) -> str:
    notes = " ".join(lines)
    found = re.search(r"test names are relative to (\S+)", notes)
    return found.group(1) if found else ""


# -- the widths ------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_no_line_is_wider_than_the_terminal(width: int) -> None:
    lines = table_lines(_colliding(), width=width)

    assert max(len(line) for line in lines) <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_every_row_can_be_told_apart(width: int) -> None:
    lines = table_lines(_colliding(), width=width)

    names = [row[1] for row in _rows(lines)]
    assert [_stands_for(name, _prefix(lines), COLLIDING) for name in names] == [
        [nodeid] for nodeid in sorted(COLLIDING)
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_every_row_is_one_line_with_the_outcome_first(width: int) -> None:
    lines = table_lines(_colliding(), width=width)

    assert [row[0] for row in _rows(lines)] == ["passed"] * 5 + ["FAILED"]  # test_b


def test_a_wide_terminal_shows_full_node_ids_and_every_column() -> None:
    report = _report(
        _entry("tests/test_a.py::test_weather_paris", cassette={"status": "replayed"}),
        _entry("tests/test_b.py::test_weather_paris", "failed", cassette={"status": "stale"}),
    )

    assert table_lines(report, width=200) == [
        "outcome  test                                 iters  tools  tokens       cost  cassette",
        "passed   tests/test_a.py::test_weather_paris      2      1    1500  $0.007500  replayed",
        "FAILED   tests/test_b.py::test_weather_paris      2      1    1500  $0.007500  stale",
    ]


def test_at_80_columns_names_lose_their_common_folder_before_any_column() -> None:
    report = _report(
        _entry("tests/agents/test_a.py::test_weather", cassette={"status": "replayed"}),
        _entry("tests/agents/test_b.py::test_weather", "failed", cassette={"status": "stale"}),
    )

    assert table_lines(report, width=80) == [
        "outcome  test                     iters  tools  tokens       cost  cassette",
        "passed   test_a.py::test_weather      2      1    1500  $0.007500  replayed",
        "FAILED   test_b.py::test_weather      2      1    1500  $0.007500  stale",
        "test names are relative to tests/agents/",
    ]


def test_figures_are_left_out_tools_first_before_a_name_is_cut() -> None:
    nodeid = "tests/weather/test_forecast.py::test_week"
    report = _report(_entry(nodeid), _entry("tests/test_b.py::test_weather_paris"))

    lines = table_lines(report, width=80)

    assert lines[0].split() == ["outcome", "test", "iters", "tokens", "cost", "cassette"]
    assert lines[2].split()[1] == "weather/test_forecast.py::test_week"
    assert lines[-1] == "not shown at 80 columns: tools (COLUMNS=93 shows them)"


def test_the_columns_the_note_names_fit_at_the_width_it_gives() -> None:
    lines = table_lines(_colliding(), width=80)
    needed = int(re.findall(r"COLUMNS=(\d+)", " ".join(lines))[0])

    wide = table_lines(_colliding(), width=needed)

    titles = ["outcome", "test", "iters", "tools", "tokens", "cost", "cassette", "budget"]
    assert wide[0].split() == [*titles, "pass", "rate"]
    assert max(len(line) for line in wide) == needed
    assert len(wide) == 1 + len(COLLIDING)


def test_a_cut_path_keeps_the_file_name_and_the_whole_test_name() -> None:
    nodeids = [
        "tests/agents/weather/providers/openai/test_forecast_agent.py::TestAgent::test_rome[a]",
        "tests/agents/weather/providers/anthropic/test_forecast_agent.py::TestAgent::test_rome[b]",
    ]

    lines = table_lines(_report(*map(_entry, nodeids)), width=80)

    names = [row[1] for row in _rows(lines, 2)]
    assert [name.split("...", 1)[1] for name in names] == [
        "test_forecast_agent.py::TestAgent::test_rome[b]",
        "test_forecast_agent.py::TestAgent::test_rome[a]",
    ]
    assert lines[0].split()[2:] == ["tokens", "cassette"]


def test_a_long_parametrize_id_is_kept_whole_at_80_columns() -> None:
    lines = table_lines(_colliding(), width=80)

    names = [row[1] for row in _rows(lines)]
    assert sum(name.endswith("::test_week[paris-sunny-2025-01-01-celsius]") for name in names) == 2


def test_a_narrower_terminal_is_taken_as_the_narrowest_table() -> None:
    lines = table_lines(_colliding(), width=10)

    assert lines == table_lines(_colliding(), width=MIN_WIDTH)


def test_a_narrow_table_keeps_whole_the_names_that_fit() -> None:
    lines = table_lines(_colliding(), width=40)

    names = [row[1] for row in _rows(lines)]
    assert names[-2:] == ["test_a.py::test_weather_paris", "test_b.py::test_weather_paris"]


# -- the rows --------------------------------------------------------------------------


def test_the_table_has_one_row_per_agent_test() -> None:
    report = _report(
        _entry("test_a.py::test_weather", cassette={"status": "replayed"}),
        _entry("test_a.py::test_plain", runs=[]),
    )

    assert table_lines(report, width=80) == [
        "outcome  test                     iters  tools  tokens       cost  cassette",
        "passed   test_a.py::test_weather      2      1    1500  $0.007500  replayed",
    ]


def test_the_table_shows_budgets_and_pass_rates_when_a_test_has_them() -> None:
    budget = {"limits": {"max_tokens": 100}, "exceeded": [{"name": "max_tokens"}]}
    report = _report(
        _entry("a.py::t", "failed", budget=budget),
        _entry("b.py::t", repeat={"runs": 3, "passed": 2}),
    )

    lines = table_lines(report, width=120)
    start = lines[0].index("budget")

    assert [line[start:] for line in lines] == [
        "budget            pass rate",
        "over: max_tokens  -",
        "-                 2/3",
    ]


def test_the_table_shows_unknown_figures_for_an_unmeasured_test() -> None:
    report = _report(_entry("a.py::t", runs=[], measured=False))

    [_, row] = table_lines(report, width=80)

    assert row.split() == ["passed", "a.py::t", "?", "?", "?", "?", "-"]


def test_a_long_table_keeps_the_rows_with_problems_in_node_id_order() -> None:
    tests = [_entry(f"t.py::t{n:02}") for n in range(10)]
    tests[7]["outcome"] = "failed"

    lines = table_lines(_report(*tests), limit=3)

    assert [line.split()[1] for line in lines[:4]] == [
        "test",
        "t.py::t00",
        "t.py::t01",
        "t.py::t07",
    ]
    assert lines[4:] == ["... and 7 more agent tests: -v or --agent-report=PATH shows them"]


def test_the_outcome_word_comes_from_the_phases_when_known() -> None:
    report = _report(_entry("a.py::t", "skipped"), _entry("b.py::t", "failed"))

    lines = table_lines(report, outcomes={"a.py::t": "xfail", "b.py::t": "ERROR"})

    assert [line.split()[0] for line in lines[1:]] == ["xfail", "ERROR"]


# -- outcome words ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phases", "word"),
    [
        ([("setup", "passed"), ("call", "passed"), ("teardown", "passed")], "passed"),
        ([("setup", "passed"), ("call", "failed"), ("teardown", "passed")], "FAILED"),
        ([("setup", "failed"), ("teardown", "passed")], "ERROR"),
        ([("setup", "passed"), ("call", "failed"), ("teardown", "failed")], "ERROR"),
        ([("setup", "skipped"), ("teardown", "passed")], "skipped"),
        ([("setup", "passed"), ("call", "rerun"), ("call", "passed")], "passed"),
    ],
    ids=["passed", "failed", "setup-error", "teardown-error", "skipped", "rerun-ignored"],
)
def test_a_tests_word_is_that_of_its_worst_phase(phases: list[tuple[str, str]], word: str) -> None:
    words = OutcomeWords()
    for when, outcome in phases:
        words.add("a.py::t", when, outcome, xfail=False)

    assert words.words == {"a.py::t": word}


@pytest.mark.parametrize(("outcome", "word"), [("skipped", "xfail"), ("passed", "xpass")])
def test_a_test_marked_xfail_is_xfail_or_xpass(outcome: str, word: str) -> None:
    words = OutcomeWords()
    words.add("a.py::t", "setup", "passed", xfail=False)
    words.add("a.py::t", "call", outcome, xfail=True)
    words.add("a.py::t", "teardown", "passed", xfail=False)

    assert words.words == {"a.py::t": word}
