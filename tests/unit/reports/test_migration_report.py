"""Unit tests of what the reports carry for the migration period and for pruning: a
cassette entry's ``digests`` and ``eased``, narrowed when a shared cassette is judged
again, and the section, the line of totals and the table cell that show them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_agentctx.reports.migration import eased_lines, eased_note
from pytest_agentctx.reports.record import build_record
from pytest_agentctx.reports.session_report import (
    ReportCollector,
    cassette_entry,
    judged_digests,
    summary_line,
)
from pytest_agentctx.reports.table import table_lines
from pytest_agentctx.traffic.cassettes import Cassette
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.prune import request_digest
from pytest_agentctx.traffic.cassettes.store import write_cassette


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


def _cassette(tmp_path: Path, **options: Any) -> Cassette:
    path = tmp_path / "cassettes" / "test_x.json"
    write_cassette(path, [_interaction(n) for n in range(3)])
    return Cassette(path, **options)


def test_unused_recordings_come_with_the_digest_of_each_request(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path, allow_unused=True)
    cassette.played = [1]

    entry = cassette_entry(cassette, rootpath=tmp_path, judged=True, saved=False)

    assert entry["digests"] == {
        "0": request_digest(_interaction(0)),
        "2": request_digest(_interaction(2)),
    }


def test_an_entry_without_unused_recordings_has_no_digests(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path)
    cassette.played = [0, 1, 2]

    entry = cassette_entry(cassette, rootpath=tmp_path, judged=True, saved=False)

    assert "digests" not in entry
    assert "eased" not in entry


def test_unused_recordings_let_pass_are_unused_and_eased(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path, migration_until="2026-12-31", migrating=True)
    cassette.played = [0]
    cassette.check()

    entry = cassette_entry(cassette, rootpath=tmp_path, judged=True, saved=False)

    assert (entry["status"], entry["unused"]) == ("unused", [1, 2])
    assert entry["eased"] == {"until": "2026-12-31", "misses": 0, "unused": 2}


def _shared(nodeid: str, unused: list[int]) -> tuple[str, dict[str, Any]]:
    digests = {str(i): f"d{i}" for i in unused}
    cassette: dict[str, Any] = {"path": "cassettes/s.json", "mode": "none", "status": "replayed"}
    cassette.update(interactions=3, unused=unused, shared=True, digests=digests)
    return nodeid, dict(build_record(runs=(), cassette=cassette))  # type: ignore[arg-type]


def test_a_shared_cassette_keeps_the_digests_of_what_no_test_used() -> None:
    collector = ReportCollector()
    for nodeid, record in (_shared("t.py::a", [0, 2]), _shared("t.py::b", [2])):
        collector.add(nodeid, "passed", record=record)

    report = collector.build()

    assert [t["cassette"]["digests"] for t in report["tests"]] == [{"2": "d2"}, {"2": "d2"}]


def test_no_digests_are_kept_when_every_recording_was_used() -> None:
    assert judged_digests({"0": "d0"}, set()) is None


def _eased_report(**eased: int) -> dict[str, Any]:
    cassette: dict[str, Any] = {"path": "cassettes/x.json", "status": "unused", "unused": [1]}
    cassette["eased"] = {"until": "2026-12-31", **eased}
    test: dict[str, Any] = {
        "nodeid": "t.py::a",
        "outcome": "passed",
        "cassette": cassette,
        "budget": None,
    }
    test.update(repeat=None, runs=[], stats=build_record(runs=())["stats"], suite="unit")
    return {"tests": [test]}


def test_the_section_lists_each_test_let_pass_with_its_counts() -> None:
    lines = eased_lines(_eased_report(misses=1, unused=2), report_path="r.json")

    assert lines == [
        "t.py::a: 2 unused recordings, 1 caught miss in cassettes/x.json",
        "These pass until 2026-12-31 (agent_migration_until), then fail:",
        "  list them: pytest-agentctx cassettes unused r.json",
        "  drop the unused recordings: pytest-agentctx cassettes prune r.json",
        '  re-record the tests with misses: pytest --agent-record "TEST_ID"',
    ]


def test_nothing_let_pass_prints_no_section() -> None:
    report = _eased_report(misses=0, unused=1)
    report["tests"][0]["cassette"].pop("eased")

    assert (eased_lines(report, report_path=None), eased_note(report)) == ([], None)


def test_the_line_of_totals_says_how_many_were_let_pass_and_until_when() -> None:
    line = summary_line(_eased_report(misses=0, unused=1))

    assert line is not None
    assert line.endswith("; 1 test let pass under agent_migration_until (until 2026-12-31)")


def test_the_table_marks_a_cassette_let_pass() -> None:
    lines = table_lines(_eased_report(misses=0, unused=1), width=120)

    assert lines[1].endswith("unused (eased)")


def test_the_html_page_says_a_cassette_was_let_pass() -> None:
    from pytest_agentctx.reports.html import render_html
    from pytest_agentctx.reports.session_report import assemble_report

    report = assemble_report(_eased_report(misses=0, unused=1)["tests"])

    assert "let pass until 2026-12-31 (agent_migration_until)" in render_html(report)
