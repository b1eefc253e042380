"""Unit tests for pytest_agentctx.exceptions: one base, a documented hierarchy."""

import re
from datetime import UTC, datetime

import pytest

import pytest_agentctx
from pytest_agentctx import exceptions
from pytest_agentctx.context.model import AgentContext
from pytest_agentctx.exceptions import (
    AgentCtxError,
    MaxIterationsExceeded,
    MismatchError,
    UnexpectedModelCall,
)

PUBLIC = [getattr(exceptions, name) for name in exceptions.__all__]
SUBCLASSES = [exc for exc in PUBLIC if exc is not AgentCtxError]


def documented_parents() -> dict[str, str]:
    """Each exception of the tree drawn in the module docstring, with its parent's name."""
    tree = (exceptions.__doc__ or "").split("Hierarchy::", 1)[1]
    parents: dict[str, str] = {}
    path: list[str] = []
    for line in tree.splitlines():
        node = re.match(r"^    ((?:[│ ]   )*)[├└]── (\w+)", line)
        root = re.match(r"^    (\w+)\s*$", line)
        if root:
            path = [root.group(1)]
        elif node:
            depth = len(node.group(1)) // 4 + 1
            path = [*path[:depth], node.group(2)]
            parents[node.group(2)] = path[depth - 1]
    return parents


def run_so_far() -> AgentContext:
    return AgentContext.new("loop forever", at=datetime(2025, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize("exc", PUBLIC, ids=exceptions.__all__)
async def test_every_public_exception_derives_from_agent_ctx_error(exc: type[Exception]) -> None:
    assert issubclass(exc, AgentCtxError)


async def test_the_docstring_tree_starts_at_agent_ctx_error_and_names_every_exception() -> None:
    assert sorted(["AgentCtxError", *documented_parents()]) == sorted(exceptions.__all__)


@pytest.mark.parametrize("exc", SUBCLASSES, ids=[exc.__name__ for exc in SUBCLASSES])
async def test_each_exception_derives_from_its_parent_in_the_docstring_tree(
    exc: type[Exception],
) -> None:
    package_bases = [base.__name__ for base in exc.__bases__ if issubclass(base, AgentCtxError)]

    assert package_bases == [documented_parents().get(exc.__name__)]


async def test_the_docstring_tree_nests_history_and_fake_llm_errors() -> None:
    parents = documented_parents()
    nested = [
        "EmptyHistory",
        "LastEntryNotUserMessage",
        "UnexpectedModelCall",
        "UnusedScriptedReplies",
    ]

    assert {name: parents.get(name) for name in nested} == {
        "EmptyHistory": "HistoryError",
        "LastEntryNotUserMessage": "HistoryError",
        "UnexpectedModelCall": "FakeLLMError",
        "UnusedScriptedReplies": "FakeLLMError",
    }


async def test_agent_ctx_error_is_a_plain_exception() -> None:
    assert AgentCtxError.__bases__ == (Exception,)


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
        MaxIterationsExceeded("stopped", run_so_far(), 3)  # type: ignore[call-arg]


async def test_mismatch_error_keeps_every_mismatch_and_is_an_assertion_error() -> None:
    error = MismatchError("2 mismatches", mismatches=("first", "second"))  # type: ignore[arg-type]

    assert (isinstance(error, AssertionError), error.mismatches, str(error)) == (
        True,
        ["first", "second"],
        "2 mismatches",
    )
