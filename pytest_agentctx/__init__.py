"""pytest-agentctx: test LLM agents like ordinary code.

Every agent run is an :class:`AgentContext`: one :class:`Iteration` per pass of the agent
loop. The runtime produces it deterministically; tests assert on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import exceptions
from ._lazy import lazy_getattr

if TYPE_CHECKING:
    # For type checkers, which do not run ``__getattr__``: the same names as ``_PUBLIC``,
    # each re-exported explicitly (``X as X``). tests/unit/test_public_names.py checks
    # that the two agree.
    from ._seq import FrozenDict as FrozenDict
    from ._seq import Seq as Seq
    from .artifacts import ARTIFACT_TOOLS as ARTIFACT_TOOLS
    from .artifacts import ArtifactChanges as ArtifactChanges
    from .artifacts import ArtifactRef as ArtifactRef
    from .artifacts import ArtifactStore as ArtifactStore
    from .artifacts import LocalArtifactStore as LocalArtifactStore
    from .artifacts import TrackedArtifactStore as TrackedArtifactStore
    from .artifacts import list_artifacts as list_artifacts
    from .artifacts import read_artifact as read_artifact
    from .artifacts import write_artifact as write_artifact
    from .assembly import AssembledContext as AssembledContext
    from .assembly import ContextSource as ContextSource
    from .assembly import FromRetrieval as FromRetrieval
    from .assembly import FromState as FromState
    from .assembly import Segment as Segment
    from .assembly import Text as Text
    from .assembly import assemble as assemble
    from .assembly import validate_sources as validate_sources
    from .budgets import Budget as Budget
    from .budgets import BudgetCheck as BudgetCheck
    from .capture.exchange import Exchange as Exchange
    from .capture.runs import CapturedRuns as CapturedRuns
    from .capture.runs import build_contexts as build_contexts
    from .capture.runs import capture_contexts as capture_contexts
    from .capture.runs import contexts_from_cassette as contexts_from_cassette
    from .cassettes.defaults import RecordMode as RecordMode
    from .cassettes.session import Cassette as Cassette
    from .clock import Clock as Clock
    from .clock import IdFactory as IdFactory
    from .clock import RandomIds as RandomIds
    from .clock import SequentialIds as SequentialIds
    from .clock import StepClock as StepClock
    from .clock import SystemClock as SystemClock
    from .codecs.base import Completion as Completion
    from .codecs.base import Usage as Usage
    from .context import AgentContext as AgentContext
    from .context import Iteration as Iteration
    from .context import Message as Message
    from .context import ToolCall as ToolCall
    from .context import ToolResult as ToolResult
    from .exceptions import AgentCtxError as AgentCtxError
    from .exceptions import AgentDefinitionError as AgentDefinitionError
    from .exceptions import ArtifactError as ArtifactError
    from .exceptions import ArtifactNotFound as ArtifactNotFound
    from .exceptions import ArtifactPathError as ArtifactPathError
    from .exceptions import BudgetError as BudgetError
    from .exceptions import CaptureError as CaptureError
    from .exceptions import CassetteError as CassetteError
    from .exceptions import CassetteFormatError as CassetteFormatError
    from .exceptions import CassetteMiss as CassetteMiss
    from .exceptions import CassetteWriteError as CassetteWriteError
    from .exceptions import CodecError as CodecError
    from .exceptions import ContextAssemblyError as ContextAssemblyError
    from .exceptions import ContextAssemblyFailed as ContextAssemblyFailed
    from .exceptions import ContextStateError as ContextStateError
    from .exceptions import ContextWindowError as ContextWindowError
    from .exceptions import ConversationError as ConversationError
    from .exceptions import EmptyHistory as EmptyHistory
    from .exceptions import FakeLLMError as FakeLLMError
    from .exceptions import FakeToolsError as FakeToolsError
    from .exceptions import HistoryError as HistoryError
    from .exceptions import LastEntryNotUserMessage as LastEntryNotUserMessage
    from .exceptions import LoopbackError as LoopbackError
    from .exceptions import MaxIterationsExceeded as MaxIterationsExceeded
    from .exceptions import MismatchError as MismatchError
    from .exceptions import NetworkBlocked as NetworkBlocked
    from .exceptions import NotOneConversation as NotOneConversation
    from .exceptions import PartialRecording as PartialRecording
    from .exceptions import PatternError as PatternError
    from .exceptions import PersistenceError as PersistenceError
    from .exceptions import PromptTemplateError as PromptTemplateError
    from .exceptions import ProviderError as ProviderError
    from .exceptions import RepeatError as RepeatError
    from .exceptions import ReportError as ReportError
    from .exceptions import SnapshotError as SnapshotError
    from .exceptions import StaleCassette as StaleCassette
    from .exceptions import StepFailed as StepFailed
    from .exceptions import ToolDefinitionError as ToolDefinitionError
    from .exceptions import UnexpectedModelCall as UnexpectedModelCall
    from .exceptions import UnusedScriptedReplies as UnusedScriptedReplies
    from .exceptions import VectorStoreError as VectorStoreError
    from .failures import CompensationRecord as CompensationRecord
    from .failures import CompletedStep as CompletedStep
    from .failures import Failure as Failure
    from .fakes import FakeLLM as FakeLLM
    from .fakes import FakeModelCall as FakeModelCall
    from .fakes import FakeToolCall as FakeToolCall
    from .fakes import FakeTools as FakeTools
    from .freeze import FrozenClock as FrozenClock
    from .gate import BaselineComparison as BaselineComparison
    from .gate import GateResult as GateResult
    from .gate import GateTolerance as GateTolerance
    from .gate import compare_reports as compare_reports
    from .gate import evaluate_gate as evaluate_gate
    from .history import History as History
    from .loopback import LoopbackProvider as LoopbackProvider
    from .matching import ANY as ANY
    from .matching import AllOf as AllOf
    from .matching import AnyOf as AnyOf
    from .matching import Contains as Contains
    from .matching import Each as Each
    from .matching import Exact as Exact
    from .matching import Like as Like
    from .matching import Mismatch as Mismatch
    from .matching import Not as Not
    from .matching import Nowhere as Nowhere
    from .matching import Pattern as Pattern
    from .matching import Predicate as Predicate
    from .matching import Regex as Regex
    from .matching import Unordered as Unordered
    from .matching import matches as matches
    from .matching import mismatches as mismatches
    from .persistence import load_run as load_run
    from .persistence import save_run as save_run
    from .prompts import PromptTemplates as PromptTemplates
    from .providers import AnthropicMessagesProvider as AnthropicMessagesProvider
    from .providers import GeminiProvider as GeminiProvider
    from .providers import OpenAIChatProvider as OpenAIChatProvider
    from .providers import OpenAIResponsesProvider as OpenAIResponsesProvider
    from .providers import Provider as Provider
    from .report import load_report as load_report
    from .report_html import render_html as render_html
    from .retrieval import Document as Document
    from .retrieval import InMemoryVectorStore as InMemoryVectorStore
    from .retrieval import SearchCall as SearchCall
    from .retrieval import SearchResult as SearchResult
    from .retrieval import VectorSearch as VectorSearch
    from .runtime import Agent as Agent
    from .runtime import AgentRuntime as AgentRuntime
    from .runtime import RunResult as RunResult
    from .snapshot import AgentSnapshotAssertion as AgentSnapshotAssertion
    from .snapshot import AgentSnapshotExtension as AgentSnapshotExtension
    from .snapshot import SnapshotOptions as SnapshotOptions
    from .stats import PriceTable as PriceTable
    from .stats import RunStats as RunStats
    from .stats import run_stats as run_stats
    from .subagents import Delegation as Delegation
    from .subagents import SubAgent as SubAgent
    from .subagents import SubAgentSummary as SubAgentSummary
    from .subagents import parse_summary as parse_summary
    from .tools import RunContext as RunContext
    from .tools import Tool as Tool
    from .tools import ToolSpec as ToolSpec
    from .tools import tool as tool
    from .trajectory import LocatedCall as LocatedCall
    from .trajectory import Trajectory as Trajectory
    from .trajectory import nested_runs as nested_runs
    from .trajectory import tool_calls as tool_calls
    from .window import ContextWindow as ContextWindow
    from .window import Pruned as Pruned
    from .window import TiktokenCounter as TiktokenCounter

__version__ = "0.1.0.dev0"

#: Every public name, with the module that defines it: the source of ``__all__`` and of
#: the loader below. A name is imported on first use (PEP 562), so that loading the pytest
#: plugin, or one module of the package, does not import all of it (start-up time).
_PUBLIC: dict[str, str] = {
    # the context
    "AgentContext": "context",
    "Iteration": "context",
    "Message": "context",
    "ToolCall": "context",
    "ToolResult": "context",
    "History": "history",
    "Seq": "_seq",
    "FrozenDict": "_seq",
    # the runtime
    "Agent": "runtime",
    "AgentRuntime": "runtime",
    "RunResult": "runtime",
    "RunContext": "tools",
    "ContextWindow": "window",
    "Pruned": "window",
    "TiktokenCounter": "window",
    "save_run": "persistence",
    "load_run": "persistence",
    "Tool": "tools",
    "ToolSpec": "tools",
    "tool": "tools",
    # failure handling and sub-agents
    "Failure": "failures",
    "CompletedStep": "failures",
    "CompensationRecord": "failures",
    "SubAgent": "subagents",
    "Delegation": "subagents",
    "SubAgentSummary": "subagents",
    "parse_summary": "subagents",
    # context assembly, retrieval, artifacts, prompt templates
    "FromState": "assembly",
    "FromRetrieval": "assembly",
    "Text": "assembly",
    "ContextSource": "assembly",
    "validate_sources": "assembly",
    "assemble": "assembly",
    "AssembledContext": "assembly",
    "Segment": "assembly",
    "VectorSearch": "retrieval",
    "Document": "retrieval",
    "SearchResult": "retrieval",
    "SearchCall": "retrieval",
    "InMemoryVectorStore": "retrieval",
    "ArtifactStore": "artifacts",
    "ArtifactRef": "artifacts",
    "ArtifactChanges": "artifacts",
    "LocalArtifactStore": "artifacts",
    "TrackedArtifactStore": "artifacts",
    "write_artifact": "artifacts",
    "read_artifact": "artifacts",
    "list_artifacts": "artifacts",
    "ARTIFACT_TOOLS": "artifacts",
    "PromptTemplates": "prompts",
    # providers and wire formats
    "Provider": "providers",
    "OpenAIChatProvider": "providers",
    "OpenAIResponsesProvider": "providers",
    "AnthropicMessagesProvider": "providers",
    "GeminiProvider": "providers",
    "Completion": "codecs.base",
    "Usage": "codecs.base",
    # time and ids
    "Clock": "clock",
    "IdFactory": "clock",
    "StepClock": "clock",
    "SystemClock": "clock",
    "SequentialIds": "clock",
    "RandomIds": "clock",
    "FrozenClock": "freeze",
    # cassettes
    "Cassette": "cassettes.session",
    "RecordMode": "cassettes.defaults",
    # capture (contexts from any agent's traffic)
    "CapturedRuns": "capture.runs",
    "Exchange": "capture.exchange",
    "build_contexts": "capture.runs",
    "capture_contexts": "capture.runs",
    "contexts_from_cassette": "capture.runs",
    # fakes
    "FakeLLM": "fakes",
    "FakeModelCall": "fakes",
    "FakeTools": "fakes",
    "FakeToolCall": "fakes",
    "LoopbackProvider": "loopback",
    # assertions
    "matches": "matching",
    "mismatches": "matching",
    "Mismatch": "matching",
    "Pattern": "matching",
    "ANY": "matching",
    "Regex": "matching",
    "Predicate": "matching",
    "Like": "matching",
    "Exact": "matching",
    "Unordered": "matching",
    "Contains": "matching",
    "Each": "matching",
    "Nowhere": "matching",
    "AllOf": "matching",
    "AnyOf": "matching",
    "Not": "matching",
    # trajectories
    "Trajectory": "trajectory",
    "LocatedCall": "trajectory",
    "tool_calls": "trajectory",
    "nested_runs": "trajectory",
    # reports and the gate
    "load_report": "report",
    "render_html": "report_html",
    "evaluate_gate": "gate",
    "compare_reports": "gate",
    "GateTolerance": "gate",
    "GateResult": "gate",
    "BaselineComparison": "gate",
    # budgets and run figures
    "Budget": "budgets",
    "BudgetCheck": "budgets",
    "PriceTable": "stats",
    "RunStats": "stats",
    "run_stats": "stats",
    # snapshots (imported on first use: they need syrupy, and so pytest)
    "AgentSnapshotAssertion": "snapshot",
    "AgentSnapshotExtension": "snapshot",
    "SnapshotOptions": "snapshot",
    # exceptions
    "AgentCtxError": "exceptions",
    "AgentDefinitionError": "exceptions",
    "ArtifactError": "exceptions",
    "ArtifactNotFound": "exceptions",
    "ArtifactPathError": "exceptions",
    "ContextAssemblyError": "exceptions",
    "ContextAssemblyFailed": "exceptions",
    "PromptTemplateError": "exceptions",
    "VectorStoreError": "exceptions",
    "CaptureError": "exceptions",
    "CassetteError": "exceptions",
    "CassetteFormatError": "exceptions",
    "CassetteMiss": "exceptions",
    "CassetteWriteError": "exceptions",
    "CodecError": "exceptions",
    "ContextStateError": "exceptions",
    "ContextWindowError": "exceptions",
    "ConversationError": "exceptions",
    "PersistenceError": "exceptions",
    "EmptyHistory": "exceptions",
    "FakeLLMError": "exceptions",
    "FakeToolsError": "exceptions",
    "HistoryError": "exceptions",
    "LastEntryNotUserMessage": "exceptions",
    "LoopbackError": "exceptions",
    "MaxIterationsExceeded": "exceptions",
    "StepFailed": "exceptions",
    "MismatchError": "exceptions",
    "NetworkBlocked": "exceptions",
    "NotOneConversation": "exceptions",
    "PartialRecording": "exceptions",
    "PatternError": "exceptions",
    "ProviderError": "exceptions",
    "ReportError": "exceptions",
    "BudgetError": "exceptions",
    "RepeatError": "exceptions",
    "SnapshotError": "exceptions",
    "StaleCassette": "exceptions",
    "ToolDefinitionError": "exceptions",
    "UnexpectedModelCall": "exceptions",
    "UnusedScriptedReplies": "exceptions",
}

__all__ = [*_PUBLIC, "__version__"]

# The exceptions are bound now: their module is small, and every other module imports it.
globals().update(
    {name: getattr(exceptions, name) for name, module in _PUBLIC.items() if module == "exceptions"}
)

__getattr__ = lazy_getattr(__name__, _PUBLIC, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
