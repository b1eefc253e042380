"""Errors of the assertions: matches that failed, and values the snapshot serializer cannot
handle. (Patterns that cannot work raise :class:`~pytest_agentctx.PatternError`, defined
with the context's errors because reading nested runs raises it too.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_agentctx.exceptions import AgentAssertionError, UsageError, publish

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pytest_agentctx.assertions.patterns.mismatch import Mismatch

__all__ = [
    "MismatchError",
    "SnapshotError",
]


class MismatchError(AgentAssertionError):
    """``matches()`` found mismatches; every one is in :attr:`mismatches`, with its path.

    It is also an :class:`AssertionError`, so pytest reports it as a failed assertion.
    """

    def __init__(self, message: str, *, mismatches: Sequence[Mismatch]) -> None:
        super().__init__(message)
        self.mismatches = list(mismatches)


class SnapshotError(UsageError):
    """A value or an option that the agent snapshot serializer cannot handle."""


publish(globals())
