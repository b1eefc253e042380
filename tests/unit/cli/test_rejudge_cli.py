"""``pytest-agentctx rejudge``: the verdicts of judges over a cassette folder or a report,
asked of a loopback judge, written to a file and shown as a table."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.wire import chat_interaction

from pytest_agentctx import LoopbackProvider
from pytest_agentctx.cli.main import main
from pytest_agentctx.reports.record import build_record
from pytest_agentctx.reports.schema import CassetteEntry
from pytest_agentctx.reports.session_report import ReportCollector, write_report
from pytest_agentctx.testing import write_cassette


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for name in ("orders", "refunds"):
        write_cassette(
            tmp_path / "cassettes" / f"test_{name}.json",
            [chat_interaction(f"About my {name}?", f"Your {name} are on their way, order 42.")],
        )
    return tmp_path


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackProvider]:
    with LoopbackProvider() as provider:
        monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield provider


def command(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, (captured.out + captured.err).splitlines()


RUBRIC = ("--rubric", "Cites the order number.", "--judge-model", "openai:gpt-4o-mini")


def test_every_run_of_a_folder_gets_a_verdict_written_and_shown(project, judge, capsys):
    judge.reply('{"score": 1, "rationale": "Cites 42."}').reply(
        '{"score": 0.8, "rationale": "Cites 42."}'
    )

    code, lines = command(capsys, "rejudge", "cassettes", *RUBRIC, "-o", "verdicts.json")

    assert code == 0
    assert lines == [
        "verdict  judge  score      run",
        "passed   judge  1.00/0.70  test_orders.json#1",
        "passed   judge  0.80/0.70  test_refunds.json#1",
        "agentctx rejudge: 2 run(s), 1 judge(s), 2 verdict(s): 2 passed, 0 failed; "
        "written to verdicts.json",
    ]
    written = json.loads((project / "verdicts.json").read_text())
    assert [(v["cassette"], v["score"], v["passed"]) for v in written["verdicts"]] == [
        ("test_orders.json", 1.0, True),
        ("test_refunds.json", 0.8, True),
    ]


def test_a_failing_verdict_exits_1(project, judge, capsys):
    judge.reply('{"score": 0.1, "rationale": "No number."}').reply(
        '{"score": 0.9, "rationale": "Cites 42."}'
    )

    code, lines = command(capsys, "rejudge", "cassettes", *RUBRIC, "-o", "v.json")

    assert code == 1
    assert lines[1] == "FAILED   judge  0.10/0.70  test_orders.json#1"


def test_the_runs_of_a_report_are_those_of_its_tests_cassettes(project, judge, capsys):
    collector = ReportCollector()
    cassette: CassetteEntry = {
        "path": "cassettes/test_orders.json",
        "mode": "none",
        "status": "replayed",
        "interactions": 1,
        "unused": [],
    }
    collector.add(
        "test_orders.py::test_orders", "passed", record=build_record(runs=(), cassette=cassette)
    )
    write_report(project / "report.json", collector.build())
    judge.reply('{"score": 1, "rationale": "Cites 42."}')

    code, lines = command(capsys, "rejudge", "report.json", *RUBRIC, "-o", "v.json")

    assert (code, lines[1]) == (0, "passed   judge  1.00/0.70  cassettes/test_orders.json#1")
    [verdict] = json.loads((project / "v.json").read_text())["verdicts"]
    assert verdict["test"] == "test_orders.py::test_orders"


def test_without_a_judge_the_command_says_how_to_give_one(project, capsys):
    code, lines = command(capsys, "rejudge", "cassettes", "-o", "v.json")

    assert code == 2
    assert "no judge given; expected --judges JUDGES.toml or --rubric TEXT" in lines[0]


def test_a_judge_that_cannot_be_reached_is_a_usage_error_naming_the_run(
    project, monkeypatch, capsys
):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")

    code, lines = command(capsys, "rejudge", "cassettes", *RUBRIC, "-o", "v.json")

    assert code == 2
    assert "judge 'judge' on test_orders.json#1: the call to openai:gpt-4o-mini failed" in lines[0]
    assert not (project / "v.json").exists()


def test_a_file_of_the_folder_that_is_not_a_cassette_is_named(project, capsys):
    (project / "cassettes" / "notes.json").write_text("[1, 2]")

    code, lines = command(capsys, "rejudge", "cassettes", *RUBRIC, "-o", "v.json")

    assert code == 2
    assert "notes.json" in lines[0]
    assert "give the folder that holds only cassettes" in lines[0]


def test_a_folder_without_recorded_runs_says_to_record_some(project, capsys):
    (project / "empty").mkdir()

    code, lines = command(capsys, "rejudge", "empty", *RUBRIC, "-o", "v.json")

    assert code == 2
    assert "empty: no recorded agent run in 0 cassette(s); record some first" in lines[0]
