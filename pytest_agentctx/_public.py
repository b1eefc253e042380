"""The package's public names: the table its ``__getattr__`` imports each from and its
``__all__`` lists. Kept out of the package's ``__init__``, whose source pytest parses and
rewrites on every run (see ``_off_assertion_rewriting`` there); this module loads from its
``.pyc``. The stub ``__init__.pyi`` imports the same names for type checkers.
"""

from __future__ import annotations

#: Every public name, with the module that defines it: the source of ``__all__`` and of
#: the loader below. A name is imported on first use (PEP 562), so that loading the pytest
#: plugin, or one module of the package, does not import all of it (start-up time).
PUBLIC: dict[str, str] = {
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

#: The package's name, which its public exceptions show (``pytest_agentctx.CassetteMiss``).
PACKAGE = "pytest_agentctx"


def publish(module: str, namespace: dict[str, object]) -> None:
    """Give the public exceptions that ``module`` (its ``__name__``) defines in ``namespace``
    (its ``globals()``) the package as their module, as each errors module does once its
    classes exist: a failure line then shows ``pytest_agentctx.CassetteMiss``, the name to
    import and catch, not the module that happens to define it. Pickling (pytest-xdist sends
    exceptions between processes) finds them there too, through the package's lazy
    ``__getattr__``."""
    relative = module.removeprefix(PACKAGE + ".")
    for name, where in PUBLIC.items():
        value = namespace.get(name)
        if where == relative and isinstance(value, type) and issubclass(value, BaseException):
            value.__module__ = PACKAGE


__all__ = ["PACKAGE", "PUBLIC", "publish"]
