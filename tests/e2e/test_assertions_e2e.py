"""End-to-end tests of the assertion output: the paths pytest prints for failed checks."""

from __future__ import annotations

import pytest

RUNS = """
from datetime import UTC, datetime, timedelta

from pytest_agentctx import AgentContext, ToolCall, ToolResult

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def weather_run(answer="It is 18C and sunny.", city="Paris"):
    ctx = AgentContext.new("Weather in Paris?", at=T0)
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": city})
    ctx = ctx.add_assistant_message(None, [call], at=T0 + timedelta(seconds=1))
    result = ToolResult(tool_call_id="call_1", name="get_weather", content="18C")
    ctx = ctx.add_tool_results([result], at=T0 + timedelta(seconds=2))
    return ctx.add_assistant_message(answer, at=T0 + timedelta(seconds=3))
"""


@pytest.fixture
def runs(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(runs=RUNS)
    return agent_pytester


def test_failed_matches_prints_the_count_then_every_path(runs: pytest.Pytester) -> None:
    runs.makepyfile(
        test_it="""
        from pytest_agentctx import Regex, matches
        from runs import weather_run

        async def test_answer():
            assert matches(weather_run(), {
                "current_iteration": 3,
                "iterations": [
                    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Lyon"}}]},
                    {"messages": [{"content": Regex("rain")}]},
                ],
            })
        """
    )

    result = runs.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*MismatchError: 3 mismatches:",
            "E         current_iteration: 2 != 3",
            "E         iterations[0].tool_calls[0].arguments.city: 'Paris' != 'Lyon'",
            "E         iterations[1].messages[0].content: 'It is 18C and sunny.' does not match "
            "Regex('rain')",
        ]
    )


def test_failed_matches_points_at_the_assert_line_not_the_library(runs: pytest.Pytester) -> None:
    runs.makepyfile(
        test_it="""
        from pytest_agentctx import matches
        from runs import weather_run

        async def test_answer():
            assert matches(weather_run(), {"current_iteration": 9})
        """
    )

    result = runs.runpytest()

    result.stdout.fnmatch_lines(['>       assert matches(weather_run(), {"current_iteration": 9})'])
    result.stdout.no_fnmatch_line("*pytest_agentctx/assertions/*")


def test_comparing_two_contexts_prints_the_count_then_every_path(runs: pytest.Pytester) -> None:
    runs.makepyfile(
        test_it="""
        from runs import weather_run

        async def test_same_run():
            assert weather_run() == weather_run(answer="It rains.", city="Lyon")
        """
    )

    result = runs.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: assert AgentContext(2 iterations) == AgentContext(2 *",
            "E         3 mismatches:",
            "E           iterations[0].messages[1].tool_calls[0].arguments.city: 'Paris' != 'Lyon'",
            "E           iterations[0].tool_calls[0].arguments.city: 'Paris' != 'Lyon'",
            "E           iterations[1].messages[0].content: 'It is 18C and sunny.' != 'It rains.'",
        ]
    )


def test_every_path_is_printed_with_vv_however_many(runs: pytest.Pytester) -> None:
    runs.makepyfile(
        test_it="""
        from pytest_agentctx import Each, Predicate

        async def test_all_positive():
            assert list(range(-12, 0)) == Each(Predicate(lambda n: n > 0, "positive"))
        """
    )

    result = runs.runpytest("-vv")

    result.stdout.fnmatch_lines(
        [
            "E         12 mismatches:",
            "E           [0]: -12 is rejected by Predicate(positive)",
            "E           [11]: -1 is rejected by Predicate(positive)",
        ]
    )


def test_a_failed_trajectory_prints_the_paths_of_the_calls(runs: pytest.Pytester) -> None:
    runs.makepyfile(
        test_it="""
        from pytest_agentctx import Trajectory
        from runs import weather_run

        async def test_calls():
            assert weather_run() == Trajectory(["get_weather", "send_email"])
        """
    )

    result = runs.runpytest()

    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: assert AgentContext(2 iterations) == Trajectory(*",
            "E         1 mismatch:",
            "E           tool_calls[1]: missing call send_email(…)",
        ]
    )


def test_a_negative_rule_prints_where_the_forbidden_call_is(runs: pytest.Pytester) -> None:
    runs.makepyfile(
        test_it="""
        from pytest_agentctx import Like, Nowhere, ToolCall, matches
        from runs import weather_run

        async def test_never_calls_get_weather():
            assert matches(weather_run(), Nowhere(Like(ToolCall, name="get_weather")))
        """
    )

    result = runs.runpytest()

    result.stdout.fnmatch_lines(
        [
            "*MismatchError: 1 mismatch:",
            "E         iterations[0].tool_calls[0]: ToolCall(id='call_1', name='get_weather', "
            "arguments={'city': 'Paris'}) matches Like(ToolCall, name='get_weather'), which must "
            "appear nowhere",
        ]
    )


def test_exact_like_fails_on_a_call_with_fields_it_does_not_name(runs: pytest.Pytester) -> None:
    runs.makepyfile(
        test_it="""
        from pytest_agentctx import ANY, Exact, Like, ToolCall, matches

        CALL = ToolCall(id="call_1", name="f", arguments={"city": "Paris"})

        async def test_only_the_name():
            assert matches(CALL, Exact(Like(ToolCall, name="f")))

        async def test_every_field_named():
            assert matches(CALL, Exact(Like(ToolCall, "f", {"city": "Paris"}, id=ANY)))
        """
    )

    result = runs.runpytest()

    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*MismatchError: 2 mismatches:",
            "E         id: unexpected field, set to 'call_1'; a required field is always set: "
            "name it (ANY for any value)",
            "E         arguments: unexpected field, set to {'city': 'Paris'} (its default is {})",
        ]
    )


def test_other_comparisons_keep_pytests_own_explanation(runs: pytest.Pytester) -> None:
    runs.makepyfile(
        test_it="""
        async def test_dicts():
            assert {"a": 1} == {"a": 2}
        """
    )

    result = runs.runpytest()

    result.stdout.fnmatch_lines(["E         Differing items:", "E         {'a': 1} != {'a': 2}"])


def test_passing_checks_print_nothing(runs: pytest.Pytester) -> None:
    runs.makepyfile(
        test_it="""
        from pytest_agentctx import ANY, Trajectory, matches
        from runs import weather_run

        async def test_ok():
            ctx = weather_run()
            assert matches(ctx, {"iterations": [..., {"number": 2}]})
            assert ctx == Trajectory([("get_weather", {"city": ANY})])
            assert ctx == weather_run()
        """
    )

    result = runs.runpytest()

    result.assert_outcomes(passed=1)
