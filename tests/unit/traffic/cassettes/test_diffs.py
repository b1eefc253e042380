"""Unit tests of pytest_agentctx.traffic.cassettes.diffs: the differing fields of two
bodies, the window around a change in a long text, and the full diff of two bodies."""

from __future__ import annotations

from pytest_agentctx.traffic.cassettes.diffs import (
    MISSING,
    FieldDiff,
    field_diffs,
    field_lines,
    unified_diff,
    window,
)

LONG = "x" * 2500 + "lazy" + "y" * 496
CHANGED = "x" * 2500 + "busy" + "y" * 496


def test_field_diffs_lists_the_differing_leaves_by_path() -> None:
    recorded = {"model": "m", "messages": [{"content": "Paris?"}], "temperature": 0}
    now = {"model": "m", "messages": [{"content": "Rome?"}, {"content": "Hi"}]}

    assert field_diffs(recorded, now) == [
        FieldDiff("messages[0].content", "Paris?", "Rome?"),
        FieldDiff("messages[1]", MISSING, {"content": "Hi"}),
        FieldDiff("temperature", 0, MISSING),
    ]


def test_field_diffs_tells_a_number_from_a_float_of_the_same_value() -> None:
    assert field_diffs({"n": 1}, {"n": 1.0}) == [FieldDiff("n", 1, 1.0)]


def test_field_diffs_stops_at_its_limit() -> None:
    assert len(field_diffs(list(range(10)), list(range(1, 11)), limit=3)) == 3


def test_window_shows_the_change_deep_in_a_long_text_with_context() -> None:
    # "lazy" and "busy" differ up to their last letter: 30 characters follow that.
    assert window(LONG, CHANGED) == (
        "..." + "x" * 30 + "lazy" + "y" * 29 + "...",
        "..." + "x" * 30 + "busy" + "y" * 29 + "...",
    )


def test_window_of_a_change_at_the_start_has_no_leading_dots() -> None:
    assert window("a" + "z" * 100, "b" + "z" * 100) == (
        "a" + "z" * 30 + "...",
        "b" + "z" * 30 + "...",
    )


def test_window_cuts_a_long_insertion_at_its_span() -> None:
    recorded, now = window("x" * 100, "x" * 50 + "i" * 500 + "x" * 50)

    assert recorded == "..." + "x" * 60 + "..."
    assert now == "..." + "x" * 30 + "i" * 60 + "..."


def test_window_of_a_text_that_only_grew_shows_where_it_grew() -> None:
    assert window("x" * 100, "x" * 100 + "!") == ("..." + "x" * 30, "..." + "x" * 30 + "!")


def test_a_short_field_is_shown_whole_on_one_line() -> None:
    lines, left_out = field_lines(FieldDiff("messages[0].content", "Paris?", "Rome?"))

    assert (lines, left_out) == (['messages[0].content: recorded "Paris?" != now "Rome?"'], False)


def test_a_long_field_is_shown_as_the_window_around_its_first_difference() -> None:
    lines, left_out = field_lines(FieldDiff("messages[0].content", LONG, CHANGED))

    assert left_out
    assert lines == [
        "messages[0].content: first differs at character 2,501 "
        "(recorded 3,000 characters, now 3,000):",
        "  recorded: ..." + "x" * 30 + "lazy" + "y" * 29 + "...",
        "  now:      ..." + "x" * 30 + "busy" + "y" * 29 + "...",
    ]


def test_the_windows_of_a_long_field_put_the_change_in_the_same_column() -> None:
    lines, _ = field_lines(FieldDiff("system", LONG, CHANGED))

    assert lines[1].index("lazy") == lines[2].index("busy")


def test_a_long_field_one_side_lacks_is_cut_and_says_how_long_it_is() -> None:
    lines, left_out = field_lines(FieldDiff("system", MISSING, LONG))

    assert left_out
    assert lines == [f'system: not recorded, now "{"x" * 119}... (3,002 characters)']


def test_a_changed_request_line_is_shown_as_text() -> None:
    diff = FieldDiff("(request line)", "POST a/v1/x", "POST a/v1/x?v=2", plain=True)

    assert field_lines(diff) == (
        ["(request line): recorded POST a/v1/x != now POST a/v1/x?v=2"],
        False,
    )


def test_unified_diff_is_the_whole_diff_of_the_pretty_printed_bodies() -> None:
    diff = unified_diff({"b": 1, "system": LONG}, {"b": 1, "system": CHANGED})

    assert diff == [
        "--- recorded",
        "+++ now",
        "@@ -1,4 +1,4 @@",
        " {",
        '   "b": 1,',
        f'-  "system": "{LONG}"',
        f'+  "system": "{CHANGED}"',
        " }",
    ]
