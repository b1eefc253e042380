"""The supported import paths and their names: every public name of ``from pytest_agentctx
import X`` and of ``from pytest_agentctx.testing import X``, where each is defined, and the
plugin module the ``pytest11`` entry point names (docs/architecture.md, "What you may
import").

The lists are written out, not computed: moving a definition, or adding or dropping a public
name, changes this file too. A name added on purpose goes into ``PUBLIC_NAMES`` (or
``TESTING_NAMES``) with the module that defines it.

A module with lazily imported names (``pytest_agentctx``, ``pytest_agentctx.testing`` and the
internal ``pytest_agentctx.traffic.cassettes``) lists them twice: in its table (name to
defining module), the source of its ``__all__`` and of its ``__getattr__``, and in imports for
type checkers (``pytest_agentctx``: the table in ``_public.py``, the imports in its stub
``__init__.pyi``; the others: ``_PUBLIC`` and a ``TYPE_CHECKING`` block in the module). The
tests here read both from the source and check that they agree, and with the lists here.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import tomllib
from importlib import import_module
from pathlib import Path

import pytest

import pytest_agentctx
import pytest_agentctx.testing

#: Every public name of the package, with the module that defines it.
PUBLIC_NAMES: dict[str, str] = {
    "ANY": "pytest_agentctx.assertions.patterns.base",
    "ARTIFACT_TOOLS": "pytest_agentctx.runtime.artifacts",
    "Agent": "pytest_agentctx.runtime.agent",
    "AgentContext": "pytest_agentctx.context.model",
    "AgentCtxError": "pytest_agentctx.exceptions",
    "RunError": "pytest_agentctx.exceptions",
    "AgentAssertionError": "pytest_agentctx.exceptions",
    "UsageError": "pytest_agentctx.exceptions",
    "AgentDefinitionError": "pytest_agentctx.runtime.errors",
    "AgentRuntime": "pytest_agentctx.runtime.loop",
    "AgentSnapshotAssertion": "pytest_agentctx.assertions.snapshots.assertion",
    "AgentSnapshotExtension": "pytest_agentctx.assertions.snapshots.extension",
    "AllOf": "pytest_agentctx.assertions.patterns.base",
    "AnthropicMessagesProvider": "pytest_agentctx.runtime.providers",
    "AnyOf": "pytest_agentctx.assertions.patterns.base",
    "ArtifactChanges": "pytest_agentctx.runtime.artifacts",
    "ArtifactError": "pytest_agentctx.runtime.errors",
    "ArtifactNotFound": "pytest_agentctx.runtime.errors",
    "ArtifactPathError": "pytest_agentctx.runtime.errors",
    "ArtifactRef": "pytest_agentctx.runtime.artifacts",
    "ArtifactStore": "pytest_agentctx.runtime.artifacts",
    "AssembledContext": "pytest_agentctx.runtime.assembly",
    "BaselineComparison": "pytest_agentctx.reports.gate",
    "BedrockProvider": "pytest_agentctx.runtime.providers",
    "Budget": "pytest_agentctx.reports.budgets",
    "BudgetCheck": "pytest_agentctx.reports.budgets",
    "BudgetError": "pytest_agentctx.reports.errors",
    "CaptureError": "pytest_agentctx.traffic.errors",
    "CacheMarkerError": "pytest_agentctx.traffic.errors",
    "CapturedRuns": "pytest_agentctx.traffic.capture.runs",
    "Cassette": "pytest_agentctx.traffic.cassettes.session",
    "CassetteConfigError": "pytest_agentctx.traffic.errors",
    "CassetteError": "pytest_agentctx.traffic.errors",
    "CassetteFormatError": "pytest_agentctx.traffic.errors",
    "CassetteMiss": "pytest_agentctx.traffic.errors",
    "CassetteWriteError": "pytest_agentctx.traffic.errors",
    "Clock": "pytest_agentctx.context.clock",
    "CodecError": "pytest_agentctx.traffic.errors",
    "CompensationRecord": "pytest_agentctx.runtime.recovery",
    "CompletedStep": "pytest_agentctx.runtime.recovery",
    "Completion": "pytest_agentctx.traffic.codecs.base",
    "Contains": "pytest_agentctx.assertions.patterns.structure",
    "ContextAssemblyError": "pytest_agentctx.runtime.errors",
    "ContextAssemblyFailed": "pytest_agentctx.runtime.errors",
    "ContextSource": "pytest_agentctx.runtime.assembly",
    "ContextStateError": "pytest_agentctx.context.errors",
    "ContextWindow": "pytest_agentctx.runtime.window",
    "ContextWindowError": "pytest_agentctx.runtime.errors",
    "ConversationError": "pytest_agentctx.runtime.errors",
    "Delegation": "pytest_agentctx.runtime.delegation",
    "Document": "pytest_agentctx.runtime.retrieval",
    "Each": "pytest_agentctx.assertions.patterns.structure",
    "EmptyHistory": "pytest_agentctx.context.errors",
    "Exact": "pytest_agentctx.assertions.patterns.structure",
    "Exchange": "pytest_agentctx.traffic.capture.exchange",
    "Failure": "pytest_agentctx.runtime.recovery",
    "FakeLLM": "pytest_agentctx.doubles.fake_llm",
    "FakeLLMError": "pytest_agentctx.doubles.errors",
    "FakeMcp": "pytest_agentctx.doubles.fake_mcp.server",
    "McpToolCall": "pytest_agentctx.doubles.fake_mcp.protocol",
    "FakeModelCall": "pytest_agentctx.doubles.scripted_model",
    "FakeToolCall": "pytest_agentctx.doubles.fake_tools",
    "FakeTools": "pytest_agentctx.doubles.fake_tools",
    "FakeToolsError": "pytest_agentctx.doubles.errors",
    "FromRetrieval": "pytest_agentctx.runtime.assembly",
    "FromState": "pytest_agentctx.runtime.assembly",
    "FrozenClock": "pytest_agentctx.doubles.freeze",
    "FrozenDict": "pytest_agentctx.context._seq",
    "GateRecord": "pytest_agentctx.reports.gate_records",
    "GateResult": "pytest_agentctx.reports.gate",
    "GateTolerance": "pytest_agentctx.reports.gate",
    "GeminiProvider": "pytest_agentctx.runtime.providers",
    "History": "pytest_agentctx.context.history",
    "HistoryError": "pytest_agentctx.context.errors",
    "IdFactory": "pytest_agentctx.doubles.ids",
    "InMemoryVectorStore": "pytest_agentctx.runtime.retrieval",
    "Iteration": "pytest_agentctx.context.model",
    "LastEntryNotUserMessage": "pytest_agentctx.context.errors",
    "Like": "pytest_agentctx.assertions.patterns.structure",
    "LocalArtifactStore": "pytest_agentctx.runtime.artifacts",
    "LocatedCall": "pytest_agentctx.context.nested",
    "LoopbackError": "pytest_agentctx.doubles.errors",
    "LoopbackProvider": "pytest_agentctx.doubles.loopback",
    "UnscriptedMcpRequest": "pytest_agentctx.doubles.errors",
    "MaxIterationsExceeded": "pytest_agentctx.runtime.errors",
    "Message": "pytest_agentctx.context.model",
    "Mismatch": "pytest_agentctx.assertions.patterns.mismatch",
    "MismatchError": "pytest_agentctx.assertions.errors",
    "NetworkBlocked": "pytest_agentctx.traffic.errors",
    "expect_network_blocked": "pytest_agentctx.traffic.cassettes.network",
    "model_role": "pytest_agentctx.traffic.roles",
    "Judge": "pytest_agentctx.evals.judge",
    "Verdict": "pytest_agentctx.evals.verdict",
    "JudgeError": "pytest_agentctx.evals.errors",
    "JudgeReplyError": "pytest_agentctx.evals.errors",
    "VerdictFailed": "pytest_agentctx.evals.errors",
    "Not": "pytest_agentctx.assertions.patterns.base",
    "NotOneConversation": "pytest_agentctx.traffic.errors",
    "Nowhere": "pytest_agentctx.assertions.patterns.structure",
    "OpenAIChatProvider": "pytest_agentctx.runtime.providers",
    "OpenAIResponsesProvider": "pytest_agentctx.runtime.providers",
    "PartialRecording": "pytest_agentctx.traffic.errors",
    "Pattern": "pytest_agentctx.assertions.patterns.base",
    "PatternError": "pytest_agentctx.context.errors",
    "PersistenceError": "pytest_agentctx.runtime.errors",
    "Predicate": "pytest_agentctx.assertions.patterns.base",
    "PriceTable": "pytest_agentctx.reports.figures",
    "PromptTemplateError": "pytest_agentctx.runtime.errors",
    "PromptTemplates": "pytest_agentctx.runtime.prompts",
    "Provider": "pytest_agentctx.runtime.providers",
    "ProviderError": "pytest_agentctx.runtime.errors",
    "Pruned": "pytest_agentctx.runtime.window",
    "RandomIds": "pytest_agentctx.doubles.ids",
    "RecordMode": "pytest_agentctx.traffic.cassettes.defaults",
    "Regex": "pytest_agentctx.assertions.patterns.base",
    "RepeatError": "pytest_agentctx.reports.errors",
    "ReportError": "pytest_agentctx.reports.errors",
    "StatisticsError": "pytest_agentctx.reports.errors",
    "RunContext": "pytest_agentctx.runtime.tools",
    "RunResult": "pytest_agentctx.runtime.agent",
    "RunStats": "pytest_agentctx.reports.figures",
    "SearchCall": "pytest_agentctx.runtime.retrieval",
    "SearchResult": "pytest_agentctx.runtime.retrieval",
    "Segment": "pytest_agentctx.runtime.assembly",
    "Seq": "pytest_agentctx.context._seq",
    "SequentialIds": "pytest_agentctx.doubles.ids",
    "SnapshotError": "pytest_agentctx.assertions.errors",
    "SnapshotOptions": "pytest_agentctx.assertions.snapshots.options",
    "StaleCassette": "pytest_agentctx.traffic.errors",
    "StepClock": "pytest_agentctx.context.clock",
    "StepFailed": "pytest_agentctx.runtime.errors",
    "SubAgent": "pytest_agentctx.runtime.agent",
    "SubAgentSummary": "pytest_agentctx.runtime.delegation",
    "SystemClock": "pytest_agentctx.context.clock",
    "Text": "pytest_agentctx.runtime.assembly",
    "TiktokenCounter": "pytest_agentctx.runtime.window",
    "Tool": "pytest_agentctx.runtime.tools",
    "ToolCall": "pytest_agentctx.context.model",
    "ToolDefinitionError": "pytest_agentctx.runtime.errors",
    "ToolResult": "pytest_agentctx.context.model",
    "ToolSpec": "pytest_agentctx.context.tools",
    "TrackedArtifactStore": "pytest_agentctx.runtime.artifacts",
    "Trajectory": "pytest_agentctx.assertions.trajectory",
    "UnexpectedModelCall": "pytest_agentctx.doubles.errors",
    "Unordered": "pytest_agentctx.assertions.patterns.structure",
    "UnscopedRequest": "pytest_agentctx.traffic.errors",
    "UnusedScriptedReplies": "pytest_agentctx.doubles.errors",
    "Usage": "pytest_agentctx.traffic.codecs.base",
    "VectorSearch": "pytest_agentctx.runtime.retrieval",
    "VectorStoreError": "pytest_agentctx.runtime.errors",
    "__version__": "pytest_agentctx",
    "assemble": "pytest_agentctx.runtime.assembly",
    "build_contexts": "pytest_agentctx.traffic.capture.runs",
    "capture_contexts": "pytest_agentctx.traffic.capture.runs",
    "compare_reports": "pytest_agentctx.reports.gate",
    "contexts_from_cassette": "pytest_agentctx.traffic.capture.runs",
    "evaluate_gate": "pytest_agentctx.reports.gate",
    "list_artifacts": "pytest_agentctx.runtime.artifacts",
    "load_report": "pytest_agentctx.reports.session_report",
    "load_run": "pytest_agentctx.runtime.persistence",
    "matches": "pytest_agentctx.assertions.patterns.report",
    "mismatches": "pytest_agentctx.assertions.patterns.report",
    "nested_runs": "pytest_agentctx.assertions.trajectory",
    "parse_summary": "pytest_agentctx.runtime.delegation",
    "read_artifact": "pytest_agentctx.runtime.artifacts",
    "render_html": "pytest_agentctx.reports.html",
    "run_stats": "pytest_agentctx.reports.figures",
    "save_run": "pytest_agentctx.runtime.persistence",
    "tool": "pytest_agentctx.runtime.tools",
    "tool_calls": "pytest_agentctx.assertions.trajectory",
    "validate_sources": "pytest_agentctx.runtime.assembly",
    "write_artifact": "pytest_agentctx.runtime.artifacts",
    "SimulatedUser": "pytest_agentctx.evals.simulated_user",
    "Transcript": "pytest_agentctx.evals.simulated_user",
    "SimulatedUserError": "pytest_agentctx.evals.errors",
    "SimulatedUserReplyError": "pytest_agentctx.evals.errors",
}

#: Every name of ``pytest_agentctx.testing``, with the module that defines it.
TESTING_NAMES: dict[str, str] = {
    "Codec": "pytest_agentctx.traffic.codecs.base",
    "Interaction": "pytest_agentctx.traffic.cassettes.fileformat",
    "NetworkGuard": "pytest_agentctx.traffic.cassettes.network",
    "PLACEHOLDER_KEYS": "pytest_agentctx.doubles.fake_llm",
    "Redactor": "pytest_agentctx.traffic.cassettes.redact",
    "RepeatSpec": "pytest_agentctx.reports.repeats",
    "RepeatTally": "pytest_agentctx.reports.repeats",
    "score_means": "pytest_agentctx.reports.repeats",
    "RunRecord": "pytest_agentctx.context.runs",
    "SSEEvent": "pytest_agentctx.traffic.codecs.sse",
    "attach_baselines": "pytest_agentctx.reports.gate",
    "build_record": "pytest_agentctx.reports.record",
    "dump_cassette": "pytest_agentctx.traffic.cassettes.store",
    "failure_entry": "pytest_agentctx.reports.failure_entry",
    "format_sse": "pytest_agentctx.traffic.codecs.sse",
    "get_codec": "pytest_agentctx.traffic.codecs.base",
    "load_cassette": "pytest_agentctx.traffic.cassettes.store",
    "main": "pytest_agentctx.cli.main",
    "parse_sse": "pytest_agentctx.traffic.codecs.sse",
    "serialize": "pytest_agentctx.assertions.snapshots.serialization",
    "write_cassette": "pytest_agentctx.traffic.cassettes.store",
    "Interval": "pytest_agentctx.reports.estimators",
    "wilson": "pytest_agentctx.reports.estimators",
    "clopper_pearson": "pytest_agentctx.reports.estimators",
    "normal_interval": "pytest_agentctx.reports.estimators",
    "pass_at_k": "pytest_agentctx.reports.estimators",
    "pass_hat_k": "pytest_agentctx.reports.estimators",
    "stability": "pytest_agentctx.reports.estimators",
    "bootstrap_mean": "pytest_agentctx.reports.estimators",
    "Flips": "pytest_agentctx.reports.pairing",
    "flips": "pytest_agentctx.reports.pairing",
    "mcnemar_exact": "pytest_agentctx.reports.pairing",
    "paired_bootstrap_difference": "pytest_agentctx.reports.pairing",
    "NonInferiority": "pytest_agentctx.reports.pairing",
    "non_inferior": "pytest_agentctx.reports.pairing",
    "DropCheck": "pytest_agentctx.reports.pairing",
    "check_drop": "pytest_agentctx.reports.pairing",
}

#: The ``pytest11`` entry point: pytest loads this module as the plugin ``agentctx``.
ENTRY_POINT = ("agentctx", "pytest_agentctx.plugin")

#: The hooks the plugin gives pytest, by the module of the plugin that implements each: the
#: entry point module registers these modules (its ``PLUGIN_MODULES``), and each implements
#: a hook under its own name. The entry point module's own ``pytest_configure`` calls the
#: ``configure`` of the features of its ``CONFIGURED``.
PLUGIN_HOOKS = [
    ("async_tests", "pytest_configure"),
    ("async_tests", "pytest_pycollect_makeitem"),
    ("budgets", "pytest_runtest_call"),
    ("budgets", "pytest_runtest_setup"),
    ("budgets", "pytest_unconfigure"),
    ("caches", "pytest_runtest_call"),
    ("caches", "pytest_runtest_setup"),
    ("cassettes", "pytest_runtest_call"),
    ("cassettes", "pytest_unconfigure"),
    ("integration", "pytest_collection_finish"),
    ("integration", "pytest_collection_modifyitems"),
    ("integration", "pytest_configure_node"),
    ("integration", "pytest_runtest_protocol"),
    ("integration", "pytest_unconfigure"),
    ("integration", "pytest_xdist_make_scheduler"),
    ("keys", "pytest_runtest_protocol"),
    ("options", "pytest_addoption"),
    ("options", "pytest_configure"),
    ("options", "pytest_load_initial_conftests"),
    ("options", "pytest_unconfigure"),
    ("repeat", "pytest_runtest_makereport"),
    ("repeat", "pytest_runtest_protocol"),
    ("repeat", "pytest_runtest_setup"),
    ("reports", "pytest_runtest_makereport"),
    ("snapshots", "pytest_assertrepr_compare"),
    ("suites", "pytest_collection_modifyitems"),
    ("vcr_compat", "pytest_load_initial_conftests"),
    ("vcr_compat", "pytest_terminal_summary"),
]

#: The fixtures the plugin's modules define (the public ones and its autouse ones).
PLUGIN_FIXTURES = [
    "_agentctx_cassette",
    "_agentctx_prices",
    "agent_cassette",
    "agent_cassette_config",
    "agent_context",
    "agent_prices",
    "agent_runtime",
    "agent_snapshot",
    "agent_snapshot_config",
    "artifact_store",
    "fake_llm",
    "fake_tools",
    "fake_vector_store",
    "frozen_clock",
]

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

#: The packages whose names are imported on first use, with the names each defines itself
#: (and so lists in ``__all__`` but not in its table).
LAZY_PACKAGES = {
    "pytest_agentctx": ["__version__"],
    "pytest_agentctx.testing": [],
    "pytest_agentctx.traffic.cassettes": [],
}


def lazy_declarations(package: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """The table of public names of ``package`` (a package or a module) as (name, module)
    pairs in source order, and the imports it gives type checkers as (name, alias, module)
    triples; modules are absolute. ``pytest_agentctx`` keeps its table in ``_public.py``
    (``PUBLIC``) and its imports in its stub, ``__init__.pyi``; the others keep both in
    their own source (``_PUBLIC`` and a ``TYPE_CHECKING`` block)."""
    source = Path(inspect.getfile(import_module(package)))
    # what the table's modules and the relative imports are relative to
    anchor = package if source.name == "__init__.py" else package.rpartition(".")[0]
    if (source.parent / "_public.py").exists() and source.name == "__init__.py":
        table_source = (source.parent / "_public.py").read_text(encoding="utf-8")
        imports_body = ast.parse(source.with_suffix(".pyi").read_text(encoding="utf-8")).body
        table_name = "PUBLIC"
    else:
        table_source = source.read_text(encoding="utf-8")
        blocks = [
            node
            for node in ast.parse(table_source).body
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        ]
        imports_body = [statement for block in blocks for statement in block.body]
        table_name = "_PUBLIC"
    table: list[tuple[str, str]] = []
    for node in ast.parse(table_source).body:
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == table_name:
            assert isinstance(node.value, ast.Dict)
            table = [
                (ast.literal_eval(key), f"{anchor}.{ast.literal_eval(value)}")
                for key, value in zip(node.value.keys, node.value.values, strict=True)
                if key is not None
            ]
    imports: list[tuple[str, str, str]] = []
    for statement in imports_body:
        if not isinstance(statement, ast.ImportFrom) or statement.module is None:
            continue  # the stub's own names (``__version__``), its submodule import
        assert statement.level == 1
        imports += [
            (alias.name, alias.asname or "", f"{anchor}.{statement.module}")
            for alias in statement.names
        ]
    return table, imports


@pytest.mark.parametrize("package", sorted(LAZY_PACKAGES))
def test_the_type_checking_imports_are_the_public_table(package: str) -> None:
    table, imports = lazy_declarations(package)
    twice = sorted({name for name, _ in table if [n for n, _ in table].count(name) > 1})
    not_reexported = sorted(name for name, alias, _ in imports if alias != name)

    assert table, f"{package} has no table of public names"
    assert (twice, not_reexported) == ([], []), (
        f"{package}: names listed twice in its table, imports for type checkers not written "
        "`from .module import X as X` (the form type checkers read as a re-export)"
    )
    assert sorted((name, module) for name, _, module in imports) == sorted(table), (
        f"{package}: the imports for type checkers and the table differ: import each "
        "name of the table from the module the table gives, and nothing else"
    )


@pytest.mark.parametrize(("package", "own_names"), sorted(LAZY_PACKAGES.items()))
def test_all_is_the_public_table(package: str, own_names: list[str]) -> None:
    table, _ = lazy_declarations(package)

    assert import_module(package).__all__ == [name for name, _ in table] + own_names


def test_the_public_table_gives_the_defining_modules() -> None:
    table, _ = lazy_declarations("pytest_agentctx")

    assert dict(table) | {"__version__": "pytest_agentctx"} == PUBLIC_NAMES


def test_the_testing_table_gives_the_defining_modules() -> None:
    table, imports = lazy_declarations("pytest_agentctx.testing")

    assert dict(table) == TESTING_NAMES
    assert {name: module for name, _, module in imports} == TESTING_NAMES


def test_the_stub_the_table_and_public_names_list_the_same_names() -> None:
    table, imports = lazy_declarations("pytest_agentctx")
    stub = {name for name, _, _ in imports} | {"__version__"}

    assert stub == {name for name, _ in table} | {"__version__"} == set(PUBLIC_NAMES)


def test_a_name_has_one_supported_path() -> None:
    # a name of pytest_agentctx.testing is not also a name of pytest_agentctx
    assert sorted(set(TESTING_NAMES) & set(PUBLIC_NAMES)) == []


@pytest.mark.parametrize(("name", "module"), sorted(TESTING_NAMES.items()))
def test_a_testing_name_is_the_object_its_module_defines(name: str, module: str) -> None:
    value = getattr(pytest_agentctx.testing, name)

    assert value is getattr(import_module(module), name)
    if inspect.isclass(value) or inspect.isfunction(value):
        assert value.__module__ == module


def test_an_unknown_testing_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"'pytest_agentctx\.testing' has no attribute 'Nope'"):
        pytest_agentctx.testing.Nope  # type: ignore[attr-defined]  # noqa: B018


def test_dir_of_testing_lists_every_testing_name() -> None:
    assert sorted(set(TESTING_NAMES) - set(dir(pytest_agentctx.testing))) == []


def test_importing_testing_loads_none_of_the_modules_of_its_names() -> None:
    # a fresh interpreter: this one has long imported everything
    code = (
        "import sys, pytest_agentctx.testing\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'httpx2', "
        "'syrupy', 'aiohttp', 'pytest_agentctx.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)

    assert (done.returncode, done.stdout.strip()) == (
        0,
        "['pytest_agentctx._lazy', 'pytest_agentctx._public', 'pytest_agentctx.exceptions', "
        "'pytest_agentctx.testing']",
    )


def test_dir_lists_every_public_name() -> None:
    listed = dir(pytest_agentctx)

    assert sorted(set(pytest_agentctx.__all__) - set(listed)) == []
    assert listed == sorted(listed)


def test_all_lists_exactly_the_public_names() -> None:
    listed = pytest_agentctx.__all__
    added = sorted(set(listed) - set(PUBLIC_NAMES))
    dropped = sorted(set(PUBLIC_NAMES) - set(listed))
    twice = sorted(name for name in set(listed) if listed.count(name) > 1)

    assert (added, dropped, twice) == ([], [], []), (
        "pytest_agentctx.__all__ and PUBLIC_NAMES in tests/unit/test_public_names.py differ "
        "(added, dropped, listed twice): put a new public name in PUBLIC_NAMES with the module "
        "that defines it, or restore the dropped one."
    )


@pytest.mark.parametrize(("name", "module"), sorted(PUBLIC_NAMES.items()))
def test_a_public_name_is_the_object_its_module_defines(name: str, module: str) -> None:
    value = getattr(pytest_agentctx, name)

    assert value is getattr(import_module(module), name)
    if inspect.isclass(value) and issubclass(value, BaseException):
        assert value.__module__ == "pytest_agentctx"  # what a failure line shows
    elif inspect.isclass(value) or inspect.isfunction(value):
        assert value.__module__ == module


def test_the_entry_point_names_the_plugin_module() -> None:
    entry_points = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]["pytest11"]

    assert entry_points == dict([ENTRY_POINT])


def test_pytest_loaded_the_entry_point_module_as_the_plugin(
    pytestconfig: pytest.Config,
) -> None:
    name, module = ENTRY_POINT

    assert pytestconfig.pluginmanager.get_plugin(name) is import_module(module)


def plugin_modules() -> dict[str, object]:
    """The modules the entry point module registers, by their short name."""
    names = import_module(ENTRY_POINT[1]).PLUGIN_MODULES
    return {name.rpartition(".")[2]: import_module(name) for name in names}


def hooks_of(module: object) -> set[str]:
    """The hooks ``module`` implements (pytest's own: ``pytest_`` attributes)."""
    return {name for name in dir(module) if name.startswith("pytest_") and name != "pytest_plugins"}


@pytest.mark.parametrize(("module", "hook"), PLUGIN_HOOKS)
def test_the_plugin_module_has_its_hook(module: str, hook: str) -> None:
    assert callable(getattr(plugin_modules()[module], hook, None))


def test_the_plugin_modules_have_these_hooks_only(pytestconfig: pytest.Config) -> None:
    found = sorted(
        (name, hook) for name, module in plugin_modules().items() for hook in hooks_of(module)
    )

    assert found == PLUGIN_HOOKS
    # the entry point module's hooks register the others and configure them in order
    assert hooks_of(import_module(ENTRY_POINT[1])) == {"pytest_addhooks", "pytest_configure"}
    for name in import_module(ENTRY_POINT[1]).PLUGIN_MODULES:  # each registered by its name
        assert pytestconfig.pluginmanager.get_plugin(name) is import_module(name)


def _is_fixture(value: object) -> bool:
    """Whether ``value`` is what ``@pytest.fixture`` made: a ``FixtureFunctionDefinition``
    from pytest 8.4 on, before it the function marked with ``_pytestfixturefunction``."""
    try:
        from _pytest.fixtures import FixtureFunctionDefinition
    except ImportError:  # pytest before 8.4
        return hasattr(value, "_pytestfixturefunction")
    return isinstance(value, FixtureFunctionDefinition)


@pytest.mark.parametrize("fixture", PLUGIN_FIXTURES)
def test_the_plugin_module_has_its_fixture(fixture: str) -> None:
    # pytest finds a plugin's fixtures among the attributes of the modules it registered
    definitions = [getattr(module, fixture, None) for module in plugin_modules().values()]
    found = [d for d in definitions if _is_fixture(d)]

    assert len(found) == 1
