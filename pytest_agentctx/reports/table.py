"""The table of agent tests printed at the end of a session, fitted to the terminal's width.

One row per agent test, in node id order: its outcome, its name, its figures (iterations,
tool calls, tokens, cost), its cassette's status, and its budget and pass rate when a test
has them. The table never gets wider than the terminal and its rows can always be told
apart. When the full table does not fit, it gives up, in this order, and stops as soon as
it fits:

1. the directory every test shares (``tests/unit/``): names are relative to it, and a note
   under the table says so;
2. the least important figures: ``tools``, then ``iters``, then ``cost`` (the totals line
   still adds them up, and ``--agent-report`` has every figure);
3. the middle of each test's *file path*, replaced by ``...``: the test's name after
   ``::`` (class, function and parametrize id) is kept whole, and the cut is chosen so
   that the shortened name fits no other row's test;
4. the ``tokens``, ``pass rate``, ``budget`` and ``cassette`` columns, in that order, each
   before the file path is cut again;
5. last, when no file path can be cut short enough, the middle of the whole name, keeping
   its end; no figures are shown then, and the ``pass rate``, ``budget`` and ``cassette``
   columns only while they leave the name :data:`_MIN_NAME` characters.

Every row stays one line. A note under the table names the columns left out and the
``COLUMNS`` that would show them. Widths under :data:`MIN_WIDTH` are taken as
:data:`MIN_WIDTH`. The table is built from the report dict only (whose records are
redacted when they are made) and the outcome words, so the same session prints the same
table.
"""

from __future__ import annotations

import sys
import textwrap
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentctx.reports.record import is_agent_test, is_measured

#: The narrowest table: narrower terminals get a table this wide.
MIN_WIDTH = 40
#: The words of the ``outcome`` column: a failure is in capitals, as pytest writes it.
OUTCOME_WORDS = ("passed", "FAILED", "ERROR", "skipped", "xfail", "xpass")
#: How bad each word is: the worst phase of a test (setup, call, teardown) gives its word.
_WORD_RANK = {"passed": 0, "skipped": 1, "xfail": 1, "xpass": 1, "FAILED": 2, "ERROR": 3}
#: The word of a report outcome when the phases are not known (a report read back).
_REPORT_WORDS = {"passed": "passed", "failed": "FAILED", "skipped": "skipped"}

#: Columns given up to fit, least important first; names are cut only after the first three.
_DROP_ORDER = ("tools", "iters", "cost", "tokens", "pass rate", "budget", "cassette")
_DROPPED_BEFORE_CUTTING = 3
_FIGURES = ("iters", "tools", "tokens", "cost")  # right-aligned
_ELLIPSIS = "..."
#: The fewest characters a cut file path keeps, the ellipsis included.
_MIN_PATH = 10
#: The fewest characters of a name cut anywhere (the last resort), while columns are left.
_MIN_NAME = 30


def outcome_word(when: str, outcome: str, *, xfail: bool) -> str | None:
    """The word of one phase's report: ``ERROR`` for a failed setup or teardown, ``xfail``
    and ``xpass`` for a test marked ``xfail`` (a strict ``xpass`` is ``FAILED``, as pytest
    reports it), ``None`` for outcomes other than passed, failed and skipped."""
    if outcome == "failed":
        return "FAILED" if when == "call" else "ERROR"
    if outcome == "skipped":
        return "xfail" if xfail else "skipped"
    if outcome == "passed":
        return "xpass" if xfail else "passed"
    return None


class OutcomeWords:
    """The outcome word of each test, from the reports of its phases (the worst wins)."""

    def __init__(self) -> None:
        self.words: dict[str, str] = {}

    def add(self, nodeid: str, when: str, outcome: str, *, xfail: bool) -> None:
        """Take the report of one phase of test ``nodeid``."""
        word = outcome_word(when, outcome, xfail=xfail)
        if word is None:
            return
        known = self.words.get(nodeid)
        if known is None or _WORD_RANK[word] > _WORD_RANK[known]:
            self.words[nodeid] = word


@dataclass(frozen=True)
class _Layout:
    names: list[str]
    kept: list[str]
    prefix: str


def table_lines(
    report: Mapping[str, Any],
    *,
    width: int = 80,
    limit: int | None = 30,
    outcomes: Mapping[str, str] | None = None,
) -> list[str]:
    """The table of agent tests, no line wider than ``width`` (at least :data:`MIN_WIDTH`).

    ``outcomes`` gives each test's word (:class:`OutcomeWords`); a test without one gets
    the word of its report outcome. With more than ``limit`` agent tests, the rows shown
    are those with a problem (failed, over budget, cassette stale, unused or missing) first,
    then the others, still in node id order, and a line says how many were left out.
    """
    agents = [test for test in report["tests"] if is_agent_test(test)]
    if not agents:
        return []
    width = max(width, MIN_WIDTH)
    shown = agents
    if limit is not None and len(agents) > limit:
        ranked = sorted(range(len(agents)), key=lambda i: (not _flagged(agents[i]), i))
        shown = [agents[i] for i in sorted(ranked[:limit])]
    known = outcomes or {}
    words = [known.get(t["nodeid"]) or _REPORT_WORDS.get(t["outcome"], "?") for t in shown]
    columns = _columns(shown)
    names = [str(test["nodeid"]) for test in shown]
    layout = _layout(names, words, columns, width)
    word_width = max(len("outcome"), *(len(word) for word in words))
    name_width = max(len("test"), *(len(name) for name in layout.names))
    widths = {title: max(len(title), *(len(c) for c in columns[title])) for title in columns}

    def line(word: str, name: str, cells: Mapping[str, str]) -> str:
        parts = [word.ljust(word_width), name.ljust(name_width)]
        for title in layout.kept:
            align = str.rjust if title in _FIGURES else str.ljust
            parts.append(align(cells[title], widths[title]))
        return "  ".join(parts).rstrip()

    lines = [line("outcome", "test", {title: title for title in columns})]
    for row, (word, name) in enumerate(zip(words, layout.names, strict=True)):
        lines.append(line(word, name, {title: cells[row] for title, cells in columns.items()}))
    notes = []
    if len(shown) < len(agents):
        left = len(agents) - len(shown)
        more = "more agent test" if left == 1 else "more agent tests"
        notes.append(f"... and {left} {more}: -v or --agent-report=PATH shows them")
    if layout.prefix:
        notes.append(f"test names are relative to {layout.prefix}")
    dropped = [title for title in _DROP_ORDER if title in columns and title not in layout.kept]
    if dropped:
        full = _row_width(word_width, max(len(n) for n in names), columns, list(columns))
        notes.append(
            f"not shown at {width} columns: {', '.join(dropped)} (COLUMNS={full} shows them)"
        )
    for note in notes:
        lines += textwrap.wrap(note, width, break_on_hyphens=False)
    return lines


def _flagged(test: Mapping[str, Any]) -> bool:
    cassette = test["cassette"]
    budget = test["budget"]
    return (
        test["outcome"] == "failed"
        or (
            cassette is not None
            and cassette["status"] in ("discarded", "unsaved", "stale", "unused", "missing")
        )
        or (budget is not None and bool(budget.get("exceeded")))
    )


# -- the cells -------------------------------------------------------------------------


def _money(cost: float | None) -> str:
    return "n/a" if cost is None else f"${cost:.6f}"


def _cassette_cell(cassette: Mapping[str, Any] | None) -> str:
    """A test's cassette status; ``(eased)`` when the migration period let it pass."""
    if cassette is None:
        return "-"
    return f"{cassette['status']} (eased)" if cassette.get("eased") else str(cassette["status"])


def _columns(shown: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The cells of every column but the outcome and the name, by title, in table order."""
    columns: dict[str, list[str]] = {title: [] for title in (*_FIGURES, "cassette")}
    for test in shown:
        stats = test["stats"]
        figures = [
            str(stats["iterations"]),
            str(stats["tool_calls"]),
            str(stats["total_tokens"]),
            _money(stats["cost_usd"]),
        ]
        for title, cell in zip(_FIGURES, figures, strict=True):
            columns[title].append(cell if is_measured(test) else "?")
        cassette = test["cassette"]
        columns["cassette"].append(_cassette_cell(cassette))
    if any(test["budget"] is not None for test in shown):
        columns["budget"] = [_budget(test["budget"]) for test in shown]
    if any(test["repeat"] is not None for test in shown):
        columns["pass rate"] = [
            "-"
            if test["repeat"] is None
            else f"{test['repeat']['passed']}/{test['repeat']['runs']}"
            for test in shown
        ]
    return columns


def _budget(budget: Mapping[str, Any] | None) -> str:
    if budget is None:
        return "-"
    if budget.get("unmeasured"):
        return "not measured"
    if budget.get("exceeded"):
        return "over: " + ", ".join(e["name"] for e in budget["exceeded"])
    return "ok"


# -- the layout ------------------------------------------------------------------------


def _row_width(
    word_width: int, name_width: int, columns: Mapping[str, list[str]], kept: Sequence[str]
) -> int:
    cells = [max(len(title), *(len(c) for c in columns[title])) for title in kept]
    return word_width + 2 + max(name_width, len("test")) + sum(2 + w for w in cells)


def _layout(
    names: list[str], words: Sequence[str], columns: Mapping[str, list[str]], width: int
) -> _Layout:
    """The names and columns of the widest table that fits (the module's docstring says
    in which order things are given up)."""
    word_width = max(len("outcome"), *(len(word) for word in words))
    everything = list(columns)
    if _row_width(word_width, max(map(len, names)), columns, everything) <= width:
        return _Layout(names, everything, "")
    prefix = _common_directory(names)
    relative = [name[len(prefix) :] for name in names]
    droppable = [title for title in _DROP_ORDER if title in columns]
    for count in range(len(droppable) + 1):
        kept = [title for title in everything if title not in droppable[:count]]
        room = width - _row_width(word_width, 0, columns, kept) + len("test")
        if max(map(len, relative)) <= room:
            return _Layout(relative, kept, prefix)
        if count >= min(_DROPPED_BEFORE_CUTTING, len(droppable)):
            cut = _cut_paths(relative, room)
            if cut is not None:
                return _Layout(cut, kept, prefix)
    figures = sum(title in _FIGURES for title in droppable)  # the last resort shows none
    for count in range(figures, len(droppable) + 1):
        kept = [title for title in everything if title not in droppable[:count]]
        room = width - _row_width(word_width, 0, columns, kept) + len("test")
        if room >= _MIN_NAME or count == len(droppable):
            return _Layout(_cut_names(relative, room), kept, prefix)
    raise AssertionError("unreachable: the last count always returns")  # pragma: no cover


def _common_directory(names: Sequence[str]) -> str:
    """The leading directories of every name's file path (``tests/unit/``), or ``""``."""
    folders = [name.partition("::")[0].split("/")[:-1] for name in names]
    common: list[str] = []
    for parts in zip(*folders, strict=False):
        if any(part != parts[0] for part in parts):
            break
        common.append(parts[0])
    return "".join(part + "/" for part in common)


class _Names:
    """The names of the rows, sorted from the front and from the back, to find the names a
    cut one could stand for (those that start with its head and end with its tail)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.forward = sorted(names)
        self.backward = sorted(name[::-1] for name in names)

    def ambiguous(self, name: str, head: str, tail: str) -> bool:
        """Whether ``head + "..." + tail`` could stand for a name other than ``name``."""
        start, end = _starting(self.forward, head)
        back_start, back_end = _starting(self.backward, tail[::-1])
        if end - start <= back_end - back_start:
            rivals = self.forward[start:end]
        else:
            rivals = [other[::-1] for other in self.backward[back_start:back_end]]
        return any(
            other != name
            and len(other) >= len(head) + len(tail)
            and other.endswith(tail)
            and other.startswith(head)
            for other in rivals
        )


def _starting(ordered: Sequence[str], prefix: str) -> tuple[int, int]:
    """The range of the sorted ``ordered`` that starts with ``prefix``."""
    return bisect_left(ordered, prefix), bisect_left(ordered, prefix + chr(sys.maxunicode))


def _cut_paths(names: Sequence[str], room: int) -> list[str] | None:
    """Every name in at most ``room`` characters, the middle of its file path cut so that
    no other name fits what is left; ``None`` when one of them cannot be."""
    index = _Names(names)
    cut = []
    for name in names:
        shortened = _cut_path(name, room, index)
        if shortened is None:
            return None
        cut.append(shortened)
    return cut if len(set(cut)) == len(cut) else None


def _cut_path(name: str, room: int, index: _Names) -> str | None:
    if len(name) <= room:
        return name
    path, separator, test = name.partition("::")
    keep = room - len(separator) - len(test)  # characters of the path, with the ellipsis
    if not separator or keep < min(len(path), _MIN_PATH):
        return None
    ending = separator + test
    # The whole file name when it fits; else the start and end of the path, evenly: file
    # names differ more at their start (test_openai_...) than at their end (..._agent.py).
    basename = path.rsplit("/", 1)[-1]
    shown = keep - len(_ELLIPSIS)
    tails = sorted(range(shown + 1), key=lambda t: (abs(2 * t - shown), -t))
    if len(basename) <= shown:
        tails.insert(0, len(basename))
    for tail_length in tails:
        head = path[: keep - len(_ELLIPSIS) - tail_length]
        tail = path[len(path) - tail_length :] + ending
        if not index.ambiguous(name, head, tail):
            return head + _ELLIPSIS + tail
    return None


def _cut_names(names: Sequence[str], room: int) -> list[str]:
    """Every name in at most ``room`` characters, the middle cut where needed, keeping the
    end; the cut is one no other name fits when there is one."""
    keep = room - len(_ELLIPSIS)
    index = _Names(names)
    cut = []
    for name in names:
        if len(name) <= room:
            cut.append(name)
            continue
        choice = _ELLIPSIS + name[len(name) - keep :]
        for tail_length in range(keep, -1, -1):
            head, tail = name[: keep - tail_length], name[len(name) - tail_length :]
            if not index.ambiguous(name, head, tail):
                choice = head + _ELLIPSIS + tail
                break
        cut.append(choice)
    return cut
