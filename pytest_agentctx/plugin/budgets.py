"""Behaviour budgets and model prices: read at configure and setup, checked after the call.

The budget of a test (``@pytest.mark.agent_budget``, the ``agent_budget_*`` ini options) is
read before its fixtures run (:func:`pytest_runtest_setup`) and checked against the runs it
made after its call phase (:func:`pytest_runtest_call`, with
:func:`~pytest_agentctx.reports.budgets.check_budget`). The prices come from the
``agent_prices`` ini lines and the ``agent_prices`` fixture.

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Generator
from datetime import date
from typing import TYPE_CHECKING

import pytest

from pytest_agentctx.exceptions import AgentCtxError
from pytest_agentctx.reports.errors import BudgetError
from pytest_agentctx.reports.limits import BUDGET_LIMITS, ini_name

from .capture import redacted
from .keys import (
    BUDGET_CHECK_KEY,
    BUDGET_DEFAULTS_KEY,
    BUDGET_KEY,
    BUDGET_SPEC_KEY,
    CASSETTE_ENTRY_KEY,
    CASSETTE_KEY,
    PRICE_DATA_KEY,
    PRICE_STORE_KEY,
    PRICES_KEY,
    PRICES_REQUEST_KEY,
    REPEAT_ERROR_KEY,
    REPEAT_INDEX_KEY,
    RUNS_KEY,
    session_day,
)

if TYPE_CHECKING:
    from pytest_agentctx.reports.budgets import BudgetCheck
    from pytest_agentctx.reports.figures import PriceTable
    from pytest_agentctx.reports.pricing import PriceData


def configure(config: pytest.Config) -> None:
    """The budget of every agent test and the price table, from the ini options (no
    budget when no ``agent_budget_*`` option sets a limit: the budgets are then read only
    for a test marked ``agent_budget``). ``agent_prices`` lines are read now, so that a bad
    one stops the session; without any, the table of the defaults is made when first
    needed (:func:`session_prices`)."""
    try:
        values = {limit: str(config.getini(ini_name(limit))) for limit in BUDGET_LIMITS}
        defaults = None
        if any(value.strip() for value in values.values()):
            from pytest_agentctx.reports.budgets import Budget

            defaults = Budget.from_ini(values)
        config.stash[BUDGET_DEFAULTS_KEY] = defaults
        pin = str(config.getini("agent_price_data")).strip()
        if pin:
            from pytest_agentctx.reports.pricing import PriceData

            config.stash[PRICE_DATA_KEY] = PriceData.parse(pin)
        else:  # today, read before any test freezes the clock
            session_day(config)
        lines = [str(line) for line in config.getini("agent_prices")]
        if any(line.strip() for line in lines):
            from pytest_agentctx.reports.figures import PriceTable

            config.stash[PRICES_KEY] = PriceTable.parse_lines(lines, _base_table(config))
    except AgentCtxError as exc:
        raise pytest.UsageError(str(exc)) from None


def _base_table(config: pytest.Config) -> PriceTable:
    """No prices of the project's own, and the session's price data: the pinned one, else
    the installed genai-prices' at the session's day."""
    from pytest_agentctx.reports.figures import PriceTable

    return PriceTable(data=price_data(config))


def price_data(config: pytest.Config) -> PriceData:
    """The price data of the session (``agent_price_data``, else the installed data at the
    day the session started). Once asked, the prices of that data are kept between
    sessions (:mod:`~pytest_agentctx.reports.pricestore`)."""
    data = config.stash.get(PRICE_DATA_KEY, None)
    if data is None:
        from pytest_agentctx.reports.pricing import PriceData

        data = config.stash[PRICE_DATA_KEY] = PriceData.installed(session_day(config))
    if PRICE_STORE_KEY not in config.stash:
        _use_price_store(config, data.version)
    return data


def _use_price_store(config: pytest.Config, release: str) -> None:
    """Keep the prices of ``release``'s data in pytest's cache folder (none under ``-p
    no:cacheprovider``); the store before (an outer session's) is kept for
    :func:`pytest_unconfigure` to put back."""
    from pytest_agentctx.reports.pricing import use_store

    cache = getattr(config, "cache", None)
    store = None
    if cache is not None:
        from pytest_agentctx.reports.pricestore import FOLDER_NAME, PriceStore

        store = PriceStore(functools.partial(cache.mkdir, FOLDER_NAME), release)
    config.stash[PRICE_STORE_KEY] = (store, use_store(store))


def pytest_unconfigure(config: pytest.Config) -> None:
    """The prices the session added are kept; an outer session's store is in use again."""
    stores = config.stash.get(PRICE_STORE_KEY, None)
    if stores is not None:
        from pytest_agentctx.reports.pricing import use_store

        store, outer = stores
        if store is not None:
            store.save()
        use_store(outer)


def session_prices(config: pytest.Config) -> PriceTable:
    """The session's price table: the ``agent_prices`` ini lines, then the price data."""
    prices = config.stash.get(PRICES_KEY, None)
    if prices is None:
        prices = config.stash[PRICES_KEY] = _base_table(config)
    return prices


def prices_of(item: pytest.Item) -> PriceTable:
    """The prices of ``item``'s runs: its own ``agent_prices`` fixture's (:func:`_test_prices`),
    else the session's; at the day its recordings were made, when its cassette dates them
    (:meth:`~pytest_agentctx.traffic.cassettes.Cassette.recording_day`)."""
    table = item.stash.get(PRICES_KEY, None) or session_prices(item.config)
    cassette = item.stash.get(CASSETTE_KEY, None)  # while the test runs
    if cassette is not None:
        day = cassette.recording_day()
    else:  # once it ended, its report entry
        entry = item.stash.get(CASSETTE_ENTRY_KEY, None)
        day = entry.get("recorded_on") if entry is not None else None
    return table if day is None else table.on_day(date.fromisoformat(day))


@pytest.fixture(scope="session")
def agent_prices(pytestconfig: pytest.Config) -> PriceTable:
    """Model prices for budgets and reports: the ``agent_prices`` ini lines, then
    genai-prices' data (``agent_price_data``). Override it in a conftest.py to add prices in code::

        @pytest.fixture(scope="session")
        def agent_prices(agent_prices):
            return agent_prices.with_prices({"my-model": (0.50, 1.50)})
    """
    return session_prices(pytestconfig)


@pytest.fixture(autouse=True)
def _agentctx_prices(request: pytest.FixtureRequest, _agentctx_cassette: object) -> None:
    """Keeps the test's request: the prices of a test that made runs are those its
    ``agent_prices`` fixture gives (overrides included), asked for once its call ended
    (:func:`_test_prices`). A test without runs never builds a price table. Set up after
    the test's cassette (``_agentctx_cassette``), torn down before it."""
    request.node.stash[PRICES_REQUEST_KEY] = request


def _test_prices(item: pytest.Item) -> None:
    """Stash the prices of ``item`` if it made runs: its ``agent_prices`` fixture's value,
    which must be a :class:`PriceTable`."""
    __tracebackhide__ = True  # the message says it all: no frames of the plugin
    if PRICES_KEY in item.stash or RUNS_KEY not in item.stash:
        return
    request = item.stash.get(PRICES_REQUEST_KEY, None)
    if request is None:  # not a test function (no fixtures): the session's prices
        return
    from pytest_agentctx.reports.figures import PriceTable

    prices = request.getfixturevalue("agent_prices")
    if not isinstance(prices, PriceTable):
        raise BudgetError(
            f"the agent_prices fixture gave a {type(prices).__name__}; it must return a "
            "PriceTable, e.g. return agent_prices.with_prices({'my-model': (0.50, 1.50)})."
        )
    item.stash[PRICES_KEY] = prices


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Read the test's budget before its fixtures run: a bad marker is an error of the test
    (naming it and the key), in every process, also under xdist. A test whose
    ``agent_repeat`` marker is bad gets that error instead (raised by the ``repeat`` hook,
    whichever of the two pytest calls first)."""
    __tracebackhide__ = True  # the message says it all: no frames of the plugin
    if REPEAT_ERROR_KEY in item.stash:
        return  # a bad agent_repeat marker: its error (the repeat hook's) is the test's
    marks = [(m.args, m.kwargs) for m in item.iter_markers("agent_budget")]
    defaults = item.config.stash[BUDGET_DEFAULTS_KEY]
    if not marks and defaults is None:
        return  # no budget: nothing to check after the call
    from pytest_agentctx.reports.budgets import Budget

    try:
        budget = Budget.from_markers(marks, defaults=defaults, where=item.nodeid)
    except BudgetError as exc:
        raise BudgetError(str(exc)) from None
    item.stash[BUDGET_SPEC_KEY] = (budget, bool(marks))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """After the test (and the cassette checks) ran, measure its runs against its budget;
    a test over budget fails with the measured and allowed figures."""
    __tracebackhide__ = True  # it passes the test's failure on: no frame of the plugin
    try:
        result = yield
    except BaseException:
        with contextlib.suppress(Exception):  # never hide the test's own failure
            _test_prices(item)
            _check_budget(item)
        raise
    _test_prices(item)
    check = _check_budget(item)
    if check is not None and not check.passed:
        pytest.fail(redacted(item, check.failure_message(item.nodeid)), pytrace=False)
    return result


def _check_budget(item: pytest.Item) -> BudgetCheck | None:
    """Check the test's runs (of this repetition) against its budget (:func:`check_budget`)
    and stash the outcome for the reports."""
    spec = item.stash.get(BUDGET_SPEC_KEY, None)
    if spec is None:  # no budget read (see pytest_runtest_setup): nothing to check
        return None
    from pytest_agentctx.reports.budgets import check_budget

    log = item.stash.get(RUNS_KEY, None)
    repeated = item.stash.get(REPEAT_INDEX_KEY, 1) > 1
    check = check_budget(
        spec,
        lambda: log.records(last_part=True) if log is not None else [],
        prices=prices_of(item),
        earlier=item.stash.get(BUDGET_CHECK_KEY, None) if repeated else None,
        agent_test=log is not None and log.measurable,
    )
    if check is not None:
        item.stash[BUDGET_CHECK_KEY] = check
        item.stash[BUDGET_KEY] = check.to_dict()
    return check
