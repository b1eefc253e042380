"""Errors about contexts: updates a context's state does not allow, histories that cannot
be sent to a model, and patterns or trajectory checks that cannot work as written (they
are raised where contexts and the runs nested in them are read, below the assertions).
"""

from __future__ import annotations

from pytest_agentctx.exceptions import UsageError, publish

__all__ = [
    "ContextStateError",
    "HistoryError",
    "EmptyHistory",
    "LastEntryNotUserMessage",
    "PatternError",
]


class ContextStateError(UsageError):
    """An update of an :class:`AgentContext` that its current state does not allow.

    For example adding an assistant message to an iteration that is already complete,
    or tool results whose call ids were never requested.
    """


class HistoryError(UsageError):
    """The conversation history is not in a state that can be sent to a model."""


class EmptyHistory(HistoryError):
    """The history has no entry: there is nothing to send to the model."""


class LastEntryNotUserMessage(HistoryError):
    """The last history entry is the assistant's: a model call needs a user turn last."""


class PatternError(UsageError):
    """A pattern or trajectory check that cannot work as written.

    For example ``Unordered()`` with a pattern that is not a pattern, or a trajectory
    ``mode`` that does not exist. Raised when the pattern is built or first used.
    """


publish(globals())
