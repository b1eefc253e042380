"""End-to-end tests of the ``pytest-agentctx`` command on the files real sessions write:
the gate gives the session's verdict, merged shard reports are the whole run's report,
and ``cassettes check``/``show`` read a recorded project."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from test_gate_e2e import QUIET, RESEARCH_TESTS, _gate_block

from pytest_agentctx import LoopbackProvider
from pytest_agentctx.cli.main import main


@pytest.fixture
def research(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(test_research_agent=RESEARCH_TESTS)
    return agent_pytester


def command(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, (captured.out + captured.err).splitlines()


def session_block(result: pytest.RunResult, length: int) -> list[str]:
    lines = result.stdout.lines
    start = lines.index(_gate_block(result)[0])
    return lines[start : start + length]


# -- the gate: the session's verdict ---------------------------------------------------


def test_the_gate_passes_a_clean_report_as_the_session_did(research, capsys) -> None:
    session = research.runpytest(*QUIET, "--agent-gate", "--agent-report=report.json")

    code, lines = command(capsys, "gate", "report.json")

    assert (code, lines) == (session.ret, _gate_block(session)) == (0, ["agentctx gate: passed"])


def test_drift_from_a_baseline_fails_as_in_the_session(research, capsys, monkeypatch) -> None:
    research.runpytest(*QUIET, "--agent-report=base.json").assert_outcomes(passed=2)
    monkeypatch.setenv("AGENT_TOOLS", "search,lookup")
    session = research.runpytest(
        *QUIET, "--agent-gate", "--agent-baseline=base.json", "--agent-report=report.json"
    )

    code, lines = command(capsys, "gate", "report.json", "--baseline", "base.json")

    assert code == session.ret == 1
    assert lines == session_block(session, len(lines))
    assert lines[0] == "agentctx gate FAILED: 3 reasons"


def test_tolerance_options_change_the_verdict_as_in_the_session(
    research, capsys, monkeypatch
) -> None:
    research.runpytest(*QUIET, "--agent-report=base.json").assert_outcomes(passed=2)
    monkeypatch.setenv("AGENT_TOOLS", "search,lookup")
    tolerance = ("ignore", "1", "unordered")
    session = research.runpytest(
        *QUIET,
        "--agent-gate",
        "--agent-baseline=base.json",
        "--agent-report=report.json",
        *(
            f"--agent-baseline-{n}={v}"
            for n, v in zip(("tokens", "iterations", "trajectory"), tolerance, strict=True)
        ),
    )

    code, lines = command(
        capsys,
        "gate",
        "report.json",
        "--baseline=base.json",
        *(
            f"--baseline-{n}={v}"
            for n, v in zip(("tokens", "iterations", "trajectory"), tolerance, strict=True)
        ),
    )

    assert code == session.ret == 1
    assert lines == session_block(session, len(lines))


def test_an_exceeded_budget_fails_the_gate_and_the_failed_test_is_named(research, capsys) -> None:
    research.makepyfile(
        test_budget="""
        import pytest
        from test_research_agent import AGENT

        @pytest.mark.agent_budget(max_tokens=150)
        async def test_expensive(agent_runtime, fake_llm):
            fake_llm.reply("done", usage={"input_tokens": 200, "output_tokens": 0})
            await agent_runtime.run(AGENT, "research")
        """
    )
    session = research.runpytest(*QUIET, "--agent-gate", "--agent-report=r.json", "test_budget.py")

    code, lines = command(capsys, "gate", "r.json")

    assert code == session.ret == 1
    assert lines[:-1] == _gate_block(session)
    assert lines[-1].startswith("agentctx: 1 test(s) failed in r.json")


def test_a_gate_over_a_file_that_is_not_a_report_is_a_usage_error(research, capsys) -> None:
    (research.path / "junit.json").write_text("[]")

    code, lines = command(capsys, "gate", "junit.json")

    assert code == 2
    assert lines[0].startswith("pytest-agentctx: error: Report junit.json is not a pytest-agentctx")


# -- merge: the shards' reports are the whole run's ------------------------------------


def test_merged_shard_reports_are_the_report_of_one_session(research, capsys) -> None:
    research.runpytest(*QUIET, "--agent-report=full.json").assert_outcomes(passed=2)
    for name in ("research", "steady"):
        research.runpytest(*QUIET, "-k", name, f"--agent-report=shards/{name}.json")

    code, lines = command(capsys, "report", "merge", "shards", "-o", "merged.json")

    assert (code, lines) == (
        0,
        ["pytest-agentctx: merged 2 report(s), 2 test(s), into merged.json"],
    )
    assert (research.path / "merged.json").read_bytes() == (
        research.path / "full.json"
    ).read_bytes()


def test_the_html_page_of_a_merged_report(research, capsys) -> None:
    research.runpytest(*QUIET, "--agent-report=r.json", "--agent-report-html=session.html")

    code, _ = command(capsys, "report", "html", "r.json", "-o", "page.html")

    assert code == 0
    assert (research.path / "page.html").read_text() == (research.path / "session.html").read_text()


def test_python_dash_m_and_the_console_script_run_the_command(research) -> None:
    research.runpytest(*QUIET, "--agent-gate", "--agent-report=r.json")
    script = os.path.join(os.path.dirname(sys.executable), "pytest-agentctx")

    for argv in ((sys.executable, "-m", "pytest_agentctx"), (script,)):
        result = research.run(*argv, "gate", "r.json")
        assert (result.ret, result.stdout.lines) == (0, ["agentctx gate: passed"])


# -- cassettes -------------------------------------------------------------------------

ECHO_TESTS = """
import os

import pytest
from pytest_agentctx import Agent

AGENT = Agent(name="echo", model="openai:gpt-4o-mini")


@pytest.mark.agent(allow_unused=True)
async def test_fewer_questions(agent_runtime):
    for n in range(int(os.environ.get("AGENT_RUNS", "1"))):
        await agent_runtime.run(AGENT, f"question {n}")
"""

RETIRED = {
    "cassette": "pytest-agentctx",
    "version": 1,
    "interactions": [
        {
            "request": {
                "method": "POST",
                "url": "https://api.openai.com/v1/chat/completions",
                "headers": {},
                "body": {
                    "json": {
                        "model": "gpt-3.5-turbo-0301",
                        "messages": [{"role": "user", "content": "my key is sk-cli-secret-1234"}],
                    }
                },
            },
            "response": {
                "status": 200,
                "headers": {},
                "body": {
                    "json": {
                        "id": "c1",
                        "object": "chat.completion",
                        "model": "gpt-3.5-turbo-0301",
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": "noted"},
                            }
                        ],
                        "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
                    }
                },
            },
        }
    ],
}


@pytest.fixture
def echo(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """ECHO_TESTS recorded with two runs, then run with one (one recording unused), with
    its report (report.json), a cassette no test uses and one of a retired model."""
    agent_pytester.makepyfile(test_echo=ECHO_TESTS)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli-secret-1234")
    with LoopbackProvider() as provider:
        for _ in range(2):
            provider.reply("fine", usage={"input_tokens": 10, "output_tokens": 5})
        monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
        monkeypatch.setenv("AGENT_RUNS", "2")
        agent_pytester.runpytest(*QUIET, "--agent-record").assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_RUNS", "1")
    agent_pytester.runpytest(*QUIET, "--agent-report=report.json").assert_outcomes(passed=1)
    old = agent_pytester.path / "cassettes" / "test_gone" / "test_old.json"
    old.parent.mkdir()
    old.write_text(json.dumps(RETIRED))
    long_ago = time.time() - 200 * 86400
    os.utime(old, (long_ago, long_ago))
    return agent_pytester


def test_cassettes_check_lists_every_finding(echo, capsys) -> None:
    code, lines = command(
        capsys, "cassettes", "check", "--report", "report.json", "--max-age", "90"
    )

    assert code == 1
    assert lines == [
        "pytest-agentctx cassettes check: cassettes (2 cassette files)",
        "unused cassette files (no test of the report uses them): 1",
        "  cassettes/test_gone/test_old.json",
        "  -> delete them, or run the whole suite for the report if tests are missing from it",
        "unused interactions (no test replayed them): 1",
        "  cassettes/test_echo/test_fewer_questions.json #1 (not replayed by "
        "test_echo.py::test_fewer_questions)",
        '  -> record the tests again: pytest --agent-record "<node id>"',
        "older than 90 days (by file modification time): 1",
        "  cassettes/test_gone/test_old.json: 200 days old",
        '  -> record them again (pytest --agent-record "<node id>") to check the provider '
        "still answers the same way",
        "retired models (the provider no longer answers them): 1",
        "  cassettes/test_gone/test_old.json #0: gpt-3.5-turbo-0301, retired on 2024-06-13",
        "  -> move the agent to a current model and record again: "
        'pytest --agent-record "<node id>"',
        "unreadable cassettes: 0",
        "4 finding(s)",
    ]


def test_a_clean_cassette_folder_exits_0(echo, capsys) -> None:
    (echo.path / "cassettes" / "test_gone" / "test_old.json").unlink()
    echo.runpytest(*QUIET, "--agent-record=rewrite", "--agent-report=report.json")

    code, lines = command(
        capsys, "cassettes", "check", "--report", "report.json", "--max-age", "365"
    )

    assert code == 0
    assert lines[-1] == "no findings: cassettes are clean"


def test_a_check_that_left_checks_out_does_not_call_the_folder_clean(echo, capsys) -> None:
    (echo.path / "cassettes" / "test_gone" / "test_old.json").unlink()

    code, lines = command(capsys, "cassettes", "check")

    assert (code, lines[-1]) == (0, "no findings in the checks that ran (2 not checked, above)")


def test_the_ini_extends_the_retired_models_and_sets_the_age(echo, capsys) -> None:
    echo.makeini(
        "[pytest]\nagent_cassette_max_age = 1000\nagent_retired_models =\n"
        "    gpt-4o-mini = 2026-01-01\n"
    )

    code, lines = command(capsys, "cassettes", "check")

    assert code == 1
    assert (
        "  cassettes/test_echo/test_fewer_questions.json #0: gpt-4o-mini, retired on 2026-01-01"
        in lines
    )
    assert "older than 1000 days (by file modification time): 0" in lines


def test_a_bad_retired_models_line_is_a_usage_error(echo, capsys) -> None:
    (echo.path / "retired.txt").write_text("gpt-4 retired in 2025\n")

    code, lines = command(capsys, "cassettes", "check", "--retired-models", "retired.txt")

    assert code == 2
    assert "retired.txt, line 1: 'gpt-4 retired in 2025'; expected 'model = YYYY-MM-DD'" in lines[0]


def test_cassettes_show_prints_each_interaction_redacted(echo, capsys) -> None:
    code, lines = command(capsys, "cassettes", "show", "cassettes/test_gone/test_old.json")

    assert code == 0
    assert lines == [
        "cassettes/test_gone/test_old.json: 1 interaction(s)",
        "#0 POST https://api.openai.com/v1/chat/completions -> 200  [openai_chat]",
        "  request: 1 message(s), model gpt-3.5-turbo-0301",
        "    user: my key is REDACTED",
        "  reply: 'noted'; tokens 9 in, 1 out",
    ]


def test_cassettes_show_of_a_recorded_cassette(echo, capsys) -> None:
    code, lines = command(
        capsys, "cassettes", "show", "cassettes/test_echo/test_fewer_questions.json"
    )

    assert code == 0
    assert lines[2:5] == [
        "  request: 1 message(s), model gpt-4o-mini",
        "    user: question 0",
        "  reply: 'fine'; tokens 10 in, 5 out",
    ]
    assert lines[1].startswith("#0 POST http://127.0.0.1:")


def test_cassettes_show_reads_a_gemini_stream_sent_as_one_json_array(capsys) -> None:
    corpus = Path(__file__).resolve().parents[1] / "integration" / "corpus"
    path = corpus / "otel-contrib__vertexai_gemini_array_stream_parallel_calls.yaml"

    code, lines = command(capsys, "cassettes", "show", str(path))

    assert code == 0
    assert lines[-1] == (
        '  reply (stream): tool call get_current_weather({"location": "New Delhi"}); '
        'tool call get_current_weather({"location": "San Francisco"}); tokens 72 in, 16 out'
    )


def test_cassettes_show_of_a_missing_file_is_a_usage_error(echo, capsys) -> None:
    code, lines = command(capsys, "cassettes", "show", "cassettes/nope.json")

    assert code == 2
    assert lines == [
        "pytest-agentctx: error: cassettes/nope.json: no such cassette file. Give the path of a "
        "cassette (list them with: pytest-agentctx cassettes check)."
    ]
