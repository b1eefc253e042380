"""Errors of evaluations: simulated users that cannot work, and replies of their models that
are no message.
"""

from __future__ import annotations

from pytest_agentctx.exceptions import RunError, UsageError, publish

__all__ = [
    "SimulatedUserError",
    "SimulatedUserReplyError",
]


class SimulatedUserError(UsageError):
    """A simulated user that cannot work: no persona or goal, a turn limit below one, a stop
    condition that is neither a text nor a callable, or an agent that replies with no text."""


class SimulatedUserReplyError(RunError):
    """The simulated user's model answered with no message: no text, or tool calls."""


publish(globals())
