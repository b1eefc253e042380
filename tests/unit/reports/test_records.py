"""Unit tests for pytest_agentctx.reports.session_report: records, the collector, the JSON
file and the line of totals (the table is tests/unit/reports/test_table.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pytest_agentctx import AgentContext, ReportError, ToolCall, ToolResult
from pytest_agentctx.context.runs import RunRecord
from pytest_agentctx.reports.record import build_record, is_agent_test, junit_properties
from pytest_agentctx.reports.schema import Record
from pytest_agentctx.reports.session_report import (
    REPORT_FORMAT,
    ReportCollector,
    cassette_entry,
    dumps_report,
    load_report,
    summary_line,
    write_report,
)
from pytest_agentctx.traffic.cassettes import Cassette, RecordMode
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.misses import Miss
from pytest_agentctx.traffic.cassettes.store import write_cassette

START = datetime(2025, 1, 1, tzinfo=UTC)


def _at(seconds: int) -> datetime:
    return START + timedelta(seconds=seconds)


def _usage(tokens_in: int, tokens_out: int) -> dict[str, Any]:
    return {"usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}, "model": "gpt-4o"}


def _run(name: str = "weather") -> RunRecord:
    """Two iterations: get_weather, then the answer; 1000 + 500 tokens of gpt-4o."""
    context = AgentContext.new("Weather?", at=_at(0))
    context = context.add_assistant_message(
        None, [ToolCall(id="call_1", name="get_weather", arguments={})], at=_at(1)
    )
    context = context.with_iteration_metadata(_usage(600, 100))
    context = context.add_tool_results(
        [ToolResult(tool_call_id="call_1", name="get_weather", content="sunny")], at=_at(2)
    )
    context = context.add_assistant_message("Sunny.", at=_at(3))
    context = context.with_iteration_metadata(_usage(400, 400))
    return RunRecord(name, "runtime", context)


def _record(**overrides: Any) -> Record:
    values: dict[str, Any] = {"runs": [_run()]}
    values.update(overrides)
    return build_record(**values)


def _report(*entries: tuple[str, str, Mapping[str, object] | None]) -> dict[str, Any]:
    collector = ReportCollector()
    for nodeid, outcome, record in entries:
        collector.add(nodeid, outcome, record=record)
    return collector.build()


def _interaction(n: int) -> Interaction:
    return Interaction(
        method="POST",
        url="https://api.openai.com/v1/chat/completions",
        request_headers={},
        request_body={"json": {"n": n}},
        status=200,
        response_headers={},
        response_body={"json": {"n": n}},
    )


def _cassette(tmp_path: Path, count: int = 2, **options: Any) -> Cassette:
    path = tmp_path / "cassettes" / "test_x.json"
    if count:
        write_cassette(path, [_interaction(n) for n in range(count)])
    return Cassette(path, **options)


# -- records ---------------------------------------------------------------------------


def test_a_record_holds_each_run_with_its_stats_and_context() -> None:
    match _record():
        case {
            "suite": "unit",
            "cassette": None,
            "budget": None,
            "repeat": None,
            "stats": {"runs": 1, "iterations": 2, "total_tokens": 1500},
            "runs": [
                {
                    "name": "weather",
                    "source": "runtime",
                    "stats": {"tool_calls": 1, "trajectory": ["get_weather"]},
                    "context": {"iterations": [{"number": 1}, {"number": 2}]},
                }
            ],
        }:
            pass
        case other:
            pytest.fail(f"unexpected record: {other}")


def test_a_record_without_contexts_keeps_only_the_figures_and_the_priced_calls() -> None:
    record = _record(contexts=False)

    assert [sorted(run) for run in record["runs"]] == [["calls", "name", "source", "stats"]]


def test_a_record_adds_up_the_stats_of_every_run() -> None:
    record = _record(runs=[_run("a"), _run("b")])

    assert record["stats"]["runs"] == 2
    assert record["stats"]["trajectory"] == ["get_weather", "get_weather"]
    assert record["stats"]["cost_usd"] == pytest.approx(2 * (1000 * 2.5 + 500 * 10) / 1e6)


def test_a_record_turns_budget_tuples_into_lists() -> None:
    record = _record(budget={"limits": {"max_tokens": 10}, "exceeded": ()})

    assert record["budget"] == {"limits": {"max_tokens": 10}, "exceeded": []}


def test_a_record_is_plain_json() -> None:
    record = _record(cassette={"path": "c.json", "unused": (1,)})

    assert json.loads(json.dumps(record)) == record


def test_an_agent_test_has_runs_or_a_cassette() -> None:
    assert [
        is_agent_test(_record()),
        is_agent_test(_record(runs=[], cassette={"status": "missing"})),
        is_agent_test(_record(runs=[])),
    ] == [True, True, False]


# -- cassette entries ------------------------------------------------------------------


def test_a_cassette_that_answered_every_request_was_replayed(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path)
    cassette.played = [0, 1]

    match cassette_entry(cassette, rootpath=tmp_path, judged=True, saved=False):
        case {
            "path": "cassettes/test_x.json",
            "mode": "none",
            "status": "replayed",
            "interactions": 2,
            "unused": [],
        }:
            pass
        case other:
            pytest.fail(f"unexpected entry: {other}")


def test_a_cassette_with_unused_recordings_is_stale(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path)
    cassette.played = [0]

    entry = cassette_entry(cassette, rootpath=tmp_path, judged=True, saved=False)

    assert (entry["status"], entry["unused"]) == ("stale", [1])


def test_unused_recordings_that_are_allowed_are_reported_unused(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path, allow_unused=True)
    cassette.played = [1]

    entry = cassette_entry(cassette, rootpath=tmp_path, judged=True, saved=False)

    assert (entry["status"], entry["unused"]) == ("unused", [0])


def test_unused_recordings_of_a_failed_test_are_not_judged(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path)

    entry = cassette_entry(cassette, rootpath=tmp_path, judged=False, saved=False)

    assert (entry["status"], entry["unused"]) == ("replayed", [])


def test_a_cassette_that_missed_a_request_is_stale(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path)
    cassette.misses.append(Miss(key=None, body=None, reason="no such request"))  # type: ignore[arg-type]

    entry = cassette_entry(cassette, rootpath=tmp_path, judged=False, saved=False)

    assert entry["status"] == "stale"


def test_a_cassette_without_a_file_is_missing(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path, count=0)

    entry = cassette_entry(cassette, rootpath=tmp_path, judged=True, saved=False)

    assert (entry["status"], entry["interactions"]) == ("missing", 0)


def test_a_cassette_in_record_mode_was_recorded(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path, mode=RecordMode.REWRITE)

    entry = cassette_entry(cassette, rootpath=tmp_path, judged=True, saved=True)

    assert (entry["status"], entry["mode"]) == ("recorded", "rewrite")


def test_a_shared_cassette_is_never_unused_on_its_own(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path, shared=True)
    cassette.played = [0]

    entry = cassette_entry(cassette, rootpath=tmp_path, judged=True, saved=False)

    assert (entry["status"], entry["unused"], entry["shared"]) == ("replayed", [1], True)


def test_a_cassette_outside_the_rootdir_keeps_its_absolute_path(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path)

    entry = cassette_entry(cassette, rootpath=tmp_path / "elsewhere", judged=True, saved=False)

    assert entry["path"] == (tmp_path / "cassettes" / "test_x.json").as_posix()


# -- JUnit properties ------------------------------------------------------------------


def test_junit_properties_of_an_agent_test() -> None:
    record = _record(cassette={"status": "replayed"})

    assert junit_properties(record) == [
        ("agentctx.iterations", 2),
        ("agentctx.tool_calls", 1),
        ("agentctx.tokens", 1500),
        ("agentctx.cost_usd", "0.00750000"),
        ("agentctx.cassette", "replayed"),
    ]


def test_a_test_without_runs_has_the_figures_of_no_run() -> None:
    from pytest_agentctx.reports.figures import RunStats
    from pytest_agentctx.reports.record import no_runs_stats

    assert _record(runs=[])["stats"] == no_runs_stats() == RunStats().to_dict()
    assert RunStats.total([]).to_dict() == no_runs_stats()


def test_a_plain_test_has_no_junit_properties() -> None:
    assert junit_properties(_record(runs=[])) == []


def test_junit_properties_leave_out_an_unknown_cost() -> None:
    run = _run()
    context = run.context.with_iteration_metadata(
        {"usage": {"input_tokens": 1, "output_tokens": 1}, "model": "a-model-without-a-price"}
    )
    record = build_record(runs=[RunRecord("x", "runtime", context)])

    assert [name for name, _ in junit_properties(record)] == [
        "agentctx.iterations",
        "agentctx.tool_calls",
        "agentctx.tokens",
    ]


# -- the collector ---------------------------------------------------------------------


def test_the_report_lists_tests_by_node_id_with_the_worst_outcome() -> None:
    collector = ReportCollector()
    for nodeid, outcome in [("b.py::t", "passed"), ("a.py::t", "passed"), ("b.py::t", "failed")]:
        collector.add(nodeid, outcome)
    collector.add("b.py::t", "passed", record=_record())

    report = collector.build()

    assert [(t["nodeid"], t["outcome"]) for t in report["tests"]] == [
        ("a.py::t", "passed"),
        ("b.py::t", "failed"),
    ]


def test_the_summary_counts_outcomes_and_suites_and_adds_up_the_stats() -> None:
    report = _report(
        ("a.py::t", "passed", _record()),
        ("b.py::t", "skipped", _record(runs=[], suite="integration")),
        ("c.py::t", "failed", _record()),
    )

    match report["summary"]:
        case {
            "tests": 3,
            "passed": 1,
            "failed": 1,
            "skipped": 1,
            "unit": 2,
            "integration": 1,
            "stats": {"runs": 2, "iterations": 4, "total_tokens": 3000},
            "gate": {"enabled": False, "passed": True, "failures": [], "records": []},
        }:
            pass
        case other:
            pytest.fail(f"unexpected summary: {other}")


def test_outcomes_other_than_passed_failed_and_skipped_are_ignored() -> None:
    collector = ReportCollector()
    collector.add("a.py::t", "rerun")
    collector.add("a.py::t", "passed", record=_record())

    assert [(t["nodeid"], t["outcome"]) for t in collector.build()["tests"]] == [
        ("a.py::t", "passed")
    ]


def test_a_test_without_a_record_gets_an_empty_entry_and_its_suite_from_keywords() -> None:
    collector = ReportCollector()
    collector.add("tests/integration/test_x.py::t", "failed", keywords=["integration", "t"])

    [test] = collector.build()["tests"]

    assert (test["suite"], test["runs"], test["cassette"]) == ("integration", [], None)


def test_the_report_does_not_show_whether_a_cassette_is_shared() -> None:
    report = _report(("a.py::t", "passed", _record(cassette=_shared([], "replayed"))))

    assert "shared" not in report["tests"][0]["cassette"]


def _shared(unused: list[int], status: str = "replayed") -> dict[str, Any]:
    return {
        "path": "cassettes/shared.json",
        "mode": "none",
        "status": status,
        "interactions": 3,
        "unused": unused,
        "shared": True,
    }


def test_a_shared_cassette_is_unused_where_no_test_used_a_recording() -> None:
    report = _report(
        ("a.py::t", "passed", _record(cassette=_shared([1, 2]))),
        ("b.py::t", "passed", _record(cassette=_shared([0, 2]))),
    )

    assert [(t["cassette"]["status"], t["cassette"]["unused"]) for t in report["tests"]] == [
        ("unused", [2]),
        ("unused", [2]),
    ]


def test_a_shared_cassette_whose_recordings_were_all_used_stays_replayed() -> None:
    report = _report(
        ("a.py::t", "passed", _record(cassette=_shared([1, 2]))),
        ("b.py::t", "passed", _record(cassette=_shared([0]))),
    )

    assert [(t["cassette"]["status"], t["cassette"]["unused"]) for t in report["tests"]] == [
        ("replayed", []),
        ("replayed", []),
    ]


def test_collecting_in_another_order_builds_the_same_report() -> None:
    entries = [
        ("a.py::t", "passed", _record(cassette=_shared([1, 2]))),
        ("b.py::t", "passed", _record(runs=[_run("x"), _run("y")], cassette=_shared([2]))),
        ("c.py::t", "failed", _record(runs=[])),
    ]

    assert dumps_report(_report(*entries)) == dumps_report(_report(*reversed(entries)))


# -- files -----------------------------------------------------------------------------


def test_the_json_text_has_sorted_keys_and_ends_with_a_newline() -> None:
    text = dumps_report({"b": 1, "a": {"d": 2, "c": 3}})

    assert text == '{\n  "a": {\n    "c": 3,\n    "d": 2\n  },\n  "b": 1\n}\n'


def test_a_written_report_loads_back(tmp_path: Path) -> None:
    report = _report(("a.py::t", "passed", _record()))

    write_report(tmp_path / "out" / "r.json", report)

    assert load_report(tmp_path / "out" / "r.json") == report


def test_loading_a_missing_report_says_how_to_write_one(tmp_path: Path) -> None:
    with pytest.raises(
        ReportError, match=r"does not exist\. Write one with: pytest --agent-report"
    ):
        load_report(tmp_path / "nope.json")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", r"is not JSON \(Expecting property name .*line 1\)"),
        ('{"format": "junit"}', r"is not a pytest-agentctx report \(format 'junit'"),
        ("[1, 2]", r"is not a pytest-agentctx report \(format 'list'"),
        (
            f'{{"format": "{REPORT_FORMAT}", "version": 3}}',
            r"has version 3; this pytest-agentctx reads versions 1 and 2 and writes version 2\. "
            r"Write it again with this version: pytest --agent-report=PATH",
        ),
        (f'{{"format": "{REPORT_FORMAT}", "version": 1}}', r"'tests' is not a list"),
        (
            f'{{"format": "{REPORT_FORMAT}", "version": 1, "tests": [{{"nodeid": "a"}}]}}',
            r"tests\[0\] \(a\) has no 'stats'",
        ),
        (
            f'{{"format": "{REPORT_FORMAT}", "version": 1, "tests": '
            '[{"nodeid": "a", "stats": {"iterations": 1, "total_tokens": "many"}}]}',
            r"tests\[0\] \(a\) has no int 'stats.total_tokens'",
        ),
    ],
    ids=["not-json", "other-format", "not-an-object", "version", "no-tests", "no-stats", "bad"],
)
def test_loading_a_file_that_is_not_a_report_says_what_is_wrong(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "r.json"
    path.write_text(text)

    with pytest.raises(ReportError, match=message):
        load_report(path)


# -- the line of totals ---------------------------------------------------------------


def test_the_summary_line_adds_up_the_agent_tests() -> None:
    report = _report(
        ("a.py::t", "passed", _record(cassette={"status": "replayed"})),
        ("b.py::t", "passed", _record(cassette={"status": "stale"})),
        ("c.py::t", "passed", _record(runs=[])),
    )

    assert summary_line(report) == (
        "agentctx: 2 agent tests, 2 runs, 4 iterations, 2 tool calls, 3000 tokens, "
        "cost $0.015000; cassettes: 1 replayed, 1 stale"
    )


def test_there_is_no_summary_line_without_agent_tests() -> None:
    assert summary_line(_report(("a.py::t", "passed", _record(runs=[])))) is None


# -- runs captured but not measured ----------------------------------------------------


def test_an_unmeasured_record_says_so_and_is_an_agent_test() -> None:
    record = _record(runs=[], measured=False)

    assert record["measured"] is False
    assert is_agent_test(record)


def test_a_measured_record_has_no_measured_key() -> None:
    assert "measured" not in _record()


def test_the_summary_line_counts_the_unmeasured_tests_and_says_how_to_measure() -> None:
    report = _report(
        ("a.py::t", "passed", _record()),
        ("a.py::u", "passed", _record(runs=[], measured=False)),
    )

    line = summary_line(report)

    assert line is not None
    assert line.endswith(
        "; 1 not measured (runs captured from traffic are measured for a budget, "
        "--agent-report, --agent-gate or --agent-baseline)"
    )


# -- redaction -------------------------------------------------------------------------

SECRET = "sk-report-secret-4c1d7e"


def _leaky_run() -> RunRecord:
    """A run of agent ``SECRET-bot`` with the secret in its prompt, its tool's name,
    arguments and result, its model and a metadata key."""
    context = AgentContext.new(f"Use key {SECRET}", at=_at(0))
    call = ToolCall(id="call_1", name=f"lookup_{SECRET}", arguments={"key": SECRET})
    context = context.add_assistant_message(None, [call], at=_at(1))
    context = context.with_iteration_metadata({"model": f"model-{SECRET}", SECRET: True})
    result = ToolResult(tool_call_id="call_1", name=call.name, content=f"token={SECRET}")
    context = context.add_tool_results([result], at=_at(2))
    context = context.add_assistant_message(f"Done with {SECRET}.", at=_at(3))
    return RunRecord(f"{SECRET}-bot", "runtime", context)


def test_a_record_built_with_a_redactor_holds_no_secret() -> None:
    from pytest_agentctx.traffic.cassettes import Redactor

    record = build_record(runs=[_leaky_run()], redactor=Redactor(env=(), extra_values=[SECRET]))

    text = json.dumps(record)
    assert SECRET not in text
    match record["runs"][0]:
        case {
            "name": "REDACTED-bot",
            "stats": {"models": ["model-REDACTED"], "trajectory": ["lookup_REDACTED"]},
            "context": {"iterations": [{"messages": [{"content": "Use key REDACTED"}, *_]}, *_]},
        }:
            pass
        case other:
            pytest.fail(f"unexpected run entry: {other}")
    context: Any = record["runs"][0].get("context")
    assert context["iterations"][0]["metadata"]["REDACTED"] is True
    assert record["stats"]["trajectory"] == ["lookup_REDACTED"]


def test_a_record_redacted_keeps_its_figures() -> None:
    from pytest_agentctx.traffic.cassettes import Redactor

    plain = build_record(runs=[_leaky_run()])
    redacted = build_record(runs=[_leaky_run()], redactor=Redactor(env=(), extra_values=[SECRET]))

    assert redacted["stats"]["total_tokens"] == plain["stats"]["total_tokens"]
    assert redacted["stats"]["iterations"] == plain["stats"]["iterations"] == 2
    assert junit_properties(redacted) == junit_properties(plain)
    assert SECRET in json.dumps(plain)  # the redactor, not the record's building, removed it


# -- why a test failed -----------------------------------------------------------------


def test_a_failure_entry_keeps_a_short_text_whole() -> None:
    from pytest_agentctx.reports.failure_entry import failure_entry

    entry = failure_entry("call", "def test():\n>   assert 1 == 2\nE   assert 1 == 2\n")

    assert entry == {
        "phase": "call",
        "message": "E assert 1 == 2",
        "text": "def test():\n>   assert 1 == 2\nE   assert 1 == 2\n",
        "truncated": False,
        "cut": 0,
    }


def test_a_long_failure_text_is_cut_in_the_middle_saying_how_much() -> None:
    from pytest_agentctx.reports.failure_entry import failure_entry

    text = "HEAD" + "x" * 5000 + "TAIL"

    entry = failure_entry("call", text, message="MismatchError: 2 mismatches\n...", limit=1000)

    assert entry["truncated"] is True
    assert entry["cut"] == len(text) - 1000
    assert entry["text"].startswith("HEAD")
    assert entry["text"].endswith("TAIL")
    assert f"[{len(text) - 1000:,} characters of the failure text cut here" in entry["text"]
    assert entry["message"] == "MismatchError: 2 mismatches"


def test_a_record_carries_its_failure_redacted_by_the_tests_redactor() -> None:
    from pytest_agentctx.reports.failure_entry import failure_entry
    from pytest_agentctx.traffic.cassettes import Redactor

    failure = failure_entry("call", "E   AssertionError: key sk-live-0123456789")

    record = _record(failure=failure, redactor=Redactor(extra_values=["sk-live-0123456789"]))

    assert record["failure"] is not None
    assert record["failure"]["text"] == "E   AssertionError: key REDACTED"
    assert record["failure"]["message"] == "E AssertionError: key REDACTED"


def test_the_report_entry_of_a_failed_test_has_its_failure() -> None:
    from pytest_agentctx.reports.failure_entry import failure_entry

    failure = failure_entry("setup", "E   fixture 'db' not found")
    report = _report(
        ("t.py::a", "failed", _record(failure=failure)), ("t.py::b", "passed", _record())
    )

    assert [test["failure"] for test in report["tests"]] == [failure, None]


def test_the_junit_properties_name_the_failure_in_one_line() -> None:
    from pytest_agentctx.reports.failure_entry import failure_entry

    record = _record(failure=failure_entry("call", "...", message="AssertionError: 5 != 6"))

    assert ("agentctx.failure", "call: AssertionError: 5 != 6") in junit_properties(record)
    assert "agentctx.failure" not in dict(junit_properties(_record()))


def test_a_failure_entry_leaves_out_object_addresses() -> None:
    from pytest_agentctx.reports.failure_entry import failure_entry

    text = "self = <pytest_agentctx.Cassette object at 0x7f889706ec10>\nE   boom"

    entry = failure_entry("call", text, message="boom <Thing object at 0xDEADbeef01>")

    assert entry["text"] == "self = <pytest_agentctx.Cassette object at 0x...>\nE   boom"
    assert entry["message"] == "boom <Thing object at 0x...>"


def _mcp_run() -> RunRecord:
    run = _run()
    first = run.context.iterations[0]
    calls = [
        {"server": "weather_server", "tool": "get_weather", "tool_call_id": "call_1"},
        {
            "server": "weather_server",
            "tool": "ping",
            "tool_call_id": None,
            "is_error": True,
            "error": {"code": -32601, "message": "Method not found"},
        },
    ]
    changed = first.model_copy(update={"metadata": {**first.metadata, "mcp": calls}})
    context = run.context.model_copy(update={"iterations": [changed, *run.context.iterations[1:]]})
    return RunRecord(run.name, run.source, context)


def test_a_record_lists_each_runs_mcp_calls_and_counts_them() -> None:
    record = build_record(runs=[_mcp_run()], contexts=False)

    assert record["runs"][0]["mcp_calls"] == [
        {
            "server": "weather_server",
            "tool": "get_weather",
            "iteration": 1,
            "tool_call_id": "call_1",
            "is_error": False,
            "error": None,
        },
        {
            "server": "weather_server",
            "tool": "ping",
            "iteration": 1,
            "tool_call_id": None,
            "is_error": True,
            "error": "Method not found",
        },
    ]
    assert record["stats"]["mcp_calls"] == 2


def test_a_run_without_mcp_calls_has_no_mcp_entry() -> None:
    record = build_record(runs=[_run()])

    assert "mcp_calls" not in record["runs"][0]
    assert "mcp_contract" not in record


def test_the_junit_properties_name_each_mcp_call_and_the_contract() -> None:
    contract = {"weather_server": [{"name": "get_weather"}, {"name": "ping"}]}
    record = build_record(runs=[_mcp_run()], contexts=False, mcp_contract=contract)

    properties = [p for p in junit_properties(dict(record)) if "mcp" in p[0]]

    assert properties == [
        ("agentctx.mcp_calls", 2),
        ("agentctx.mcp_call", "weather_server get_weather"),
        ("agentctx.mcp_call", "weather_server ping isError error: Method not found"),
        ("agentctx.mcp_contract", "weather_server: get_weather, ping"),
    ]


def test_the_summary_line_names_the_price_data_of_a_priced_session() -> None:
    report = _report(("a.py::t", "passed", _record()))
    report["summary"]["price_data"] = {
        "source": "genai-prices",
        "version": "0.2.3",
        "day": "2026-11-29",
        "pinned": False,
    }

    line = summary_line(report)

    assert line is not None
    assert line.endswith(
        "(genai-prices 0.2.3, prices of 2026-11-29, not pinned: pytest-agentctx prices pin)"
    )
