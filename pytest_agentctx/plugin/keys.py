"""Every key the plugin stashes on pytest's config and items, their release, and the
attributes it sets on reports.

A key made with :func:`_test_key` belongs to one test: what the plugin keeps for a test while
it runs (its runs and their contexts, cassette, reports, budget and repeat figures) is
dropped once its reports are made (:func:`release`, by :func:`pytest_runtest_protocol`),
because pytest keeps every item until the session ends. The other keys live on
``config.stash`` for the session.

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from pytest_agentctx.context.clock import ClockSettings
    from pytest_agentctx.evals.verdict import Verdict
    from pytest_agentctx.redaction.active import SessionSecrets
    from pytest_agentctx.redaction.redactor import Redactor
    from pytest_agentctx.reports.budgets import Budget, BudgetCheck
    from pytest_agentctx.reports.errors import RepeatError
    from pytest_agentctx.reports.figures import PriceTable
    from pytest_agentctx.reports.pricestore import PriceStore
    from pytest_agentctx.reports.pricing import PriceData
    from pytest_agentctx.reports.repeats import RepeatTally
    from pytest_agentctx.reports.schema import (
        BudgetEntry,
        CassetteEntry,
        RepeatEntry,
        TranscriptEntry,
    )
    from pytest_agentctx.reports.stats import RunLog
    from pytest_agentctx.traffic.capture import CapturedRuns
    from pytest_agentctx.traffic.cassettes import Cassette, NetworkGuard
    from pytest_agentctx.traffic.cassettes.options import CassetteSettings
    from pytest_agentctx.traffic.cassettes.readcache import Setting

    from .suites import SuiteCounts, SuiteScope
    from .vcr_compat import Leftovers

T = TypeVar("T")

#: The keys made with :func:`_test_key`, of every type of value: dropped from a test once
#: its reports are made.
_TEST_KEYS: list[pytest.StashKey[Any]] = []


def _test_key(key: pytest.StashKey[T]) -> pytest.StashKey[T]:
    """``key``, registered as one of a test's own: released after the test's protocol."""
    _TEST_KEYS.append(key)
    return key


# -- on a test's reports (they travel to xdist's controller) --

#: Report attribute carrying a repeated test's tally to the process that prints.
REPEAT_ATTRIBUTE = "agentctx_repeat"

# -- the session's (config.stash) --

#: The cassette settings of the session (ini options and command line).
CASSETTE_SETTINGS_KEY: pytest.StashKey[CassetteSettings] = pytest.StashKey()
#: The deterministic clocks' start, step and ignored modules (agent_clock_* options).
CLOCK_KEY: pytest.StashKey[ClockSettings] = pytest.StashKey()
#: Whether the session reads every agent test's runs (a report file, the gate, a baseline).
MEASURE_KEY: pytest.StashKey[bool] = pytest.StashKey()
#: The session's secrets (secret environment values, values learned from traffic): the
#: redactor of a test that has none of its own, and the active one between tests.
SECRETS_KEY: pytest.StashKey[SessionSecrets] = pytest.StashKey()
#: The cross-process cache of YAML cassettes that was in use before this session (an outer
#: session's, or none), restored when it ends; set when its first agent test starts.
READ_CACHE_KEY: pytest.StashKey[Setting] = pytest.StashKey()
#: The budget of every agent test, from the agent_budget_* ini options (None: they set no
#: limit).
BUDGET_DEFAULTS_KEY: pytest.StashKey[Budget | None] = pytest.StashKey()
#: Whether the prompt-cache prefix check is on for the session (ini agent_cache_prefix).
CACHE_PREFIX_KEY: pytest.StashKey[bool] = pytest.StashKey()
#: The unit and integration tests that ran or were deselected, for the suites line.
SUITES_KEY: pytest.StashKey[SuiteCounts] = pytest.StashKey()
#: Which tests the plugin sorts into suites (agent tests only, or every test).
SUITE_SCOPE_KEY: pytest.StashKey[SuiteScope] = pytest.StashKey()
#: The vcrpy matchers a ``pytest_recording_configure`` hook registered (name -> function)
#: through the shim the plugin calls it with when pytest-recording is not loaded.
VCR_MATCHERS_KEY: pytest.StashKey[dict[str, Callable[..., object]]] = pytest.StashKey()
#: What pytest-recording's and pytest-vcr's options left in the command line or addopts
#: became when neither tool is loaded: lines printed at the end, and allowed hosts.
VCR_LEFTOVERS_KEY: pytest.StashKey[Leftovers] = pytest.StashKey()

# -- a test's own (item.stash), released after its protocol --

#: The test's reports by phase (setup, call, teardown), as pytest makes them.
REPORT_KEY = _test_key(pytest.StashKey[dict[str, pytest.TestReport]]())
#: The test's cassette and network guard while it runs (None once they stopped).
CASSETTE_KEY: pytest.StashKey[Cassette | None] = _test_key(pytest.StashKey())
GUARD_KEY: pytest.StashKey[NetworkGuard | None] = _test_key(pytest.StashKey())
#: The runs each test made (runtime results, captured conversations): budgets and reports.
RUNS_KEY: pytest.StashKey[RunLog] = _test_key(pytest.StashKey())
#: The runs rebuilt from the test's traffic (its cassette, the fake model, or a recorder):
#: measured for budgets, reports and the gate, and what ``agent_context`` gives.
CAPTURED_KEY: pytest.StashKey[CapturedRuns] = _test_key(pytest.StashKey())
#: The verdicts the test's judges gave (``agent_judge``), for its record.
VERDICTS_KEY: pytest.StashKey[list[Verdict]] = _test_key(pytest.StashKey())
#: The test's redactor (its cassette's): snapshots, records and failure text pass it.
REDACTOR_KEY: pytest.StashKey[Redactor] = _test_key(pytest.StashKey())
#: The cassette's report entry (status, unused recordings), set when its fixture ends.
CASSETTE_ENTRY_KEY: pytest.StashKey[CassetteEntry] = _test_key(pytest.StashKey())
#: Whether the test failed because its cassette is stale (its unused recordings count).
STALE_KEY = _test_key(pytest.StashKey[bool]())
#: The budget outcome of a test after its call phase: {"limits": {...}, "exceeded": [...]}.
BUDGET_KEY: pytest.StashKey[BudgetEntry] = _test_key(pytest.StashKey())
#: The test's budget (from its markers and the defaults) and whether a marker set it.
BUDGET_SPEC_KEY: pytest.StashKey[tuple[Budget, bool]] = _test_key(pytest.StashKey())
#: The test's budget check (of its last repetition), for the reports and the next one.
BUDGET_CHECK_KEY: pytest.StashKey[BudgetCheck] = _test_key(pytest.StashKey())
#: The test's prompt-cache checks: whether its calls' prefixes are checked (not exempt),
#: and the parts its agent_cache markers declare a cache breakpoint on.
CACHE_SPEC_KEY = _test_key(pytest.StashKey[tuple[bool, tuple[str, ...]]]())
#: The price table: on config.stash from the agent_prices ini option (made when first
#: needed without one), on an item's stash the one its agent_prices fixture gave
#: (overrides included), for a test that made runs.
PRICES_KEY: pytest.StashKey[PriceTable] = _test_key(pytest.StashKey())
#: The session's price data (agent_price_data, else the installed genai-prices' data).
PRICE_DATA_KEY: pytest.StashKey[PriceData] = pytest.StashKey()
#: The session's store of prices kept between sessions (``None`` without pytest's cache),
#: and the one in use before it (an outer session's).
PRICE_STORE_KEY: pytest.StashKey[tuple[PriceStore | None, PriceStore | None]] = pytest.StashKey()
#: The day the session started (UTC): see :func:`session_day`.
SESSION_DAY_KEY: pytest.StashKey[date] = pytest.StashKey()
#: The test's fixture request, kept to ask its agent_prices fixture once it made runs.
PRICES_REQUEST_KEY: pytest.StashKey[pytest.FixtureRequest] = _test_key(pytest.StashKey())
#: The pass rate of an agent_repeat test: {"runs", "passed", "pass_rate", "min_pass_rate"}.
REPEAT_KEY: pytest.StashKey[RepeatEntry] = _test_key(pytest.StashKey())
#: The repetition in progress (from 1) of an agent_repeat test, its tally, and the error of
#: a bad agent_repeat marker (raised at setup: an error of that test).
REPEAT_INDEX_KEY = _test_key(pytest.StashKey[int]())
REPEAT_TALLY_KEY: pytest.StashKey[RepeatTally] = _test_key(pytest.StashKey())
REPEAT_ERROR_KEY: pytest.StashKey[RepeatError] = _test_key(pytest.StashKey())
#: The conversations of the test's simulated users (``agent_simulated_user``), in order.
TRANSCRIPTS_KEY: pytest.StashKey[list[TranscriptEntry]] = _test_key(pytest.StashKey())


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """Drop what the plugin stashed on a test once its reports are made and sent
    (:func:`release`)."""
    try:
        return (yield)
    finally:
        release(item)


def release(item: pytest.Item) -> None:
    """Drop what the plugin stashed on ``item`` (the keys made with :func:`_test_key`): a
    long session then keeps no agent run alive, so its memory, the garbage collector's
    passes and the interpreter's exit do not grow with the number of tests run. The
    session's redactor is the active one again. Releasing twice does nothing more."""
    for key in _TEST_KEYS:
        with contextlib.suppress(KeyError):
            del item.stash[key]
    from pytest_agentctx.redaction.active import set_active

    set_active(item.config.stash[SECRETS_KEY])


def session_day(config: pytest.Config) -> date:
    """The day the session started (UTC), read once, at start-up, before any test freezes
    the clock: the day its recordings are dated, and the day of its prices when
    ``agent_price_data`` pins none."""
    day = config.stash.get(SESSION_DAY_KEY, None)
    if day is None:
        day = config.stash[SESSION_DAY_KEY] = datetime.now(UTC).date()
    return day
