"""Errors of evaluations: a judge's reply that is no verdict, a verdict below its
threshold, a judge given what it cannot judge."""

from __future__ import annotations

from pytest_agentctx.exceptions import AgentAssertionError, RunError, UsageError, publish

__all__ = ["JudgeReplyError", "JudgeError", "VerdictFailed"]


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


publish(globals())
