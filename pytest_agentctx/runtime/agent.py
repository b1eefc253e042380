"""Agents as they are defined: :class:`Agent`, an agent offered to another as a tool
(:class:`SubAgent`), and the outcome of a run (:class:`RunResult`).

>>> agent = Agent(name="weather", model="openai:gpt-4o-mini", tools=[get_weather])
>>> result = await AgentRuntime().run(agent, "Weather in Paris?")   # doctest: +SKIP
>>> orchestrator = Agent(name="boss", model=..., tools=[agent.as_tool()])  # doctest: +SKIP

An :class:`Agent` is checked when it is defined (its model, iteration limit, tool names,
context window and context sources), and so is a :class:`SubAgent` (only the orchestrator
delegates); :class:`~pytest_agentctx.runtime.loop.AgentRuntime` runs them (see
:mod:`pytest_agentctx.runtime.loop`, and :mod:`pytest_agentctx.runtime.delegation` for what
a delegation reports) and returns a :class:`RunResult`. :class:`ToolOverrides` is what the
runtime asks of ``fake_tools``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from pytest_agentctx.context.model import AgentContext, ToolCall
from pytest_agentctx.exceptions import AgentCtxError
from pytest_agentctx.runtime.assembly import ContextSource, validate_sources
from pytest_agentctx.runtime.delegation import SUMMARY_INSTRUCTIONS
from pytest_agentctx.runtime.errors import AgentDefinitionError, ContextAssemblyError
from pytest_agentctx.runtime.providers import split_model
from pytest_agentctx.runtime.tools import Tool
from pytest_agentctx.runtime.window import ContextWindow


class ToolOverrides(Protocol):
    """What the runtime asks of ``fake_tools``: replacements, and a ledger to record in."""

    def override_for(self, name: str) -> Callable[..., object] | None: ...

    def record(self, call: ToolCall, iteration: int) -> None: ...


@dataclass(frozen=True)
class Agent:
    """An agent's definition: model, system prompt, tools and its ``max_iterations``.

    ``model`` names the provider and the model, as ``"openai:gpt-4o-mini"`` or
    ``"anthropic:claude-sonnet-4-5"``. ``tools`` takes :class:`Tool` objects and
    :class:`SubAgent` tools to delegate to other agents;
    a plain function is wrapped with :func:`tool` when the agent is made, but its type is
    not a tool's, so code checked by a type checker decorates it with ``@tool``.
    ``max_iterations`` is the single source of the iteration limit.

    ``context`` lists the sources read before each model call (``FromState``,
    ``FromRetrieval``, ``Text``); they are checked here, against ``state_type`` when it is
    given, so a wrong attribute path fails when the agent is defined.
    """

    name: str
    model: str
    system_prompt: str | None = None
    tools: Sequence[Tool[object]] = ()
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

    def get_tool(self, name: str) -> Tool[object] | None:
        """The tool called ``name``, or ``None``."""
        return next((t for t in self.tools if t.name == name), None)

    def as_tool(self, id: str | None = None, *, description: str | None = None) -> SubAgent:
        """This agent as a sub-agent tool for an orchestrator (see :class:`SubAgent`)."""
        return SubAgent(self, id=id, description=description)


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
    its prompt already asks for the JSON summary that
    :func:`~pytest_agentctx.runtime.delegation.parse_summary` reads).
    """

    def __init__(
        self,
        agent: Agent,
        *,
        id: str | None = None,
        description: str | None = None,
        summary_instructions: str | None = SUMMARY_INSTRUCTIONS,
    ) -> None:
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
        prompt = self.agent.system_prompt
        text = (
            self.summary_instructions if not prompt else f"{prompt}\n\n{self.summary_instructions}"
        )
        return replace(self.agent, system_prompt=text)

    def __repr__(self) -> str:
        return f"SubAgent(id={self.id!r}, agent={self.agent.name!r})"


RunStatus = Literal["completed", "failed"]


@dataclass(frozen=True)
class RunResult:
    """The outcome of a run: its context, the final answer and whether it completed.

    A ``failed`` run (the agent ran out of iterations, or a step failed beyond recovery)
    keeps its context and ``error``; both kinds can be continued with
    :meth:`~pytest_agentctx.runtime.loop.AgentRuntime.continue_conversation`.
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
