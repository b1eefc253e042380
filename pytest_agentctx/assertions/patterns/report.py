"""The entry points of pattern matching and the text of their failures.

``matches(value, pattern)`` returns ``True`` or raises :class:`MismatchError` (an
``AssertionError``) listing the mismatches: their count first, then each one with its path
(``iterations[1].messages[2].content: 'a' != 'b'``); the comparison never stops at the
first one. ``mismatches()`` returns them without raising, ``differences()`` those of two
values compared in full. ``assertrepr_compare`` gives pytest the same text for a failed
``==`` on a pattern or on the context's models (the plugin's ``pytest_assertrepr_compare``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pytest_agentctx.assertions.errors import MismatchError
from pytest_agentctx.assertions.patterns.base import Pattern
from pytest_agentctx.assertions.patterns.engine import match_at
from pytest_agentctx.assertions.patterns.exact import exact_at
from pytest_agentctx.assertions.patterns.mismatch import Mismatch, count, short
from pytest_agentctx.context.model import AgentContext, Iteration, Message, ToolCall, ToolResult

_MODELS = (AgentContext, Iteration, Message, ToolCall, ToolResult)


def mismatches(value: Any, pattern: Any) -> list[Mismatch]:
    """Every mismatch between ``value`` and ``pattern``, with its path; ``[]`` if it matches."""
    if match_at(value, pattern, None, None):
        return []
    found: list[Mismatch] = []
    match_at(value, pattern, None, found)
    if not found:
        found.append(Mismatch("(root)", f"{short(value)} does not match {short(pattern)}"))
    return found


def differences(actual: Any, expected: Any) -> list[Mismatch]:
    """Every difference between two values compared in full (``ctx == other_ctx``)."""
    if exact_at(actual, expected, None, None):
        return []
    found: list[Mismatch] = []
    exact_at(actual, expected, None, found)
    return found


def render_mismatches(found: Sequence[Mismatch]) -> list[str]:
    """The count first, then every mismatch with its path, one per line."""
    return [f"{count(found)}:", *(f"  {mismatch}" for mismatch in found)]


def matches(value: Any, pattern: Any) -> Literal[True]:
    """Check ``value`` against ``pattern``: return ``True`` or raise :class:`MismatchError`.

    Write ``assert matches(result.context, {...})``. On failure the error lists the count
    of mismatches, then every mismatch with its path. To test without raising, use
    :func:`mismatches` or ``value == pattern`` with a pattern object.
    """
    __tracebackhide__ = True
    if match_at(value, pattern, None, None):
        return True
    found = mismatches(value, pattern)
    raise MismatchError("\n".join(render_mismatches(found)), mismatches=found)


def assertrepr_compare(op: str, left: Any, right: Any) -> list[str] | None:
    """The failure explanation of ``left == right`` for patterns and the context's models.

    ``None`` for every other comparison, which pytest then explains as usual.
    """
    if op != "==":
        return None
    if isinstance(right, Pattern):
        found = mismatches(left, right)
    elif isinstance(left, Pattern):
        found = mismatches(right, left)
    elif isinstance(left, _MODELS) and isinstance(right, _MODELS):
        found = differences(left, right)
    else:
        return None
    if not found:
        return None
    return [f"{short(left)} == {short(right)}", *render_mismatches(found)]
