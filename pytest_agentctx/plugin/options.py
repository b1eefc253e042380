"""The plugin's command-line and ini options, and its markers.

Every option of the plugin is added here, in the order ``pytest --help`` lists them: the
clocks, the cassettes, the reports and the gate, the suites, the budgets and the prices.
The features read them at configure time (in the order of
:data:`pytest_agentctx.plugin.CONFIGURED`).

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from pytest_agentctx.exceptions import UsageError
from pytest_agentctx.reports.limits import BUDGET_LIMITS, ini_name
from pytest_agentctx.traffic.cassettes.options import normalise_record_args

if TYPE_CHECKING:
    from pytest_agentctx._untrusted import Limits

#: The limits in force before the session (restored when it ends).
_OUTER_LIMITS: pytest.StashKey[Limits] = pytest.StashKey()
#: The ini options of the limits (the names :data:`pytest_agentctx._untrusted.LIMIT_OPTIONS`
#: gives them, which a unit test checks).
LIMIT_INI = (
    "agent_max_file_bytes",
    "agent_max_body_bytes",
    "agent_max_depth",
    "agent_max_alias_nodes",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentctx", "pytest-agentctx: deterministic tests of LLM agents")
    group.addoption(
        "--agent-clock-start",
        dest="agent_clock_start",
        default=None,
        metavar="ISO8601",
        help="Instant the deterministic clocks start at (ini: agent_clock_start).",
    )
    parser.addini(
        "agent_clock_start",
        "Instant agent_runtime's clock and frozen_clock start at (ISO 8601).",
        default="2025-01-01T00:00:00Z",
    )
    parser.addini(
        "agent_clock_step",
        "Seconds agent_runtime's clock moves forward on every read.",
        default="1",
    )
    parser.addini(
        "agent_clock_ignore",
        "Module prefixes whose calls see real time under frozen_clock (freezegun's ignore).",
        type="linelist",
        default=[],
    )
    group.addoption(
        "--agent-record",
        dest="agent_record",
        nargs="?",
        const="rewrite",
        default=None,
        metavar="MODE",
        help="Record agent tests' HTTP traffic: rewrite (default when given), missing, new, "
        "judge (only the judges' calls; the agent's replayed). "
        "Without it, cassettes are replayed offline (ini: agent_record_mode).",
    )
    group.addoption(
        "--agent-live",
        dest="agent_live",
        action="store_true",
        default=False,
        help="Run the selected agent tests against the real providers: no cassette is "
        "replayed or written (add --agent-record to also write what they get).",
    )
    group.addoption(
        "--agent-cassette-dir",
        dest="agent_cassette_dir",
        default=None,
        metavar="DIR",
        help="Folder of the cassettes, relative to the rootdir (ini: agent_cassette_dir).",
    )
    group.addoption(
        "--agent-record-failing",
        dest="agent_record_failing",
        action="store_true",
        default=False,
        help="Also save recordings of tests that fail (by default a failing test keeps "
        "its old cassette).",
    )
    parser.addini("agent_cassette_dir", "Folder of the cassettes.", default="cassettes")
    parser.addini(
        "agent_record_mode", "Record mode when --agent-record is not given.", default="none"
    )
    parser.addini("agent_all_tests", "Treat every test as an agent test (cassettes).", type="bool")
    parser.addini(
        "agent_allow_unused",
        "Do not fail tests that leave recorded interactions unused.",
        type="bool",
    )
    parser.addini(
        "agent_migration_until",
        "Last day (YYYY-MM-DD) unused recordings and caught cassette misses are reported "
        "without failing tests.",
        default="",
    )
    parser.addini(
        "agent_allowed_hosts",
        "Hosts (names or addresses) agent tests may reach while replaying or using fake_llm.",
        type="linelist",
        default=[],
    )
    parser.addini(
        "agent_ignore_hosts",
        "Hosts (names, *.wildcards, addresses; host/path for a path prefix) whose requests "
        "are never recorded nor replayed; while replaying they reach only loopback and the "
        "allowed hosts.",
        type="linelist",
        default=[],
    )
    parser.addini(
        "agent_match_ignore",
        "Request body fields (dotted paths) left out of cassette matching.",
        type="linelist",
        default=[],
    )
    parser.addini(
        "agent_cassette_format",
        "Format of new cassettes: json, yaml or vcr (vcrpy's YAML).",
        default="json",
    )
    parser.addini(
        "agent_cassette_names",
        "Whose cassette names and folders tests use: agentctx (default), pytest-recording or "
        "pytest-vcr (a suite those tools recorded keeps its cassettes where they are; "
        "@pytest.mark.vcr makes an agent test, vcr_config is read).",
        default="agentctx",
    )
    parser.addini(
        "agent_secret_env",
        "More environment variables whose values are redacted from cassettes.",
        type="linelist",
        default=[],
    )
    parser.addini(
        "agent_placeholder_keys",
        "Give unset provider API keys placeholders while replaying or using fake_llm.",
        type="bool",
        default=True,
    )
    # read by the pytest-agentctx command only (cassettes check, docs/cli.md)
    parser.addini(
        "agent_cassette_max_age",
        "Days after which pytest-agentctx cassettes check calls a cassette old (empty: no limit).",
        default="",
    )
    parser.addini(
        "agent_retired_models",
        "More retired models for pytest-agentctx cassettes check, one 'model = YYYY-MM-DD' a line.",
        type="linelist",
        default=[],
    )
    # the limits within which cassettes, snapshots, reports and cache entries are read
    # (also read by the pytest-agentctx command)
    for name, help_text in (
        ("agent_max_file_bytes", "Largest cassette, snapshot, report or cache file read"),
        ("agent_max_body_bytes", "Largest size a body's content-encoding may decode to"),
        ("agent_max_depth", "Deepest nesting of lists and mappings read (YAML, reports)"),
        ("agent_max_alias_nodes", "Most values the aliases of a YAML cassette may repeat"),
    ):
        parser.addini(name, f"{help_text} (empty: the default, docs/cassettes.md).", default="")
    # the reports and the gate
    group.addoption(
        "--agent-report",
        dest="agent_report",
        default=None,
        metavar="PATH",
        help="Write the JSON report of the session (every test's runs, figures, cassette, "
        "budget) to PATH.",
    )
    group.addoption(
        "--agent-report-html",
        dest="agent_report_html",
        default=None,
        metavar="PATH",
        help="Write a self-contained HTML page of the agent runs to PATH.",
    )
    group.addoption(
        "--agent-gate",
        dest="agent_gate",
        action="store_true",
        default=False,
        help="Fail the session when a budget is exceeded, a cassette is stale or unused, "
        "or (with --agent-baseline) a test drifted from its baseline.",
    )
    group.addoption(
        "--agent-baseline",
        dest="agent_baseline",
        default=None,
        metavar="PATH",
        help="A report written earlier by --agent-report: compare every test's iterations, "
        "tool trajectory and tokens with it.",
    )
    group.addoption(
        "--agent-baseline-tokens",
        dest="agent_baseline_tokens",
        default=None,
        metavar="PCT",
        help="Allowed change of a test's tokens from the baseline, in percent, or ignore "
        "(ini: agent_baseline_tokens; default 10).",
    )
    group.addoption(
        "--agent-baseline-iterations",
        dest="agent_baseline_iterations",
        default=None,
        metavar="N",
        help="Allowed change of a test's iterations from the baseline, or ignore "
        "(ini: agent_baseline_iterations; default 0).",
    )
    group.addoption(
        "--agent-baseline-trajectory",
        dest="agent_baseline_trajectory",
        default=None,
        metavar="MODE",
        help="How a test's tool calls are compared with the baseline: exact, unordered or "
        "ignore (ini: agent_baseline_trajectory; default exact).",
    )
    group.addoption(
        "--agent-baseline-level",
        dest="agent_baseline_level",
        default=None,
        metavar="P",
        help="Significance level of the pass rate's comparison with the baseline, pair by "
        "pair: a drop fails the gate when its McNemar p-value is at most P and it is past "
        "the margin (ini: agent_baseline_level; default 0.05).",
    )
    group.addoption(
        "--agent-baseline-margin",
        dest="agent_baseline_margin",
        default=None,
        metavar="POINTS",
        help="How many points the pass rate may drop from the baseline's before a significant "
        "drop fails the gate, e.g. 2 (ini: agent_baseline_margin; default none: any "
        "significant drop fails).",
    )
    parser.addini(
        "agent_baseline_tokens", "Allowed change of tokens from the baseline (%).", default="10"
    )
    parser.addini(
        "agent_baseline_level",
        "Significance level of the pass rate's comparison with the baseline.",
        default="0.05",
    )
    group.addoption(
        "--agent-baseline-flips",
        dest="agent_baseline_flips",
        default=None,
        metavar="report|fail",
        help="What a test that passed in the baseline and fails now does to the gate: "
        "report (listed; the pass rate decides) or fail (it fails the gate on its own) "
        "(ini: agent_baseline_flips; default report).",
    )
    parser.addini(
        "agent_baseline_flips",
        "report or fail: whether a pass that fails now fails the gate.",
        default="report",
    )
    parser.addini(
        "agent_baseline_margin",
        "Points the pass rate may drop from the baseline's (empty: none).",
        default="",
    )
    parser.addini(
        "agent_baseline_iterations", "Allowed change of iterations from the baseline.", default="0"
    )
    parser.addini(
        "agent_baseline_trajectory",
        "Tool trajectory comparison with the baseline: exact, unordered or ignore.",
        default="exact",
    )
    # the suites, budgets and prices
    group.addoption(
        "--agent-integration",
        dest="agent_integration",
        action="store_true",
        default=False,
        help="Run the integration tests (marked integration, or under tests/integration/) "
        "with the unit tests; without it they are deselected unless -m names them "
        "(agent tests only, unless the agent_suites ini option is true).",
    )
    parser.addini(
        "agent_suites",
        "Sort every test into the unit and integration suites (auto-mark, deselect, order "
        "last, run one at a time, --dist loadgroup under xdist); without it, only agent tests.",
        type="bool",
        default=False,
    )
    for limit in BUDGET_LIMITS:
        parser.addini(
            ini_name(limit),
            f"Budget of every agent test: {limit} (empty: no limit; "
            "@pytest.mark.agent_budget overrides it).",
            default="",
        )
    parser.addini(
        "agent_cache_prefix",
        "check or off: fail an agent test whose model call does not start with the previous "
        "call of its conversation (the prompt-cache prefix; docs/caches.md).",
        default="check",
    )
    parser.addini(
        "agent_prices",
        "Model prices of the project's own for budgets and reports, before genai-prices' "
        "data, one per line: 'model = <input USD per million tokens> <output USD per million "
        "tokens> [<cache read>] [<cache write>]'.",
        type="linelist",
        default=[],
    )
    parser.addini(
        "agent_price_data",
        "The price data pinned: 'genai-prices==<version> <YYYY-MM-DD>' (the installed "
        "release's prices of that day; `pytest-agentctx prices pin` prints the line). Empty: "
        "the installed data at the day the session starts.",
        default="",
    )


def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    """``--agent-record`` takes an optional MODE: make ``pytest --agent-record tests/x.py``
    (and the command the miss message prints) record that test instead of taking the path
    for a mode."""
    normalise_record_args(args)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """The limits of the ini file are in force for the session (see
    :mod:`pytest_agentctx._untrusted`, loaded only when the ini sets one or an outer
    session loaded it: the defaults are in force without it); the markers are registered."""
    values = {name: str(config.getini(name)) for name in LIMIT_INI}
    if any(values.values()) or "pytest_agentctx._untrusted" in sys.modules:
        from pytest_agentctx._untrusted import limits_from, use_limits

        try:
            limits = limits_from(values)
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.stash[_OUTER_LIMITS] = use_limits(limits)
    _markers(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The limits before this session (an outer session's) are in force again."""
    if _OUTER_LIMITS in config.stash:
        from pytest_agentctx._untrusted import use_limits

        use_limits(config.stash[_OUTER_LIMITS])


def _markers(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "agent_budget(max_iterations=, max_tool_calls=, max_tokens=, max_cost_usd=, "
        "max_duration_s=, max_mcp_calls=, max_cache_write_tokens=, min_cache_read_share=): "
        "fail the test when its agent runs use more (or read less of their input from the "
        "prompt cache).",
    )
    config.addinivalue_line(
        "markers",
        'agent_cache_exempt(reason="..."): do not check that each model call starts with '
        "the previous call of its conversation (the prompt-cache prefix); the reason is "
        "required.",
    )
    config.addinivalue_line(
        "markers",
        'agent_cache(breakpoints=["tools", "system", "messages"]): fail the test when an '
        "Anthropic or Bedrock call lacks a cache breakpoint on one of those parts.",
    )
    config.addinivalue_line(
        "markers",
        "agent_repeat(n, min_pass_rate=1.0, *, rule='lower_bound', interval='clopper_pearson', "
        "confidence=0.95, k=(), min_pass_hat_k=None): run the test n times; it passes when "
        "the pass rate's interval lower bound (rule='point': the rate itself) reaches "
        "min_pass_rate (1.0: every run passes), and pass^k reaches min_pass_hat_k.",
    )
    config.addinivalue_line(
        "markers",
        "agent(**options): an agent test; options configure pytest-agentctx for this test.",
    )
    config.addinivalue_line(
        "markers", "integration: an integration test (slow, talks to real services)."
    )
    names = str(config.getini("agent_cassette_names")).strip().lower()
    if names not in ("", "agentctx"):
        _vcr_markers(config)


def _vcr_markers(config: pytest.Config) -> None:
    """pytest-recording's markers (``vcr`` is pytest-vcr's too), registered when neither
    tool is loaded: ``--strict-markers`` then takes them once the tool is uninstalled or
    disabled (``-p no:recording``)."""
    if config.pluginmanager.has_plugin("recording") or config.pluginmanager.has_plugin("vcr"):
        return
    from pytest_agentctx.traffic.cassettes.vcr_names import RECORDING_MARKERS

    for description in RECORDING_MARKERS.values():
        config.addinivalue_line("markers", description)
