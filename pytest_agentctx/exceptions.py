"""Exceptions raised by pytest-agentctx.

Every exception derives from :class:`AgentCtxError`, so ``except AgentCtxError`` catches
everything this package raises on purpose. Each message says what was given, what was
expected, and what to do next.

Hierarchy::

    AgentCtxError
    ├── ContextStateError          an update that the context's state does not allow
    ├── HistoryError
    │   ├── EmptyHistory           a model call with no conversation entries
    │   └── LastEntryNotUserMessage  a model call whose last entry is the assistant's
    ├── MaxIterationsExceeded      the agent wanted more iterations than it may have
    ├── StepFailed                 a step failed, no handler recovered, compensations ran
    ├── ConversationError          a turn that cannot continue the given run
    ├── ContextWindowError         a window that cannot work, or a strategy that broke a rule
    ├── PersistenceError           a saved run that cannot be loaded
    ├── ToolDefinitionError        a function that cannot become a tool
    ├── AgentDefinitionError       an Agent with an invalid model, tools or limits
    │   └── ContextAssemblyError   context sources that cannot work (path, top_k, query)
    ├── ContextAssemblyFailed      context sources that could not be read during a run
    ├── VectorStoreError           a search or document a vector store cannot handle
    ├── ArtifactError              an artifact operation that cannot work
    │   ├── ArtifactPathError      a path that is malformed or escapes the workspace
    │   └── ArtifactNotFound       an artifact path that holds no artifact
    ├── PromptTemplateError        a template, partial or variable that cannot be rendered
    ├── ProviderError              no provider for a model, or its SDK is not installed
    ├── CodecError                 wire JSON that does not have the expected shape
    ├── CaptureError               traffic that capture cannot read (a cassette, an exchange)
    │   └── NotOneConversation     .context asked for one conversation, the test had 0 or more
    ├── FakeLLMError
    │   ├── UnexpectedModelCall    more model calls than replies were scripted
    │   └── UnusedScriptedReplies  scripted replies that the test never consumed
    ├── FakeToolsError             a tool replacement that cannot work
    ├── LoopbackError              a loopback provider server that cannot start or serve
    ├── PatternError               a pattern or trajectory check that cannot work as given
    ├── MismatchError              matches() found mismatches (also an AssertionError)
    ├── SnapshotError              a value or option the snapshot serializer cannot handle
    ├── ReportError                a report or baseline that cannot be read, or a bad gate option
    ├── BudgetError                an agent_budget marker or ini option with a bad value
    ├── RepeatError                an agent_repeat marker with a bad count or pass rate
    └── CassetteError
        ├── CassetteFormatError    a cassette file that cannot be read
        ├── CassetteWriteError     a cassette that cannot be saved (read-only, full disk...)
        ├── CassetteMiss           a request the cassette has no recording for
        ├── PartialRecording       a stream recorded in part, replayed past where it stops
        ├── StaleCassette          recorded interactions the test never used
        └── NetworkBlocked         a connection to the network during an offline replay
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# For annotations only: context, matching and runtime import this module (a cycle), and
# this module imports nothing of the package at run time (the package imports it first).
if TYPE_CHECKING:
    from collections.abc import Sequence

    from pytest_agentctx.assertions.patterns.mismatch import Mismatch
    from pytest_agentctx.context.model import AgentContext
    from pytest_agentctx.runtime.agent import RunResult
    from pytest_agentctx.runtime.failures import CompensationRecord, Failure

__all__ = [
    "AgentCtxError",
    "CassetteError",
    "CassetteFormatError",
    "CassetteMiss",
    "CassetteWriteError",
    "NetworkBlocked",
    "PartialRecording",
    "StaleCassette",
    "AgentDefinitionError",
    "ArtifactError",
    "ArtifactNotFound",
    "ArtifactPathError",
    "ContextAssemblyError",
    "ContextAssemblyFailed",
    "PromptTemplateError",
    "VectorStoreError",
    "CaptureError",
    "CodecError",
    "NotOneConversation",
    "ContextStateError",
    "ContextWindowError",
    "ConversationError",
    "EmptyHistory",
    "FakeLLMError",
    "FakeToolsError",
    "HistoryError",
    "LastEntryNotUserMessage",
    "LoopbackError",
    "MaxIterationsExceeded",
    "StepFailed",
    "MismatchError",
    "PatternError",
    "PersistenceError",
    "ProviderError",
    "SnapshotError",
    "ReportError",
    "BudgetError",
    "RepeatError",
    "ToolDefinitionError",
    "UnexpectedModelCall",
    "UnusedScriptedReplies",
]


class AgentCtxError(Exception):
    """Base class of every error pytest-agentctx raises on purpose."""


class ContextStateError(AgentCtxError):
    """An update of an :class:`AgentContext` that its current state does not allow.

    For example adding an assistant message to an iteration that is already complete,
    or tool results whose call ids were never requested.
    """


class HistoryError(AgentCtxError):
    """The conversation history is not in a state that can be sent to a model."""


class EmptyHistory(HistoryError):
    """The history has no entry: there is nothing to send to the model."""


class LastEntryNotUserMessage(HistoryError):
    """The last history entry is the assistant's: a model call needs a user turn last."""


class MaxIterationsExceeded(AgentCtxError):
    """The agent asked for another iteration after its ``max_iterations`` were used.

    The context of the run so far is kept in :attr:`context`, so a test can still
    assert on what the agent did.
    """

    def __init__(
        self,
        message: str,
        *,
        context: AgentContext,
        max_iterations: int,
        result: RunResult | None = None,
    ) -> None:
        super().__init__(message)
        self.context = context
        self.max_iterations = max_iterations
        #: The failed :class:`~pytest_agentctx.RunResult` (status ``"failed"``), which can
        #: be continued with ``runtime.continue_conversation(exc.result, message)``.
        self.result = result


class StepFailed(AgentCtxError):
    """A step (tool) failed and its ``on_failure`` handler did not recover.

    The compensations of the steps already done have run, newest first. Like
    :class:`MaxIterationsExceeded`, it carries the :attr:`context` of the run (the
    iteration's metadata records ``failures`` and ``compensations``), the :attr:`failure`
    record, the :attr:`compensations` records and the failed ``RunResult``
    (:attr:`result`).
    """

    def __init__(
        self,
        message: str,
        *,
        context: AgentContext,
        failure: Failure,
        compensations: Sequence[CompensationRecord] = (),
        result: RunResult | None = None,
    ) -> None:
        super().__init__(message)
        self.context = context
        #: The :class:`~pytest_agentctx.runtime.failures.Failure` of the step.
        self.failure = failure
        #: One :class:`~pytest_agentctx.runtime.failures.CompensationRecord` per compensated step.
        self.compensations = list(compensations)
        #: The failed :class:`~pytest_agentctx.RunResult`, which can be continued.
        self.result = result


class ConversationError(AgentCtxError):
    """A new turn that cannot continue the given run (in progress, or not a run result)."""


class ContextWindowError(AgentCtxError):
    """A window that cannot work as configured, or a strategy that broke an invariant."""


class PersistenceError(AgentCtxError):
    """A saved run that cannot be loaded: corrupted, another version, another agent."""


class ToolDefinitionError(AgentCtxError):
    """A function cannot be turned into a tool (bad signature, missing annotation...)."""


class AgentDefinitionError(AgentCtxError):
    """An :class:`Agent` was defined with an invalid model name, tool set or limit."""


class ContextAssemblyError(AgentDefinitionError):
    """Context sources that cannot work as configured, found when the agent is defined.

    A state path that is not a dotted attribute path or not an attribute of the state
    type, ``top_k < 1``, ``min_relevance`` outside 0 to 1, a retrieval source with both or
    neither of ``query`` and ``query_from``.
    """


class ContextAssemblyFailed(AgentCtxError):
    """Context sources that could not be read during a run.

    The state given to the run lacks an attribute a source reads, a query taken from the
    state is not text, or a retrieval source has no vector store to search.
    """


class VectorStoreError(AgentCtxError):
    """A search, a document or a collection that a vector store cannot handle."""


class ArtifactError(AgentCtxError):
    """An artifact operation that cannot work (no store given, a directory, bad content)."""


class ArtifactPathError(ArtifactError):
    """An artifact path that is malformed or escapes the workspace.

    Absolute paths, drive letters, ``..``, NUL and control characters, backslashes and
    symbolic links leading out of the workspace are all refused.
    """


class ArtifactNotFound(ArtifactError):
    """An artifact path that holds no artifact (read or delete of a missing file)."""


class PromptTemplateError(AgentCtxError):
    """A prompt template, partial or variable that cannot be found or rendered.

    The message names the template being rendered and the missing partial or variable.
    """


class ProviderError(AgentCtxError):
    """No provider serves a model, or the provider's SDK is not installed."""


class CodecError(AgentCtxError):
    """Wire-format JSON that does not have the shape its codec expects."""


class CaptureError(AgentCtxError):
    """Traffic that capture cannot read: a cassette file, or something that is no exchange."""


class NotOneConversation(CaptureError):
    """``agent_context.context`` was asked for the one conversation of a test that had none,
    or several (the message lists them; index ``agent_context.contexts`` instead)."""


class FakeLLMError(AgentCtxError):
    """The scripted fake model was used differently from its script."""


class UnexpectedModelCall(FakeLLMError):
    """The agent made more model calls than replies were scripted."""


class UnusedScriptedReplies(FakeLLMError):
    """The test ended with scripted replies that no model call consumed."""


class FakeToolsError(AgentCtxError):
    """A ``fake_tools.replace(...)`` call that cannot work (no result, two results...)."""


class LoopbackError(AgentCtxError):
    """The loopback provider server cannot start, is not running, or failed a request.

    Script mistakes (a reply too many, one unused) raise the :class:`FakeLLMError`
    subclasses instead, as they do for the fake model.
    """


class PatternError(AgentCtxError):
    """A pattern or trajectory check that cannot work as written.

    For example ``Unordered()`` with a pattern that is not a pattern, or a trajectory
    ``mode`` that does not exist. Raised when the pattern is built or first used.
    """


class MismatchError(AgentCtxError, AssertionError):
    """``matches()`` found mismatches; every one is in :attr:`mismatches`, with its path.

    It is also an :class:`AssertionError`, so pytest reports it as a failed assertion.
    """

    def __init__(self, message: str, *, mismatches: Sequence[Mismatch]) -> None:
        super().__init__(message)
        self.mismatches = list(mismatches)


class SnapshotError(AgentCtxError):
    """A value or an option that the agent snapshot serializer cannot handle."""


class ReportError(AgentCtxError):
    """A report or ``--agent-baseline`` file that cannot be read (missing, not JSON, not a
    pytest-agentctx report, another schema version), or a gate tolerance that cannot work."""


class BudgetError(AgentCtxError):
    """A behaviour budget that cannot work: an ``agent_budget`` marker or an
    ``agent_budget_*`` ini option with an unknown key, a negative value or a value of the
    wrong type."""


class RepeatError(AgentCtxError):
    """An ``agent_repeat`` marker that cannot work: a run count below 1, a pass rate
    outside 0 to 1, or an unknown option."""


class CassetteError(AgentCtxError):
    """A problem with recording or replaying HTTP traffic."""


class CassetteFormatError(CassetteError):
    """A cassette file that cannot be read: bad YAML/JSON or an unknown structure."""


class CassetteWriteError(CassetteError):
    """A cassette that could not be saved: a read-only folder, a full disk, a file where
    its folder should be. The message names the cassette and the reason, and says what to
    do; the previous version of the cassette is kept as it was.
    """


class CassetteMiss(CassetteError, AssertionError):
    """A request that the cassette holds no (unused) recording for.

    It is also an :class:`AssertionError`: the test fails rather than errors.
    """


class PartialRecording(CassetteError, AssertionError):
    """A streamed response recorded in part, replayed past where its recording stops.

    While recording, the agent stopped reading the stream without closing it, and the rest
    could not be read when the test ended (an async stream, or one that did not end in
    time): the cassette holds what was read. Replaying it, the agent read further. It is
    also an :class:`AssertionError`: the test fails rather than errors.
    """


class StaleCassette(CassetteError, AssertionError):
    """Recorded interactions that the test never used: the agent's requests drifted."""


class NetworkBlocked(CassetteError, ConnectionError):
    """A connection, a datagram or a DNS lookup to a host that is not loopback or allowed,
    while a test runs offline (replaying a cassette, or with ``fake_llm``).

    It is also a :class:`ConnectionError`, so HTTP libraries report it as one.
    """
