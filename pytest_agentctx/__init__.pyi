"""Type stub of the package's ``__init__``: the public names, each re-exported explicitly
(``X as X``) from the module that defines it, for type checkers, which do not run the
package's ``__getattr__``. At run time the package imports each name on first use, from
the table of :mod:`pytest_agentctx._public`; tests/unit/test_public_names.py checks that the
two agree."""

from . import exceptions as exceptions
from .assertions.errors import MismatchError as MismatchError, SnapshotError as SnapshotError
from .assertions.patterns.base import (
    ANY as ANY,
    AllOf as AllOf,
    AnyOf as AnyOf,
    Not as Not,
    Pattern as Pattern,
    Predicate as Predicate,
    Regex as Regex,
)
from .assertions.patterns.mismatch import Mismatch as Mismatch
from .assertions.patterns.report import matches as matches, mismatches as mismatches
from .assertions.patterns.structure import (
    Contains as Contains,
    Each as Each,
    Exact as Exact,
    Like as Like,
    Nowhere as Nowhere,
    Unordered as Unordered,
)
from .assertions.snapshots.assertion import AgentSnapshotAssertion as AgentSnapshotAssertion
from .assertions.snapshots.extension import AgentSnapshotExtension as AgentSnapshotExtension
from .assertions.snapshots.options import SnapshotOptions as SnapshotOptions
from .assertions.trajectory import (
    Trajectory as Trajectory,
    nested_runs as nested_runs,
    tool_calls as tool_calls,
)
from .context._seq import FrozenDict as FrozenDict, Seq as Seq
from .context.clock import Clock as Clock, StepClock as StepClock, SystemClock as SystemClock
from .context.errors import (
    ContextStateError as ContextStateError,
    EmptyHistory as EmptyHistory,
    HistoryError as HistoryError,
    LastEntryNotUserMessage as LastEntryNotUserMessage,
    PatternError as PatternError,
)
from .context.history import History as History
from .context.model import (
    AgentContext as AgentContext,
    Iteration as Iteration,
    Message as Message,
    ToolCall as ToolCall,
    ToolResult as ToolResult,
)
from .context.nested import LocatedCall as LocatedCall
from .context.tools import ToolSpec as ToolSpec
from .doubles.errors import (
    FakeLLMError as FakeLLMError,
    FakeToolsError as FakeToolsError,
    LoopbackError as LoopbackError,
    UnexpectedModelCall as UnexpectedModelCall,
    UnscriptedMcpRequest as UnscriptedMcpRequest,
    UnusedScriptedReplies as UnusedScriptedReplies,
)
from .doubles.fake_llm import FakeLLM as FakeLLM
from .doubles.fake_mcp.protocol import McpToolCall as McpToolCall
from .doubles.fake_mcp.server import FakeMcp as FakeMcp
from .doubles.fake_tools import FakeToolCall as FakeToolCall, FakeTools as FakeTools
from .doubles.freeze import FrozenClock as FrozenClock
from .doubles.ids import (
    IdFactory as IdFactory,
    RandomIds as RandomIds,
    SequentialIds as SequentialIds,
)
from .doubles.loopback import LoopbackProvider as LoopbackProvider
from .doubles.scripted_model import FakeModelCall as FakeModelCall
from .evals.errors import (
    JudgeError as JudgeError,
    JudgeReplyError as JudgeReplyError,
    SimulatedUserError as SimulatedUserError,
    SimulatedUserReplyError as SimulatedUserReplyError,
    VerdictFailed as VerdictFailed,
)
from .evals.judge import Judge as Judge
from .evals.simulated_user import SimulatedUser as SimulatedUser, Transcript as Transcript
from .evals.verdict import Verdict as Verdict
from .exceptions import (
    AgentAssertionError as AgentAssertionError,
    AgentCtxError as AgentCtxError,
    RunError as RunError,
    UsageError as UsageError,
)
from .reports.budgets import Budget as Budget, BudgetCheck as BudgetCheck
from .reports.errors import (
    BudgetError as BudgetError,
    RepeatError as RepeatError,
    ReportError as ReportError,
    StatisticsError as StatisticsError,
)
from .reports.figures import PriceTable as PriceTable, RunStats as RunStats, run_stats as run_stats
from .reports.gate import (
    BaselineComparison as BaselineComparison,
    GateResult as GateResult,
    GateTolerance as GateTolerance,
    compare_reports as compare_reports,
    evaluate_gate as evaluate_gate,
)
from .reports.gate_records import GateRecord as GateRecord
from .reports.html import render_html as render_html
from .reports.session_report import load_report as load_report
from .runtime.agent import Agent as Agent, RunResult as RunResult, SubAgent as SubAgent
from .runtime.artifacts import (
    ARTIFACT_TOOLS as ARTIFACT_TOOLS,
    ArtifactChanges as ArtifactChanges,
    ArtifactRef as ArtifactRef,
    ArtifactStore as ArtifactStore,
    LocalArtifactStore as LocalArtifactStore,
    TrackedArtifactStore as TrackedArtifactStore,
    list_artifacts as list_artifacts,
    read_artifact as read_artifact,
    write_artifact as write_artifact,
)
from .runtime.assembly import (
    AssembledContext as AssembledContext,
    ContextSource as ContextSource,
    FromRetrieval as FromRetrieval,
    FromState as FromState,
    Segment as Segment,
    Text as Text,
    assemble as assemble,
    validate_sources as validate_sources,
)
from .runtime.delegation import (
    Delegation as Delegation,
    SubAgentSummary as SubAgentSummary,
    parse_summary as parse_summary,
)
from .runtime.errors import (
    AgentDefinitionError as AgentDefinitionError,
    ArtifactError as ArtifactError,
    ArtifactNotFound as ArtifactNotFound,
    ArtifactPathError as ArtifactPathError,
    ContextAssemblyError as ContextAssemblyError,
    ContextAssemblyFailed as ContextAssemblyFailed,
    ContextWindowError as ContextWindowError,
    ConversationError as ConversationError,
    MaxIterationsExceeded as MaxIterationsExceeded,
    PersistenceError as PersistenceError,
    PromptTemplateError as PromptTemplateError,
    ProviderError as ProviderError,
    StepFailed as StepFailed,
    ToolDefinitionError as ToolDefinitionError,
    VectorStoreError as VectorStoreError,
)
from .runtime.loop import AgentRuntime as AgentRuntime
from .runtime.persistence import load_run as load_run, save_run as save_run
from .runtime.prompts import PromptTemplates as PromptTemplates
from .runtime.providers import (
    AnthropicMessagesProvider as AnthropicMessagesProvider,
    BedrockProvider as BedrockProvider,
    GeminiProvider as GeminiProvider,
    OpenAIChatProvider as OpenAIChatProvider,
    OpenAIResponsesProvider as OpenAIResponsesProvider,
    Provider as Provider,
)
from .runtime.recovery import (
    CompensationRecord as CompensationRecord,
    CompletedStep as CompletedStep,
    Failure as Failure,
)
from .runtime.retrieval import (
    Document as Document,
    InMemoryVectorStore as InMemoryVectorStore,
    SearchCall as SearchCall,
    SearchResult as SearchResult,
    VectorSearch as VectorSearch,
)
from .runtime.tools import RunContext as RunContext, Tool as Tool, tool as tool
from .runtime.window import (
    ContextWindow as ContextWindow,
    Pruned as Pruned,
    TiktokenCounter as TiktokenCounter,
)
from .traffic.capture.exchange import Exchange as Exchange
from .traffic.capture.runs import (
    CapturedRuns as CapturedRuns,
    build_contexts as build_contexts,
    capture_contexts as capture_contexts,
    contexts_from_cassette as contexts_from_cassette,
)
from .traffic.cassettes.defaults import RecordMode as RecordMode
from .traffic.cassettes.network import expect_network_blocked as expect_network_blocked
from .traffic.cassettes.session import Cassette as Cassette
from .traffic.codecs.base import Completion as Completion, Usage as Usage
from .traffic.errors import (
    CacheMarkerError as CacheMarkerError,
    CaptureError as CaptureError,
    CassetteConfigError as CassetteConfigError,
    CassetteError as CassetteError,
    CassetteFormatError as CassetteFormatError,
    CassetteMiss as CassetteMiss,
    CassetteWriteError as CassetteWriteError,
    CodecError as CodecError,
    NetworkBlocked as NetworkBlocked,
    NotOneConversation as NotOneConversation,
    PartialRecording as PartialRecording,
    StaleCassette as StaleCassette,
    UnscopedRequest as UnscopedRequest,
)
from .traffic.roles import model_role as model_role

__version__: str
__all__: list[str]
