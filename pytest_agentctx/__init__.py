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
    from .assertions.errors import MismatchError as MismatchError
    from .assertions.errors import SnapshotError as SnapshotError
    from .assertions.patterns.base import ANY as ANY
    from .assertions.patterns.base import AllOf as AllOf
    from .assertions.patterns.base import AnyOf as AnyOf
    from .assertions.patterns.base import Not as Not
    from .assertions.patterns.base import Pattern as Pattern
    from .assertions.patterns.base import Predicate as Predicate
    from .assertions.patterns.base import Regex as Regex
    from .assertions.patterns.mismatch import Mismatch as Mismatch
    from .assertions.patterns.report import matches as matches
    from .assertions.patterns.report import mismatches as mismatches
    from .assertions.patterns.structure import Contains as Contains
    from .assertions.patterns.structure import Each as Each
    from .assertions.patterns.structure import Exact as Exact
    from .assertions.patterns.structure import Like as Like
    from .assertions.patterns.structure import Nowhere as Nowhere
    from .assertions.patterns.structure import Unordered as Unordered
    from .assertions.snapshots.assertion import AgentSnapshotAssertion as AgentSnapshotAssertion
    from .assertions.snapshots.extension import AgentSnapshotExtension as AgentSnapshotExtension
    from .assertions.snapshots.options import SnapshotOptions as SnapshotOptions
    from .assertions.trajectory import Trajectory as Trajectory
    from .assertions.trajectory import nested_runs as nested_runs
    from .assertions.trajectory import tool_calls as tool_calls
    from .context._seq import FrozenDict as FrozenDict
    from .context._seq import Seq as Seq
    from .context.clock import StepClock as StepClock
    from .context.errors import ContextStateError as ContextStateError
    from .context.errors import EmptyHistory as EmptyHistory
    from .context.errors import HistoryError as HistoryError
    from .context.errors import LastEntryNotUserMessage as LastEntryNotUserMessage
    from .context.errors import PatternError as PatternError
    from .context.figures import PriceTable as PriceTable
    from .context.figures import RunStats as RunStats
    from .context.figures import run_stats as run_stats
    from .context.history import History as History
    from .context.model import AgentContext as AgentContext
    from .context.model import Iteration as Iteration
    from .context.model import Message as Message
    from .context.model import ToolCall as ToolCall
    from .context.model import ToolResult as ToolResult
    from .context.nested import LocatedCall as LocatedCall
    from .context.tools import ToolSpec as ToolSpec
    from .doubles.clock import Clock as Clock
    from .doubles.clock import IdFactory as IdFactory
    from .doubles.clock import RandomIds as RandomIds
    from .doubles.clock import SequentialIds as SequentialIds
    from .doubles.clock import SystemClock as SystemClock
    from .doubles.errors import FakeLLMError as FakeLLMError
    from .doubles.errors import FakeToolsError as FakeToolsError
    from .doubles.errors import LoopbackError as LoopbackError
    from .doubles.errors import UnexpectedModelCall as UnexpectedModelCall
    from .doubles.errors import UnusedScriptedReplies as UnusedScriptedReplies
    from .doubles.fake_llm import FakeLLM as FakeLLM
    from .doubles.fake_tools import FakeToolCall as FakeToolCall
    from .doubles.fake_tools import FakeTools as FakeTools
    from .doubles.frozen_clock import FrozenClock as FrozenClock
    from .doubles.loopback import LoopbackProvider as LoopbackProvider
    from .doubles.scripted_model import FakeModelCall as FakeModelCall
    from .exceptions import AgentAssertionError as AgentAssertionError
    from .exceptions import AgentCtxError as AgentCtxError
    from .exceptions import RunError as RunError
    from .exceptions import UsageError as UsageError
    from .reports.budgets import Budget as Budget
    from .reports.budgets import BudgetCheck as BudgetCheck
    from .reports.errors import BudgetError as BudgetError
    from .reports.errors import RepeatError as RepeatError
    from .reports.errors import ReportError as ReportError
    from .reports.gate import BaselineComparison as BaselineComparison
    from .reports.gate import GateResult as GateResult
    from .reports.gate import GateTolerance as GateTolerance
    from .reports.gate import compare_reports as compare_reports
    from .reports.gate import evaluate_gate as evaluate_gate
    from .reports.html import render_html as render_html
    from .reports.records import load_report as load_report
    from .runtime.agent import Agent as Agent
    from .runtime.agent import RunResult as RunResult
    from .runtime.artifacts import ARTIFACT_TOOLS as ARTIFACT_TOOLS
    from .runtime.artifacts import ArtifactChanges as ArtifactChanges
    from .runtime.artifacts import ArtifactRef as ArtifactRef
    from .runtime.artifacts import ArtifactStore as ArtifactStore
    from .runtime.artifacts import LocalArtifactStore as LocalArtifactStore
    from .runtime.artifacts import TrackedArtifactStore as TrackedArtifactStore
    from .runtime.artifacts import list_artifacts as list_artifacts
    from .runtime.artifacts import read_artifact as read_artifact
    from .runtime.artifacts import write_artifact as write_artifact
    from .runtime.assembly import AssembledContext as AssembledContext
    from .runtime.assembly import ContextSource as ContextSource
    from .runtime.assembly import FromRetrieval as FromRetrieval
    from .runtime.assembly import FromState as FromState
    from .runtime.assembly import Segment as Segment
    from .runtime.assembly import Text as Text
    from .runtime.assembly import assemble as assemble
    from .runtime.assembly import validate_sources as validate_sources
    from .runtime.errors import AgentDefinitionError as AgentDefinitionError
    from .runtime.errors import ArtifactError as ArtifactError
    from .runtime.errors import ArtifactNotFound as ArtifactNotFound
    from .runtime.errors import ArtifactPathError as ArtifactPathError
    from .runtime.errors import ContextAssemblyError as ContextAssemblyError
    from .runtime.errors import ContextAssemblyFailed as ContextAssemblyFailed
    from .runtime.errors import ContextWindowError as ContextWindowError
    from .runtime.errors import ConversationError as ConversationError
    from .runtime.errors import MaxIterationsExceeded as MaxIterationsExceeded
    from .runtime.errors import PersistenceError as PersistenceError
    from .runtime.errors import PromptTemplateError as PromptTemplateError
    from .runtime.errors import ProviderError as ProviderError
    from .runtime.errors import StepFailed as StepFailed
    from .runtime.errors import ToolDefinitionError as ToolDefinitionError
    from .runtime.errors import VectorStoreError as VectorStoreError
    from .runtime.failures import CompensationRecord as CompensationRecord
    from .runtime.failures import CompletedStep as CompletedStep
    from .runtime.failures import Failure as Failure
    from .runtime.loop import AgentRuntime as AgentRuntime
    from .runtime.persistence import load_run as load_run
    from .runtime.persistence import save_run as save_run
    from .runtime.prompts import PromptTemplates as PromptTemplates
    from .runtime.providers import AnthropicMessagesProvider as AnthropicMessagesProvider
    from .runtime.providers import GeminiProvider as GeminiProvider
    from .runtime.providers import OpenAIChatProvider as OpenAIChatProvider
    from .runtime.providers import OpenAIResponsesProvider as OpenAIResponsesProvider
    from .runtime.providers import Provider as Provider
    from .runtime.retrieval import Document as Document
    from .runtime.retrieval import InMemoryVectorStore as InMemoryVectorStore
    from .runtime.retrieval import SearchCall as SearchCall
    from .runtime.retrieval import SearchResult as SearchResult
    from .runtime.retrieval import VectorSearch as VectorSearch
    from .runtime.subagents import Delegation as Delegation
    from .runtime.subagents import SubAgent as SubAgent
    from .runtime.subagents import SubAgentSummary as SubAgentSummary
    from .runtime.subagents import parse_summary as parse_summary
    from .runtime.tools import RunContext as RunContext
    from .runtime.tools import Tool as Tool
    from .runtime.tools import tool as tool
    from .runtime.window import ContextWindow as ContextWindow
    from .runtime.window import Pruned as Pruned
    from .runtime.window import TiktokenCounter as TiktokenCounter
    from .traffic.capture.exchange import Exchange as Exchange
    from .traffic.capture.runs import CapturedRuns as CapturedRuns
    from .traffic.capture.runs import build_contexts as build_contexts
    from .traffic.capture.runs import capture_contexts as capture_contexts
    from .traffic.capture.runs import contexts_from_cassette as contexts_from_cassette
    from .traffic.cassettes.defaults import RecordMode as RecordMode
    from .traffic.cassettes.network import expect_network_blocked as expect_network_blocked
    from .traffic.cassettes.session import Cassette as Cassette
    from .traffic.codecs.base import Completion as Completion
    from .traffic.codecs.base import Usage as Usage
    from .traffic.errors import CaptureError as CaptureError
    from .traffic.errors import CassetteConfigError as CassetteConfigError
    from .traffic.errors import CassetteError as CassetteError
    from .traffic.errors import CassetteFormatError as CassetteFormatError
    from .traffic.errors import CassetteMiss as CassetteMiss
    from .traffic.errors import CassetteWriteError as CassetteWriteError
    from .traffic.errors import CodecError as CodecError
    from .traffic.errors import NetworkBlocked as NetworkBlocked
    from .traffic.errors import NotOneConversation as NotOneConversation
    from .traffic.errors import PartialRecording as PartialRecording
    from .traffic.errors import StaleCassette as StaleCassette
    from .traffic.errors import UnscopedRequest as UnscopedRequest

__version__ = "0.1.0.dev0"

#: Every public name, with the module that defines it: the source of ``__all__`` and of
#: the loader below. A name is imported on first use (PEP 562), so that loading the pytest
#: plugin, or one module of the package, does not import all of it (start-up time).
_PUBLIC: dict[str, str] = {
    # the context
    "AgentContext": "context.model",
    "Iteration": "context.model",
    "Message": "context.model",
    "ToolCall": "context.model",
    "ToolResult": "context.model",
    "ToolSpec": "context.tools",
    "History": "context.history",
    "Seq": "context._seq",
    "FrozenDict": "context._seq",
    # the runtime
    "Agent": "runtime.agent",
    "AgentRuntime": "runtime.loop",
    "RunResult": "runtime.agent",
    "RunContext": "runtime.tools",
    "ContextWindow": "runtime.window",
    "Pruned": "runtime.window",
    "TiktokenCounter": "runtime.window",
    "save_run": "runtime.persistence",
    "load_run": "runtime.persistence",
    "Tool": "runtime.tools",
    "tool": "runtime.tools",
    # failure handling and sub-agents
    "Failure": "runtime.failures",
    "CompletedStep": "runtime.failures",
    "CompensationRecord": "runtime.failures",
    "SubAgent": "runtime.subagents",
    "Delegation": "runtime.subagents",
    "SubAgentSummary": "runtime.subagents",
    "parse_summary": "runtime.subagents",
    # context assembly, retrieval, artifacts, prompt templates
    "FromState": "runtime.assembly",
    "FromRetrieval": "runtime.assembly",
    "Text": "runtime.assembly",
    "ContextSource": "runtime.assembly",
    "validate_sources": "runtime.assembly",
    "assemble": "runtime.assembly",
    "AssembledContext": "runtime.assembly",
    "Segment": "runtime.assembly",
    "VectorSearch": "runtime.retrieval",
    "Document": "runtime.retrieval",
    "SearchResult": "runtime.retrieval",
    "SearchCall": "runtime.retrieval",
    "InMemoryVectorStore": "runtime.retrieval",
    "ArtifactStore": "runtime.artifacts",
    "ArtifactRef": "runtime.artifacts",
    "ArtifactChanges": "runtime.artifacts",
    "LocalArtifactStore": "runtime.artifacts",
    "TrackedArtifactStore": "runtime.artifacts",
    "write_artifact": "runtime.artifacts",
    "read_artifact": "runtime.artifacts",
    "list_artifacts": "runtime.artifacts",
    "ARTIFACT_TOOLS": "runtime.artifacts",
    "PromptTemplates": "runtime.prompts",
    # providers and wire formats
    "Provider": "runtime.providers",
    "OpenAIChatProvider": "runtime.providers",
    "OpenAIResponsesProvider": "runtime.providers",
    "AnthropicMessagesProvider": "runtime.providers",
    "GeminiProvider": "runtime.providers",
    "Completion": "traffic.codecs.base",
    "Usage": "traffic.codecs.base",
    # time and ids
    "Clock": "doubles.clock",
    "IdFactory": "doubles.clock",
    "StepClock": "context.clock",
    "SystemClock": "doubles.clock",
    "SequentialIds": "doubles.clock",
    "RandomIds": "doubles.clock",
    "FrozenClock": "doubles.frozen_clock",
    # cassettes
    "Cassette": "traffic.cassettes.session",
    "RecordMode": "traffic.cassettes.defaults",
    # capture (contexts from any agent's traffic)
    "CapturedRuns": "traffic.capture.runs",
    "Exchange": "traffic.capture.exchange",
    "build_contexts": "traffic.capture.runs",
    "capture_contexts": "traffic.capture.runs",
    "contexts_from_cassette": "traffic.capture.runs",
    # fakes
    "FakeLLM": "doubles.fake_llm",
    "FakeModelCall": "doubles.scripted_model",
    "FakeTools": "doubles.fake_tools",
    "FakeToolCall": "doubles.fake_tools",
    "LoopbackProvider": "doubles.loopback",
    # assertions
    "matches": "assertions.patterns.report",
    "mismatches": "assertions.patterns.report",
    "Mismatch": "assertions.patterns.mismatch",
    "Pattern": "assertions.patterns.base",
    "ANY": "assertions.patterns.base",
    "Regex": "assertions.patterns.base",
    "Predicate": "assertions.patterns.base",
    "Like": "assertions.patterns.structure",
    "Exact": "assertions.patterns.structure",
    "Unordered": "assertions.patterns.structure",
    "Contains": "assertions.patterns.structure",
    "Each": "assertions.patterns.structure",
    "Nowhere": "assertions.patterns.structure",
    "AllOf": "assertions.patterns.base",
    "AnyOf": "assertions.patterns.base",
    "Not": "assertions.patterns.base",
    # trajectories
    "Trajectory": "assertions.trajectory",
    "LocatedCall": "context.nested",
    "tool_calls": "assertions.trajectory",
    "nested_runs": "assertions.trajectory",
    # reports and the gate
    "load_report": "reports.records",
    "render_html": "reports.html",
    "evaluate_gate": "reports.gate",
    "compare_reports": "reports.gate",
    "GateTolerance": "reports.gate",
    "GateResult": "reports.gate",
    "BaselineComparison": "reports.gate",
    # budgets and run figures
    "Budget": "reports.budgets",
    "BudgetCheck": "reports.budgets",
    "PriceTable": "context.figures",
    "RunStats": "context.figures",
    "run_stats": "context.figures",
    # snapshots (imported on first use: the assertion and the extension need syrupy, and so
    # pytest)
    "AgentSnapshotAssertion": "assertions.snapshots.assertion",
    "AgentSnapshotExtension": "assertions.snapshots.extension",
    "SnapshotOptions": "assertions.snapshots.options",
    # exceptions
    "AgentCtxError": "exceptions",
    "RunError": "exceptions",
    "AgentAssertionError": "exceptions",
    "UsageError": "exceptions",
    "AgentDefinitionError": "runtime.errors",
    "ArtifactError": "runtime.errors",
    "ArtifactNotFound": "runtime.errors",
    "ArtifactPathError": "runtime.errors",
    "ContextAssemblyError": "runtime.errors",
    "ContextAssemblyFailed": "runtime.errors",
    "PromptTemplateError": "runtime.errors",
    "VectorStoreError": "runtime.errors",
    "CaptureError": "traffic.errors",
    "CassetteError": "traffic.errors",
    "CassetteConfigError": "traffic.errors",
    "CassetteFormatError": "traffic.errors",
    "CassetteMiss": "traffic.errors",
    "CassetteWriteError": "traffic.errors",
    "CodecError": "traffic.errors",
    "ContextStateError": "context.errors",
    "ContextWindowError": "runtime.errors",
    "ConversationError": "runtime.errors",
    "PersistenceError": "runtime.errors",
    "EmptyHistory": "context.errors",
    "FakeLLMError": "doubles.errors",
    "FakeToolsError": "doubles.errors",
    "HistoryError": "context.errors",
    "LastEntryNotUserMessage": "context.errors",
    "LoopbackError": "doubles.errors",
    "MaxIterationsExceeded": "runtime.errors",
    "StepFailed": "runtime.errors",
    "MismatchError": "assertions.errors",
    "NetworkBlocked": "traffic.errors",
    "expect_network_blocked": "traffic.cassettes.network",
    "NotOneConversation": "traffic.errors",
    "PartialRecording": "traffic.errors",
    "PatternError": "context.errors",
    "ProviderError": "runtime.errors",
    "ReportError": "reports.errors",
    "BudgetError": "reports.errors",
    "RepeatError": "reports.errors",
    "SnapshotError": "assertions.errors",
    "StaleCassette": "traffic.errors",
    "ToolDefinitionError": "runtime.errors",
    "UnexpectedModelCall": "doubles.errors",
    "UnusedScriptedReplies": "doubles.errors",
    "UnscopedRequest": "traffic.errors",
}

__all__ = [*_PUBLIC, "__version__"]

# The exceptions are bound now: their module is small, and every other module imports it.
globals().update(
    {name: getattr(exceptions, name) for name, module in _PUBLIC.items() if module == "exceptions"}
)

__getattr__ = lazy_getattr(__name__, _PUBLIC)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
