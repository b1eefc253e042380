"""A pytest-vcr suite switched by ``pytest-agentctx migrate`` keeps its outcomes.

pytest-vcr 1.0.2 cannot load beside pytest-recording (which raises RuntimeError when both
do), so ``make install`` puts it in a folder of its own (Makefile), which these tests put
on PYTHONPATH: pytest loads it from there as if it were installed. pytest-recording is
turned off in every run (``-p no:recording``): the project has only pytest-vcr. Its
baseline is pytest-vcr's replay of the cassettes it recorded against a loopback API, then
stopped; after the command, the same suite runs under this plugin (pytest-vcr still on the
path, turned off by the ``-p no:vcr`` the command wrote).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from migrate_projects import (
    ApiHandler,
    Migration,
    TelemetryHandler,
    clean_environment,
    pytest_vcr_folder,
    write_project,
)
from support.http_server import ServerThread

#: pytest-vcr alone: pytest-recording (of this venv) and this plugin off.
BASELINE = ("-p", "no:recording", "-p", "no:agentctx")


@pytest.fixture
def migration(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Migration]:
    clean_environment(monkeypatch)
    folder = pytest_vcr_folder()
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), *([path] if path else [])]))
    (agent_pytester.path / "tox.ini").unlink()
    write_project(agent_pytester.path, "pytest-vcr")
    with ServerThread(TelemetryHandler) as telemetry:
        api = ServerThread(ApiHandler)
        monkeypatch.setenv("CHAT_API", api.url)
        monkeypatch.setenv("TELEMETRY_URL", f"http://localhost:{telemetry.port}")
        try:
            yield Migration(agent_pytester, api, BASELINE)
        finally:
            api.stop()


def test_pytest_vcr_writes_its_cassettes_where_the_project_expects(migration) -> None:
    migration.record("--vcr-record=once")

    assert migration.cassettes() == {
        "tests/cassettes/test_ask[is it safe?].yaml",
        "tests/cassettes/test_ask[openai:gpt-4o-mini].yaml",
        "tests/cassettes/test_ask[Paris, France (FR) & more].yaml",
        "tests/cassettes/TestModels.test_info.yaml",
        "tests/cassettes/TestModels.test_ask_model[gpt-4o-mini].yaml",
        "tests/cassettes/TestModels.test_ask_model[o3 mini].yaml",
        "tests/cassettes/test_gemini_answers.yaml",
        "tests/cassettes/test_marked_by_the_hook.yaml",
        "tests/cassettes/test_upload.yaml",
        "tests/cassettes/weather-rome.yaml",
        "tests/cassettes/weather-new-york.yaml",
    }


def test_a_migrated_pytest_vcr_suite_keeps_its_outcomes(migration) -> None:
    migration.record("--vcr-record=once")

    command = migration.check(migrated_args=("-p", "no:recording"))

    assert "pytest-agentctx migrate: a pytest-vcr suite" in command.outlines[0]
    ini = (migration.tester.path / "pytest.ini").read_text()
    assert "addopts =\n    -ra -p no:vcr\n" in ini
    assert "agent_cassette_names = pytest-vcr\n" in ini
