"""End-to-end tests of the suites: async unit tests without markers, integration tests
auto-marked, deselected by default, selected on request, run last, and one at a time under
xdist; for the agent tests only, or for every test with ``agent_suites = true``; a project
without agent tests runs as without the plugin."""

from __future__ import annotations

import re

import pytest

AGENT_MODULE = '''
from pytest_agentctx import Agent, tool

@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

CALC = Agent(name="calc", model="openai:gpt-4o-mini", tools=[add])
'''

UNIT_TESTS = """
from calc_mod import CALC

async def test_unit_one(agent_runtime, fake_llm):
    fake_llm.reply("3")
    result = await agent_runtime.run(CALC, "1 + 2?")
    assert result.output == "3"

def test_unit_two():
    pass
"""

INTEGRATION_TESTS = """
def test_folder_one():
    pass

def test_folder_two():
    pass
"""

MARKED_TEST = """
import pytest

@pytest.mark.integration
def test_marked_elsewhere():
    pass
"""


OPT_IN_INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
agent_suites = true
"""


@pytest.fixture
def project(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    """Two unit tests, two integration tests by folder and one by marker, in a project that
    sorts every test (``agent_suites = true``)."""
    agent_pytester.makeini(OPT_IN_INI)
    agent_pytester.makepyfile(calc_mod=AGENT_MODULE)
    agent_pytester.mkpydir("tests")
    agent_pytester.mkpydir("tests/integration")
    (agent_pytester.path / "tests" / "test_unit.py").write_text(UNIT_TESTS)
    (agent_pytester.path / "tests" / "test_marked.py").write_text(MARKED_TEST)
    (agent_pytester.path / "tests" / "integration" / "test_folder.py").write_text(INTEGRATION_TESTS)
    return agent_pytester


def _ran(result: pytest.RunResult) -> list[str]:
    """The test names in the order their outcome was printed (``-v``)."""
    return re.findall(r"::(test_\w+) (?:PASSED|FAILED)", result.stdout.str())


STRICT_INI = """
[pytest]
asyncio_mode = strict
asyncio_default_fixture_loop_scope = function
filterwarnings = error
"""


def test_async_tests_using_the_fixtures_run_unmarked_in_strict_mode(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makeini(STRICT_INI)
    agent_pytester.makepyfile(calc_mod=AGENT_MODULE)
    agent_pytester.makepyfile(
        test_strict="""
        import pytest
        from calc_mod import CALC

        @pytest.fixture
        def runtime(agent_runtime):
            return agent_runtime

        async def test_direct(agent_runtime, fake_llm):
            fake_llm.reply("3")
            assert (await agent_runtime.run(CALC, "1 + 2?")).output == "3"

        async def test_through_a_user_fixture(runtime, fake_llm):
            fake_llm.reply("3")
            assert (await runtime.run(CALC, "1 + 2?")).output == "3"

        class TestInAClass:
            async def test_method(self, fake_llm):
                assert fake_llm.remaining == []
        """
    )

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=3)


def test_async_tests_without_the_fixtures_are_left_to_strict_mode(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makeini(STRICT_INI)
    agent_pytester.makepyfile(
        test_plain="""
        async def test_no_plugin_fixture(tmp_path):
            pass
        """
    )

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    # pytest-asyncio's strict mode does not run it; the plugin did not mark it either
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*async def functions are not natively supported*"])


def test_anyio_marked_tests_are_left_to_anyio(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makeini(STRICT_INI)
    agent_pytester.makepyfile(calc_mod=AGENT_MODULE)
    agent_pytester.makepyfile(
        test_anyio="""
        import asyncio
        import pytest
        from calc_mod import CALC

        @pytest.fixture
        def anyio_backend():
            return "asyncio"

        @pytest.mark.anyio
        async def test_under_anyio(agent_runtime, fake_llm, request):
            assert request.node.get_closest_marker("asyncio") is None
            fake_llm.reply("3")
            assert (await agent_runtime.run(CALC, "1 + 2?")).output == "3"
        """
    )

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


def test_integration_tests_are_deselected_by_default(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "-v")

    result.assert_outcomes(passed=2, deselected=3)
    assert sorted(_ran(result)) == ["test_unit_one", "test_unit_two"]
    result.stdout.fnmatch_lines(
        [
            "agentctx suites: 2 unit, 0 integration tests ran; 3 integration tests deselected "
            "(run them with -m integration, or both suites with --agent-integration)"
        ]
    )


def test_folder_tests_are_auto_marked_and_selected_by_the_marker(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "-v", "-m", "integration")

    result.assert_outcomes(passed=3, deselected=2)
    assert sorted(_ran(result)) == ["test_folder_one", "test_folder_two", "test_marked_elsewhere"]
    result.stdout.fnmatch_lines(["agentctx suites: 0 unit, 3 integration tests ran"])


def test_not_integration_runs_the_unit_tests_only(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "-m", "not integration")

    result.assert_outcomes(passed=2, deselected=3)


def test_agent_integration_runs_both_with_the_integration_tests_last(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "-v", "--agent-integration")

    result.assert_outcomes(passed=5)
    ran = _ran(result)
    assert sorted(ran[:2]) == ["test_unit_one", "test_unit_two"]
    assert sorted(ran[2:]) == ["test_folder_one", "test_folder_two", "test_marked_elsewhere"]
    result.stdout.fnmatch_lines(["agentctx suites: 2 unit, 3 integration tests ran"])


def test_naming_the_integration_folder_runs_its_tests(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "-v", "tests/integration")

    result.assert_outcomes(passed=2)
    assert sorted(_ran(result)) == ["test_folder_one", "test_folder_two"]


def test_naming_a_marked_test_runs_it(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "-p", "no:cacheprovider", "tests/test_marked.py::test_marked_elsewhere"
    )

    result.assert_outcomes(passed=1)


def test_markers_and_options_are_documented(agent_pytester: pytest.Pytester) -> None:
    markers = agent_pytester.runpytest("--markers")
    helped = agent_pytester.runpytest("--help")

    markers.stdout.fnmatch_lines(
        ["@pytest.mark.agent_budget(max_iterations=*", "@pytest.mark.agent_repeat(n, *"]
    )
    helped.stdout.fnmatch_lines(
        [
            "*--agent-integration*",
            "*agent_budget_max_tokens (string):*",
            "*agent_prices (linelist):*",
        ]
    )


# -- under xdist ------------------------------------------------------------------------

SERIAL_TESTS = """
import os
import time
from pathlib import Path

import pytest

FLAG = Path(os.environ["SERIAL_FLAG"])


@pytest.mark.parametrize("n", range(4))
def test_one_at_a_time(n):
    # Were two integration tests running at once, one would find the other's flag.
    FLAG.touch(exist_ok=False)
    time.sleep(0.2)
    FLAG.unlink()
"""


def test_under_xdist_integration_tests_run_one_at_a_time_in_one_group(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERIAL_FLAG", str(project.path / "running.flag"))
    (project.path / "tests" / "integration" / "test_serial.py").write_text(SERIAL_TESTS)

    result = project.runpytest(
        "-p", "no:cacheprovider", "-p", "xdist", "-n", "2", "-v", "--agent-integration"
    )

    result.assert_outcomes(passed=9)
    # -n without --dist: switched to loadgroup for the integration group
    result.stdout.fnmatch_lines(["scheduling tests via LoadGroupScheduling"])
    result.stdout.fnmatch_lines(["agentctx suites: 2 unit, 7 integration tests ran"])
    assert result.stdout.str().count("agentctx suites:") == 1


def test_under_xdist_the_deselected_integration_tests_are_counted_once(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "-p", "xdist", "-n", "2")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["agentctx suites: 2 unit, 0 integration tests ran; 3 integration tests deselected*"]
    )


# -- a project without agent tests runs as without the plugin --------------------------

PLAIN_INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
markers =
    integration: the project's own integration tests
"""

PLAIN_CONFTEST = """
import pytest

LINES = []


def pytest_report_header(config):
    return f"dist: {getattr(config.option, 'dist', None)}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.markers_seen = sorted(marker.name for marker in item.iter_markers())
    return report


def pytest_runtest_logreport(report):
    if report.when == "call":
        LINES.append(f"ran {report.nodeid} markers={report.markers_seen}")


def pytest_terminal_summary(terminalreporter):
    for line in LINES:
        terminalreporter.write_line(line)
"""


@pytest.fixture
def plain_project(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    """No agent test: a test under tests/integration/, one marked integration and a plain
    one, collected in that order; its conftest prints --dist and every test's markers in
    the order the tests ran."""
    agent_pytester.makeini(PLAIN_INI)
    agent_pytester.makeconftest(PLAIN_CONFTEST)
    agent_pytester.mkpydir("tests")
    agent_pytester.mkpydir("tests/integration")
    (agent_pytester.path / "tests" / "integration" / "test_folder.py").write_text(
        "def test_in_the_folder():\n    pass\n"
    )
    (agent_pytester.path / "tests" / "test_a_marked.py").write_text(
        "import pytest\n\n\n@pytest.mark.integration\ndef test_marked():\n    pass\n"
    )
    (agent_pytester.path / "tests" / "test_b_plain.py").write_text(
        "async def test_plain_async():\n    pass\n\n\ndef test_plain():\n    pass\n"
    )
    return agent_pytester


def _as_seen(result: pytest.RunResult, *, in_order: bool) -> dict[str, object]:
    """What a run shows of its collection: the --dist header, the collected (or xdist
    items) line, xdist's scheduling, the tests that ran with their markers (in order,
    unless ``in_order`` is false: xdist's workers interleave), and the outcome counts."""
    lines = result.stdout.lines
    collected = [m.group(0) for line in lines if (m := re.search(r"collected \d+ items?.*", line))]
    workers = [m.group(0) for line in lines if (m := re.search(r"\d+ workers \[.*\]", line))]
    ran = [line for line in lines if line.startswith("ran ")]
    return {
        "dist": [line for line in lines if line.startswith("dist: ")],
        "collected": collected + workers,
        "scheduling": [line for line in lines if line.startswith("scheduling tests via")],
        "ran": ran if in_order else sorted(ran),
        "outcomes": result.parseoutcomes(),
    }


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("-m", "integration"),
        ("-m", "not integration"),
        ("tests/integration", "tests/test_a_marked.py", "tests/test_b_plain.py"),
        ("--agent-integration",),
    ],
)
def test_a_project_without_agent_tests_runs_as_without_the_plugin(
    plain_project: pytest.Pytester, args: tuple[str, ...]
) -> None:
    with_plugin = plain_project.runpytest("-p", "no:cacheprovider", "-v", *args)
    plain_args = [arg for arg in args if arg != "--agent-integration"]
    without = plain_project.runpytest(
        "-p", "no:cacheprovider", "-p", "no:agentctx", "-v", *plain_args
    )

    assert _as_seen(with_plugin, in_order=True) == _as_seen(without, in_order=True)
    assert with_plugin.ret == without.ret == pytest.ExitCode.OK
    assert not [line for line in with_plugin.stdout.lines if line.startswith("agentctx")]


def test_a_project_that_never_configured_pytest_asyncio_runs_as_without_the_plugin(
    agent_pytester: pytest.Pytester,
) -> None:
    # pytest-asyncio comes with the plugin; unconfigured, it warns, and under
    # filterwarnings = error that warning would stop pytest before the first test.
    agent_pytester.makeini("[pytest]\nfilterwarnings = error\n")
    agent_pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")

    with_plugin = agent_pytester.runpytest_subprocess("-p", "no:cacheprovider")
    without = agent_pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:agentctx", "-p", "no:asyncio"
    )

    assert with_plugin.ret == without.ret == pytest.ExitCode.OK
    assert with_plugin.parseoutcomes() == without.parseoutcomes() == {"passed": 1}
    assert "is unset" not in str(with_plugin.stdout) + str(with_plugin.stderr)


@pytest.mark.parametrize("args", [(), ("-m", "integration")])
def test_under_xdist_a_project_without_agent_tests_keeps_its_dist_mode(
    plain_project: pytest.Pytester, args: tuple[str, ...]
) -> None:
    xdist = ("-p", "no:cacheprovider", "-p", "xdist", "-n", "2", "-v")

    with_plugin = plain_project.runpytest(*xdist, *args)
    without = plain_project.runpytest(*xdist, "-p", "no:agentctx", *args)

    seen = _as_seen(with_plugin, in_order=False)
    assert seen == _as_seen(without, in_order=False)
    assert seen["dist"] == ["dist: load"]
    assert seen["scheduling"] == ["scheduling tests via LoadScheduling"]
    assert not [line for line in with_plugin.stdout.lines if line.startswith("agentctx")]


def test_async_tests_with_their_own_fixture_of_a_plugin_fixtures_name_are_left_alone(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makeini(STRICT_INI)
    agent_pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def frozen_clock():
            return "the project's own"
        """
    )
    agent_pytester.makepyfile(
        test_own="""
        async def test_own_clock(frozen_clock):
            assert frozen_clock == "the project's own"
        """
    )

    with_plugin = agent_pytester.runpytest("-p", "no:cacheprovider")
    without = agent_pytester.runpytest("-p", "no:cacheprovider", "-p", "no:agentctx")

    # strict mode does not run it without the plugin: the plugin did not mark it either
    for result in (with_plugin, without):
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*async def functions are not natively supported*"])


# -- without agent_suites: the agent tests only -----------------------------------------

FOLDER_TESTS = """
from calc_mod import CALC

async def test_folder_agent(agent_runtime, fake_llm):
    fake_llm.reply("3")
    assert (await agent_runtime.run(CALC, "1 + 2?")).output == "3"

def test_folder_plain():
    pass
"""

MARKED_TESTS = """
import pytest

@pytest.mark.integration
@pytest.mark.agent
def test_marked_agent():
    pass

@pytest.mark.integration
def test_marked_plain():
    pass
"""


@pytest.fixture
def mixed_project(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    """Agent and plain tests side by side, in a project that does not set agent_suites:
    tests/integration/ and tests/test_marked.py hold one agent and one plain test each."""
    agent_pytester.makeini(PLAIN_INI)
    agent_pytester.makepyfile(calc_mod=AGENT_MODULE)
    agent_pytester.mkpydir("tests")
    agent_pytester.mkpydir("tests/integration")
    (agent_pytester.path / "tests" / "test_unit.py").write_text(UNIT_TESTS)
    (agent_pytester.path / "tests" / "test_marked.py").write_text(MARKED_TESTS)
    (agent_pytester.path / "tests" / "integration" / "test_folder.py").write_text(FOLDER_TESTS)
    return agent_pytester


def test_without_agent_suites_only_agent_integration_tests_are_deselected(
    mixed_project: pytest.Pytester,
) -> None:
    result = mixed_project.runpytest("-p", "no:cacheprovider", "-v")

    result.assert_outcomes(passed=4, deselected=2)
    assert _ran(result) == [
        "test_folder_plain",
        "test_marked_plain",
        "test_unit_one",
        "test_unit_two",
    ]
    result.stdout.fnmatch_lines(
        [
            "agentctx suites: 1 unit, 0 integration agent tests ran; 2 integration agent "
            "tests deselected (run them with -m integration, or both suites with "
            "--agent-integration)"
        ]
    )


def test_without_agent_suites_agent_integration_tests_alone_run_last(
    mixed_project: pytest.Pytester,
) -> None:
    result = mixed_project.runpytest("-p", "no:cacheprovider", "-v", "--agent-integration")

    result.assert_outcomes(passed=6)
    assert _ran(result) == [
        "test_folder_plain",
        "test_marked_plain",
        "test_unit_one",
        "test_unit_two",
        "test_folder_agent",
        "test_marked_agent",
    ]
    result.stdout.fnmatch_lines(["agentctx suites: 1 unit, 2 integration agent tests ran"])


def test_without_agent_suites_only_agent_tests_in_the_folder_get_the_marker(
    mixed_project: pytest.Pytester,
) -> None:
    result = mixed_project.runpytest("-p", "no:cacheprovider", "-v", "-m", "integration")

    result.assert_outcomes(passed=3, deselected=3)
    assert sorted(_ran(result)) == ["test_folder_agent", "test_marked_agent", "test_marked_plain"]


AGENT_SERIAL_TESTS = SERIAL_TESTS.replace(
    "def test_one_at_a_time(n):", "def test_one_at_a_time(n, fake_llm):"
)


def test_under_xdist_without_agent_suites_agent_integration_tests_run_one_at_a_time(
    mixed_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERIAL_FLAG", str(mixed_project.path / "running.flag"))
    (mixed_project.path / "tests" / "integration" / "test_serial.py").write_text(AGENT_SERIAL_TESTS)

    result = mixed_project.runpytest(
        "-p", "no:cacheprovider", "-p", "xdist", "-n", "2", "-v", "--agent-integration"
    )

    result.assert_outcomes(passed=10)
    # the session's --dist is left alone; the lock alone runs them one at a time
    result.stdout.fnmatch_lines(["scheduling tests via LoadScheduling"])
    result.stdout.fnmatch_lines(["agentctx suites: 1 unit, 6 integration agent tests ran"])
