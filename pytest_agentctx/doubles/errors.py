"""Errors of the test doubles: the fake model used against its script, fake tools that
cannot work, a loopback provider that cannot serve, and a fake MCP server asked for what
it has no script for.
"""

from __future__ import annotations

from pytest_agentctx.exceptions import RunError, UsageError, publish

__all__ = [
    "FakeLLMError",
    "UnexpectedModelCall",
    "UnusedScriptedReplies",
    "FakeToolsError",
    "LoopbackError",
    "UnscriptedMcpRequest",
]


class FakeLLMError(RunError):
    """The scripted fake model was used differently from its script."""


class UnexpectedModelCall(FakeLLMError):
    """The agent made more model calls than replies were scripted."""


class UnusedScriptedReplies(FakeLLMError):
    """The test ended with scripted replies that no model call consumed."""


class FakeToolsError(UsageError):
    """A ``fake_tools.replace(...)`` call that cannot work (no result, two results...)."""


class LoopbackError(RunError):
    """The loopback provider server cannot start, is not running, or failed a request.

    Script mistakes (a reply too many, one unused) raise the :class:`FakeLLMError`
    subclasses instead, as they do for the fake model.
    """


class UnscriptedMcpRequest(RunError):
    """A client asked ``fake_mcp`` for a tool, resource, prompt or method it has no
    script for (the client got an MCP error, which the agent may have gone on after)."""


publish(globals())
