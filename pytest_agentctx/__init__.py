"""pytest-agentctx: test LLM agents like ordinary code.

Every agent run is an :class:`AgentContext`: one :class:`Iteration` per pass of the agent
loop. The runtime produces it deterministically; tests assert on it.
"""

from __future__ import annotations

from ._seq import Seq
from .clock import Clock, IdFactory, RandomIds, SequentialIds, StepClock, SystemClock
from .codecs import Completion, Usage
from .context import AgentContext, Iteration, Message, ToolCall, ToolResult
from .exceptions import (
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
from .fakes import FakeLLM, FakeModelCall, FakeToolCall, FakeTools
from .freeze import FrozenClock
from .history import History
from .providers import AnthropicMessagesProvider, OpenAIChatProvider, Provider
from .runtime import Agent, AgentRuntime, RunResult
from .tools import RunContext, Tool, ToolSpec, tool

__version__ = "0.1.0.dev0"

__all__ = [
    # the context
    "AgentContext",
    "Iteration",
    "Message",
    "ToolCall",
    "ToolResult",
    "History",
    "Seq",
    # the runtime
    "Agent",
    "AgentRuntime",
    "RunResult",
    "RunContext",
    "Tool",
    "ToolSpec",
    "tool",
    # providers and wire formats
    "Provider",
    "OpenAIChatProvider",
    "AnthropicMessagesProvider",
    "Completion",
    "Usage",
    # time and ids
    "Clock",
    "IdFactory",
    "StepClock",
    "SystemClock",
    "SequentialIds",
    "RandomIds",
    "FrozenClock",
    # fakes
    "FakeLLM",
    "FakeModelCall",
    "FakeTools",
    "FakeToolCall",
    # exceptions
    "AgentCtxError",
    "AgentDefinitionError",
    "CodecError",
    "ContextStateError",
    "EmptyHistory",
    "FakeLLMError",
    "FakeToolsError",
    "HistoryError",
    "LastEntryNotUserMessage",
    "MaxIterationsExceeded",
    "ProviderError",
    "ToolDefinitionError",
    "UnexpectedModelCall",
    "UnusedScriptedReplies",
    "__version__",
]
