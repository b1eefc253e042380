"""The names users import: every public name of ``from pytest_agentctx import X``, where it
is defined, and the plugin module the ``pytest11`` entry point names.

The lists are written out, not computed: moving a definition, or adding or dropping a public
name, changes this file too. A name added on purpose goes into ``PUBLIC_NAMES`` with the
module that defines it.

A package with lazily imported names (``pytest_agentctx`` and ``pytest_agentctx.traffic.cassettes``)
lists them twice: in its table (name to defining module), the source of its ``__all__`` and
of its ``__getattr__``, and in imports for type checkers (``pytest_agentctx``: the table in
``_public.py``, the imports in its stub ``__init__.pyi``; the other: ``_PUBLIC`` and a
``TYPE_CHECKING`` block in its ``__init__``). The tests here read both from the source and
check that they agree.
"""

from __future__ import annotations

import ast
import inspect
import tomllib
from importlib import import_module
from pathlib import Path

import pytest
from _pytest.fixtures import FixtureFunctionDefinition

import pytest_agentctx

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
    "Budget": "pytest_agentctx.reports.budgets",
    "BudgetCheck": "pytest_agentctx.reports.budgets",
    "BudgetError": "pytest_agentctx.reports.errors",
    "CaptureError": "pytest_agentctx.traffic.errors",
    "CapturedRuns": "pytest_agentctx.traffic.capture.runs",
    "Cassette": "pytest_agentctx.traffic.cassettes.session",
    "CassetteConfigError": "pytest_agentctx.traffic.errors",
    "CassetteError": "pytest_agentctx.traffic.errors",
    "CassetteFormatError": "pytest_agentctx.traffic.errors",
    "CassetteMiss": "pytest_agentctx.traffic.errors",
    "CassetteWriteError": "pytest_agentctx.traffic.errors",
    "Clock": "pytest_agentctx.doubles.clock",
    "CodecError": "pytest_agentctx.traffic.errors",
    "CompensationRecord": "pytest_agentctx.runtime.failures",
    "CompletedStep": "pytest_agentctx.runtime.failures",
    "Completion": "pytest_agentctx.traffic.codecs.base",
    "Contains": "pytest_agentctx.assertions.patterns.structure",
    "ContextAssemblyError": "pytest_agentctx.runtime.errors",
    "ContextAssemblyFailed": "pytest_agentctx.runtime.errors",
    "ContextSource": "pytest_agentctx.runtime.assembly",
    "ContextStateError": "pytest_agentctx.context.errors",
    "ContextWindow": "pytest_agentctx.runtime.window",
    "ContextWindowError": "pytest_agentctx.runtime.errors",
    "ConversationError": "pytest_agentctx.runtime.errors",
    "Delegation": "pytest_agentctx.runtime.subagents",
    "Document": "pytest_agentctx.runtime.retrieval",
    "Each": "pytest_agentctx.assertions.patterns.structure",
    "EmptyHistory": "pytest_agentctx.context.errors",
    "Exact": "pytest_agentctx.assertions.patterns.structure",
    "Exchange": "pytest_agentctx.traffic.capture.exchange",
    "Failure": "pytest_agentctx.runtime.failures",
    "FakeLLM": "pytest_agentctx.doubles.fake_llm",
    "FakeLLMError": "pytest_agentctx.doubles.errors",
    "FakeModelCall": "pytest_agentctx.doubles.scripted_model",
    "FakeToolCall": "pytest_agentctx.doubles.fake_tools",
    "FakeTools": "pytest_agentctx.doubles.fake_tools",
    "FakeToolsError": "pytest_agentctx.doubles.errors",
    "FromRetrieval": "pytest_agentctx.runtime.assembly",
    "FromState": "pytest_agentctx.runtime.assembly",
    "FrozenClock": "pytest_agentctx.doubles.frozen_clock",
    "FrozenDict": "pytest_agentctx.context._seq",
    "GateResult": "pytest_agentctx.reports.gate",
    "GateTolerance": "pytest_agentctx.reports.gate",
    "GeminiProvider": "pytest_agentctx.runtime.providers",
    "History": "pytest_agentctx.context.history",
    "HistoryError": "pytest_agentctx.context.errors",
    "IdFactory": "pytest_agentctx.doubles.clock",
    "InMemoryVectorStore": "pytest_agentctx.runtime.retrieval",
    "Iteration": "pytest_agentctx.context.model",
    "LastEntryNotUserMessage": "pytest_agentctx.context.errors",
    "Like": "pytest_agentctx.assertions.patterns.structure",
    "LocalArtifactStore": "pytest_agentctx.runtime.artifacts",
    "LocatedCall": "pytest_agentctx.context.nested",
    "LoopbackError": "pytest_agentctx.doubles.errors",
    "LoopbackProvider": "pytest_agentctx.doubles.loopback",
    "MaxIterationsExceeded": "pytest_agentctx.runtime.errors",
    "Message": "pytest_agentctx.context.model",
    "Mismatch": "pytest_agentctx.assertions.patterns.mismatch",
    "MismatchError": "pytest_agentctx.assertions.errors",
    "NetworkBlocked": "pytest_agentctx.traffic.errors",
    "expect_network_blocked": "pytest_agentctx.traffic.cassettes.network",
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
    "PriceTable": "pytest_agentctx.context.figures",
    "PromptTemplateError": "pytest_agentctx.runtime.errors",
    "PromptTemplates": "pytest_agentctx.runtime.prompts",
    "Provider": "pytest_agentctx.runtime.providers",
    "ProviderError": "pytest_agentctx.runtime.errors",
    "Pruned": "pytest_agentctx.runtime.window",
    "RandomIds": "pytest_agentctx.doubles.clock",
    "RecordMode": "pytest_agentctx.traffic.cassettes.defaults",
    "Regex": "pytest_agentctx.assertions.patterns.base",
    "RepeatError": "pytest_agentctx.reports.errors",
    "ReportError": "pytest_agentctx.reports.errors",
    "RunContext": "pytest_agentctx.runtime.tools",
    "RunResult": "pytest_agentctx.runtime.agent",
    "RunStats": "pytest_agentctx.context.figures",
    "SearchCall": "pytest_agentctx.runtime.retrieval",
    "SearchResult": "pytest_agentctx.runtime.retrieval",
    "Segment": "pytest_agentctx.runtime.assembly",
    "Seq": "pytest_agentctx.context._seq",
    "SequentialIds": "pytest_agentctx.doubles.clock",
    "SnapshotError": "pytest_agentctx.assertions.errors",
    "SnapshotOptions": "pytest_agentctx.assertions.snapshots.options",
    "StaleCassette": "pytest_agentctx.traffic.errors",
    "StepClock": "pytest_agentctx.context.clock",
    "StepFailed": "pytest_agentctx.runtime.errors",
    "SubAgent": "pytest_agentctx.runtime.subagents",
    "SubAgentSummary": "pytest_agentctx.runtime.subagents",
    "SystemClock": "pytest_agentctx.doubles.clock",
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
    "load_report": "pytest_agentctx.reports.records",
    "load_run": "pytest_agentctx.runtime.persistence",
    "matches": "pytest_agentctx.assertions.patterns.report",
    "mismatches": "pytest_agentctx.assertions.patterns.report",
    "nested_runs": "pytest_agentctx.assertions.trajectory",
    "parse_summary": "pytest_agentctx.runtime.subagents",
    "read_artifact": "pytest_agentctx.runtime.artifacts",
    "render_html": "pytest_agentctx.reports.html",
    "run_stats": "pytest_agentctx.context.figures",
    "save_run": "pytest_agentctx.runtime.persistence",
    "tool": "pytest_agentctx.runtime.tools",
    "tool_calls": "pytest_agentctx.assertions.trajectory",
    "validate_sources": "pytest_agentctx.runtime.assembly",
    "write_artifact": "pytest_agentctx.runtime.artifacts",
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
LAZY_PACKAGES = {"pytest_agentctx": ["__version__"], "pytest_agentctx.traffic.cassettes": []}


def lazy_declarations(package: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """The table of public names of ``package`` as (name, module) pairs in source order, and
    the imports it gives type checkers as (name, alias, module) triples; modules are
    absolute. ``pytest_agentctx`` keeps its table in ``_public.py`` (``PUBLIC``) and its
    imports in its stub, ``__init__.pyi``; ``pytest_agentctx.traffic.cassettes`` keeps both
    in its ``__init__`` (``_PUBLIC`` and a ``TYPE_CHECKING`` block)."""
    init = Path(inspect.getfile(import_module(package)))
    if (init.parent / "_public.py").exists():
        table_source = (init.parent / "_public.py").read_text(encoding="utf-8")
        imports_body = ast.parse(init.with_suffix(".pyi").read_text(encoding="utf-8")).body
        table_name = "PUBLIC"
    else:
        table_source = init.read_text(encoding="utf-8")
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
                (ast.literal_eval(key), f"{package}.{ast.literal_eval(value)}")
                for key, value in zip(node.value.keys, node.value.values, strict=True)
                if key is not None
            ]
    imports: list[tuple[str, str, str]] = []
    for statement in imports_body:
        if not isinstance(statement, ast.ImportFrom) or statement.module is None:
            continue  # the stub's own names (``__version__``), its submodule import
        assert statement.level == 1
        imports += [
            (alias.name, alias.asname or "", f"{package}.{statement.module}")
            for alias in statement.names
        ]
    return table, imports


@pytest.mark.parametrize("package", sorted(LAZY_PACKAGES))
async def test_the_type_checking_imports_are_the_public_table(package: str) -> None:
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
async def test_all_is_the_public_table(package: str, own_names: list[str]) -> None:
    table, _ = lazy_declarations(package)

    assert import_module(package).__all__ == [name for name, _ in table] + own_names


async def test_the_public_table_gives_the_defining_modules() -> None:
    table, _ = lazy_declarations("pytest_agentctx")

    assert dict(table) | {"__version__": "pytest_agentctx"} == PUBLIC_NAMES


async def test_dir_lists_every_public_name() -> None:
    listed = dir(pytest_agentctx)

    assert sorted(set(pytest_agentctx.__all__) - set(listed)) == []
    assert listed == sorted(listed)


async def test_all_lists_exactly_the_public_names() -> None:
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
async def test_a_public_name_is_the_object_its_module_defines(name: str, module: str) -> None:
    value = getattr(pytest_agentctx, name)

    assert value is getattr(import_module(module), name)
    if inspect.isclass(value) and issubclass(value, BaseException):
        assert value.__module__ == "pytest_agentctx"  # what a failure line shows
    elif inspect.isclass(value) or inspect.isfunction(value):
        assert value.__module__ == module


async def test_the_entry_point_names_the_plugin_module() -> None:
    entry_points = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]["pytest11"]

    assert entry_points == dict([ENTRY_POINT])


async def test_pytest_loaded_the_entry_point_module_as_the_plugin(
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
async def test_the_plugin_module_has_its_hook(module: str, hook: str) -> None:
    assert callable(getattr(plugin_modules()[module], hook, None))


async def test_the_plugin_modules_have_these_hooks_only(pytestconfig: pytest.Config) -> None:
    found = sorted(
        (name, hook) for name, module in plugin_modules().items() for hook in hooks_of(module)
    )

    assert found == PLUGIN_HOOKS
    # the entry point module's hooks register the others and configure them in order
    assert hooks_of(import_module(ENTRY_POINT[1])) == {"pytest_addhooks", "pytest_configure"}
    for name in import_module(ENTRY_POINT[1]).PLUGIN_MODULES:  # each registered by its name
        assert pytestconfig.pluginmanager.get_plugin(name) is import_module(name)


@pytest.mark.parametrize("fixture", PLUGIN_FIXTURES)
async def test_the_plugin_module_has_its_fixture(fixture: str) -> None:
    # pytest finds a plugin's fixtures among the attributes of the modules it registered
    definitions = [getattr(module, fixture, None) for module in plugin_modules().values()]
    found = [d for d in definitions if isinstance(d, FixtureFunctionDefinition)]

    assert len(found) == 1
