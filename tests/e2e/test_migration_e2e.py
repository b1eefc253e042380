"""A migrated suite eased in: ``agent_migration_until`` lets unused recordings and misses
the code caught pass (listed, counted) until a day, then they fail again; and
``pytest-agentctx cassettes prune`` drops the dead interactions a report lists, so the
suite passes without ``allow_unused``."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
from support.chat_server import ChatServer

from pytest_agentctx.cli.main import main

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
"""

CLIENT = """
import os

import openai


def ask(content):
    with openai.OpenAI(
        base_url=os.environ["AGENT_SERVER"] + "/v1", api_key="sk-e2e-key", max_retries=0
    ) as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": content}]
        )
    return reply.choices[0].message.content
"""

RECORDED = """
import pytest
from mig_client import ask

@pytest.mark.agent
def test_fewer():
    ask("one?")
    ask("two?")

@pytest.mark.agent
def test_caught():
    ask("a?")
"""

#: test_fewer leaves "two?" unused; test_caught sends a request it has no recording for,
#: and its code catches the error the miss is answered with.
CHANGED = """
import openai
import pytest
from mig_client import ask

@pytest.mark.agent
def test_fewer():
    ask("one?")

@pytest.mark.agent
def test_caught():
    try:
        ask("b?")
    except openai.APIError:
        pass
"""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    chat = ChatServer()
    monkeypatch.setenv("AGENT_SERVER", chat.url)
    try:
        yield chat
    finally:
        chat.stop()


@pytest.fixture
def migrated(agent_pytester: pytest.Pytester, server: ChatServer) -> pytest.Pytester:
    """A project whose two tests were recorded, then changed: one leaves a recording
    unused, one catches a miss."""
    agent_pytester.makepyfile(mig_client=CLIENT, test_mig=RECORDED)
    agent_pytester.runpytest("--agent-record").assert_outcomes(passed=2)
    shutil.rmtree(agent_pytester.path / "__pycache__", ignore_errors=True)
    agent_pytester.makepyfile(test_mig=CHANGED)
    return agent_pytester


def _until(days: int) -> str:
    return (dt.date.today() + dt.timedelta(days=days)).isoformat()


def test_within_the_period_unused_recordings_and_caught_misses_pass_and_are_listed(migrated):
    until = _until(30)
    migrated.makeini(INI + f"agent_migration_until = {until}\n")

    result = migrated.runpytest()

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*agentctx: let pass under agent_migration_until*",
            "test_mig.py::test_caught: 1 caught miss in cassettes/test_mig/test_caught.json",
            "test_mig.py::test_fewer: 1 unused recording in cassettes/test_mig/test_fewer.json",
            f"These pass until {until} (agent_migration_until), then fail:",
            "  list them: pytest --agent-report=agentctx-report.json, then pytest-agentctx "
            "cassettes unused agentctx-report.json",
            "  drop the unused recordings: pytest-agentctx cassettes prune agentctx-report.json",
            '  re-record the tests with misses: pytest --agent-record "TEST_ID"',
            f"agentctx: *; 2 tests let pass under agent_migration_until (until {until})*",
        ]
    )


def test_the_table_marks_the_tests_let_pass(migrated):
    migrated.makeini(INI + f"agent_migration_until = {_until(0)}\n")

    result = migrated.runpytest()

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["passed *test_caught*stale (eased)", "passed *test_fewer*unused (eased)"]
    )


def test_after_the_period_they_fail_saying_it_ended(migrated):
    until = _until(-1)
    migrated.makeini(INI + f"agent_migration_until = {until}\n")

    result = migrated.runpytest()

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [f"*The migration period of agent_migration_until ended on {until}, so this fails*"]
    )
    assert "let pass under agent_migration_until" not in result.stdout.str()


def test_a_miss_the_code_did_not_catch_fails_within_the_period(agent_pytester, server):
    agent_pytester.makepyfile(mig_client=CLIENT, test_mig=RECORDED)
    agent_pytester.runpytest("--agent-record").assert_outcomes(passed=2)
    shutil.rmtree(agent_pytester.path / "__pycache__", ignore_errors=True)
    agent_pytester.makepyfile(
        test_mig=RECORDED.replace('ask("a?")', 'ask("b?")').replace('    ask("two?")\n', "")
    )
    agent_pytester.makeini(INI + f"agent_migration_until = {_until(30)}\n")

    result = agent_pytester.runpytest()

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_mig.py::test_caught - *CassetteMiss*"])


def test_a_date_that_is_not_one_is_a_usage_error(agent_pytester):
    agent_pytester.makeini(INI + "agent_migration_until = 31/12/2026\n")

    result = agent_pytester.runpytest()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*agent_migration_until = '31/12/2026' is not a date; expected YYYY-MM-DD*"
            "e.g. agent_migration_until = 2026-12-31*"
        ]
    )


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_prune_after_a_report_lets_the_suite_pass_without_allow_unused(
    migrated, capsys, monkeypatch
):
    migrated.makepyfile(test_mig=CHANGED.split("@pytest.mark.agent\ndef test_caught")[0])
    migrated.makeini(INI + f"agent_migration_until = {_until(30)}\n")
    migrated.runpytest("--agent-report=report.json").assert_outcomes(passed=1)
    monkeypatch.chdir(migrated.path)

    code, out = _cli(capsys, "cassettes", "prune", "report.json")

    assert code == 0, out
    assert "cassettes/test_mig/test_fewer.json: dropped #1 (1 kept)" in out
    assert "Next: run the suite again" in out
    migrated.makeini(INI)
    migrated.runpytest().assert_outcomes(passed=1)
    cassette = json.loads((migrated.path / "cassettes/test_mig/test_fewer.json").read_text())
    assert len(cassette["interactions"]) == 1


def test_cassettes_unused_lists_what_the_report_lets_pass(migrated, capsys, monkeypatch):
    migrated.makeini(INI + f"agent_migration_until = {_until(30)}\n")
    migrated.runpytest("--agent-report=report.json").assert_outcomes(passed=2)
    monkeypatch.chdir(migrated.path)

    code, out = _cli(capsys, "cassettes", "unused", "report.json")

    assert code == 1
    assert "cassettes/test_mig/test_fewer.json #1 (not replayed by test_mig.py::test_fewer)" in out
    assert "test_mig.py::test_caught: 1 miss(es) in cassettes/test_mig/test_caught.json" in out
