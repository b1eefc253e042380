"""Sub-agents: an orchestrator delegates a task to another agent, which it calls as a tool.

>>> researcher_tool = SubAgent(researcher, id="researcher", description="Finds facts.")
... # doctest: +SKIP
>>> orchestrator = Agent(name="orchestrator", model=..., tools=[researcher_tool])
... # doctest: +SKIP

The model calls the tool with ``{"task": "..."}``. The runtime runs the sub-agent with its
own, isolated :class:`~pytest_agentctx.context.model.AgentContext` and answers the call with a
JSON report (:class:`Delegation`): facts computed by code (status, tools used, token usage,
duration from the clock, artifacts created and modified) and the sub-agent's own summary.
The sub-agent's context is stored in the parent iteration's metadata under
``metadata["subagents"][<id>]``, where trajectories (``Trajectory(..., nested=True)``),
``nested_runs`` and ``run_stats`` find it.

Rules:

* Only the orchestrator delegates: an agent that has :class:`SubAgent` tools cannot itself
  be a sub-agent (refused when the :class:`SubAgent` is defined).
* Delegating again to the same id in the same conversation (the parent's run and its
  continuations) resumes the sub-agent's context: each delegation stores the iterations it
  added, and the runtime puts them back together.
* Delegations to different ids in one iteration run concurrently; each sub-agent gets its
  own clock (a :class:`~pytest_agentctx.context.clock.StepClock` starting when it was called, if
  the runtime's clock is one) and ids prefixed with its id, so its context is the same on
  every run whatever the order the delegations finish in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from pytest_agentctx.context._seq import Seq
from pytest_agentctx.context.clock import Clock, StepClock
from pytest_agentctx.context.model import AgentContext, Iteration
from pytest_agentctx.doubles.ids import IdFactory
from pytest_agentctx.runtime.errors import AgentDefinitionError
from pytest_agentctx.runtime.tools import Tool

if TYPE_CHECKING:
    from pytest_agentctx.runtime.agent import Agent

__all__ = [
    "SUMMARY_INSTRUCTIONS",
    "Delegation",
    "DelegationStatus",
    "SubAgent",
    "SubAgentSummary",
    "parse_summary",
]

#: The four outcomes of a delegation.
DelegationStatus = Literal["completed", "partial", "blocked", "failed"]

#: What a sub-agent is told about its final answer (appended to its system prompt).
SUMMARY_INSTRUCTIONS = (
    "When you have finished, reply with only a JSON object, no other text: "
    '{"summary": "<what you did and found>", "blocked": false}. '
    'If you cannot do the task, reply {"summary": "<what you tried>", "blocked": true, '
    '"reason": "<what is missing>"}.'
)

_DEFAULT = object()
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(?P<body>.*?)\n\s*```\s*$", re.DOTALL)


class SubAgentSummary(BaseModel):
    """The final answer a sub-agent is asked to give: its summary, and whether it is blocked.

    ``summary`` may be left out by a blocked sub-agent that gives its ``reason``: the reason
    is what the orchestrator needs then. Any other answer needs a summary.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    summary: str | None = None
    blocked: bool = False
    reason: str | None = None

    @model_validator(mode="after")
    def _says_something(self) -> SubAgentSummary:
        if self.summary is None and not (self.blocked and self.reason is not None):
            raise ValueError("a summary needs 'summary', unless it is blocked and gives a 'reason'")
        return self


def parse_summary(text: str | None) -> SubAgentSummary | None:
    """The sub-agent's summary read from its final answer, or ``None`` if it is malformed.

    The answer must be a JSON object with a ``summary`` string (a ```json fence around it
    is accepted); anything else is malformed.
    """
    if not text or not text.strip():
        return None
    fenced = _FENCE.match(text)
    body = fenced.group("body") if fenced else text
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        return SubAgentSummary.model_validate(data)
    except ValidationError:
        return None


def _delegate(task: str) -> str:  # pragma: no cover - the runtime never calls it
    """Delegate a task.

    Args:
        task: The task for the sub-agent, with everything it needs to know.
    """
    raise NotImplementedError


class SubAgent(Tool[Callable[[str], str]]):
    """An agent offered to an orchestrator as a tool named ``id``.

    ``description`` tells the orchestrator's model what the sub-agent is for.
    ``summary_instructions`` is appended to the sub-agent's system prompt (pass ``None`` if
    its prompt already asks for the JSON summary that :func:`parse_summary` reads).
    """

    def __init__(
        self,
        agent: Agent,
        *,
        id: str | None = None,
        description: str | None = None,
        summary_instructions: str | None = SUMMARY_INSTRUCTIONS,
    ) -> None:
        from pytest_agentctx.runtime.agent import Agent

        if not isinstance(agent, Agent):
            raise AgentDefinitionError(
                f"SubAgent() takes an Agent, got {type(agent).__name__}: {agent!r}."
            )
        nested = [t.name for t in agent.tools if isinstance(t, SubAgent)]
        if nested:
            raise AgentDefinitionError(
                f"Agent {agent.name!r} delegates to {nested}, so it cannot be a sub-agent: "
                "sub-agents do not call each other, only the orchestrator delegates. Give "
                "those sub-agents to the orchestrator instead."
            )
        sub_id = agent.name if id is None else id
        super().__init__(
            _delegate,
            name=sub_id,
            description=description
            if description is not None
            else (
                f"Delegate a task to the {agent.name!r} sub-agent. It works in its own "
                "context and answers with a JSON report: status, summary, tools used, "
                "token usage and artifacts."
            ),
        )
        self.agent = agent
        self.summary_instructions = summary_instructions

    @property
    def id(self) -> str:
        """The sub-agent id: the tool's name, and the key in ``metadata["subagents"]``."""
        return self.name

    def prepared_agent(self) -> Agent:
        """The agent as it runs: its system prompt followed by the summary instructions."""
        if not self.summary_instructions:
            return self.agent
        from dataclasses import replace

        prompt = self.agent.system_prompt
        text = (
            self.summary_instructions if not prompt else f"{prompt}\n\n{self.summary_instructions}"
        )
        return replace(self.agent, system_prompt=text)

    def __repr__(self) -> str:
        return f"SubAgent(id={self.id!r}, agent={self.agent.name!r})"


@dataclass(frozen=True)
class Delegation:
    """The report of one delegation: what the parent's model receives (as JSON).

    Every field but ``summary`` (and ``reason``) is computed by code from the sub-agent's
    context, the clock and the artifact store. ``raw_output`` keeps the sub-agent's final
    answer when it is not a valid summary (status ``partial``).
    """

    id: str
    agent: str
    status: DelegationStatus
    summary: str | None
    tools_used: tuple[str, ...] = ()
    tool_calls: int = 0
    iterations: int = 0
    usage: Mapping[str, int] = field(default_factory=dict)
    duration_s: float = 0.0
    artifacts_created: tuple[str, ...] = ()
    artifacts_modified: tuple[str, ...] = ()
    resumed: bool = False
    reason: str | None = None
    error: str | None = None
    raw_output: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON report: the tool result the parent's model reads."""
        data: dict[str, Any] = {
            "subagent": self.id,
            "agent": self.agent,
            "status": self.status,
            "summary": self.summary,
            "tools_used": list(self.tools_used),
            "tool_calls": self.tool_calls,
            "iterations": self.iterations,
            "usage": dict(self.usage),
            "duration_s": self.duration_s,
            "artifacts": {
                "created": list(self.artifacts_created),
                "modified": list(self.artifacts_modified),
            },
            "resumed": self.resumed,
        }
        for key in ("reason", "error", "raw_output"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data


# -- helpers the runtime uses --------------------------------------------------------------


def derive_clock(parent: Clock, start: datetime) -> Clock:
    """The clock of a sub-agent: a new :class:`StepClock` from ``start`` with the parent's
    step when the parent's clock is a StepClock (deterministic whatever the order
    concurrent sub-agents read it in), else the parent's clock itself."""
    if isinstance(parent, StepClock):
        return StepClock(start, parent.step)
    return parent


def clock_step(clock: Clock) -> timedelta:
    """The step of a StepClock, else zero."""
    return clock.step if isinstance(clock, StepClock) else timedelta(0)


class PrefixedIds:
    """Ids of a sub-agent: the parent's factory, with the sub-agent id before the prefix."""

    def __init__(self, parent: IdFactory, sub_id: str) -> None:
        self.parent = parent
        self.sub_id = sub_id

    def __call__(self, prefix: str) -> str:
        return self.parent(f"{self.sub_id}_{prefix}")

    def __repr__(self) -> str:
        return f"PrefixedIds({self.sub_id!r}, {self.parent!r})"


def stored_slices(parent: AgentContext, sub_id: str) -> list[AgentContext]:
    """The contexts stored by earlier delegations to ``sub_id`` in ``parent``, in order."""
    found: list[AgentContext] = []
    for iteration in parent.iterations:
        records = iteration.metadata.get("subagents")
        if not isinstance(records, Mapping):
            continue
        record = records.get(sub_id)
        if isinstance(record, Mapping) and isinstance(record.get("context"), Mapping):
            found.append(AgentContext.model_validate(record["context"]))
    return found


def merge_slices(slices: Sequence[AgentContext]) -> AgentContext | None:
    """The sub-agent's whole context from the slices its delegations stored.

    A later slice's iteration replaces an earlier one with the same number (the last
    iteration of an interrupted delegation, continued by the next one).
    """
    if not slices:
        return None
    iterations: list[Iteration] = []
    for piece in slices:
        first = piece.iterations[0].number
        iterations = [it for it in iterations if it.number < first]
        iterations.extend(piece.iterations)
    return AgentContext.model_construct(
        iterations=Seq(iterations),
        current_iteration=iterations[-1].number,
        created_at=slices[0].created_at,
        updated_at=slices[-1].updated_at,
    )


def slice_from(ctx: AgentContext, first: int) -> AgentContext:
    """The iterations of ``ctx`` numbered ``first`` and after, as a context of their own."""
    kept = [it for it in ctx.iterations if it.number >= first]
    return AgentContext.model_construct(
        iterations=Seq(kept),
        current_iteration=kept[-1].number,
        created_at=kept[0].started_at,
        updated_at=ctx.updated_at,
    )


def usage_of(iterations: Iterable[Iteration]) -> dict[str, int]:
    """Tokens summed over the iterations' ``metadata["usage"]``."""
    input_tokens = output_tokens = 0
    for iteration in iterations:
        usage = iteration.metadata.get("usage")
        if isinstance(usage, Mapping):
            input_tokens += int(usage.get("input_tokens") or 0)
            output_tokens += int(usage.get("output_tokens") or 0)
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def tools_used(iterations: Iterable[Iteration]) -> tuple[tuple[str, ...], int]:
    """The names of the tools called (first call order, each once) and the number of calls."""
    names: dict[str, None] = {}
    count = 0
    for iteration in iterations:
        for call in iteration.tool_calls:
            names[call.name] = None
            count += 1
    return tuple(names), count
