"""A small, deterministic agent runtime that produces an :class:`AgentContext`.

>>> agent = Agent(name="weather", model="openai:gpt-4o-mini", tools=[get_weather])
>>> result = await AgentRuntime().run(agent, "Weather in Paris?")   # doctest: +SKIP

The loop: send ``ctx.to_messages()`` to the model, add its reply, run the tool calls it
asked for (with a :class:`RunContext` holding agent, actor, tenant and the caller's
dependencies, none of which is stored on the context), add the results, and stop on a final
answer. Time and ids come from the injected :class:`Clock` and id factory.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from .clock import Clock, IdFactory, RandomIds, SystemClock
from .codecs.base import Completion
from .context import AgentContext, ToolCall, ToolResult
from .exceptions import (
    AgentCtxError,
    AgentDefinitionError,
    ConversationError,
    MaxIterationsExceeded,
    ProviderError,
)
from .providers import Provider, default_provider, split_model
from .tools import RunContext, Tool, render_tool_output
from .window import ContextWindow

__all__ = ["Agent", "AgentRuntime", "RunResult", "ToolOverrides"]


class ToolOverrides(Protocol):
    """What the runtime asks of ``fake_tools``: replacements, and a ledger to record in."""

    def override_for(self, name: str) -> Callable[..., Any] | None: ...

    def record(self, call: ToolCall, iteration: int) -> None: ...


@dataclass(frozen=True)
class Agent:
    """An agent's definition: model, system prompt, tools and its ``max_iterations``.

    ``model`` names the provider and the model, as ``"openai:gpt-4o-mini"`` or
    ``"anthropic:claude-sonnet-4-5"``. ``tools`` takes :class:`Tool` objects or plain
    functions (wrapped with :func:`tool`). ``max_iterations`` is the single source of the
    iteration limit.
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


RunStatus = Literal["completed", "failed"]


@dataclass(frozen=True)
class RunResult:
    """The outcome of a run: its context, the final answer and whether it completed.

    A ``failed`` run (the agent ran out of iterations) keeps its context and ``error``;
    both kinds can be continued with :meth:`AgentRuntime.continue_conversation`.
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
class AgentRuntime:
    """Runs agents. Give it a deterministic clock and ids to make runs repeatable.

    ``providers`` maps a model prefix (``openai``, ``anthropic``, or your own) to a
    provider; missing ones are created on first use. ``tool_overrides`` is how
    ``fake_tools`` replaces tools and records calls.
    """

    clock: Clock = field(default_factory=SystemClock)
    ids: IdFactory = field(default_factory=RandomIds)
    providers: dict[str, Provider] = field(default_factory=dict)
    tool_overrides: ToolOverrides | None = None
    #: Every run this runtime finished (completed or failed), in order: what reports and
    #: budgets read after a test.
    results: list[RunResult] = field(default_factory=list)

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
    ) -> RunResult:
        """Run ``agent`` on ``input`` until it gives a final answer.

        Raises :class:`MaxIterationsExceeded` (carrying the context) when the agent still
        asks for tools in its last allowed iteration.
        """
        if not isinstance(agent, Agent):
            raise AgentDefinitionError(
                f"run() takes an Agent, got {type(agent).__name__}: {agent!r}."
            )
        ctx = AgentContext.new(input, system_prompt=agent.system_prompt, at=self.clock.now())
        return await self._loop(agent, ctx, actor=actor, tenant=tenant, deps=deps)

    async def continue_conversation(
        self,
        result: RunResult,
        message: str,
        *,
        actor: Any = None,
        tenant: Any = None,
        deps: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Run a new turn after a finished run; returns a new result, ``result`` is unchanged.

        A completed run gets the user message as a new iteration. A failed run's unanswered
        tool calls are first closed with error results (they were never executed), so the
        conversation stays valid for the provider. A run that is still in progress is
        refused.
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
                    [
                        _error(call, "Not executed: the run stopped at its iteration limit.")
                        for call in pending
                    ],
                    at=self.clock.now(),
                )
        ctx = ctx.add_user_message(message, at=self.clock.now())
        return await self._loop(result.agent, ctx, actor=actor, tenant=tenant, deps=deps)

    async def run_multi_turn(
        self,
        agent: Agent,
        first: str,
        follow_ups: Iterable[str],
        *,
        actor: Any = None,
        tenant: Any = None,
        deps: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Run ``first``, then each follow-up as a new turn; returns the last result."""
        result = await self.run(agent, first, actor=actor, tenant=tenant, deps=deps)
        for message in follow_ups:
            result = await self.continue_conversation(
                result, message, actor=actor, tenant=tenant, deps=deps
            )
        return result

    async def _loop(
        self,
        agent: Agent,
        ctx: AgentContext,
        *,
        actor: Any,
        tenant: Any,
        deps: Mapping[str, Any] | None,
    ) -> RunResult:
        provider = self.provider_for(agent)
        try:
            result = await self._turn(agent, provider, ctx, actor=actor, tenant=tenant, deps=deps)
        except MaxIterationsExceeded as exc:
            if exc.result is not None:
                self.results.append(exc.result)
            raise
        else:
            self.results.append(result)
            return result
        finally:
            aclose = getattr(provider, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _turn(
        self,
        agent: Agent,
        provider: Provider,
        ctx: AgentContext,
        *,
        actor: Any,
        tenant: Any,
        deps: Mapping[str, Any] | None,
    ) -> RunResult:
        specs = [t.spec for t in agent.tools]
        # max_iterations counts the iterations of this turn, not of the whole conversation
        limit = ctx.current_iteration + agent.max_iterations - 1
        while True:
            messages = ctx.get_all_messages()
            if agent.window is not None:
                pruned = agent.window.prune(messages)
                messages = pruned.messages
                ctx = ctx.with_iteration_metadata({"window": pruned.metadata()})
            body = provider.codec.encode_request(
                model=agent.model_name,
                messages=[message.to_dict() for message in messages],
                tools=specs,
                max_tokens=agent.max_tokens,
                temperature=agent.temperature,
            )
            completion = await self._complete(provider, body, stream=agent.stream)
            calls = [
                c if c.id else c.model_copy(update={"id": self.ids("call")})
                for c in completion.tool_calls
            ]
            ctx = ctx.with_iteration_metadata(self._metadata(agent, completion))
            ctx = ctx.add_assistant_message(
                completion.content, calls, reasoning=completion.reasoning, at=self.clock.now()
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
            results = [
                await self._execute(agent, call, ctx.current_iteration, actor, tenant, deps)
                for call in calls
            ]
            ctx = ctx.add_tool_results(results, at=self.clock.now())

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

    def run_sync(
        self,
        agent: Agent,
        input: str,
        *,
        actor: Any = None,
        tenant: Any = None,
        deps: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """:meth:`run` for synchronous code (not inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(agent, input, actor=actor, tenant=tenant, deps=deps))
        raise AgentCtxError(
            "run_sync() was called inside a running event loop, where it would block it. "
            "Use `await runtime.run(agent, input)` instead."
        )

    @staticmethod
    def _metadata(agent: Agent, completion: Completion) -> dict[str, Any]:
        data = completion.metadata()
        data["provider"] = agent.provider_name
        data["model"] = completion.model or agent.model_name
        return data

    async def _execute(
        self,
        agent: Agent,
        call: ToolCall,
        iteration: int,
        actor: Any,
        tenant: Any,
        deps: Mapping[str, Any] | None,
    ) -> ToolResult:
        """Run one tool call; every failure becomes an error result for the model."""
        if self.tool_overrides is not None:
            self.tool_overrides.record(call, iteration)
        tool = agent.get_tool(call.name)
        if tool is None:
            available = ", ".join(t.name for t in agent.tools) or "none"
            return _error(call, f"Unknown tool {call.name!r}. Available tools: {available}.")
        run_context = RunContext(
            agent=agent,
            iteration=iteration,
            tool_call=call,
            clock=self.clock,
            ids=self.ids,
            actor=actor,
            tenant=tenant,
            deps=dict(deps or {}),
        )
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
            return _error(call, f"Tool {call.name} failed: {type(exc).__name__}: {exc}")
        return ToolResult(tool_call_id=call.id, name=call.name, content=render_tool_output(value))


def _error(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(tool_call_id=call.id, name=call.name, content=text, is_error=True)


def _validation_text(exc: ValidationError) -> str:
    parts: Iterable[str] = (
        f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
        for err in exc.errors(include_url=False)
    )
    return "; ".join(parts)
