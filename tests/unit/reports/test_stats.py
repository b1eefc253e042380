"""Unit tests for pytest_agentctx.reports.figures and pytest_agentctx.reports.stats: one measure
of a run for budgets, reports, gate, and the runs of a test."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pytest_agentctx import AgentContext, AgentCtxError, ToolCall, ToolResult
from pytest_agentctx.context.runs import RunRecord
from pytest_agentctx.reports.figures import (
    ModelPrice,
    PriceTable,
    RunStats,
    run_stats,
)
from pytest_agentctx.reports.stats import RunLog

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def run(
    *steps: list[str],
    usage: Mapping[str, int] | None = None,
    model: str | None = "gpt-4o-mini",
    extra: Mapping[str, Any] | None = None,
    step_s: float = 1.0,
) -> AgentContext:
    """A run: one iteration per step of tool calls (each iteration with ``usage`` and
    ``model`` in its metadata, the first one with ``extra`` too), then a final answer; the
    clock moves ``step_s`` per event."""
    ctx = AgentContext.new("Plan my trip", at=at(0))
    clock = 0.0
    metadata: dict[str, Any] = {}
    if usage is not None:
        metadata["usage"] = dict(usage)
    if model is not None:
        metadata["model"] = model
    if extra:
        ctx = ctx.with_iteration_metadata(dict(extra))
    for number, step in enumerate(steps, start=1):
        if metadata:
            ctx = ctx.with_iteration_metadata(metadata)
        calls = [
            ToolCall(id=f"c{number}_{i}", name=name, arguments={}) for i, name in enumerate(step)
        ]
        clock += step_s
        ctx = ctx.add_assistant_message(None, calls, at=at(clock))
        results = [ToolResult(tool_call_id=c.id, name=c.name, content="ok") for c in calls]
        clock += step_s
        ctx = ctx.add_tool_results(results, at=at(clock))
    if metadata:
        ctx = ctx.with_iteration_metadata(metadata)
    return ctx.add_assistant_message("Done.", at=at(clock + step_s))


USAGE = {"input_tokens": 1000, "output_tokens": 100}


def test_a_run_counts_its_iterations_tool_calls_and_trajectory() -> None:
    stats = run_stats(run(["search", "book"], ["email"]))

    match stats:
        case RunStats(runs=1, iterations=3, tool_calls=3, trajectory=("search", "book", "email")):
            pass
        case _:
            raise AssertionError(stats)


def test_tokens_are_summed_from_each_iterations_usage() -> None:
    stats = run_stats(run(["search"], usage=USAGE))

    match stats:
        case RunStats(input_tokens=2000, output_tokens=200, total_tokens=2200):
            pass
        case _:
            raise AssertionError(stats)


def test_a_run_without_usage_has_no_tokens_and_no_cost() -> None:
    stats = run_stats(run(["search"]))

    assert (stats.total_tokens, stats.cost_usd) == (0, 0.0)


def test_the_cost_comes_from_the_models_price() -> None:
    stats = run_stats(run(usage=USAGE, model="gpt-4o-mini"))

    # 1000 input tokens at 0.15 and 100 output tokens at 0.60 dollars per million
    assert stats.cost_usd == pytest.approx(0.00021)


def test_a_model_with_usage_but_no_price_has_an_unknown_cost() -> None:
    stats = run_stats(run(usage=USAGE, model="house-model"))

    assert stats.cost_usd is None
    assert (stats.models, stats.unpriced) == (("house-model",), ("house-model",))


def test_a_dated_model_name_is_priced_as_its_family() -> None:
    table = PriceTable()

    assert table.cost("gpt-4o-mini-2024-07-18", "openai", USAGE) == table.cost(
        "gpt-4o-mini", "openai", USAGE
    )


def test_a_projects_own_price_covers_the_names_that_start_with_it() -> None:
    table = PriceTable().with_prices({"house": (1.0, 2.0)})

    assert table.price_of("house-v2") == ModelPrice(1.0, 2.0)


def test_a_projects_own_price_comes_before_the_price_data() -> None:
    table = PriceTable().with_prices({"gpt-4o-mini": (1.0, 1.0)})

    assert table.cost("gpt-4o-mini", "openai", USAGE) == pytest.approx(0.0011)


def test_a_projects_own_price_charges_cache_tokens_at_their_own_prices() -> None:
    table = PriceTable().with_prices({"house": (1.0, 2.0, 0.1, 1.25)})
    usage = {"input_tokens": 100, "uncached_input_tokens": 100, "cache_read_tokens": 1000}

    # 100 at 1.0, 1000 read at 0.1, dollars per million
    assert table.cost("house", None, usage) == pytest.approx(0.0002)


def test_a_projects_own_price_without_cache_prices_charges_the_input_price() -> None:
    table = PriceTable().with_prices({"house": (1.0, 2.0)})
    usage = {"input_tokens": 0, "uncached_input_tokens": 0, "cache_read_tokens": 1000}

    assert table.cost("house", None, usage) == pytest.approx(0.001)


def test_the_duration_spans_the_first_start_to_the_last_completion() -> None:
    stats = run_stats(run(["search"], ["book"], step_s=2.5))

    # five events 2.5 s apart after the start
    assert stats.duration_s == pytest.approx(12.5)


def test_sub_agent_runs_add_their_figures_but_not_their_duration() -> None:
    sub = run(["lookup"], usage={"input_tokens": 10, "output_tokens": 5})
    parent = run(["delegate"], usage=USAGE, extra={"subagents": {"researcher": sub}})

    nested, alone = run_stats(parent), run_stats(parent, nested=False)

    match (nested, alone):
        case (
            RunStats(runs=1, iterations=4, tool_calls=2, trajectory=("delegate", "lookup")),
            RunStats(iterations=2, tool_calls=1),
        ) if nested.duration_s == alone.duration_s and nested.total_tokens > alone.total_tokens:
            pass
        case _:
            raise AssertionError((nested, alone))


def test_run_stats_takes_a_run_result_with_a_context() -> None:
    class Result:
        context = run(["search"])

    assert run_stats(Result()).tool_calls == 1


def test_run_stats_rejects_anything_else_and_says_what_to_pass() -> None:
    with pytest.raises(AgentCtxError, match=r"got dict\. Pass result\.context"):
        run_stats({"iterations": []})


def test_stats_add_up_and_an_unknown_cost_stays_unknown() -> None:
    known = RunStats(runs=1, iterations=2, input_tokens=5, cost_usd=0.5, models=("a",))
    unknown = RunStats(runs=1, iterations=1, cost_usd=None, models=("b", "a"))

    total = RunStats.total([known, unknown])

    match total:
        case RunStats(runs=2, iterations=3, input_tokens=5, cost_usd=None, models=("a", "b")):
            pass
        case _:
            raise AssertionError(total)


def test_to_dict_is_json_ready_with_total_tokens_and_rounded_cost() -> None:
    stats = RunStats(runs=1, input_tokens=3, output_tokens=4, cost_usd=1 / 3, duration_s=0.1)

    match stats.to_dict():
        case {"total_tokens": 7, "cost_usd": 0.33333333, "duration_s": 0.1, "models": []}:
            pass
        case other:
            raise AssertionError(other)


def test_prices_are_added_or_replaced_by_name() -> None:
    table = PriceTable().with_prices({"house": (1.0, 2.0), "gpt-4o": ModelPrice(9.0, 9.0)})

    assert (table.price_of("house"), table.price_of("gpt-4o")) == (
        ModelPrice(1.0, 2.0),
        ModelPrice(9.0, 9.0),
    )


def test_ini_price_lines_are_parsed_skipping_blanks_and_comments() -> None:
    table = PriceTable.parse_lines(["# ours", "", "house-model = 0.5 1.5"])

    assert table.price_of("house-model") == ModelPrice(0.5, 1.5)
    assert table.price_of("gpt-4o") is None  # priced by the price data


def test_an_ini_price_line_may_give_the_cache_prices() -> None:
    table = PriceTable.parse_lines(["house = 1 2 0.1 1.25"])

    assert table.price_of("house") == ModelPrice(1.0, 2.0, 0.1, 1.25)


@pytest.mark.parametrize(
    "line",
    ["house-model 0.5 1.5", "house-model = 0.5", "= 1 2", "m = a b", "m = -1 2", "m = 1 2 3 4 5"],
)
def test_a_bad_ini_price_line_says_the_expected_form(line: str) -> None:
    with pytest.raises(AgentCtxError, match=r"expected 'model = <input USD per million"):
        PriceTable.parse_lines([line])


def test_a_run_log_reads_its_sources_when_asked() -> None:
    log = RunLog()
    finished: list[RunRecord] = []
    log.add_source(lambda: finished)
    finished.append(RunRecord("late", "runtime", run()))

    match log.records():
        case [RunRecord(name="late", source="runtime")]:
            pass
        case other:
            raise AssertionError(other)


def test_a_run_log_prefers_the_exact_runs_to_the_captured_ones() -> None:
    log = RunLog()
    log.set_captured(lambda: [RunRecord("conversation 1", "captured", run())])
    log.add_source(lambda: [RunRecord("weather", "runtime", run())])

    assert [r.source for r in log.records()] == ["runtime"]


def test_a_run_log_falls_back_to_the_captured_runs_when_the_runtime_made_none() -> None:
    log = RunLog()
    log.add_source(list)
    log.set_captured(lambda: [RunRecord("conversation 1", "captured", run())])

    assert [r.source for r in log.records()] == ["captured"]


def test_a_run_log_reads_no_captured_runs_for_its_exact_records() -> None:
    read: list[bool] = []
    log = RunLog()

    def captured() -> list[Any]:
        read.append(True)
        return []

    log.set_captured(captured)

    assert (log.exact_records(), read, log.captures, log.measurable) == ([], [], True, True)


def test_a_run_log_keeps_each_repetition_apart() -> None:
    log = RunLog()
    log.set_captured(lambda: [RunRecord("first", "captured", run())])
    log.new_part()
    log.set_captured(lambda: [RunRecord("second", "captured", run())])

    assert [r.name for r in log.records()] == ["first", "second"]
    assert [r.name for r in log.records(last_part=True)] == ["second"]


def test_a_repetition_without_runs_is_a_part_of_its_own() -> None:
    log = RunLog()
    for _ in range(3):
        log.new_part()
    log.set_captured(lambda: [RunRecord("third", "captured", run())])

    assert [[r.name for r in part] for part in log.records_by_part()] == [[], [], ["third"]]


def test_an_empty_run_log_is_not_measurable() -> None:
    assert not RunLog().measurable


def test_a_record_measures_its_context_with_the_given_prices() -> None:
    record = RunRecord("r", "captured", run(usage=USAGE, model="house"))

    stats = run_stats(record, prices=PriceTable().with_prices({"house": (1.0, 1.0)}))

    assert stats.cost_usd == pytest.approx(0.0011)


def test_total_is_the_chain_of_additions() -> None:
    parts = [
        RunStats(1, 2, 1, 10, 5, 0.1, 0.5, ("a", "b"), ("search",)),
        RunStats(1, 1, 0, 3, 1, 0.2, 0.25, ("b", "c"), ()),
        RunStats(2, 3, 2, 7, 0, None, 1.0, ("a",), ("lookup", "search")),
        RunStats(1, 1, 1, 1, 1, 0.3, 0.125, ("d",), ("lookup",)),
    ]

    assert RunStats.total(parts) == parts[0] + parts[1] + parts[2] + parts[3]
    assert RunStats.total(parts[:2]) == RunStats() + parts[0] + parts[1]


def mcp_call(tool_call_id: str | None) -> dict[str, Any]:
    return {"server": "orders_server", "tool": "search", "tool_call_id": tool_call_id}


def test_mcp_calls_are_counted_from_each_iterations_metadata() -> None:
    stats = run_stats(run(["search"], extra={"mcp": [mcp_call("c1_0"), mcp_call("c1_0")]}))

    assert stats.mcp_calls == 2


def test_an_unjoined_mcp_call_is_a_tool_call_and_a_joined_one_is_not_counted_twice() -> None:
    stats = run_stats(run(["search"], extra={"mcp": [mcp_call("c1_0"), mcp_call(None)]}))

    assert (stats.tool_calls, stats.trajectory) == (2, ("search",))


def test_a_sub_agents_mcp_calls_count_with_its_parent() -> None:
    sub = run(["lookup"], extra={"mcp": [mcp_call(None)]})
    parent = run(["delegate"], extra={"subagents": {"researcher": sub}})

    assert run_stats(parent).mcp_calls == 1


def test_mcp_calls_are_in_the_figures_only_when_there_are_some() -> None:
    assert "mcp_calls" not in RunStats(runs=1).to_dict()
    assert RunStats(runs=1, mcp_calls=2).to_dict()["mcp_calls"] == 2
    assert RunStats.total([RunStats(mcp_calls=1), RunStats(mcp_calls=2)]).mcp_calls == 3
