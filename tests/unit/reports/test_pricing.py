"""Unit tests for pytest_agentctx.reports.pricing: a call's tokens by kind, its price equal
to genai-prices' own calculation, and the price data pinned."""

from __future__ import annotations

from datetime import UTC, date, datetime
from importlib import metadata

import genai_prices
import pytest
from hypothesis import given, strategies as st

from pytest_agentctx import AgentCtxError
from pytest_agentctx.reports.figures import PriceTable
from pytest_agentctx.reports.pricing import (
    CallPrice,
    PriceData,
    TokenBreakdown,
    dated_cassettes,
    price_call,
    price_data_words,
)

INSTALLED = metadata.version("genai-prices")
DAY = date(2026, 11, 29)
DATA = PriceData(INSTALLED, DAY, pinned=True)


def genai_total(model: str, provider: str, day: date = DAY, **counts: int) -> float:
    usage = genai_prices.Usage(**{key: value for key, value in counts.items() if value})
    at = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
    priced = genai_prices.calc_price(usage, model, provider_id=provider, genai_request_timestamp=at)
    return float(priced.total_price)


def test_without_cache_figures_every_input_token_is_uncached() -> None:
    tokens = TokenBreakdown.from_usage({"input_tokens": 120, "output_tokens": 7})

    assert tokens == TokenBreakdown(uncached_input=120, output=7)


def test_the_uncached_input_is_read_where_the_provider_counted_cache_tokens_in_the_input() -> None:
    usage = {"input_tokens": 1000, "uncached_input_tokens": 200, "cache_read_tokens": 800}

    assert TokenBreakdown.from_usage(usage).input == 1000


def test_the_hour_long_cache_writes_never_exceed_the_cache_writes() -> None:
    usage = {"input_tokens": 5, "cache_write_tokens": 10, "cache_write_1h_tokens": 30}

    assert TokenBreakdown.from_usage(usage).cache_write_1h == 10


def test_figures_that_are_not_counts_are_read_as_none() -> None:
    usage = {"input_tokens": "12", "output_tokens": True, "cache_read_tokens": -4}

    assert TokenBreakdown.from_usage(usage) == TokenBreakdown()


def test_an_anthropic_call_with_cache_reads_and_writes_is_priced_as_genai_prices_prices_it() -> (
    None
):
    tokens = TokenBreakdown(uncached_input=100, cache_read=800, cache_write=100, output=50)

    priced = price_call("claude-sonnet-4-5", "anthropic", tokens, DATA)

    assert priced is not None
    assert priced.total == pytest.approx(
        genai_total(
            "claude-sonnet-4-5",
            "anthropic",
            input_tokens=1000,
            cache_read_tokens=800,
            cache_write_tokens=100,
            output_tokens=50,
        )
    )


def test_hour_long_cache_writes_cost_more_than_five_minute_ones() -> None:
    five = TokenBreakdown(uncached_input=0, cache_write=1000, output=0)
    hour = TokenBreakdown(uncached_input=0, cache_write=1000, cache_write_1h=1000, output=0)

    short, long = (price_call("claude-sonnet-4-5", "anthropic", t, DATA) for t in (five, hour))

    assert short is not None
    assert long is not None
    assert long.total > short.total


def test_an_openai_call_with_cached_input_is_priced_as_genai_prices_prices_it() -> None:
    tokens = TokenBreakdown(uncached_input=200, cache_read=1800, output=30)

    priced = price_call("gpt-4o-mini", "openai", tokens, DATA)

    assert priced is not None
    assert priced.total == pytest.approx(
        genai_total(
            "gpt-4o-mini", "openai", input_tokens=2000, cache_read_tokens=1800, output_tokens=30
        )
    )


def test_a_cache_read_costs_less_than_the_same_input_uncached() -> None:
    cached = price_call("gpt-4o-mini", "openai", TokenBreakdown(cache_read=1000), DATA)
    uncached = price_call("gpt-4o-mini", "openai", TokenBreakdown(uncached_input=1000), DATA)

    assert cached is not None
    assert uncached is not None
    assert cached.total < uncached.total


def test_the_parts_of_a_price_are_each_kind_of_token_priced_alone() -> None:
    tokens = TokenBreakdown(uncached_input=100, cache_read=800, cache_write=100, output=50)

    priced = price_call("claude-sonnet-4-5", "anthropic", tokens, DATA)

    match priced:
        case CallPrice(uncached_input=a, cache_read=b, cache_write=c, output=d, total=total):
            assert a + b + c + d == pytest.approx(total)
        case _:
            raise AssertionError(priced)


def test_a_model_the_price_data_does_not_know_has_no_price() -> None:
    assert price_call("house-model-7", "openai", TokenBreakdown(uncached_input=1), DATA) is None


def test_a_model_is_found_by_its_name_when_the_provider_does_not_list_it() -> None:
    # an OpenAI-compatible gateway: the wire format says openai, the model is Anthropic's
    priced = price_call("claude-sonnet-4-5", "openai", TokenBreakdown(uncached_input=10), DATA)

    assert priced is not None
    assert priced.provider == "anthropic"


def test_the_prices_are_those_of_the_pinned_day() -> None:
    tokens = TokenBreakdown(uncached_input=1_000_000)
    before, after = (
        price_call("gemini-3.8-flash", "google", tokens, PriceData(INSTALLED, day, pinned=True))
        for day in (date(2026, 11, 29), date(2027, 6, 1))
    )

    # genai-prices lists a new price for this model from 2027-01-01
    assert before is not None
    assert after is not None
    assert (before.total, after.total) == (
        pytest.approx(genai_total("gemini-3.8-flash", "google", input_tokens=1_000_000)),
        pytest.approx(
            genai_total("gemini-3.8-flash", "google", day=date(2027, 6, 1), input_tokens=1_000_000)
        ),
    )
    assert before.total != after.total


def test_a_service_tier_prices_its_variant() -> None:
    tokens = TokenBreakdown(uncached_input=1_000_000)

    standard, flex, priority = (
        price_call("gpt-5", "openai", tokens, DATA, tier) for tier in (None, "flex", "priority")
    )

    assert standard is not None
    assert flex is not None
    assert priority is not None
    assert flex.total < standard.total < priority.total


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**5))
def test_every_price_equals_genai_prices_own(
    uncached: int, read: int, write: int, output: int
) -> None:
    tokens = TokenBreakdown(
        uncached_input=uncached, cache_read=read, cache_write=write, output=output
    )

    priced = price_call("claude-haiku-4-5", "anthropic", tokens, DATA)

    assert priced is not None
    assert priced.total == pytest.approx(
        genai_total(
            "claude-haiku-4-5",
            "anthropic",
            input_tokens=uncached + read + write,
            cache_read_tokens=read,
            cache_write_tokens=write,
            output_tokens=output,
        )
    )


def test_a_pin_names_the_release_and_the_day() -> None:
    data = PriceData.parse(f"genai-prices=={INSTALLED} 2026-11-29")

    assert data == PriceData(INSTALLED, DAY, pinned=True)
    assert data.pin_line() == f"genai-prices=={INSTALLED} 2026-11-29"


def test_a_pin_of_another_release_says_how_to_install_it_or_pin_again() -> None:
    with pytest.raises(AgentCtxError, match=r"pins genai-prices 0\.0\.1, but .* is installed"):
        PriceData.parse("genai-prices==0.0.1 2026-11-29")


@pytest.mark.parametrize(
    "text", ["0.2.3 2026-11-29", "genai-prices==0.2.3", "genai-prices==0.2.3 29/11/2026"]
)
def test_a_malformed_pin_says_the_expected_form(text: str) -> None:
    with pytest.raises(AgentCtxError, match=r"expected 'genai-prices==<version> <YYYY-MM-DD>'"):
        PriceData.parse(text)


def test_a_pin_of_a_day_that_does_not_exist_is_refused() -> None:
    with pytest.raises(AgentCtxError, match=r"'2026-02-30' is not a date"):
        PriceData.parse(f"genai-prices=={INSTALLED} 2026-02-30")


# -- a test priced at its recording's day ------------------------------------------------


def test_a_table_on_a_recording_day_prices_at_that_days_prices() -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 0}
    table = PriceTable(data=PriceData(INSTALLED, date(2027, 6, 1), pinned=True))

    recorded = table.on_day(date(2026, 11, 29)).cost("gemini-3.8-flash", "google", usage)

    assert (recorded, table.cost("gemini-3.8-flash", "google", usage)) == (0.75, 1.5)


def test_a_table_on_a_recording_day_keeps_its_release_and_pin() -> None:
    table = PriceTable(data=DATA)

    assert table.on_day(date(2027, 6, 1)).data == PriceData(INSTALLED, date(2027, 6, 1), True)


def test_the_price_data_in_words_names_release_day_and_pin() -> None:
    priced = DATA.to_dict()

    assert (
        price_data_words(priced, False) == f"genai-prices {INSTALLED}, prices of 2026-11-29, pinned"
    )


def test_an_unpinned_price_data_in_words_says_how_to_pin_when_asked() -> None:
    priced = PriceData(INSTALLED, DAY, pinned=False).to_dict()

    assert price_data_words(priced, False, hint=True).endswith(
        "not pinned: pytest-agentctx prices pin"
    )


def test_tests_priced_at_their_recording_day_are_said_to_be() -> None:
    words = price_data_words(DATA.to_dict(), dated_cassettes([{"cassette": {"recorded_on": "x"}}]))

    assert "prices of the day each cassette was recorded, else of 2026-11-29" in words


@pytest.mark.parametrize("cassette", [None, "c.json", {"path": "c.json"}])
def test_a_test_without_a_dated_cassette_is_not_priced_at_a_recording_day(cassette: object) -> None:
    assert dated_cassettes([{"cassette": cassette}]) is False
