"""Delegations to sub-agents: the summary a sub-agent is asked for, the report the
orchestrator's model receives, and how a sub-agent's context is kept between delegations.

An orchestrator delegates a task to another agent, which it calls as a tool
(:class:`~pytest_agentctx.runtime.agent.SubAgent`)::

    researcher_tool = SubAgent(researcher, id="researcher", description="Finds facts.")
    orchestrator = Agent(name="orchestrator", model=..., tools=[researcher_tool])

The model calls the tool with ``{"task": "..."}``. The runtime
(:mod:`pytest_agentctx.runtime.steps`) runs the sub-agent with its own, isolated
:class:`~pytest_agentctx.context.model.AgentContext` and answers the call with a JSON report
(:class:`Delegation`): facts computed by code (status, tools used, token usage, duration
from the clock, artifacts created and modified) and the sub-agent's own summary
(:class:`SubAgentSummary`, read by :func:`parse_summary`; the sub-agent is told the format
by :data:`SUMMARY_INSTRUCTIONS`). The sub-agent's context is stored in the parent
iteration's metadata under ``metadata["subagents"][<id>]``, where trajectories
(``Trajectory(..., nested=True)``), ``nested_runs`` and ``run_stats`` find it.

Rules:

* Only the orchestrator delegates: an agent that has ``SubAgent`` tools cannot itself be a
  sub-agent (refused when the ``SubAgent`` is defined).
* Delegating again to the same id in the same conversation (the parent's run and its
  continuations) resumes the sub-agent's context: each delegation stores the iterations it
  added (:func:`slice_from`), and the runtime puts them back together
  (:func:`stored_slices`, :func:`merge_slices`).
* Delegations to different ids in one iteration run concurrently; each sub-agent gets its
  own clock (:func:`derive_clock`: a :class:`~pytest_agentctx.context.clock.StepClock`
  starting when it was called, if the runtime's clock is one) and ids prefixed with its id
  (:class:`PrefixedIds`), so its context is the same on every run whatever the order the
  delegations finish in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from pytest_agentctx.context._seq import Seq
from pytest_agentctx.context.clock import Clock, StepClock
from pytest_agentctx.context.model import AgentContext, Iteration
from pytest_agentctx.doubles.ids import IdFactory

#: The four outcomes of a delegation.
DelegationStatus = Literal["completed", "partial", "blocked", "failed"]

#: What a sub-agent is told about its final answer (appended to its system prompt).
SUMMARY_INSTRUCTIONS = (
    "When you have finished, reply with only a JSON object, no other text: "
    '{"summary": "<what you did and found>", "blocked": false}. '
    'If you cannot do the task, reply {"summary": "<what you tried>", "blocked": true, '
    '"reason": "<what is missing>"}.'
)


class ArtifactsReport(TypedDict):
    """The artifacts a delegation created and modified, by path."""

    created: list[str]
    modified: list[str]


class DelegationReport(TypedDict):
    """A delegation's report as JSON (:meth:`Delegation.to_dict`): the tool result the
    orchestrator's model reads. ``reason``, ``error`` and ``raw_output`` are there when set."""

    subagent: str
    agent: str
    status: DelegationStatus
    summary: str | None
    tools_used: list[str]
    tool_calls: int
    iterations: int
    usage: dict[str, int]
    duration_s: float
    artifacts: ArtifactsReport
    resumed: bool
    reason: NotRequired[str]
    error: NotRequired[str]
    raw_output: NotRequired[str]


class DelegationRecord(DelegationReport):
    """What the parent iteration's ``metadata["subagents"][<id>]`` keeps of a delegation: its
    report, the task, the tool call it answered and the iterations it added (as JSON)."""

    task: str
    tool_call_id: str
    context: dict[str, object]


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

    def to_dict(self) -> DelegationReport:
        """The JSON report: the tool result the parent's model reads."""
        data: DelegationReport = {
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
        if self.reason is not None:
            data["reason"] = self.reason
        if self.error is not None:
            data["error"] = self.error
        if self.raw_output is not None:
            data["raw_output"] = self.raw_output
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
