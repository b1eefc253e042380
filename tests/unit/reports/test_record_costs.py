"""A test's record prices each model call: its tokens by kind, its cost and the cost of
each kind, and the JUnit properties carry the cache figures."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from importlib import metadata

from pytest_agentctx import AgentContext
from pytest_agentctx.context.runs import RunRecord
from pytest_agentctx.reports.figures import PriceTable
from pytest_agentctx.reports.html import render_html
from pytest_agentctx.reports.pricing import PriceData
from pytest_agentctx.reports.record import build_record, junit_properties
from pytest_agentctx.reports.session_report import assemble_report

START = datetime(2026, 1, 1, tzinfo=UTC)
PRICES = PriceTable(data=PriceData(metadata.version("genai-prices"), date(2026, 11, 29), True))
#: 100,000 input tokens of which 90,000 read from the cache, 1,000 output tokens.
WARM = {
    "input_tokens": 100_000,
    "output_tokens": 1_000,
    "uncached_input_tokens": 10_000,
    "cache_read_tokens": 90_000,
}


def _run(*usages: Mapping[str, object], model: str = "claude-sonnet-4-6") -> RunRecord:
    context = AgentContext.new("Weather?", at=START)
    for turn, usage in enumerate(usages):
        if turn:
            context = context.add_user_message("And tomorrow?", at=START)
        context = context.add_assistant_message("Paris", at=START).with_iteration_metadata(
            {"usage": dict(usage), "model": model, "provider": "anthropic"}
        )
    return RunRecord("run", "captured", context)


def test_each_call_is_priced_with_the_cost_of_each_kind_of_token() -> None:
    record = build_record(runs=[_run(WARM)], prices=PRICES, contexts=False)

    assert record["runs"][0]["calls"] == [
        {
            "iteration": 0,
            "model": "claude-sonnet-4-6",
            "input_tokens": 100_000,
            "output_tokens": 1_000,
            "cost_usd": 0.072,
            "uncached_input_tokens": 10_000,
            "cache_read_tokens": 90_000,
            "cost_parts": {
                "uncached_input": 0.03,
                "cache_read": 0.027,
                "cache_write": 0.0,
                "output": 0.015,
            },
        }
    ]


def test_a_call_no_price_knows_has_no_cost_and_no_parts() -> None:
    record = build_record(runs=[_run(WARM, model="house-9")], prices=PRICES, contexts=False)

    (call,) = record["runs"][0]["calls"]
    assert (call["cost_usd"], "cost_parts" in call) == (None, False)
    assert record["stats"]["unpriced"] == ["house-9"]


def test_the_runs_figures_carry_the_cache_tokens() -> None:
    record = build_record(runs=[_run(WARM, WARM)], prices=PRICES, contexts=False)

    stats = record["stats"]
    assert (stats["cache_read_tokens"], stats["uncached_input_tokens"]) == (180_000, 20_000)


def test_a_run_without_cache_figures_has_none_in_its_figures() -> None:
    record = build_record(
        runs=[_run({"input_tokens": 10, "output_tokens": 2})], prices=PRICES, contexts=False
    )

    assert {"cache_read_tokens", "uncached_input_tokens"} & set(record["stats"]) == set()


def test_the_junit_properties_carry_the_cache_reads() -> None:
    record = build_record(runs=[_run(WARM)], prices=PRICES, contexts=False)

    assert ("agentctx.cache_read_tokens", 90_000) in junit_properties(dict(record))


def test_the_html_page_shows_which_calls_read_the_cache() -> None:
    record = build_record(runs=[_run(WARM, {"input_tokens": 5, "output_tokens": 1})], prices=PRICES)
    entry = {"nodeid": "t.py::test_warm", "outcome": "passed", **record}

    html = render_html(assemble_report([entry]))

    assert html.count("cache read 90,000 / written 0") == 1


def test_the_html_page_sums_the_cache_and_names_the_price_data() -> None:
    record = build_record(runs=[_run(WARM)], prices=PRICES)
    report = assemble_report([{"nodeid": "t.py::test_warm", "outcome": "passed", **record}])
    report["summary"]["price_data"] = {"version": "0.2.3", "day": "2026-11-29", "pinned": True}

    html = render_html(report)

    assert "prompt cache: 90,000 input tokens read, 0 written" in html
    assert "cost priced with genai-prices 0.2.3, prices of 2026-11-29, pinned" in html
