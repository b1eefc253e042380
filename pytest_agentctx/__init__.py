"""pytest-agentctx: test LLM agents like ordinary code.

Every agent run is an :class:`AgentContext`: one :class:`Iteration` per pass of the agent
loop. The runtime produces it deterministically; tests assert on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._seq import FrozenDict, Seq
from .cassettes import Cassette, RecordMode
from .clock import Clock, IdFactory, RandomIds, SequentialIds, StepClock, SystemClock
from .codecs import Completion, Usage
from .context import AgentContext, Iteration, Message, ToolCall, ToolResult
from .exceptions import (
    AgentCtxError,
    AgentDefinitionError,
    CassetteError,
    CassetteFormatError,
    CassetteMiss,
    CodecError,
    ContextStateError,
    ConversationError,
    EmptyHistory,
    FakeLLMError,
    FakeToolsError,
    HistoryError,
    LastEntryNotUserMessage,
    LoopbackError,
    MaxIterationsExceeded,
    MismatchError,
    NetworkBlocked,
    PatternError,
    ProviderError,
    SnapshotError,
    StaleCassette,
    ToolDefinitionError,
    UnexpectedModelCall,
    UnusedScriptedReplies,
)
from .fakes import FakeLLM, FakeModelCall, FakeToolCall, FakeTools
from .freeze import FrozenClock
from .history import History
from .loopback import LoopbackProvider
from .matching import (
    ANY,
    AllOf,
    AnyOf,
    Contains,
    Each,
    Exact,
    Like,
    Mismatch,
    Not,
    Nowhere,
    Pattern,
    Predicate,
    Regex,
    Unordered,
    matches,
    mismatches,
)
from .persistence import PersistenceError, load_run, save_run
from .providers import (
    AnthropicMessagesProvider,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    Provider,
)
from .runtime import Agent, AgentRuntime, RunResult
from .tools import RunContext, Tool, ToolSpec, tool
from .trajectory import LocatedCall, Trajectory, nested_runs, tool_calls
from .window import ContextWindow, ContextWindowError, Pruned, TiktokenCounter

if TYPE_CHECKING:
    from .snapshot import AgentSnapshotAssertion, AgentSnapshotExtension, SnapshotOptions

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
    "FrozenDict",
    # the runtime
    "Agent",
    "AgentRuntime",
    "RunResult",
    "RunContext",
    "ContextWindow",
    "Pruned",
    "TiktokenCounter",
    "save_run",
    "load_run",
    "Tool",
    "ToolSpec",
    "tool",
    # providers and wire formats
    "Provider",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
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
    # cassettes
    "Cassette",
    "RecordMode",
    # fakes
    "FakeLLM",
    "FakeModelCall",
    "FakeTools",
    "FakeToolCall",
    "LoopbackProvider",
    # assertions
    "matches",
    "mismatches",
    "Mismatch",
    "Pattern",
    "ANY",
    "Regex",
    "Predicate",
    "Like",
    "Exact",
    "Unordered",
    "Contains",
    "Each",
    "Nowhere",
    "AllOf",
    "AnyOf",
    "Not",
    # trajectories
    "Trajectory",
    "LocatedCall",
    "tool_calls",
    "nested_runs",
    # snapshots (imported on first use: they need syrupy, and so pytest)
    "AgentSnapshotAssertion",
    "AgentSnapshotExtension",
    "SnapshotOptions",
    # exceptions
    "AgentCtxError",
    "AgentDefinitionError",
    "CassetteError",
    "CassetteFormatError",
    "CassetteMiss",
    "CodecError",
    "ContextStateError",
    "ContextWindowError",
    "ConversationError",
    "PersistenceError",
    "EmptyHistory",
    "FakeLLMError",
    "FakeToolsError",
    "HistoryError",
    "LastEntryNotUserMessage",
    "LoopbackError",
    "MaxIterationsExceeded",
    "MismatchError",
    "NetworkBlocked",
    "PatternError",
    "ProviderError",
    "SnapshotError",
    "StaleCassette",
    "ToolDefinitionError",
    "UnexpectedModelCall",
    "UnusedScriptedReplies",
    "__version__",
]

_SNAPSHOT_NAMES = frozenset({"AgentSnapshotAssertion", "AgentSnapshotExtension", "SnapshotOptions"})


def __getattr__(name: str) -> Any:
    # The snapshot names import syrupy, which imports pytest: only when asked for, so that
    # importing the package (say, for its runtime) has no pytest import.
    if name in _SNAPSHOT_NAMES:
        from . import snapshot

        return getattr(snapshot, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
