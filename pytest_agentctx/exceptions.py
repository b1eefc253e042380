"""The base of every error pytest-agentctx raises, and the three families they belong to.

Every exception derives from :class:`AgentCtxError`, so ``except AgentCtxError`` catches
everything this package raises on purpose. Each message says what was given, what was
expected, and what to do next. Each error also belongs to one family, by what the caller
does about it:

- :class:`UsageError`: what the test gave cannot work (a definition, a marker, an option,
  a pattern, a file): fix the input the message names.
- :class:`AgentAssertionError`: the agent did not behave as the test says (a mismatch, a
  request with no recording, recordings the agent no longer makes). It is also an
  :class:`AssertionError`, so pytest reports a failed test.
- :class:`RunError`: a run stopped (too many iterations, a failed step, a blocked
  connection, a scripted fake used past its script, a store that cannot be read). The
  agent's code may catch it, and a test may check how it handles it; a blocked connection
  still fails the test afterwards (docs/cassettes.md says why and how to allow a host).

Each error is defined in the layer whose types it is about, and every one is importable
from ``pytest_agentctx``::

    pytest_agentctx.context.errors
        ContextStateError        (UsageError)
        HistoryError             (UsageError)
        EmptyHistory             (HistoryError)
        LastEntryNotUserMessage  (HistoryError)
        PatternError             (UsageError)
    pytest_agentctx.assertions.errors
        MismatchError            (AgentAssertionError)
        SnapshotError            (UsageError)
    pytest_agentctx.traffic.errors
        CodecError               (RunError)
        CacheMarkerError         (UsageError)
        CaptureError             (UsageError)
        NotOneConversation       (CaptureError)
        CassetteError            (AgentCtxError)
        CassetteConfigError      (CassetteError, UsageError)
        CassetteFormatError      (CassetteError, UsageError)
        CassetteWriteError       (CassetteError, RunError)
        CassetteMiss             (CassetteError, AgentAssertionError)
        PartialRecording         (CassetteError, AgentAssertionError)
        StaleCassette            (CassetteError, AgentAssertionError)
        NetworkBlocked           (CassetteError, RunError, ConnectionError)
        UnscopedRequest          (UsageError)
    pytest_agentctx.doubles.errors
        FakeLLMError             (RunError)
        UnexpectedModelCall      (FakeLLMError)
        UnusedScriptedReplies    (FakeLLMError)
        FakeToolsError           (UsageError)
        LoopbackError            (RunError)
        UnscriptedMcpRequest     (RunError)
    pytest_agentctx.reports.errors
        ReportError              (UsageError)
        BudgetError              (UsageError)
        RepeatError              (UsageError)
        StatisticsError          (ReportError, ValueError)
    pytest_agentctx.runtime.errors
        MaxIterationsExceeded    (RunError)
        StepFailed               (RunError)
        ConversationError        (UsageError)
        ContextWindowError       (UsageError)
        PersistenceError         (RunError)
        ToolDefinitionError      (UsageError)
        AgentDefinitionError     (UsageError)
        ContextAssemblyError     (AgentDefinitionError)
        ContextAssemblyFailed    (RunError)
        VectorStoreError         (RunError)
        ArtifactError            (RunError)
        ArtifactPathError        (ArtifactError)
        ArtifactNotFound         (ArtifactError)
        PromptTemplateError      (UsageError)
        ProviderError            (UsageError)
    pytest_agentctx.evals.errors
        JudgeError               (UsageError)
        JudgeReplyError          (RunError)
        VerdictFailed            (AgentAssertionError)
        SimulatedUserError       (UsageError)
        SimulatedUserReplyError  (RunError)
"""

from __future__ import annotations

from typing import Any

__all__ = ["AgentCtxError", "AgentAssertionError", "RunError", "UsageError"]


def publish(namespace: dict[str, Any]) -> None:
    """Give the exceptions a module defines and lists in ``__all__`` (``namespace`` is its
    ``globals()``) the package as their module, as each errors module does once its classes
    exist: a failure line then shows ``pytest_agentctx.CassetteMiss``, the name to import
    and catch, not the module that happens to define it. Every such exception is a public
    name of the package, so pickling (multiprocessing, pytest-xdist) finds it there too,
    through the package's lazy ``__getattr__``."""
    for name in namespace.get("__all__", ()):
        value = namespace.get(name)
        if (
            isinstance(value, type)
            and issubclass(value, BaseException)
            and value.__module__ == namespace["__name__"]
        ):
            value.__module__ = "pytest_agentctx"


class AgentCtxError(Exception):
    """Base class of every error pytest-agentctx raises on purpose."""


class UsageError(AgentCtxError):
    """What the test gave cannot work: a definition, a marker, an option, a pattern or a
    file. The message names it and says what is expected."""


class AgentAssertionError(AgentCtxError, AssertionError):
    """The agent did not behave as the test says. Also an :class:`AssertionError`: pytest
    reports the test as failed."""


class RunError(AgentCtxError):
    """A run stopped: the agent met a limit, a failure or a resource it may not use. The
    agent's code may catch it, and a test may check how it handles it (``pytest.raises``);
    a :class:`~pytest_agentctx.NetworkBlocked` connection still fails the test afterwards."""


publish(globals())
