"""A test's record with its judges' verdicts and the runs of other roles than the agent's:
kept apart from its runs and stats, and as JUnit properties."""

from __future__ import annotations

from datetime import UTC, datetime

from pytest_agentctx import AgentContext
from pytest_agentctx.context.runs import RunRecord
from pytest_agentctx.reports.html import render_html
from pytest_agentctx.reports.record import build_record, is_agent_test, junit_properties
from pytest_agentctx.reports.session_report import assemble_report

START = datetime(2026, 1, 1, tzinfo=UTC)
VERDICT = {
    "judge": "judge",
    "rubric_id": "city",
    "rubric": "Names the city.",
    "score": 0.9,
    "threshold": 0.7,
    "rationale": "It names Paris.",
    "passed": True,
}


def _run(name: str, role: str = "agent", tokens: int = 100) -> RunRecord:
    context = AgentContext.new("Weather?", at=START).add_assistant_message("Paris", at=START)
    usage = {"input_tokens": tokens, "output_tokens": 0}
    context = context.with_iteration_metadata({"usage": usage, "model": "gpt-4o"})
    return RunRecord(name, "captured", context, role=role)


def test_the_verdicts_are_kept_in_the_record():
    record = build_record(runs=[_run("weather")], verdicts=[VERDICT])

    assert record["verdicts"] == [VERDICT]


def test_a_record_without_verdicts_has_no_entry_for_them():
    assert "verdicts" not in build_record(runs=[_run("weather")])


def test_the_judges_runs_are_listed_apart_and_not_in_the_agents_stats():
    record = build_record(runs=[_run("weather")], role_runs=[_run("judge 1", "judge", 40)])

    assert [run["name"] for run in record["runs"]] == ["weather"]
    assert record["stats"]["total_tokens"] == 100
    assert [(run["name"], run["role"]) for run in record["role_runs"]] == [("judge 1", "judge")]
    assert record["role_stats"]["judge"]["total_tokens"] == 40


def test_a_test_with_only_verdicts_is_an_agent_test():
    assert is_agent_test(dict(build_record(runs=[], verdicts=[VERDICT])))


def test_each_verdict_is_a_junit_property():
    record = build_record(runs=[_run("weather")], verdicts=[VERDICT])

    assert ("agentctx.verdict", "city 0.9/0.7 passed") in junit_properties(dict(record))


def test_the_html_page_shows_the_verdict_and_the_judges_cost_line():
    record = build_record(
        runs=[_run("weather")], verdicts=[VERDICT], role_runs=[_run("judge 1", "judge", 40)]
    )
    entry = {**record, "nodeid": "test_a.py::test_judged", "outcome": "passed"}

    page = render_html(assemble_report([entry]))

    assert "It names Paris." in page
    assert "judge runs (apart from the agent's): 40 tokens" in page
