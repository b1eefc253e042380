"""The steps of an iteration: running the tool calls the model asked for.

:class:`ToolSteps` runs the calls of one iteration, in order, for the agent loop
(:mod:`pytest_agentctx.runtime.loop`): each call goes to its tool (or to its replacement in
``fake_tools``, which also records it), with the arguments validated and a
:class:`~pytest_agentctx.runtime.tools.RunContext`; a failure becomes an error result for
the model, or goes to the tool's ``on_failure`` handler, and a failure the handler does not
recover stops the run after compensating the steps done (newest first). Consecutive calls of
:class:`~pytest_agentctx.runtime.agent.SubAgent` tools run their sub-agents concurrently,
each in its own context, and are answered with a report of the delegation.

:class:`RunEnv` is what one run (the top-level one, or a sub-agent's) runs with.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import ValidationError

from pytest_agentctx.context._seq import Seq
from pytest_agentctx.context.clock import Clock
from pytest_agentctx.context.model import AgentContext, ToolCall, ToolResult
from pytest_agentctx.doubles.ids import IdFactory
from pytest_agentctx.runtime.agent import Agent, RunResult, SubAgent, ToolOverrides
from pytest_agentctx.runtime.artifacts import ARTIFACTS_DEP, ArtifactStore, TrackedArtifactStore
from pytest_agentctx.runtime.delegation import (
    Delegation,
    DelegationRecord,
    DelegationStatus,
    PrefixedIds,
    clock_step,
    derive_clock,
    merge_slices,
    parse_summary,
    slice_from,
    stored_slices,
    tools_used,
    usage_of,
)
from pytest_agentctx.runtime.errors import MaxIterationsExceeded, StepFailed
from pytest_agentctx.runtime.providers import Provider
from pytest_agentctx.runtime.recovery import (
    CompensationRecord,
    CompletedStep,
    Failure,
    call_maybe_async,
    handler_name,
)
from pytest_agentctx.runtime.tools import RunContext, render_tool_output

_NOT_EXECUTED_LIMIT = "Not executed: the run stopped at its iteration limit."


@dataclass
class RunEnv:
    """What one run (the top-level one, or a sub-agent's) runs with; never on the context."""

    clock: Clock
    ids: IdFactory
    actor: object
    tenant: object
    deps: Mapping[str, object]
    state: object
    #: Providers used by the run and its sub-agents, closed when the top-level run ends.
    providers: dict[int, Provider] = field(default_factory=dict)
    #: Steps done so far that declared a compensation, oldest first.
    completed: list[CompletedStep] = field(default_factory=list)
    #: The latest context, read when a sub-agent run fails without one.
    ctx: AgentContext | None = None


class _Abort(Exception):
    """A step failed and its handler did not recover (internal to the runtime)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


#: How a sub-agent is run: the agent loop's turn (an agent, its context, its environment).
Turn = Callable[[Agent, AgentContext, RunEnv], Awaitable[RunResult]]


@dataclass(frozen=True)
class ToolSteps:
    """Runs the tool calls of an iteration for a runtime.

    ``tool_overrides`` is the runtime's ``fake_tools`` (replacements, and the ledger every
    call is recorded in); ``turn`` runs a sub-agent, as the runtime runs any agent.
    """

    tool_overrides: ToolOverrides | None
    turn: Turn

    # -- tool calls ----------------------------------------------------------------------

    async def run(
        self, agent: Agent, calls: list[ToolCall], ctx: AgentContext, env: RunEnv
    ) -> AgentContext:
        """Run the calls of one iteration, in order; consecutive delegations run at once.

        Returns the context with the results added (the iteration completed), or raises
        :class:`StepFailed` when a step fails beyond recovery.
        """
        iteration = ctx.current_iteration
        results: dict[str, ToolResult] = {}
        failures: list[dict[str, object]] = []
        delegations: dict[str, DelegationRecord] = {}
        index = 0
        try:
            while index < len(calls):
                group: list[tuple[ToolCall, SubAgent]] = []
                while index < len(calls):
                    sub = self._delegation_tool(agent, calls[index])
                    if sub is None:
                        break
                    group.append((calls[index], sub))
                    index += 1
                if group:
                    for call, result, record in await self._delegate_group(
                        group, ctx, env, delegations
                    ):
                        results[call.id] = result
                        if record is not None:
                            delegations[record["subagent"]] = record
                    continue
                call = calls[index]
                results[call.id] = await self._execute(agent, call, iteration, env, failures)
                index += 1
        except _Abort as abort:
            error = await self._fail(agent, calls, ctx, env, results, failures, delegations, abort)
            raise error from abort.failure.exception
        metadata: dict[str, object] = {}
        if failures:
            metadata["failures"] = failures
        if delegations:
            metadata["subagents"] = delegations
        if metadata:
            ctx = ctx.with_iteration_metadata(metadata)
        return ctx.add_tool_results([results[call.id] for call in calls], at=env.clock.now())

    def _delegation_tool(self, agent: Agent, call: ToolCall) -> SubAgent | None:
        tool = agent.get_tool(call.name)
        if not isinstance(tool, SubAgent):
            return None
        if self.tool_overrides is not None and self.tool_overrides.override_for(call.name):
            return None  # a replaced sub-agent answers like any replaced tool
        return tool

    async def _execute(
        self,
        agent: Agent,
        call: ToolCall,
        iteration: int,
        env: RunEnv,
        failures: list[dict[str, object]],
    ) -> ToolResult:
        """Run one tool call.

        Without an ``on_failure`` handler every failure becomes an error result for the
        model. With one, an exception of the tool goes to the handler: a value recovers,
        ``None`` aborts the run (:class:`_Abort`). Failures are appended to ``failures``.
        """
        if self.tool_overrides is not None:
            self.tool_overrides.record(call, iteration)
        tool = agent.get_tool(call.name)
        if tool is None:
            available = ", ".join(t.name for t in agent.tools) or "none"
            return _error(call, f"Unknown tool {call.name!r}. Available tools: {available}.")
        run_context = self._run_context(agent, call, iteration, env)
        try:
            kwargs = tool.validate_arguments(call.arguments)
        except ValidationError as exc:
            return _error(call, f"Invalid arguments for {call.name}: {_validation_text(exc)}")
        except ValueError as exc:
            return _error(call, f"Invalid arguments for {call.name}: {exc}")
        override = self.tool_overrides.override_for(call.name) if self.tool_overrides else None
        try:
            if override is not None:
                value = override(**kwargs)
                if inspect.isawaitable(value):
                    value = await value
            else:
                value = await tool.call_validated(kwargs, run_context)
        except Exception as exc:
            if tool.on_failure is None:
                return _error(call, f"Tool {call.name} failed: {type(exc).__name__}: {exc}")
            failure = Failure.from_exception(
                exc,
                step=call.name,
                tool_call_id=call.id,
                iteration=iteration,
                at=env.clock.now(),
                arguments=kwargs,
            )
            record: dict[str, object] = {
                **failure.to_dict(),
                "handler": handler_name(tool.on_failure),
            }
            try:
                recovered = await call_maybe_async(tool.on_failure, failure)
            except Exception as handler_exc:
                recovered = None
                record["handler_error"] = f"{type(handler_exc).__name__}: {handler_exc}"
            record["recovered"] = recovered is not None
            failures.append(record)
            if recovered is None:
                raise _Abort(failure) from exc
            value = recovered
        if tool.compensate is not None:
            env.completed.append(
                CompletedStep(
                    step=call.name,
                    tool_call_id=call.id,
                    iteration=iteration,
                    arguments=kwargs,
                    output=value,
                    run_context=run_context,
                    compensate=tool.compensate,
                )
            )
        content = render_tool_output(value, source=f"tool {call.name!r}")
        return ToolResult(tool_call_id=call.id, name=call.name, content=content)

    @staticmethod
    def _run_context(agent: Agent, call: ToolCall, iteration: int, env: RunEnv) -> RunContext:
        return RunContext(
            agent=agent,
            iteration=iteration,
            tool_call=call,
            clock=env.clock,
            ids=env.ids,
            actor=env.actor,
            tenant=env.tenant,
            deps=dict(env.deps),
            state=env.state,
        )

    async def _fail(
        self,
        agent: Agent,
        calls: list[ToolCall],
        ctx: AgentContext,
        env: RunEnv,
        results: dict[str, ToolResult],
        failures: list[dict[str, object]],
        delegations: dict[str, DelegationRecord],
        abort: _Abort,
    ) -> StepFailed:
        """Compensate the steps done (newest first), record everything, build the error."""
        failure = abort.failure
        compensations: list[CompensationRecord] = []
        for step in reversed(env.completed):
            status: Literal["compensated", "failed"] = "compensated"
            error = None
            try:
                if step.compensate is not None:
                    await call_maybe_async(step.compensate, step)
            except Exception as exc:
                status, error = "failed", f"{type(exc).__name__}: {exc}"
            compensations.append(
                CompensationRecord(
                    step=step.step,
                    tool_call_id=step.tool_call_id,
                    iteration=step.iteration,
                    status=status,
                    at=env.clock.now(),
                    error=error,
                )
            )
        env.completed.clear()
        metadata: dict[str, object] = {
            "failures": failures,
            "compensations": [record.to_dict() for record in compensations],
        }
        if delegations:
            metadata["subagents"] = delegations
        ctx = ctx.with_iteration_metadata(metadata)
        stopped = f"Not executed: the run stopped because step {failure.step} failed."
        closing = []
        for call in calls:
            if call.id in results:
                closing.append(results[call.id])
            elif call.id == failure.tool_call_id:
                closing.append(
                    _error(
                        call, f"Tool {call.name} failed: {failure.error_type}: {failure.message}"
                    )
                )
            else:
                closing.append(_error(call, stopped))
        ctx = _without_open_iteration(ctx.add_tool_results(closing, at=env.clock.now()))
        undone = ", ".join(f"{record.step} ({record.status})" for record in compensations) or "none"
        message = (
            f"Agent {agent.name!r}: step {failure.step!r} failed in iteration "
            f"{failure.iteration} with {failure.error_type}: {failure.message}, and its "
            f"on_failure handler did not recover (it returned None). Compensated: {undone}. "
            "See exc.failure for the traceback and exc.context for the run; return a value "
            "from the handler to recover instead."
        )
        return StepFailed(
            message,
            context=ctx,
            failure=failure,
            compensations=compensations,
            result=RunResult(agent=agent, context=ctx, output=None, status="failed", error=message),
        )

    # -- sub-agents ----------------------------------------------------------------------

    async def _delegate_group(
        self,
        group: list[tuple[ToolCall, SubAgent]],
        parent: AgentContext,
        env: RunEnv,
        done: Mapping[str, object],
    ) -> list[tuple[ToolCall, ToolResult, DelegationRecord | None]]:
        """Run consecutive delegations concurrently; results in the order of the calls."""
        iteration = parent.current_iteration
        refused: dict[str, ToolResult] = {}
        jobs: dict[str, Awaitable[tuple[ToolResult, DelegationRecord]]] = {}
        taken = set(done)
        for call, sub in group:
            if self.tool_overrides is not None:
                self.tool_overrides.record(call, iteration)
            try:
                task = str(sub.validate_arguments(call.arguments)["task"])
            except ValidationError as exc:
                refused[call.id] = _error(
                    call, f"Invalid arguments for {call.name}: {_validation_text(exc)}"
                )
                continue
            except ValueError as exc:
                refused[call.id] = _error(call, f"Invalid arguments for {call.name}: {exc}")
                continue
            if sub.id in taken:
                refused[call.id] = _error(
                    call,
                    f"Sub-agent {sub.id!r} already has a task in this step; it takes one task "
                    "at a time. Delegate the next task to it in a later step.",
                )
                continue
            taken.add(sub.id)
            # the parent's clock is read in call order, before any sub-agent runs
            jobs[call.id] = self._delegate(call, sub, task, env.clock.now(), parent, env)
        outcomes = dict(zip(jobs, await asyncio.gather(*jobs.values()), strict=True))
        answers: list[tuple[ToolCall, ToolResult, DelegationRecord | None]] = []
        for call, _ in group:
            if call.id in refused:
                answers.append((call, refused[call.id], None))
            else:
                result, record = outcomes[call.id]
                answers.append((call, result, record))
        return answers

    async def _delegate(
        self,
        call: ToolCall,
        sub: SubAgent,
        task: str,
        start: datetime,
        parent: AgentContext,
        env: RunEnv,
    ) -> tuple[ToolResult, DelegationRecord]:
        """One delegation: run (or resume) the sub-agent, and report on it."""
        agent = sub.prepared_agent()
        previous = merge_slices(stored_slices(parent, sub.id))
        if previous is not None:
            start = max(start, previous.updated_at + clock_step(env.clock))
        clock = derive_clock(env.clock, start)
        store = env.deps.get(ARTIFACTS_DEP)
        tracked = TrackedArtifactStore(store) if isinstance(store, ArtifactStore) else None
        deps = dict(env.deps)
        if tracked is not None:
            deps[ARTIFACTS_DEP] = tracked
        sub_env = RunEnv(
            clock,
            PrefixedIds(env.ids, sub.id),
            env.actor,
            env.tenant,
            deps,
            env.state,
            providers=env.providers,
        )
        if previous is None:
            ctx = AgentContext.new(task, system_prompt=agent.system_prompt, at=clock.now())
            first = 1
        else:
            last = previous.iterations[-1]
            first = previous.current_iteration + (1 if last.is_complete else 0)
            ctx = previous.add_user_message(task, at=clock.now())
        started = ctx.updated_at
        status: DelegationStatus
        summary = reason = error = raw = None
        try:
            result = await self.turn(agent, ctx, sub_env)
        except MaxIterationsExceeded as exc:
            final = _settled(exc.context, clock)
            status, error = "partial", str(exc)
        except StepFailed as exc:
            final = exc.context
            status, error = "failed", str(exc)
        except Exception as exc:
            final = sub_env.ctx or ctx
            status, error = "failed", f"{type(exc).__name__}: {exc}"
        else:
            final = result.context
            parsed = parse_summary(result.output)
            if parsed is None:
                status, raw = "partial", result.output
                error = (
                    "The sub-agent's final answer is not the JSON summary it was asked for; "
                    "its text is in raw_output."
                )
            else:
                summary, reason = parsed.summary, parsed.reason
                status = "blocked" if parsed.blocked else "completed"
        piece = slice_from(final, first)
        names, count = tools_used(piece.iterations)
        changes = tracked.changes() if tracked is not None else None
        delegation = Delegation(
            id=sub.id,
            agent=agent.name,
            status=status,
            summary=summary,
            tools_used=names,
            tool_calls=count,
            iterations=len(piece.iterations),
            usage=usage_of(piece.iterations),
            duration_s=max((final.updated_at - started).total_seconds(), 0.0),
            artifacts_created=tuple(ref.path for ref in changes.created) if changes else (),
            artifacts_modified=tuple(ref.path for ref in changes.modified) if changes else (),
            resumed=previous is not None,
            reason=reason,
            error=error,
            raw_output=raw,
        )
        report = delegation.to_dict()
        record: DelegationRecord = {
            **report,
            "task": task,
            "tool_call_id": call.id,
            "context": piece.model_dump(mode="json"),
        }
        tool_result = ToolResult(
            tool_call_id=call.id,
            name=call.name,
            content=render_tool_output(report),
            is_error=status == "failed",
        )
        return tool_result, record


def _without_open_iteration(ctx: AgentContext) -> AgentContext:
    """``ctx`` without its last iteration if that one is empty (just opened)."""
    last = ctx.iterations[-1]
    if last.messages or len(ctx.iterations) == 1:
        return ctx
    kept = list(ctx.iterations)[:-1]
    return AgentContext.model_construct(
        iterations=Seq(kept),
        current_iteration=kept[-1].number,
        created_at=ctx.created_at,
        updated_at=ctx.updated_at,
    )


def close_unexecuted(ctx: AgentContext, clock: Clock) -> AgentContext:
    """``ctx`` with the unanswered tool calls of its last iteration closed with error results
    that say they were never executed (the run stopped at its iteration limit)."""
    pending = ctx.iterations[-1].pending_tool_calls
    if not pending:
        return ctx
    return ctx.add_tool_results(
        [_error(call, _NOT_EXECUTED_LIMIT) for call in pending], at=clock.now()
    )


def _settled(ctx: AgentContext, clock: Clock) -> AgentContext:
    """A context whose unanswered tool calls are closed as not executed."""
    closed = close_unexecuted(ctx, clock)
    return ctx if closed is ctx else _without_open_iteration(closed)


def _error(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(tool_call_id=call.id, name=call.name, content=text, is_error=True)


def _validation_text(exc: ValidationError) -> str:
    parts: Iterable[str] = (
        f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
        for err in exc.errors(include_url=False)
    )
    return "; ".join(parts)
