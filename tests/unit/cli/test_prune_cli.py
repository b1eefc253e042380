"""``pytest-agentctx cassettes unused`` and ``cassettes prune``: what a report lists,
listed and dropped, with a dry run, over a merged report, and refused with a message for a
report or cassette that cannot be trusted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentctx.cli.main import main
from pytest_agentctx.reports.session_report import ReportCollector, write_report
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.prune import request_digest
from pytest_agentctx.traffic.cassettes.store import load_cassette, write_cassette

CASSETTE = "cassettes/test_x/test_a.json"


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


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (its rootdir the current folder) with a cassette of 3 interactions."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    write_cassette(tmp_path / CASSETTE, [_interaction(n) for n in range(3)])
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _cassette(unused: list[int], **extra: Any) -> dict[str, Any]:
    digests = {str(i): request_digest(_interaction(i)) for i in unused}
    entry: dict[str, Any] = {"path": CASSETTE, "mode": "none", "status": "unused"}
    entry.update(interactions=3, unused=unused, **({"digests": digests} if unused else {}))
    entry.update(extra)
    return entry


def _report(path: Path, *tests: tuple[str, dict[str, Any] | None]) -> Path:
    from pytest_agentctx.reports.record import build_record

    collector = ReportCollector()
    for nodeid, cassette in tests:
        collector.add(nodeid, "passed", record=dict(build_record(runs=(), cassette=cassette)))  # type: ignore[arg-type]
    write_report(path, collector.build())
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, (captured.out + captured.err).splitlines()


def _kept(project: Path) -> list[object]:
    return [i.request_body for i in load_cassette(project / CASSETTE)]


def test_prune_drops_the_unused_recordings_and_says_what_next(project, capsys):
    _report(project / "r.json", ("test_x.py::test_a", _cassette([0, 2])))

    code, lines = _run(capsys, "cassettes", "prune", "r.json")

    assert (code, lines) == (
        0,
        [
            f"{CASSETTE}: dropped #0, #2 (1 kept)",
            "pruned 2 interaction(s) from 1 cassette(s). Next: run the suite again (pytest) "
            "and review the change (git diff).",
        ],
    )
    assert _kept(project) == [{"json": {"n": 1}}]


def test_a_dry_run_prints_the_plan_and_changes_nothing(project, capsys):
    _report(project / "r.json", ("test_x.py::test_a", _cassette([1])))
    before = (project / CASSETTE).read_bytes()

    code, lines = _run(capsys, "cassettes", "prune", "r.json", "--dry-run")

    assert code == 0
    assert lines[0] == f"{CASSETTE}: would drop #1 (2 kept)"
    assert "nothing changed (--dry-run)" in lines[1]
    assert (project / CASSETTE).read_bytes() == before


def test_a_merged_report_prunes_only_what_no_shard_used(project, capsys):
    shared = {"shared": True, "status": "replayed"}
    _report(project / "one.json", ("test_x.py::test_a", _cassette([1, 2], **shared)))
    _report(project / "two.json", ("test_x.py::test_b", _cassette([0, 2], **shared)))
    assert _run(capsys, "report", "merge", "one.json", "two.json", "-o", "all.json")[0] == 0

    code, lines = _run(capsys, "cassettes", "prune", "all.json")

    assert (code, lines[0]) == (0, f"{CASSETTE}: dropped #2 (2 kept)")
    assert _kept(project) == [{"json": {"n": 0}}, {"json": {"n": 1}}]


def test_a_report_with_nothing_unused_prunes_nothing(project, capsys):
    _report(project / "r.json", ("test_x.py::test_a", _cassette([])))

    assert _run(capsys, "cassettes", "prune", "r.json") == (
        0,
        ["nothing to prune: report r.json lists no unused recordings."],
    )


def test_unused_lists_the_recordings_and_the_misses_let_pass(project, capsys):
    eased = {"eased": {"until": "2026-12-31", "misses": 1, "unused": 0}, "status": "stale"}
    _report(
        project / "r.json",
        ("test_x.py::test_a", _cassette([0, 2])),
        ("test_x.py::test_b", {**_cassette([]), "path": "cassettes/b.json", **eased}),
    )

    code, lines = _run(capsys, "cassettes", "unused", "r.json")

    assert (code, lines) == (
        1,
        [
            "unused recordings: 2 in 1 cassette(s)",
            f"  {CASSETTE} #0, #2 (not replayed by test_x.py::test_a)",
            "  -> drop them: pytest-agentctx cassettes prune r.json (--dry-run shows the plan "
            "first)",
            "caught misses let pass: 1 test(s)",
            "  test_x.py::test_b: 1 miss(es) in cassettes/b.json",
            '  -> re-record each: pytest --agent-record "TEST_ID"',
        ],
    )


def test_a_report_that_is_not_there_is_a_usage_error(project, capsys):
    code, lines = _run(capsys, "cassettes", "prune", "nowhere.json")

    assert code == 2
    assert lines[0].startswith("pytest-agentctx: error: Report nowhere.json does not exist.")


def test_a_report_from_before_the_digests_is_refused_with_what_to_run(project, capsys):
    cassette = _cassette([1])
    del cassette["digests"]
    _report(project / "r.json", ("test_x.py::test_a", cassette))

    code, lines = _run(capsys, "cassettes", "prune", "r.json")

    assert code == 2
    assert lines == [
        f"pytest-agentctx: error: Report r.json lists unused recordings of {CASSETTE} (test "
        "test_x.py::test_a) without the digests of their requests: it was written by an older "
        "pytest-agentctx, and prune needs them to check the file is still the one the report "
        "saw. Write it again: pytest --agent-report=r.json, then run pytest-agentctx cassettes "
        "prune r.json."
    ]


def test_a_cassette_that_moved_is_refused_and_nothing_is_pruned(project, capsys):
    write_cassette(project / "cassettes/b.json", [_interaction(n) for n in range(3)])
    _report(
        project / "r.json",
        ("test_x.py::test_a", _cassette([0])),
        ("test_x.py::test_b", _cassette([0], path="cassettes/gone.json")),
    )

    code, lines = _run(capsys, "cassettes", "prune", "r.json")

    assert code == 2
    assert lines[0].startswith(
        "pytest-agentctx: error: Cassette cassettes/gone.json that report r.json lists"
    )
    assert len(_kept(project)) == 3


def test_a_cassette_changed_since_the_report_is_refused(project, capsys):
    _report(project / "r.json", ("test_x.py::test_a", _cassette([0])))
    write_cassette(project / CASSETTE, [_interaction(9), _interaction(1)])

    code, lines = _run(capsys, "cassettes", "prune", "r.json")

    assert code == 2
    assert "changed since the report r.json" in lines[0]
    assert json.loads((project / CASSETTE).read_text())["interactions"][0]["request"]["body"] == {
        "json": {"n": 9}
    }
