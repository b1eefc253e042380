"""Unit tests for pytest_agentctx.exceptions: one base, a documented hierarchy."""

from datetime import UTC, datetime

import pytest

import pytest_agentctx
from pytest_agentctx import exceptions
from pytest_agentctx.context import AgentContext
from pytest_agentctx.exceptions import (
    AgentCtxError,
    AgentDefinitionError,
    CodecError,
    ContextStateError,
    EmptyHistory,
    FakeLLMError,
    FakeToolsError,
    HistoryError,
    LastEntryNotUserMessage,
    MaxIterationsExceeded,
    ProviderError,
    ToolDefinitionError,
    UnexpectedModelCall,
    UnusedScriptedReplies,
)

PUBLIC = [getattr(exceptions, name) for name in exceptions.__all__]

PARENTS: dict[type[Exception], type[Exception]] = {
    AgentCtxError: Exception,
    ContextStateError: AgentCtxError,
    HistoryError: AgentCtxError,
    EmptyHistory: HistoryError,
    LastEntryNotUserMessage: HistoryError,
    MaxIterationsExceeded: AgentCtxError,
    ToolDefinitionError: AgentCtxError,
    AgentDefinitionError: AgentCtxError,
    ProviderError: AgentCtxError,
    CodecError: AgentCtxError,
    FakeLLMError: AgentCtxError,
    UnexpectedModelCall: FakeLLMError,
    UnusedScriptedReplies: FakeLLMError,
    FakeToolsError: AgentCtxError,
}


def run_so_far() -> AgentContext:
    return AgentContext.new("loop forever", at=datetime(2025, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize("exc", PUBLIC, ids=exceptions.__all__)
async def test_every_public_exception_derives_from_agent_ctx_error(exc: type[Exception]) -> None:
    assert issubclass(exc, AgentCtxError)


async def test_the_hierarchy_is_exactly_the_documented_one() -> None:
    assert {exc: exc.__bases__ for exc in PUBLIC} == {
        exc: (parent,) for exc, parent in PARENTS.items()
    }


@pytest.mark.parametrize("exc", PUBLIC, ids=exceptions.__all__)
async def test_the_module_docstring_draws_every_public_exception(exc: type[Exception]) -> None:
    assert exc.__name__ in (exceptions.__doc__ or "")


@pytest.mark.parametrize("exc", PUBLIC, ids=exceptions.__all__)
async def test_every_public_exception_has_a_docstring(exc: type[Exception]) -> None:
    assert (exc.__doc__ or "").strip()


@pytest.mark.parametrize("name", exceptions.__all__)
async def test_every_public_exception_is_exported_by_the_package(name: str) -> None:
    assert getattr(pytest_agentctx, name) is getattr(exceptions, name)


async def test_a_subclass_error_is_caught_by_except_agent_ctx_error() -> None:
    with pytest.raises(AgentCtxError, match="no scripted reply left"):
        raise UnexpectedModelCall("no scripted reply left")


async def test_max_iterations_exceeded_carries_the_context_and_the_limit() -> None:
    context = run_so_far()

    error = MaxIterationsExceeded("stopped after 3 iterations", context=context, max_iterations=3)

    assert (str(error), error.context, error.max_iterations) == (
        "stopped after 3 iterations",
        context,
        3,
    )


async def test_max_iterations_exceeded_takes_context_and_limit_by_keyword_only() -> None:
    with pytest.raises(TypeError, match="positional argument"):
        MaxIterationsExceeded("stopped", run_so_far(), 3)  # type: ignore[misc]
