"""End-to-end tests of agent_snapshot: writing, failing diffs, unused snapshots and xdist."""

from __future__ import annotations

from pathlib import Path

import pytest

RUNS = """
from datetime import UTC, datetime, timedelta

from pytest_agentctx import AgentContext, ToolCall, ToolResult

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def weather_run(answer="It is 18C and sunny.", iterations=1):
    ctx = AgentContext.new("Weather in Paris?", at=T0)
    for number in range(iterations):
        call = ToolCall(id=f"call_{number}", name="get_weather", arguments={"city": "Paris"})
        ctx = ctx.add_assistant_message(None, [call], at=T0 + timedelta(seconds=2 * number + 1))
        result = ToolResult(tool_call_id=call.id, name="get_weather", content="18C")
        ctx = ctx.add_tool_results([result], at=T0 + timedelta(seconds=2 * number + 2))
    return ctx.add_assistant_message(answer, at=T0 + timedelta(seconds=2 * iterations + 1))
"""

TESTS = """
import os
from runs import weather_run

ANSWER = os.environ.get("AGENT_ANSWER", "It is 18C and sunny.")

async def test_weather(agent_snapshot):
    assert weather_run(ANSWER) == agent_snapshot
"""


@pytest.fixture
def project(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # When this suite itself runs under xdist, the inner run must not pass for a worker:
    # syrupy would then hand its report to a controller that does not exist.
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    agent_pytester.makepyfile(runs=RUNS)
    return agent_pytester


def snapshot_file(
    project: pytest.Pytester, module: str = "test_it", name: str = "test_weather"
) -> Path:
    return project.path / "__snapshots__" / module / f"{name}.agentctx"


def test_a_missing_snapshot_fails_and_says_how_to_create_it(project: pytest.Pytester) -> None:
    project.makepyfile(test_it=TESTS)

    result = project.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E         Snapshot 'test_weather' does not exist: */test_it/test_weather.agentctx",
            "E         Re-run pytest with --snapshot-update to create it, then review the new*",
        ]
    )
    assert not snapshot_file(project).exists()


def test_snapshot_update_writes_the_file_and_the_next_run_passes(project: pytest.Pytester) -> None:
    project.makepyfile(test_it=TESTS)

    written = project.runpytest("--snapshot-update")
    again = project.runpytest()

    written.assert_outcomes(passed=1)
    written.stdout.fnmatch_lines(["*1 snapshot generated.*"])
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*1 snapshot passed.*"])
    lines = snapshot_file(project).read_text(encoding="utf-8").splitlines()
    assert lines[:3] == [
        "# pytest-agentctx snapshot, format 1",
        "AgentContext",
        "iterations = [2 items]",
    ]
    assert "iterations[1].messages[0].content = 'It is 18C and sunny.'" in lines


def test_a_behaviour_change_fails_with_a_short_diff(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_it=TESTS)
    project.runpytest("--snapshot-update").assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_ANSWER", "It rains.")

    result = project.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: assert [+ received] == [- snapshot]",
            "E         The run differs from its snapshot. If the change is intended, re-run pytest "
            "with --snapshot-update and review the diff of the snapshot file.",
            "E           ...",
            "E           iterations[1].messages[0].role = 'assistant'",
            "E         - iterations[1].messages[0].content = 'It is 18C and sunny.'",
            "E         + iterations[1].messages[0].content = 'It rains.'",
            "E           iterations[1].started_at = <t+2s>",
            "E           ...",
        ]
    )
    assert "It is 18C and sunny." in snapshot_file(project).read_text(encoding="utf-8")


def test_snapshot_update_accepts_a_behaviour_change(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_it=TESTS)
    project.runpytest("--snapshot-update").assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_ANSWER", "It rains.")

    result = project.runpytest("--snapshot-update")

    result.stdout.fnmatch_lines(["*1 snapshot updated.*"])
    assert "'It rains.'" in snapshot_file(project).read_text(encoding="utf-8")
    project.runpytest().assert_outcomes(passed=1)


def test_an_unused_snapshot_is_reported_then_deleted_on_update(project: pytest.Pytester) -> None:
    project.makepyfile(test_it=TESTS)
    project.runpytest("--snapshot-update").assert_outcomes(passed=1)
    project.makepyfile(test_it="async def test_other():\n    pass\n")

    reported = project.runpytest()
    deleted = project.runpytest("--snapshot-update")

    reported.stdout.fnmatch_lines(["*1 snapshot unused.*"])
    assert reported.ret != 0
    deleted.stdout.fnmatch_lines(["*1 unused snapshot deleted.*"])
    assert not snapshot_file(project).exists()


def test_a_snapshot_in_an_old_format_asks_for_an_update(project: pytest.Pytester) -> None:
    project.makepyfile(test_it=TESTS)
    path = snapshot_file(project)
    path.parent.mkdir(parents=True)
    path.write_text("# pytest-agentctx snapshot, format 0\nAgentContext\n", encoding="utf-8")

    failed = project.runpytest()
    updated = project.runpytest("--snapshot-update")

    failed.stdout.fnmatch_lines(
        [
            "*is not in pytest-agentctx snapshot format 1; its first line is "
            "'# pytest-agentctx snapshot, format 0'.",
            "*Re-run pytest with --snapshot-update to rewrite it, then review the diff.",
        ]
    )
    updated.assert_outcomes(passed=1)
    assert path.read_text(encoding="utf-8").startswith("# pytest-agentctx snapshot, format 1\n")


def test_projections_and_the_config_fixture_shape_the_file(project: pytest.Pytester) -> None:
    project.makeconftest(
        """
        import pytest
        from pytest_agentctx import SnapshotOptions

        @pytest.fixture
        def agent_snapshot_config():
            return SnapshotOptions(omit=["**.started_at", "**.completed_at"])
        """
    )
    project.makepyfile(
        test_it="""
        from runs import weather_run

        async def test_weather(agent_snapshot):
            assert weather_run(iterations=5) == agent_snapshot(last=2, truncate=6)
        """
    )

    project.runpytest("--snapshot-update").assert_outcomes(passed=1)

    text = snapshot_file(project).read_text(encoding="utf-8")
    assert "# projection: last 2 iterations; without **.started_at, **.completed_at; " in text
    assert "iterations = [6 items, the first 4 left out]" in text
    assert "iterations[5].messages[0].content = 'It is ' … (+14 chars)" in text
    assert "started_at" not in text.replace("**.started_at", "")


def test_two_snapshots_in_one_test_get_two_files(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_it="""
        from runs import weather_run

        async def test_weather(agent_snapshot):
            assert weather_run() == agent_snapshot
            assert weather_run("Rain.") == agent_snapshot
        """
    )

    project.runpytest("--snapshot-update").assert_outcomes(passed=1)

    assert sorted(p.name for p in snapshot_file(project).parent.iterdir()) == [
        "test_weather.1.agentctx",
        "test_weather.agentctx",
    ]


XDIST_TESTS = """
import pytest
from runs import weather_run

@pytest.mark.parametrize("n", range(6))
async def test_weather(agent_snapshot, n):
    assert weather_run(f"answer {n}", iterations=n) == agent_snapshot
"""


def test_snapshots_are_written_and_checked_with_two_xdist_workers(project: pytest.Pytester) -> None:
    project.makepyfile(test_it=XDIST_TESTS)

    written = project.runpytest("-n", "2", "--snapshot-update")
    checked = project.runpytest("-n", "2")

    written.assert_outcomes(passed=6)
    checked.assert_outcomes(passed=6)
    checked.stdout.fnmatch_lines(["*6 snapshots passed.*"])
    files = sorted(p.name for p in snapshot_file(project).parent.iterdir())
    assert files == [f"test_weather[{n}].agentctx" for n in range(6)]


def test_unused_snapshots_are_found_with_two_xdist_workers(project: pytest.Pytester) -> None:
    project.makepyfile(test_it=XDIST_TESTS)
    project.runpytest("-n", "2", "--snapshot-update").assert_outcomes(passed=6)
    project.makepyfile(test_it=XDIST_TESTS.replace("range(6)", "range(4)"))

    reported = project.runpytest("-n", "2")
    deleted = project.runpytest("-n", "2", "--snapshot-update")

    reported.stdout.fnmatch_lines(["*2 snapshots unused.*"])
    deleted.stdout.fnmatch_lines(["*2 unused snapshots deleted.*"])
    files = sorted(p.name for p in snapshot_file(project).parent.iterdir())
    assert files == [f"test_weather[{n}].agentctx" for n in range(4)]


def test_the_snapshot_fixtures_are_listed_with_their_docs(project: pytest.Pytester) -> None:
    result = project.runpytest("--fixtures")

    result.stdout.fnmatch_lines(
        [
            "agent_snapshot_config -- *pytest_agentctx/plugin/snapshots.py:*",
            "    Options of ``agent_snapshot`` (volatile values, projections); override to change.",
            "agent_snapshot -- *pytest_agentctx/plugin/snapshots.py:*",
            "    A syrupy snapshot of an agent run: ``assert result.context == agent_snapshot``.",
        ]
    )


def test_a_project_fixture_named_snapshot_leaves_agent_snapshot_syrupys(
    project: pytest.Pytester,
) -> None:
    project.makeconftest(
        """
        import pytest

        @pytest.fixture
        def snapshot():
            return "the project's own snapshot"
        """
    )
    project.makepyfile(
        test_it=TESTS
        + """
def test_own(snapshot):
    assert snapshot == "the project's own snapshot"
"""
    )

    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    result = project.runpytest()

    result.assert_outcomes(passed=2)
    assert "18C and sunny" in snapshot_file(project).read_text()


def test_agent_snapshot_without_syrupys_plugin_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_it=TESTS)

    result = project.runpytest("-p", "no:syrupy")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*agent_snapshot needs syrupy's pytest plugin*-p no:syrupy*"])
