"""Why a test failed, as its reports keep it: the ``failure`` entry of a test's record.

A failed test's record carries the failure text pytest shows for it (the traceback, the
assertion explanation with its mismatch paths, the snapshot diff, the cassette miss), so
the JSON report, the HTML page and the JUnit properties say why, not only that, it failed.
:func:`failure_entry` makes the entry from the text, already scrubbed of secrets by the
test's redactor (the plugin does that in the process that ran the test), and cuts a text
longer than :data:`FAILURE_LIMIT` in its middle, saying how much it cut: the start of a
failure names the test's code, its end the error itself. Object addresses, which change
from run to run, are left out, so a report stays the same bytes for the same failures.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_agentctx.reports.schema import FailureEntry

#: The longest failure text a report keeps, in characters (about 250 lines of traceback).
FAILURE_LIMIT = 20_000
#: The phases of a test that can fail, in the order they run.
FAILURE_PHASES = ("setup", "call", "teardown")
#: Longest one-line summary of a failure (the JUnit property ``agentctx.failure``).
_LINE_LIMIT = 200
#: The memory address in an object's default repr (``<Cassette object at 0x7f...>``):
#: different on every run, so a report would never have the same bytes twice.
_ADDRESS = re.compile(r"( object at 0x)[0-9a-fA-F]+>")


def _cut(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to about ``limit`` characters: its first quarter and its last three
    quarters, joined by a line that says how many characters were left out."""
    if len(text) <= limit:
        return text, 0
    head = limit // 4
    tail = limit - head
    cut = len(text) - head - tail
    note = (
        f"\n... [{cut:,} characters of the failure text cut here: the report keeps "
        f"{limit:,}; the terminal output and the JUnit XML have it all] ...\n"
    )
    return text[:head] + note + text[len(text) - tail :], cut


def failure_entry(
    phase: str, text: str, *, message: str | None = None, limit: int = FAILURE_LIMIT
) -> FailureEntry:
    """The ``failure`` entry of a test's record: the ``phase`` that failed (setup, call or
    teardown), the failure ``text`` (cut to ``limit`` characters, ``truncated`` and
    ``cut`` say so and how many characters went), and a one-line ``message`` (the first
    line of ``message``, the exception's message; the text's last line when none is given).

    ``text`` must already be redacted: the entry is written as it is.
    """
    text = _ADDRESS.sub(r"\1...>", text)
    kept, cut = _cut(text, limit)
    line = _ADDRESS.sub(r"\1...>", _first_line(message) if message else _last_line(text))
    return {
        "phase": phase,
        "message": _one_line(line),
        "text": kept,
        "truncated": cut > 0,
        "cut": cut,
    }


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return ""


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _LINE_LIMIT else line[: _LINE_LIMIT - 1] + "\u2026"


def failure_line(failure: Mapping[str, object] | None) -> str | None:
    """The failure as one line (``call: AssertionError: ...``), or ``None`` without one:
    the JUnit property ``agentctx.failure``."""
    if not failure:
        return None
    message = str(failure.get("message") or "")
    return f"{failure.get('phase', '?')}: {message}" if message else str(failure.get("phase"))
