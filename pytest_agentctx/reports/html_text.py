"""The text of the HTML report: values read off a JSON report, and written as escaped HTML.

The page (:mod:`pytest_agentctx.reports.html`) reads a report that may come from another
version or be hand-edited, so every value is read defensively (:func:`as_map`, :func:`as_seq`,
:func:`as_int`, :func:`as_instant`: a value of the wrong type reads as empty) and every piece
of text is HTML-escaped (:func:`esc`). The rest formats figures as the page shows them:
counts, costs, durations, JSON, badges and one-line previews.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape

#: Longest preview of a message in an iteration's one-line summary.
_PREVIEW = 90


def esc(value: object) -> str:
    """A value as escaped HTML text."""
    return escape(value if isinstance(value, str) else str(value), quote=True)


def as_map(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def as_seq(value: object) -> Sequence[object]:
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return value
    return ()


def as_int(value: object) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value)
    return 0


def as_number(value: object, default: float) -> float:
    """``value`` if it is a number, else ``default``."""
    return value if isinstance(value, (int, float)) else default


def as_json(value: object) -> str:
    """``value`` as JSON: on one line when short, else indented."""
    line = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    if len(line) <= _PREVIEW:
        return line
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def fmt_count(value: object) -> str:
    return f"{as_int(value):,}"


def fmt_cost(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "n/a"
    if value == 0:
        return "$0"
    return f"${value:.4f}" if value >= 0.0001 else f"${value:.8f}".rstrip("0")


def fmt_seconds(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.2f} s"
    minutes, seconds = divmod(value, 60)
    return f"{int(minutes)} min {seconds:.0f} s"


def as_instant(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def elapsed(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    try:
        return (end - start).total_seconds()
    except TypeError:  # one aware, one naive
        return None


def badge(text: object, kind: str | None = None) -> str:
    css = f"badge b-{esc(kind if kind is not None else text)}"
    return f'<span class="{css}">{esc(text)}</span>'


def one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _PREVIEW else line[: _PREVIEW - 1] + "\u2026"
