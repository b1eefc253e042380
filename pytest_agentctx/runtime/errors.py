"""Errors of the runtime: definitions of agents, tools, windows, sources and templates that
cannot work, and runs that stop (too many iterations, a failed step, sources, stores and
artifacts that cannot be read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_agentctx.exceptions import RunError, UsageError, publish

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pytest_agentctx.context.model import AgentContext
    from pytest_agentctx.runtime.agent import RunResult
    from pytest_agentctx.runtime.recovery import CompensationRecord, Failure

__all__ = [
    "MaxIterationsExceeded",
    "StepFailed",
    "ConversationError",
    "ContextWindowError",
    "PersistenceError",
    "ToolDefinitionError",
    "AgentDefinitionError",
    "ContextAssemblyError",
    "ContextAssemblyFailed",
    "VectorStoreError",
    "ArtifactError",
    "ArtifactPathError",
    "ArtifactNotFound",
    "PromptTemplateError",
    "ProviderError",
]


class MaxIterationsExceeded(RunError):
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


class StepFailed(RunError):
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
        #: The :class:`~pytest_agentctx.runtime.recovery.Failure` of the step.
        self.failure = failure
        #: One :class:`~pytest_agentctx.runtime.recovery.CompensationRecord` per compensated step.
        self.compensations = list(compensations)
        #: The failed :class:`~pytest_agentctx.RunResult`, which can be continued.
        self.result = result


class ConversationError(UsageError):
    """A new turn that cannot continue the given run (in progress, or not a run result)."""


class ContextWindowError(UsageError):
    """A window that cannot work as configured, or a strategy that broke an invariant."""


class PersistenceError(RunError):
    """A saved run that cannot be loaded: corrupted, another version, another agent."""


class ToolDefinitionError(UsageError):
    """A function cannot be turned into a tool (bad signature, missing annotation...), or a
    tool returned what cannot go to the model (bytes that are not UTF-8 text)."""


class AgentDefinitionError(UsageError):
    """An :class:`Agent` was defined with an invalid model name, tool set or limit."""


class ContextAssemblyError(AgentDefinitionError):
    """Context sources that cannot work as configured, found when the agent is defined.

    A state path that is not a dotted attribute path or not an attribute of the state
    type, ``top_k < 1``, ``min_relevance`` outside 0 to 1, a retrieval source with both or
    neither of ``query`` and ``query_from``.
    """


class ContextAssemblyFailed(RunError):
    """Context sources that could not be read during a run.

    The state given to the run lacks an attribute a source reads, a query taken from the
    state is not text, or a retrieval source has no vector store to search.
    """


class VectorStoreError(RunError):
    """A search, a document or a collection that a vector store cannot handle."""


class ArtifactError(RunError):
    """An artifact operation that cannot work (no store given, a directory, bad content)."""


class ArtifactPathError(ArtifactError):
    """An artifact path that is malformed or escapes the workspace.

    Absolute paths, drive letters, ``..``, NUL and control characters, backslashes and
    symbolic links leading out of the workspace are all refused.
    """


class ArtifactNotFound(ArtifactError):
    """An artifact path that holds no artifact (read or delete of a missing file)."""


class PromptTemplateError(UsageError):
    """A prompt template, partial or variable that cannot be found or rendered.

    The message names the template being rendered and the missing partial or variable.
    """


class ProviderError(UsageError):
    """No provider serves a model, or the provider's SDK is not installed."""


publish(globals())
