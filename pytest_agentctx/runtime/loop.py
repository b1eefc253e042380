"""The agent loop: :class:`AgentRuntime` runs an :class:`~pytest_agentctx.runtime.agent.Agent`
and produces its :class:`~pytest_agentctx.context.model.AgentContext`.

>>> agent = Agent(name="weather", model="openai:gpt-4o-mini", tools=[get_weather])
>>> result = await AgentRuntime().run(agent, "Weather in Paris?")   # doctest: +SKIP

The loop: send ``ctx.to_messages()`` to the model, add its reply, run the tool calls it
asked for (with a :class:`~pytest_agentctx.runtime.tools.RunContext` holding agent, actor,
tenant, state and the caller's dependencies, none of which is stored on the context), add
the results, and stop on a final answer. Time and ids come from the injected
:class:`~pytest_agentctx.context.clock.Clock` and id factory. Runs can be continued with a
new user message (:meth:`AgentRuntime.continue_conversation`), and model calls can be
streamed.

Around that loop:

* **context assembly**: an agent's ``context`` sources are read before each model call
  and sent as one system message (``<context>...</context>``) right after the system
  prompt; the iteration's ``metadata["context"]`` records the segments and retrieval
  results;
* **tool calls**: run by :class:`~pytest_agentctx.runtime.steps.ToolSteps`, with a tool's
  ``on_failure`` handler and ``compensate`` function (see
  :mod:`pytest_agentctx.runtime.recovery`) and
  :class:`~pytest_agentctx.runtime.agent.SubAgent` tools, which run another agent in
  its own context (see :mod:`pytest_agentctx.runtime.delegation`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pytest_agentctx.context.clock import Clock, SystemClock
from pytest_agentctx.context.model import AgentContext, Message
from pytest_agentctx.doubles.ids import IdFactory, RandomIds
from pytest_agentctx.exceptions import AgentCtxError
from pytest_agentctx.runtime.agent import Agent, RunResult, ToolOverrides
from pytest_agentctx.runtime.artifacts import ARTIFACTS_DEP, ArtifactStore
from pytest_agentctx.runtime.assembly import assemble
from pytest_agentctx.runtime.errors import (
    AgentDefinitionError,
    ConversationError,
    MaxIterationsExceeded,
    ProviderError,
    StepFailed,
)
from pytest_agentctx.runtime.providers import Provider, default_provider
from pytest_agentctx.runtime.retrieval import VectorSearch
from pytest_agentctx.runtime.steps import RunEnv, ToolSteps, close_unexecuted
from pytest_agentctx.traffic.codecs.base import Completion

#: The tag around the assembled context in its system message: ``<context>...</context>``.
CONTEXT_TAG = "context"


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
    #: reports and budgets read after a test. A run stopped by any other exception (a
    #: provider error, a cassette miss, a tool that raised) is here too, as a failed
    #: result with its context up to where it stopped and the exception as its ``error``.
    #: Sub-agent runs are inside their parent's context, never here.
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
        actor: object = None,
        tenant: object = None,
        deps: Mapping[str, object] | None = None,
        state: object = None,
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
        actor: object = None,
        tenant: object = None,
        deps: Mapping[str, object] | None = None,
        state: object = None,
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
            ctx = close_unexecuted(ctx, self.clock)
        ctx = ctx.add_user_message(message, at=self.clock.now())
        return await self._loop(result.agent, ctx, self._env(actor, tenant, deps, state))

    async def run_multi_turn(
        self,
        agent: Agent,
        first: str,
        follow_ups: Iterable[str],
        *,
        actor: object = None,
        tenant: object = None,
        deps: Mapping[str, object] | None = None,
        state: object = None,
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
        actor: object = None,
        tenant: object = None,
        deps: Mapping[str, object] | None = None,
        state: object = None,
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

    def _env(
        self, actor: object, tenant: object, deps: Mapping[str, object] | None, state: object
    ) -> RunEnv:
        merged = dict(deps or {})
        if self.artifacts is not None:
            merged.setdefault(ARTIFACTS_DEP, self.artifacts)
        return RunEnv(self.clock, self.ids, actor, tenant, merged, state)

    def _provider(self, agent: Agent, env: RunEnv) -> Provider:
        provider = self.provider_for(agent)
        env.providers.setdefault(id(provider), provider)
        return provider

    async def _loop(self, agent: Agent, ctx: AgentContext, env: RunEnv) -> RunResult:
        """A top-level run: recorded in :attr:`results`; closes its providers at the end."""
        try:
            result = await self._turn(agent, ctx, env)
        except (MaxIterationsExceeded, StepFailed) as exc:
            if exc.result is not None:
                self.results.append(exc.result)
            raise
        except Exception as exc:  # a model call or tool raised: the run so far is kept too
            error = f"{type(exc).__name__}: {exc}"
            partial = env.ctx if env.ctx is not None else ctx
            self.results.append(
                RunResult(agent=agent, context=partial, output=None, status="failed", error=error)
            )
            raise
        else:
            self.results.append(result)
            return result
        finally:
            for provider in env.providers.values():
                aclose = getattr(provider, "aclose", None)
                if aclose is not None:
                    await aclose()

    async def _turn(self, agent: Agent, ctx: AgentContext, env: RunEnv) -> RunResult:
        provider = self._provider(agent, env)
        specs = [t.spec for t in agent.tools]
        steps = ToolSteps(self.tool_overrides, self._turn)
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
            ctx = env.ctx = await steps.run(agent, calls, ctx, env)

    @staticmethod
    async def _complete(provider: Provider, body: dict[str, object], *, stream: bool) -> Completion:
        """One model call; streamed calls are decoded from their events by the same codec
        (Gemini's: told the model turn the reply is, for the ids of bare function calls)."""
        turns = getattr(provider.codec, "model_turns", None)
        turn = {} if turns is None else {"turn": turns(body.get("contents"))}
        if not stream:
            decode: Callable[..., Completion] = provider.codec.decode_response
            reply: Completion = decode(await provider.send(body), **turn)
            return reply
        body = {**body, "stream": True}
        if provider.codec.name == "openai_chat":
            # without it the stream carries no usage, and the context would differ
            body["stream_options"] = {"include_usage": True}
        codec = provider.codec
        decode_stream = getattr(codec, "decode_stream", None)
        send_stream = getattr(provider, "send_stream", None)
        if decode_stream is None or send_stream is None:
            raise ProviderError(
                f"The provider for codec {codec.name!r} cannot stream (it needs send_stream() "
                "and a codec with decode_stream()). Use Agent(stream=False) with it."
            )
        completion: Completion = decode_stream(await send_stream(body), **turn)
        return completion

    @staticmethod
    def _metadata(agent: Agent, completion: Completion) -> dict[str, object]:
        data = completion.metadata()
        data["provider"] = agent.provider_name
        data["model"] = completion.model or agent.model_name
        return data


def _with_context_message(messages: list[Message], text: str) -> list[Message]:
    """``messages`` with the context message after the leading system messages."""
    position = 0
    while position < len(messages) and messages[position].role == "system":
        position += 1
    message = Message(role="system", content=f"<{CONTEXT_TAG}>\n{text}\n</{CONTEXT_TAG}>")
    return [*messages[:position], message, *messages[position:]]
