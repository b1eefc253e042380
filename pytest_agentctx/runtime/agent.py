"""A small, deterministic agent runtime that produces an :class:`AgentContext`.

>>> agent = Agent(name="weather", model="openai:gpt-4o-mini", tools=[get_weather])
>>> result = await AgentRuntime().run(agent, "Weather in Paris?")   # doctest: +SKIP

The loop: send ``ctx.to_messages()`` to the model, add its reply, run the tool calls it
asked for (with a :class:`RunContext` holding agent, actor, tenant, state and the caller's
dependencies, none of which is stored on the context), add the results, and stop on a final
answer. Time and ids come from the injected :class:`Clock` and id factory.

Around that loop:

* **context assembly**: an agent's ``context`` sources are read before each model call
  and sent as one system message (``<context>...</context>``) right after the system
  prompt; the iteration's ``metadata["context"]`` records the segments and retrieval
  results;
* **failure handling**: a tool's ``on_failure`` handler and ``compensate`` function (see
  :mod:`pytest_agentctx.runtime.failures`);
* **sub-agents**: :class:`~pytest_agentctx.runtime.subagents.SubAgent` tools run another agent in
  its own context (see :mod:`pytest_agentctx.runtime.subagents`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from pytest_agentctx.context._seq import Seq
from pytest_agentctx.context.model import AgentContext, Message, ToolCall, ToolResult
from pytest_agentctx.doubles.clock import Clock, IdFactory, RandomIds, SystemClock
from pytest_agentctx.exceptions import (
    AgentCtxError,
    AgentDefinitionError,
    ContextAssemblyError,
    ConversationError,
    MaxIterationsExceeded,
    ProviderError,
    StepFailed,
)
from pytest_agentctx.runtime.artifacts import ARTIFACTS_DEP, ArtifactStore, TrackedArtifactStore
from pytest_agentctx.runtime.assembly import ContextSource, assemble, validate_sources
from pytest_agentctx.runtime.failures import (
    CompensationRecord,
    CompletedStep,
    Failure,
    call_maybe_async,
    handler_name,
)
from pytest_agentctx.runtime.providers import Provider, default_provider, split_model
from pytest_agentctx.runtime.retrieval import VectorSearch
from pytest_agentctx.runtime.subagents import (
    Delegation,
    DelegationStatus,
    PrefixedIds,
    SubAgent,
    clock_step,
    derive_clock,
    merge_slices,
    parse_summary,
    slice_from,
    stored_slices,
    tools_used,
    usage_of,
)
from pytest_agentctx.runtime.tools import RunContext, Tool, render_tool_output
from pytest_agentctx.runtime.window import ContextWindow
from pytest_agentctx.traffic.codecs.base import Completion

__all__ = ["CONTEXT_TAG", "Agent", "AgentRuntime", "RunResult", "ToolOverrides"]

#: The tag around the assembled context in its system message: ``<context>...</context>``.
CONTEXT_TAG = "context"

_NOT_EXECUTED_LIMIT = "Not executed: the run stopped at its iteration limit."


class ToolOverrides(Protocol):
    """What the runtime asks of ``fake_tools``: replacements, and a ledger to record in."""

    def override_for(self, name: str) -> Callable[..., Any] | None: ...

    def record(self, call: ToolCall, iteration: int) -> None: ...


@dataclass(frozen=True)
class Agent:
    """An agent's definition: model, system prompt, tools and its ``max_iterations``.

    ``model`` names the provider and the model, as ``"openai:gpt-4o-mini"`` or
    ``"anthropic:claude-sonnet-4-5"``. ``tools`` takes :class:`Tool` objects or plain
    functions (wrapped with :func:`tool`), and :class:`~pytest_agentctx.runtime.subagents.SubAgent`
    tools to delegate to other agents. ``max_iterations`` is the single source of the
    iteration limit.

    ``context`` lists the sources read before each model call (``FromState``,
    ``FromRetrieval``, ``Text``); they are checked here, against ``state_type`` when it is
    given, so a wrong attribute path fails when the agent is defined.
    """

    name: str
    model: str
    system_prompt: str | None = None
    tools: Sequence[Tool] = ()
    max_iterations: int = 10
    max_tokens: int | None = None
    temperature: float | None = None
    window: ContextWindow | None = None
    stream: bool = False
    context: Sequence[ContextSource] = ()
    state_type: type | None = None

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise AgentDefinitionError(
                f"Agent(name={self.name!r}): give the agent a non-empty name."
            )
        try:
            split_model(self.model)
        except AgentCtxError as exc:
            raise AgentDefinitionError(f"Agent {self.name!r}: {exc}") from None
        if (
            isinstance(self.max_iterations, bool)
            or not isinstance(self.max_iterations, int)
            or (self.max_iterations < 1)
        ):
            raise AgentDefinitionError(
                f"Agent {self.name!r}: max_iterations={self.max_iterations!r}; expected a "
                "whole number of at least 1."
            )
        tools = tuple(t if isinstance(t, Tool) else Tool(t) for t in self.tools)
        names = [t.name for t in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise AgentDefinitionError(
                f"Agent {self.name!r} has two tools called {duplicates}; every tool needs "
                "its own name (pass @tool(name='...') to rename one)."
            )
        object.__setattr__(self, "tools", tools)
        if self.window is not None and not isinstance(self.window, ContextWindow):
            raise AgentDefinitionError(
                f"Agent {self.name!r}: window={self.window!r}; expected a ContextWindow, "
                "e.g. ContextWindow(max_tokens=8000)."
            )
        try:
            sources = validate_sources(self.context, self.state_type)
        except ContextAssemblyError as exc:
            raise ContextAssemblyError(f"Agent {self.name!r}: {exc}") from None
        object.__setattr__(self, "context", sources)

    @property
    def provider_name(self) -> str:
        """The provider part of ``model`` (``openai``)."""
        return split_model(self.model)[0]

    @property
    def model_name(self) -> str:
        """The model part of ``model`` (``gpt-4o-mini``)."""
        return split_model(self.model)[1]

    def get_tool(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None``."""
        return next((t for t in self.tools if t.name == name), None)

    def as_tool(self, id: str | None = None, *, description: str | None = None) -> SubAgent:
        """This agent as a sub-agent tool for an orchestrator (see :class:`SubAgent`)."""
        return SubAgent(self, id=id, description=description)


RunStatus = Literal["completed", "failed"]


@dataclass(frozen=True)
class RunResult:
    """The outcome of a run: its context, the final answer and whether it completed.

    A ``failed`` run (the agent ran out of iterations, or a step failed beyond recovery)
    keeps its context and ``error``; both kinds can be continued with
    :meth:`AgentRuntime.continue_conversation`.
    """

    agent: Agent
    context: AgentContext
    output: str | None
    status: RunStatus = "completed"
    error: str | None = None

    @property
    def iterations(self) -> int:
        """How many iterations the conversation has used so far."""
        return len(self.context.iterations)

    @property
    def input(self) -> str | None:
        """The first user message, derived from the context (never stored beside it)."""
        for message in self.context.iterations[0].messages:
            if message.role == "user":
                return message.content
        return None

    @property
    def is_finished(self) -> bool:
        """Whether the run ended (completed or failed) rather than stopped mid-iteration.

        A completed run ends with a final answer, which completes its last iteration; the
        answer may be empty (``output`` is ``None`` when the model sent no text).
        """
        return self.status == "failed" or self.context.iterations[-1].is_complete


@dataclass
class _Env:
    """What one run (the top-level one, or a sub-agent's) runs with; never on the context."""

    clock: Clock
    ids: IdFactory
    actor: Any
    tenant: Any
    deps: Mapping[str, Any]
    state: Any
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


@dataclass
class AgentRuntime:
    """Runs agents. Give it a deterministic clock and ids to make runs repeatable.

    ``providers`` maps a model prefix (``openai``, ``anthropic``, or your own) to a
    provider; missing ones are created on first use. ``tool_overrides`` is how
    ``fake_tools`` replaces tools and records calls. ``vector_store`` answers the agents'
    retrieval context sources; ``artifacts`` is the artifact store that tools find in
    ``RunContext.deps["artifacts"]`` (unless the run's ``deps`` give one).
    """

    clock: Clock = field(default_factory=SystemClock)
    ids: IdFactory = field(default_factory=RandomIds)
    providers: dict[str, Provider] = field(default_factory=dict)
    tool_overrides: ToolOverrides | None = None
    #: Every top-level run this runtime finished (completed or failed), in order: what
    #: reports and budgets read after a test. Sub-agent runs are inside their parent's
    #: context, never here.
    results: list[RunResult] = field(default_factory=list)
    #: The store that retrieval context sources search (``fake_vector_store`` in tests).
    vector_store: VectorSearch | None = None
    #: The artifact store tools reach through ``RunContext.deps["artifacts"]``.
    artifacts: ArtifactStore | None = None

    def provider_for(self, agent: Agent) -> Provider:
        """The provider that serves ``agent.model`` (created on first use)."""
        prefix = agent.provider_name
        if prefix not in self.providers:
            self.providers[prefix] = default_provider(prefix)
        return self.providers[prefix]

    async def run(
        self,
        agent: Agent,
        input: str,
        *,
        actor: Any = None,
        tenant: Any = None,
        deps: Mapping[str, Any] | None = None,
        state: Any = None,
    ) -> RunResult:
        """Run ``agent`` on ``input`` until it gives a final answer.

        ``state`` is the object the agent's ``FromState`` and ``query_from`` context
        sources read (tools see it as ``RunContext.state``). Raises
        :class:`MaxIterationsExceeded` (carrying the context) when the agent still asks for
        tools in its last allowed iteration, and :class:`StepFailed` when a tool with an
        ``on_failure`` handler fails and the handler does not recover.
        """
        if not isinstance(agent, Agent):
            raise AgentDefinitionError(
                f"run() takes an Agent, got {type(agent).__name__}: {agent!r}."
            )
        ctx = AgentContext.new(input, system_prompt=agent.system_prompt, at=self.clock.now())
        return await self._loop(agent, ctx, self._env(actor, tenant, deps, state))

    async def continue_conversation(
        self,
        result: RunResult,
        message: str,
        *,
        actor: Any = None,
        tenant: Any = None,
        deps: Mapping[str, Any] | None = None,
        state: Any = None,
    ) -> RunResult:
        """Run a new turn after a finished run; returns a new result, ``result`` is unchanged.

        A completed run gets the user message as a new iteration. A failed run's unanswered
        tool calls are first closed with error results (they were never executed), so the
        conversation stays valid for the provider. A run that is still in progress is
        refused. Sub-agents the run delegated to resume their own contexts.
        """
        if not isinstance(result, RunResult):
            raise ConversationError(
                f"continue_conversation() takes the RunResult of an earlier run, got "
                f"{type(result).__name__}: {result!r}."
            )
        ctx = result.context
        if not result.is_finished:
            raise ConversationError(
                f"continue_conversation(): the run of agent {result.agent.name!r} is still in "
                f"progress (iteration {ctx.current_iteration} has no final answer), so it "
                "cannot take a new user message. Continue from a completed or failed run."
            )
        if result.status == "failed":
            pending = ctx.iterations[-1].pending_tool_calls
            if pending:
                ctx = ctx.add_tool_results(
                    [_error(call, _NOT_EXECUTED_LIMIT) for call in pending],
                    at=self.clock.now(),
                )
        ctx = ctx.add_user_message(message, at=self.clock.now())
        return await self._loop(result.agent, ctx, self._env(actor, tenant, deps, state))

    async def run_multi_turn(
        self,
        agent: Agent,
        first: str,
        follow_ups: Iterable[str],
        *,
        actor: Any = None,
        tenant: Any = None,
        deps: Mapping[str, Any] | None = None,
        state: Any = None,
    ) -> RunResult:
        """Run ``first``, then each follow-up as a new turn; returns the last result."""
        result = await self.run(agent, first, actor=actor, tenant=tenant, deps=deps, state=state)
        for message in follow_ups:
            result = await self.continue_conversation(
                result, message, actor=actor, tenant=tenant, deps=deps, state=state
            )
        return result

    def run_sync(
        self,
        agent: Agent,
        input: str,
        *,
        actor: Any = None,
        tenant: Any = None,
        deps: Mapping[str, Any] | None = None,
        state: Any = None,
    ) -> RunResult:
        """:meth:`run` for synchronous code (not inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                self.run(agent, input, actor=actor, tenant=tenant, deps=deps, state=state)
            )
        raise AgentCtxError(
            "run_sync() was called inside a running event loop, where it would block it. "
            "Use `await runtime.run(agent, input)` instead."
        )

    # -- the loop ------------------------------------------------------------------------

    def _env(self, actor: Any, tenant: Any, deps: Mapping[str, Any] | None, state: Any) -> _Env:
        merged = dict(deps or {})
        if self.artifacts is not None:
            merged.setdefault(ARTIFACTS_DEP, self.artifacts)
        return _Env(self.clock, self.ids, actor, tenant, merged, state)

    def _provider(self, agent: Agent, env: _Env) -> Provider:
        provider = self.provider_for(agent)
        env.providers.setdefault(id(provider), provider)
        return provider

    async def _loop(self, agent: Agent, ctx: AgentContext, env: _Env) -> RunResult:
        """A top-level run: recorded in :attr:`results`; closes its providers at the end."""
        try:
            result = await self._turn(agent, ctx, env)
        except (MaxIterationsExceeded, StepFailed) as exc:
            if exc.result is not None:
                self.results.append(exc.result)
            raise
        else:
            self.results.append(result)
            return result
        finally:
            for provider in env.providers.values():
                aclose = getattr(provider, "aclose", None)
                if aclose is not None:
                    await aclose()

    async def _turn(self, agent: Agent, ctx: AgentContext, env: _Env) -> RunResult:
        provider = self._provider(agent, env)
        specs = [t.spec for t in agent.tools]
        # max_iterations counts the iterations of this turn, not of the whole conversation
        limit = ctx.current_iteration + agent.max_iterations - 1
        while True:
            env.ctx = ctx
            messages = ctx.get_all_messages()
            if agent.context:
                assembled = await assemble(agent.context, state=env.state, store=self.vector_store)
                ctx = env.ctx = ctx.with_iteration_metadata({"context": assembled.metadata()})
                if assembled:
                    messages = _with_context_message(messages, assembled.text)
            if agent.window is not None:
                pruned = agent.window.prune(messages)
                messages = pruned.messages
                ctx = env.ctx = ctx.with_iteration_metadata({"window": pruned.metadata()})
            body = provider.codec.encode_request(
                model=agent.model_name,
                messages=[message.to_dict() for message in messages],
                tools=specs,
                max_tokens=agent.max_tokens,
                temperature=agent.temperature,
            )
            completion = await self._complete(provider, body, stream=agent.stream)
            calls = [
                c if c.id else c.model_copy(update={"id": env.ids("call")})
                for c in completion.tool_calls
            ]
            ctx = ctx.with_iteration_metadata(self._metadata(agent, completion))
            ctx = env.ctx = ctx.add_assistant_message(
                completion.content, calls, reasoning=completion.reasoning, at=env.clock.now()
            )
            if not calls:
                return RunResult(agent=agent, context=ctx, output=completion.content)
            if ctx.exceeded_max_iterations(limit):
                names = ", ".join(c.name for c in calls)
                message = (
                    f"Agent {agent.name!r} used its {agent.max_iterations} iterations and "
                    f"still asked for tools ({names}) in iteration {ctx.current_iteration}. "
                    "Raise Agent(max_iterations=...) if that many steps are right, or look at "
                    "exc.context to see why it did not finish."
                )
                raise MaxIterationsExceeded(
                    message,
                    context=ctx,
                    max_iterations=agent.max_iterations,
                    result=RunResult(
                        agent=agent, context=ctx, output=None, status="failed", error=message
                    ),
                )
            ctx = env.ctx = await self._run_calls(agent, calls, ctx, env)

    @staticmethod
    async def _complete(provider: Provider, body: dict[str, Any], *, stream: bool) -> Completion:
        """One model call; streamed calls are decoded from their events by the same codec."""
        if not stream:
            return provider.codec.decode_response(await provider.send(body))
        body = {**body, "stream": True}
        if provider.codec.name == "openai_chat":
            # without it the stream carries no usage, and the context would differ
            body["stream_options"] = {"include_usage": True}
        codec: Any = provider.codec
        decode_stream = getattr(codec, "decode_stream", None)
        send_stream = getattr(provider, "send_stream", None)
        if decode_stream is None or send_stream is None:
            raise ProviderError(
                f"The provider for codec {codec.name!r} cannot stream (it needs send_stream() "
                "and a codec with decode_stream()). Use Agent(stream=False) with it."
            )
        completion: Completion = decode_stream(await send_stream(body))
        return completion

    @staticmethod
    def _metadata(agent: Agent, completion: Completion) -> dict[str, Any]:
        data = completion.metadata()
        data["provider"] = agent.provider_name
        data["model"] = completion.model or agent.model_name
        return data

    # -- tool calls ----------------------------------------------------------------------

    async def _run_calls(
        self, agent: Agent, calls: list[ToolCall], ctx: AgentContext, env: _Env
    ) -> AgentContext:
        """Run the calls of one iteration, in order; consecutive delegations run at once.

        Returns the context with the results added (the iteration completed), or raises
        :class:`StepFailed` when a step fails beyond recovery.
        """
        iteration = ctx.current_iteration
        results: dict[str, ToolResult] = {}
        failures: list[dict[str, Any]] = []
        delegations: dict[str, dict[str, Any]] = {}
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
        metadata: dict[str, Any] = {}
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
        env: _Env,
        failures: list[dict[str, Any]],
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
            record: dict[str, Any] = {
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
        return ToolResult(tool_call_id=call.id, name=call.name, content=render_tool_output(value))

    @staticmethod
    def _run_context(agent: Agent, call: ToolCall, iteration: int, env: _Env) -> RunContext:
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
        env: _Env,
        results: dict[str, ToolResult],
        failures: list[dict[str, Any]],
        delegations: dict[str, dict[str, Any]],
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
        metadata: dict[str, Any] = {
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
        env: _Env,
        done: Mapping[str, Any],
    ) -> list[tuple[ToolCall, ToolResult, dict[str, Any] | None]]:
        """Run consecutive delegations concurrently; results in the order of the calls."""
        iteration = parent.current_iteration
        refused: dict[str, ToolResult] = {}
        jobs: dict[str, Coroutine[Any, Any, tuple[ToolResult, dict[str, Any]]]] = {}
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
        answers: list[tuple[ToolCall, ToolResult, dict[str, Any] | None]] = []
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
        env: _Env,
    ) -> tuple[ToolResult, dict[str, Any]]:
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
        sub_env = _Env(
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
            result = await self._turn(agent, ctx, sub_env)
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
        record = {
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


def _with_context_message(messages: list[Message], text: str) -> list[Message]:
    """``messages`` with the context message after the leading system messages."""
    position = 0
    while position < len(messages) and messages[position].role == "system":
        position += 1
    message = Message(role="system", content=f"<{CONTEXT_TAG}>\n{text}\n</{CONTEXT_TAG}>")
    return [*messages[:position], message, *messages[position:]]


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


def _settled(ctx: AgentContext, clock: Clock) -> AgentContext:
    """A context whose unanswered tool calls are closed as not executed."""
    pending = ctx.iterations[-1].pending_tool_calls
    if not pending:
        return ctx
    closed = ctx.add_tool_results(
        [_error(call, _NOT_EXECUTED_LIMIT) for call in pending], at=clock.now()
    )
    return _without_open_iteration(closed)


def _error(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(tool_call_id=call.id, name=call.name, content=text, is_error=True)


def _validation_text(exc: ValidationError) -> str:
    parts: Iterable[str] = (
        f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
        for err in exc.errors(include_url=False)
    )
    return "; ".join(parts)
