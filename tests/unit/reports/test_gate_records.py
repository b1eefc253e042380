"""Unit tests for pytest_agentctx.reports.gate_records: the gate's findings as data, their
JSON, their reader, and what the report, the page and JUnit render from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentctx import GateRecord, GateResult, ReportError, evaluate_gate, load_report
from pytest_agentctx.reports.gate_records import (
    junit_gate_properties,
    record_from_dict,
    records_by_test,
    records_from_gate,
)
from pytest_agentctx.reports.session_report import REPORT_FORMAT

PASS_RATE = GateRecord(
    nodeid=None,
    kind="pass_rate",
    measure="pass_rate",
    message="pass rate 100.0% -> 60.0% ...",
    baseline=1.0,
    now=0.6,
    allowed=2.0,
    interval=(-0.54, -0.26),
    p_value=1.9e-06,
)
BUDGET = GateRecord(
    "t.py::a", "budget", "max_tokens", "t.py::a: over budget", now=1000, allowed=500
)


def test_a_record_reads_back_from_its_json() -> None:
    data = json.loads(json.dumps(PASS_RATE.to_dict()))

    assert record_from_dict(data) == PASS_RATE


def test_a_records_json_lists_every_field() -> None:
    assert BUDGET.to_dict() == {
        "nodeid": "t.py::a",
        "kind": "budget",
        "measure": "max_tokens",
        "baseline": None,
        "now": 1000,
        "allowed": 500,
        "interval": None,
        "p_value": None,
        "verdict": "fail",
        "message": "t.py::a: over budget",
    }


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("kind", "vibes", "kind='vibes'; expected one of budget, unmeasured"),
        ("verdict", "maybe", "verdict='maybe'; expected one of fail, pass, info"),
        ("interval", [1], r"interval=\[1\]; expected \[low, high\] or null"),
        ("p_value", "small", "p_value='small'; expected a number or null"),
        ("nodeid", 3, "nodeid=3; expected a node id or null"),
    ],
)
def test_a_bad_field_is_named_when_a_record_is_read(field: str, value: Any, said: str) -> None:
    data: dict[str, Any] = {**BUDGET.to_dict(), field: value}

    with pytest.raises(ReportError, match=said):
        record_from_dict(data)


def test_a_gate_of_an_earlier_report_has_no_records() -> None:
    assert records_from_gate({"enabled": True, "passed": False, "failures": ["a: x"]}) == []


def test_the_failing_records_of_each_test_are_found_by_node_id() -> None:
    info = GateRecord("t.py::a", "flip", "outcome", "flipped", "info")

    assert records_by_test([BUDGET, info, PASS_RATE]) == {"t.py::a": [BUDGET]}


def test_junit_gets_the_verdict_and_the_failing_and_session_wide_records() -> None:
    info = GateRecord("t.py::a", "flip", "outcome", "flipped", "info")

    properties = junit_gate_properties(False, [BUDGET, info, PASS_RATE])

    assert [name for name, _ in properties] == [
        "agentctx.gate",
        "agentctx.gate.record",
        "agentctx.gate.record",
    ]
    assert properties[0] == ("agentctx.gate", "failed")
    assert json.loads(properties[1][1]) == BUDGET.to_dict()
    assert json.loads(properties[2][1])["kind"] == "pass_rate"


def test_the_reports_gate_entry_renders_its_failures_from_the_records() -> None:
    result = GateResult((BUDGET, GateRecord("t.py::b", "new", "test", "t.py::b", "info")))

    assert result.to_dict(enabled=True) == {
        "enabled": True,
        "passed": False,
        "failures": ["t.py::a: over budget"],
        "records": [BUDGET.to_dict(), result.records[1].to_dict()],
    }
    assert result.new == ("t.py::b",)


def test_the_gate_gives_a_budget_its_figures() -> None:
    report = {
        "tests": [
            {
                "nodeid": "t.py::a",
                "budget": {"exceeded": [{"name": "max_tokens", "measured": 9, "allowed": 5}]},
                "cassette": None,
            }
        ]
    }

    [record] = evaluate_gate(report).records

    assert (record.nodeid, record.kind, record.measure, record.now, record.allowed) == (
        "t.py::a",
        "budget",
        "max_tokens",
        9,
        5,
    )


def _write(path: Path, version: int) -> Path:
    test = {"nodeid": "t.py::a", "stats": {"iterations": 1, "total_tokens": 5, "trajectory": []}}
    path.write_text(json.dumps({"format": REPORT_FORMAT, "version": version, "tests": [test]}))
    return path


def test_a_report_of_version_1_still_reads_as_a_baseline(tmp_path: Path) -> None:
    assert load_report(_write(tmp_path / "old.json", 1))["tests"][0]["nodeid"] == "t.py::a"


def test_a_report_of_a_later_version_names_its_version_and_the_command(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"has version 3; .* pytest --agent-report=PATH"):
        load_report(_write(tmp_path / "new.json", 3))
