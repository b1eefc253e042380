"""A pytest-recording suite switched by ``pytest-agentctx migrate`` keeps its outcomes.

The project (migrate_projects.py) is recorded for real by pytest-recording against a
loopback API, which is then stopped; its baseline is pytest-recording's replay. After the
command, the same suite runs under this plugin: every test has the outcome it had, each
recorded test replayed the file pytest-recording wrote, and no file but the pytest.ini the
command names changed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from migrate_projects import (
    ApiHandler,
    Migration,
    TelemetryHandler,
    clean_environment,
    migrate_command,
    write_project,
)
from support.http_server import ServerThread

#: pytest-recording alone: this plugin off.
BASELINE = ("-p", "no:agentctx")


@pytest.fixture
def migration(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Migration]:
    clean_environment(monkeypatch)
    (agent_pytester.path / "tox.ini").unlink()
    write_project(agent_pytester.path, "pytest-recording")
    with ServerThread(TelemetryHandler) as telemetry:
        api = ServerThread(ApiHandler)
        monkeypatch.setenv("CHAT_API", api.url)
        monkeypatch.setenv("TELEMETRY_URL", f"http://localhost:{telemetry.port}")
        try:
            yield Migration(agent_pytester, api, BASELINE)
        finally:
            api.stop()


def test_pytest_recording_writes_its_cassettes_where_the_project_expects(migration) -> None:
    migration.record("--record-mode=once")

    assert migration.cassettes() == {
        "tests/cassettes/test_chat/test_ask[is it safe-].yaml",
        "tests/cassettes/test_chat/test_ask[openai-gpt-4o-mini].yaml",
        "tests/cassettes/test_chat/test_ask[Paris, France (FR) & more].yaml",
        "tests/cassettes/test_chat/TestModels.test_info.yaml",
        "tests/cassettes/test_chat/TestModels.test_ask_model[gpt-4o-mini].yaml",
        "tests/cassettes/test_chat/TestModels.test_ask_model[o3 mini].yaml",
        "tests/cassettes/test_gemini/test_gemini_answers.yaml",
        "tests/cassettes/test_integration/test_marked_by_the_hook.yaml",
        "tests/cassettes/test_upload/test_upload.yaml",
        "tests/cassettes/test_weather/weather-rome.yaml",
        "tests/cassettes/test_weather/weather-new-york.yaml",
    }


def test_a_migrated_pytest_recording_suite_keeps_its_outcomes(migration) -> None:
    migration.record("--record-mode=once")

    command = migration.check()

    assert "pytest-agentctx migrate: a pytest-recording suite" in command.outlines[0]


def test_the_migrated_configuration(migration) -> None:
    command = migrate_command(migration.tester)

    assert command.ret == 0, command
    ini = (migration.tester.path / "pytest.ini").read_text()
    assert "addopts = -p no:recording\n" in ini
    assert "agent_cassette_names = pytest-recording\n" in ini
    assert "agent_cassette_format = vcr\n" in ini
    assert "agent_migration_until = " in ini
    assert "markers =\n    slow: a slow test\n" in ini


def test_a_second_migration_changes_nothing(migration) -> None:
    migrate_command(migration.tester)
    ini = (migration.tester.path / "pytest.ini").read_text()

    again = migrate_command(migration.tester)

    assert (migration.tester.path / "pytest.ini").read_text() == ini
    assert "pytest.ini: nothing to change (already migrated)" in again.outlines
