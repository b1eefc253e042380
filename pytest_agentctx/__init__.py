"""pytest-agentctx: test LLM agents like ordinary code.

Every agent run is an :class:`AgentContext`: one :class:`Iteration` per pass of the agent
loop. The runtime produces it deterministically; tests assert on it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .exceptions import (
    AgentCtxError,
    AgentDefinitionError,
    ArtifactError,
    ArtifactNotFound,
    ArtifactPathError,
    BudgetError,
    CaptureError,
    CassetteError,
    CassetteFormatError,
    CassetteMiss,
    CodecError,
    ContextAssemblyError,
    ContextAssemblyFailed,
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
    NotOneConversation,
    PatternError,
    PromptTemplateError,
    ProviderError,
    RepeatError,
    ReportError,
    SnapshotError,
    StaleCassette,
    StepFailed,
    ToolDefinitionError,
    UnexpectedModelCall,
    UnusedScriptedReplies,
    VectorStoreError,
)

if TYPE_CHECKING:
    from ._seq import FrozenDict, Seq
    from .artifacts import (
        ARTIFACT_TOOLS,
        ArtifactChanges,
        ArtifactRef,
        ArtifactStore,
        LocalArtifactStore,
        TrackedArtifactStore,
        list_artifacts,
        read_artifact,
        write_artifact,
    )
    from .assembly import (
        AssembledContext,
        ContextSource,
        FromRetrieval,
        FromState,
        Segment,
        Text,
        assemble,
        validate_sources,
    )
    from .budgets import Budget, BudgetCheck
    from .capture import (
        CapturedRuns,
        Exchange,
        build_contexts,
        capture_contexts,
        contexts_from_cassette,
    )
    from .cassettes import Cassette, RecordMode
    from .clock import Clock, IdFactory, RandomIds, SequentialIds, StepClock, SystemClock
    from .codecs import Completion, Usage
    from .context import AgentContext, Iteration, Message, ToolCall, ToolResult
    from .failures import CompensationRecord, CompletedStep, Failure
    from .fakes import FakeLLM, FakeModelCall, FakeToolCall, FakeTools
    from .freeze import FrozenClock
    from .gate import BaselineComparison, GateResult, GateTolerance, compare_reports, evaluate_gate
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
    from .prompts import PromptTemplates
    from .providers import (
        AnthropicMessagesProvider,
        OpenAIChatProvider,
        OpenAIResponsesProvider,
        Provider,
    )
    from .report import load_report
    from .report_html import render_html
    from .retrieval import Document, InMemoryVectorStore, SearchCall, SearchResult, VectorSearch
    from .runtime import Agent, AgentRuntime, RunResult
    from .snapshot import AgentSnapshotAssertion, AgentSnapshotExtension, SnapshotOptions
    from .stats import PriceTable, RunStats, run_stats
    from .subagents import Delegation, SubAgent, SubAgentSummary, parse_summary
    from .tools import RunContext, Tool, ToolSpec, tool
    from .trajectory import LocatedCall, Trajectory, nested_runs, tool_calls
    from .window import ContextWindow, ContextWindowError, Pruned, TiktokenCounter

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
    # failure handling and sub-agents
    "Failure",
    "CompletedStep",
    "CompensationRecord",
    "SubAgent",
    "Delegation",
    "SubAgentSummary",
    "parse_summary",
    # context assembly, retrieval, artifacts, prompt templates (issue 8)
    "FromState",
    "FromRetrieval",
    "Text",
    "ContextSource",
    "validate_sources",
    "assemble",
    "AssembledContext",
    "Segment",
    "VectorSearch",
    "Document",
    "SearchResult",
    "SearchCall",
    "InMemoryVectorStore",
    "ArtifactStore",
    "ArtifactRef",
    "ArtifactChanges",
    "LocalArtifactStore",
    "TrackedArtifactStore",
    "write_artifact",
    "read_artifact",
    "list_artifacts",
    "ARTIFACT_TOOLS",
    "PromptTemplates",
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
    # capture (contexts from any agent's traffic)
    "CapturedRuns",
    "Exchange",
    "build_contexts",
    "capture_contexts",
    "contexts_from_cassette",
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
    # reports and the gate
    "load_report",
    "render_html",
    "evaluate_gate",
    "compare_reports",
    "GateTolerance",
    "GateResult",
    "BaselineComparison",
    # budgets and run figures
    "Budget",
    "BudgetCheck",
    "PriceTable",
    "RunStats",
    "run_stats",
    # snapshots (imported on first use: they need syrupy, and so pytest)
    "AgentSnapshotAssertion",
    "AgentSnapshotExtension",
    "SnapshotOptions",
    # exceptions
    "AgentCtxError",
    "AgentDefinitionError",
    "ArtifactError",
    "ArtifactNotFound",
    "ArtifactPathError",
    "ContextAssemblyError",
    "ContextAssemblyFailed",
    "PromptTemplateError",
    "VectorStoreError",
    "CaptureError",
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
    "StepFailed",
    "MismatchError",
    "NetworkBlocked",
    "NotOneConversation",
    "PatternError",
    "ProviderError",
    "ReportError",
    "BudgetError",
    "RepeatError",
    "SnapshotError",
    "StaleCassette",
    "ToolDefinitionError",
    "UnexpectedModelCall",
    "UnusedScriptedReplies",
    "__version__",
]

#: Where each public name lives: imported on first use (PEP 562), so that loading the
#: pytest plugin, or one module of the package, does not import all of it (start-up time).
_LAZY: dict[str, str] = {
    "ANY": "matching",
    "ARTIFACT_TOOLS": "artifacts",
    "Agent": "runtime",
    "AgentContext": "context",
    "AgentRuntime": "runtime",
    "AgentSnapshotAssertion": "snapshot",
    "AgentSnapshotExtension": "snapshot",
    "AllOf": "matching",
    "AnthropicMessagesProvider": "providers",
    "AnyOf": "matching",
    "ArtifactChanges": "artifacts",
    "ArtifactRef": "artifacts",
    "ArtifactStore": "artifacts",
    "AssembledContext": "assembly",
    "BaselineComparison": "gate",
    "Budget": "budgets",
    "PriceTable": "stats",
    "RunStats": "stats",
    "run_stats": "stats",
    "BudgetCheck": "budgets",
    "CapturedRuns": "capture",
    "Cassette": "cassettes",
    "Clock": "clock",
    "CompensationRecord": "failures",
    "CompletedStep": "failures",
    "Completion": "codecs",
    "Contains": "matching",
    "ContextSource": "assembly",
    "ContextWindow": "window",
    "ContextWindowError": "window",
    "Delegation": "subagents",
    "Document": "retrieval",
    "Each": "matching",
    "Exact": "matching",
    "Exchange": "capture",
    "Failure": "failures",
    "FakeLLM": "fakes",
    "FakeModelCall": "fakes",
    "FakeToolCall": "fakes",
    "FakeTools": "fakes",
    "FromRetrieval": "assembly",
    "FromState": "assembly",
    "FrozenClock": "freeze",
    "FrozenDict": "_seq",
    "GateResult": "gate",
    "GateTolerance": "gate",
    "History": "history",
    "IdFactory": "clock",
    "InMemoryVectorStore": "retrieval",
    "Iteration": "context",
    "Like": "matching",
    "LocalArtifactStore": "artifacts",
    "LocatedCall": "trajectory",
    "LoopbackProvider": "loopback",
    "Message": "context",
    "Mismatch": "matching",
    "Not": "matching",
    "Nowhere": "matching",
    "OpenAIChatProvider": "providers",
    "OpenAIResponsesProvider": "providers",
    "Pattern": "matching",
    "PersistenceError": "persistence",
    "Predicate": "matching",
    "PromptTemplates": "prompts",
    "Provider": "providers",
    "Pruned": "window",
    "RandomIds": "clock",
    "RecordMode": "cassettes",
    "Regex": "matching",
    "RunContext": "tools",
    "RunResult": "runtime",
    "SearchCall": "retrieval",
    "SearchResult": "retrieval",
    "Segment": "assembly",
    "Seq": "_seq",
    "SequentialIds": "clock",
    "SnapshotOptions": "snapshot",
    "StepClock": "clock",
    "SubAgent": "subagents",
    "SubAgentSummary": "subagents",
    "SystemClock": "clock",
    "Text": "assembly",
    "TiktokenCounter": "window",
    "Tool": "tools",
    "ToolCall": "context",
    "ToolResult": "context",
    "ToolSpec": "tools",
    "TrackedArtifactStore": "artifacts",
    "Trajectory": "trajectory",
    "Unordered": "matching",
    "Usage": "codecs",
    "VectorSearch": "retrieval",
    "assemble": "assembly",
    "build_contexts": "capture",
    "capture_contexts": "capture",
    "compare_reports": "gate",
    "contexts_from_cassette": "capture",
    "evaluate_gate": "gate",
    "list_artifacts": "artifacts",
    "load_report": "report",
    "load_run": "persistence",
    "matches": "matching",
    "mismatches": "matching",
    "nested_runs": "trajectory",
    "parse_summary": "subagents",
    "read_artifact": "artifacts",
    "render_html": "report_html",
    "save_run": "persistence",
    "tool": "tools",
    "tool_calls": "trajectory",
    "validate_sources": "assembly",
    "write_artifact": "artifacts",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
