"""Errors of evaluations: a judge's reply that is no verdict, a verdict below its
threshold, a judge given what it cannot judge; simulated users that cannot work, and replies
of their models that are no message."""

from __future__ import annotations

from pytest_agentctx.exceptions import AgentAssertionError, RunError, UsageError, publish

__all__ = [
    "JudgeReplyError",
    "JudgeError",
    "VerdictFailed",
    "SimulatedUserError",
    "SimulatedUserReplyError",
]


class JudgeError(UsageError):
    """A judge was given what it cannot work with: an empty rubric, a threshold outside
    0..1, a subject of an unknown kind, a model without a provider."""


class JudgeReplyError(RunError):
    """The judge model's reply is not a verdict (a JSON object with a ``score`` from 0 to 1
    and a ``rationale``): no verdict is given rather than a made-up one."""


class VerdictFailed(AgentAssertionError):
    """A verdict scored below its threshold; the message gives the rubric, the score, the
    threshold and the judge's rationale. ``verdict`` is the :class:`Verdict`."""

    def __init__(self, message: str, verdict: object = None) -> None:
        super().__init__(message)
        self.verdict = verdict


class SimulatedUserError(UsageError):
    """A simulated user that cannot work: no persona or goal, a turn limit below one, a stop
    condition that is neither a text nor a callable, or an agent that replies with no text."""


class SimulatedUserReplyError(RunError):
    """The simulated user's model answered with no message: no text, or tool calls."""


publish(globals())
