"""Mismatches: where a value differs from a pattern, and what differs.

A :class:`Mismatch` is a path (``iterations[1].messages[2].content``) and a message. The
path is built while the value is walked as a chain of ``(parent, key)`` cells
(:data:`PathCell`), and formatted only when a mismatch is kept. The messages describe
values in one short line (:func:`short`); a pattern that no candidate matches is reported
with the closest candidate and its own mismatches (:func:`report_closest`).
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from itertools import islice
from typing import Any

from pydantic import BaseModel

from pytest_agentctx.context._paths import join
from pytest_agentctx.context._seq import Seq
from pytest_agentctx.context.model import AgentContext, Iteration

#: A path in the making: ``(parent, key)`` cells, formatted only when a mismatch is kept.
PathCell = tuple[Any, Any] | None
#: Where mismatches go: a list that collects them all, or ``None`` to stop at the first.
Out = list["Mismatch"] | None

#: How many candidates are compared in full to find the closest one in a failure report.
CLOSEST_LIMIT = 100


@dataclass(frozen=True)
class Mismatch:
    """One difference between a value and a pattern: where it is and what differs."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def format_path(path: PathCell) -> str:
    """The printable form of a path cell chain (``(root)`` for the root itself)."""
    keys: list[Any] = []
    while path is not None:
        path, key = path
        keys.append(key)
    keys.reverse()
    return join(keys) or "(root)"


def miss(out: list[Mismatch], path: PathCell, message: str) -> None:
    """Add the mismatch ``message`` at ``path`` to ``out``."""
    out.append(Mismatch(format_path(path), message))


def count(found: Sequence[Mismatch]) -> str:
    """``1 mismatch``, ``2 mismatches``..."""
    return f"{len(found)} mismatch" + ("" if len(found) == 1 else "es")


def report_closest(
    out: list[Mismatch],
    where: str,
    problem: str,
    candidates: Iterable[int],
    mismatches_at: Callable[[int], list[Mismatch]],
    place: Callable[[int], str],
) -> bool:
    """Report ``problem`` at ``where`` with the candidate that comes closest to matching.

    Of the first :data:`CLOSEST_LIMIT` candidates, the first with the fewest mismatches
    (``mismatches_at``) is named (``place``), and its mismatches follow. ``False``, with
    nothing reported, when there is no candidate.
    """
    best: list[Mismatch] | None = None
    best_index = 0
    for index in islice(candidates, CLOSEST_LIMIT):
        found = mismatches_at(index)
        if best is None or len(found) < len(best):
            best, best_index = found, index
    if best is None:
        return False
    out.append(
        Mismatch(where, f"{problem}; the closest is {place(best_index)}, with {count(best)}:")
    )
    out.extend(best)
    return True


class _ShortRepr(reprlib.Repr):
    """``reprlib`` limits, with dict keys in their own order (``reprlib`` sorts them)."""

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        items = [
            f"{self.repr1(key, level - 1)}: {self.repr1(x[key], level - 1)}"
            for key in islice(x, self.maxdict)
        ]
        if len(x) > self.maxdict:
            items.append("...")
        return "{" + ", ".join(items) + "}"


_REPR = _ShortRepr()
_REPR.maxstring = 60
_REPR.maxother = 70
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 4
_REPR.maxlevel = 3


def short(value: Any) -> str:
    """A short, one-line description of ``value`` for failure messages."""
    if isinstance(value, AgentContext):
        return f"AgentContext({len(value.iterations)} iterations)"
    if isinstance(value, Iteration):
        return (
            f"Iteration(number={value.number}, {len(value.messages)} messages, "
            f"{len(value.tool_calls)} tool calls)"
        )
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Seq):
        value = list(value)
    if isinstance(value, BaseModel):
        text = repr(value)
        return text if len(text) <= 100 else text[:99] + "…"
    return _REPR.repr(value).replace("\n", "\\n")
