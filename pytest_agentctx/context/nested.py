"""Nested runs: the sub-agent contexts a context holds, and a run's tool calls with their
paths.

A sub-agent's run is stored in the metadata of the iteration that delegated to it, as an
:class:`AgentContext` or as a dict shaped like one (``ctx.model_dump(mode='json')``), at any
depth of the metadata. :func:`nested_contexts` finds them depth first, in order, and
:func:`located_calls` lists a run's tool calls, each with the keys that reach it from the
root context (a sub-agent's calls follow the calls of the iteration that holds it). The
trajectory checks and the run figures walk runs with these.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from pytest_agentctx.context._paths import join
from pytest_agentctx.context._seq import FrozenDict
from pytest_agentctx.context.errors import PatternError
from pytest_agentctx.context.model import AgentContext, ToolCall


@dataclass(frozen=True)
class LocatedCall:
    """A tool call of a run and where it is: the keys from the root context to it."""

    keys: tuple[object, ...]
    call: ToolCall
    depth: int = 0

    @property
    def path(self) -> str:
        """The printable path, like ``iterations[2].tool_calls[0]``."""
        return join(self.keys)


def _is_context_shaped(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and "iterations" in value
        and "current_iteration" in value
        and isinstance(value.get("iterations"), Sequence)
    )


def _context_from(value: object, keys: tuple[object, ...]) -> AgentContext | None:
    if isinstance(value, AgentContext):
        return value
    if not _is_context_shaped(value):
        return None
    try:
        return AgentContext.model_validate(value)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(root)"
        raise PatternError(
            f"{join(keys) or '(root)'} looks like an AgentContext (it has iterations and "
            f"current_iteration) but is not a valid one: {where}: {first['msg']}. Store "
            "sub-agent runs in metadata as AgentContext objects or as "
            "ctx.model_dump(mode='json')."
        ) from None


#: Metadata values that cannot hold a nested run: skipped without the ABC checks below.
_LEAVES = frozenset({str, int, float, bool, type(None), bytes})


def _runs_in(
    value: object, keys: tuple[object, ...]
) -> Iterator[tuple[tuple[object, ...], AgentContext]]:
    """Every nested run inside a metadata value, depth first, in order."""
    kind = type(value)
    if kind in _LEAVES:
        return
    if (
        (kind is dict or kind is FrozenDict)
        and isinstance(value, dict)
        and "iterations" not in value
    ):
        for key, item in value.items():
            if type(item) not in _LEAVES:
                yield from _runs_in(item, (*keys, key))
        return
    context = _context_from(value, keys)
    if context is not None:
        yield keys, context
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _runs_in(item, (*keys, key))
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        for index, item in enumerate(value):
            yield from _runs_in(item, (*keys, index))


def as_context(run: object) -> AgentContext | None:
    """The context of ``run`` (an :class:`AgentContext`, a ``RunResult``, or a dict shaped
    like a context), or ``None`` if it is none of these."""
    context = getattr(run, "context", run)
    if isinstance(context, AgentContext):
        return context
    return _context_from(context, ())


def nested_contexts(context: AgentContext) -> list[tuple[str, AgentContext]]:
    """Every sub-agent run stored in the iterations' metadata, with its path, depth first."""
    found: list[tuple[str, AgentContext]] = []

    def visit(ctx: AgentContext, prefix: tuple[object, ...]) -> None:
        for index, iteration in enumerate(ctx.iterations):
            where = (*prefix, "iterations", index, "metadata")
            for keys, sub in _runs_in(iteration.metadata, where):
                found.append((join(keys), sub))
                visit(sub, keys)

    visit(context, ())
    return found


def _calls(
    ctx: AgentContext, prefix: tuple[object, ...], nested: bool, depth: int
) -> list[LocatedCall]:
    calls: list[LocatedCall] = []
    for index, iteration in enumerate(ctx.iterations):
        for position, call in enumerate(iteration.tool_calls):
            keys = (*prefix, "iterations", index, "tool_calls", position)
            calls.append(LocatedCall(keys, call, depth))
        if nested and iteration.metadata:
            where = (*prefix, "iterations", index, "metadata")
            for keys, sub in _runs_in(iteration.metadata, where):
                calls.extend(_calls(sub, keys, nested, depth + 1))
    return calls


def located_calls(context: AgentContext, *, nested: bool = False) -> list[LocatedCall]:
    """The tool calls of ``context`` in order, each with its path (sub-agents' too if
    ``nested``)."""
    return _calls(context, (), nested, 0)
