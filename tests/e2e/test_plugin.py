"""End-to-end tests of the plugin: options, markers and fixtures in real pytest runs."""

from __future__ import annotations

import json

import pytest

AGENT_MODULE = '''
from pytest_agentctx import Agent, tool

@tool
def get_weather(city: str) -> str:
    """Weather in a city."""
    return f"sunny in {city}"

@tool
def get_time(city: str) -> str:
    """Time in a city."""
    return "12:00"

AGENT = Agent(name="w", model="openai:gpt-4o-mini", tools=[get_weather, get_time])
'''


def test_help_lists_the_option_group_and_ini_keys(agent_pytester: pytest.Pytester) -> None:
    result = agent_pytester.runpytest("--help")

    result.stdout.fnmatch_lines(
        [
            "pytest-agentctx: deterministic tests of LLM agents:",
            "*--agent-clock-start=ISO8601*",
            "*agent_clock_start (string):*",
            "*agent_clock_step (string):*",
            "*agent_clock_ignore (linelist):*",
        ]
    )
    assert result.ret == 0


def test_markers_are_registered(agent_pytester: pytest.Pytester) -> None:
    result = agent_pytester.runpytest("--markers")

    result.stdout.fnmatch_lines(
        [
            '@pytest.mark.agent_cache_exempt(reason="..."):*',
            "@pytest.mark.agent_cache(breakpoints=*",
            "@pytest.mark.agent(**options):*",
            "@pytest.mark.integration:*",
        ]
    )


def test_fixtures_are_listed_with_their_docs(agent_pytester: pytest.Pytester) -> None:
    result = agent_pytester.runpytest("--fixtures")

    for name, doc in (
        ("agent_runtime", "An :class:`AgentRuntime` with a stepping clock and sequential ids."),
        ("fake_llm", "A scripted model that answers the openai/anthropic SDKs*"),
        ("fake_tools", "Replace tools by name*"),
        ("frozen_clock", "The wall clock frozen*"),
    ):
        result.stdout.fnmatch_lines(
            [f"{name} -- *pytest_agentctx/plugin/fixtures.py:*", f"    {doc}"]
        )


def test_an_agent_run_passes_with_a_scripted_model(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(weather_mod=AGENT_MODULE)
    agent_pytester.makepyfile(
        test_inner_run="""
        from weather_mod import AGENT
        from pytest_agentctx import AgentContext, Iteration, ToolCall

        async def test_run(agent_runtime, fake_llm):
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny.")
            result = await agent_runtime.run(AGENT, "Weather in Paris?")
            match result.context:
                case AgentContext(iterations=[
                    Iteration(number=1, tool_calls=[ToolCall(name="get_weather"), *_]), *_
                ]):
                    pass
                case _:
                    raise AssertionError(result.context)
            assert result.output == "Sunny."
        """
    )

    result = agent_pytester.runpytest()

    result.assert_outcomes(passed=1)


def test_two_pytest_runs_give_identical_context_json(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(weather_mod=AGENT_MODULE)
    agent_pytester.makepyfile(
        test_inner_dump="""
        import os
        from weather_mod import AGENT

        async def test_dump(agent_runtime, fake_llm):
            fake_llm.reply(tool_calls=[("get_weather", {"city": "Paris"}),
                                       ("get_time", {"city": "Paris"})]).reply("Done.")
            result = await agent_runtime.run(AGENT, "Paris?")
            with open(os.environ["DUMP_TO"], "w") as out:
                out.write(result.context.model_dump_json())
        """
    )
    dumps = []
    for run in (1, 2):
        target = agent_pytester.path / f"run{run}.json"
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("DUMP_TO", str(target))
            agent_pytester.runpytest_subprocess().assert_outcomes(passed=1)
        dumps.append(target.read_text())

    assert dumps[0] == dumps[1]
    assert json.loads(dumps[0])["iterations"][0]["tool_calls"][1]["id"] == "call_2"


def test_unused_scripted_replies_fail_the_test(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(weather_mod=AGENT_MODULE)
    agent_pytester.makepyfile(
        test_inner_unused="""
        from weather_mod import AGENT

        async def test_unused(agent_runtime, fake_llm):
            fake_llm.reply("Sunny.").reply("A reply nobody asks for.")
            await agent_runtime.run(AGENT, "Paris?")
        """
    )

    result = agent_pytester.runpytest()

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*UnusedScriptedReplies: fake_llm: 1 of 2 scripted replies were never used*"]
    )


def test_an_unscripted_model_call_fails_with_the_fakes_message(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(weather_mod=AGENT_MODULE)
    agent_pytester.makepyfile(
        test_inner_overrun="""
        from weather_mod import AGENT

        async def test_overrun(agent_runtime, fake_llm):
            fake_llm.reply_tool_call("get_weather", city="Paris")
            await agent_runtime.run(AGENT, "Paris?")
        """
    )

    result = agent_pytester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*BadRequestError*model call #2 was not scripted*"])


def test_a_swallowed_unscripted_call_still_fails_the_test(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(weather_mod=AGENT_MODULE)
    agent_pytester.makepyfile(
        test_inner_swallowed="""
        import openai
        from weather_mod import AGENT

        async def test_swallowed(agent_runtime, fake_llm):
            try:
                await agent_runtime.run(AGENT, "Paris?")
            except openai.BadRequestError:
                pass
        """
    )

    result = agent_pytester.runpytest()

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*UnexpectedModelCall: fake_llm: the agent made 1 model calls*"])


def test_fake_tools_answer_in_place_of_the_real_tool(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(weather_mod=AGENT_MODULE)
    agent_pytester.makepyfile(
        test_inner_tools="""
        from weather_mod import AGENT

        async def test_tools(agent_runtime, fake_llm, fake_tools):
            fake_tools.replace("get_weather", raises=TimeoutError("station down"))
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sorry.")
            result = await agent_runtime.run(AGENT, "Paris?")
            tool_message = result.context.get_iteration_messages(1)[-1]
            assert tool_message.is_error
            assert tool_message.content == "Tool get_weather failed: TimeoutError: station down"
            assert [c.name for c in fake_tools.calls] == ["get_weather"]
        """
    )

    agent_pytester.runpytest().assert_outcomes(passed=1)


def test_frozen_clock_freezes_wall_time_and_keeps_asyncio_working(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(
        test_inner_clock="""
        import asyncio, time
        from datetime import datetime, timezone

        async def test_clock(frozen_clock):
            assert datetime.now(timezone.utc) == datetime(2025, 1, 1, tzinfo=timezone.utc)
            before = time.time()
            await asyncio.wait_for(asyncio.sleep(0.01), timeout=5)
            assert time.time() == before
            frozen_clock.tick(90)
            assert datetime.now(timezone.utc).minute == 1
        """
    )

    agent_pytester.runpytest().assert_outcomes(passed=1)


def test_clock_start_is_configurable_in_the_ini(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "agent_clock_start = 2030-06-01T12:00:00Z\nagent_clock_step = 0.5\n"
    )
    agent_pytester.makepyfile(
        test_inner_start="""
        from datetime import datetime, timezone

        async def test_start(agent_runtime, frozen_clock):
            first = agent_runtime.clock.now()
            assert first == datetime(2030, 6, 1, 12, tzinfo=timezone.utc)
            assert (agent_runtime.clock.now() - first).total_seconds() == 0.5
            assert frozen_clock.now() == first
        """
    )

    agent_pytester.runpytest().assert_outcomes(passed=1)


def test_command_line_clock_start_overrides_the_ini(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(
        test_inner_cli="""
        async def test_cli(agent_runtime):
            assert agent_runtime.clock.now().year == 2031
        """
    )

    result = agent_pytester.runpytest("--agent-clock-start=2031-01-01")

    result.assert_outcomes(passed=1)


def test_an_invalid_clock_start_is_a_usage_error(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(
        test_inner_bad="""
        async def test_bad(agent_runtime):
            pass
        """
    )

    result = agent_pytester.runpytest("--agent-clock-start=yesterday")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agent_clock_start: 'yesterday' is not an ISO 8601 date*"])


def test_an_invalid_clock_step_is_a_usage_error(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makeini("[pytest]\nagent_clock_step = fast\n")
    agent_pytester.makepyfile(
        test_inner_bad="""
        def test_bad(agent_runtime):
            pass
        """
    )

    result = agent_pytester.runpytest()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agent_clock_step = 'fast' is not a number of seconds*"])


def test_frozen_clock_leaves_ignored_modules_on_real_time(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "agent_clock_ignore =\n    realtime_mod\n"
    )
    agent_pytester.makepyfile(realtime_mod="import time\ndef now():\n    return time.time()\n")
    agent_pytester.makepyfile(
        test_inner_ignore="""
        import time
        import realtime_mod

        def test_ignore(frozen_clock):
            assert time.time() == 1735689600.0
            assert realtime_mod.now() > 1735689600.0 + 86400
        """
    )

    agent_pytester.runpytest().assert_outcomes(passed=1)


def test_a_finished_tests_runs_are_released_after_its_report(
    agent_pytester: pytest.Pytester,
) -> None:
    """pytest keeps every test item until the session ends; the runs the plugin stashed on
    one (runtime, contexts, cassette) must not stay alive with it, and still be reported."""
    agent_pytester.makepyfile(weather_mod=AGENT_MODULE)
    agent_pytester.makepyfile(
        test_release="""
        import gc
        import weakref
        from weather_mod import AGENT

        SEEN = []

        async def test_first(agent_runtime, fake_llm):
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny.")
            await agent_runtime.run(AGENT, "Weather in Paris?")
            SEEN.append(weakref.ref(agent_runtime))

        def test_second():
            gc.collect()
            assert [ref() for ref in SEEN] == [None]
        """
    )

    result = agent_pytester.runpytest("-p", "no:randomly", "--agent-report=report.json")

    result.assert_outcomes(passed=2)
    report = json.loads((agent_pytester.path / "report.json").read_text())
    first = next(t for t in report["tests"] if t["nodeid"] == "test_release.py::test_first")
    assert (first["stats"]["iterations"], first["stats"]["tool_calls"]) == (2, 1)
    assert len(first["runs"][0]["context"]["iterations"]) == 2


def test_no_plugin_data_stays_on_a_finished_test(agent_pytester: pytest.Pytester) -> None:
    """Every stash key the plugin puts on a test (runs, reports, budget, repeat, prices) is
    dropped once the test's reports are made: a key added without ``_test_key`` fails here."""
    agent_pytester.makepyfile(weather_mod=AGENT_MODULE)
    agent_pytester.makeconftest(
        """
        import json
        import pytest

        def pytest_sessionfinish(session):
            (plugin,) = [
                module
                for _, module in session.config.pluginmanager.list_name_plugin()
                if getattr(module, "__name__", "") == "pytest_agentctx.plugin.keys"
            ]
            keys = {
                name: key for name, key in vars(plugin).items() if isinstance(key, pytest.StashKey)
            }
            left = {
                item.nodeid: sorted(name for name, key in keys.items() if key in item.stash)
                for item in session.items
            }
            with open("left.json", "w") as stream:
                json.dump({"keys": sorted(keys), "left": left}, stream)
        """
    )
    agent_pytester.makepyfile(
        test_keys="""
        import pytest
        from weather_mod import AGENT

        @pytest.mark.agent_budget(max_iterations=5, max_tool_calls=3)
        async def test_budgeted(agent_runtime, fake_llm):
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny.")
            await agent_runtime.run(AGENT, "Weather in Paris?")

        @pytest.mark.agent_repeat(2)
        async def test_repeated(agent_runtime, fake_llm):
            fake_llm.reply("Sunny.")
            await agent_runtime.run(AGENT, "Weather?")

        def test_plain():
            pass
        """
    )

    result = agent_pytester.runpytest("-p", "no:randomly", "--agent-report=report.json")

    result.assert_outcomes(passed=3)
    found = json.loads((agent_pytester.path / "left.json").read_text())
    assert {"RUNS_KEY", "BUDGET_KEY", "REPEAT_TALLY_KEY", "PRICES_KEY"} <= set(found["keys"])
    assert found["left"] == {
        "test_keys.py::test_budgeted": [],
        "test_keys.py::test_repeated": [],
        "test_keys.py::test_plain": [],
    }
    report = json.loads((agent_pytester.path / "report.json").read_text())
    budgeted = next(t for t in report["tests"] if t["nodeid"].endswith("test_budgeted"))
    assert budgeted["budget"]["limits"] == {"max_iterations": 5, "max_tool_calls": 3}


#: A plugin that registers the plugin's modules in another order than ``PLUGIN_MODULES``
#: (run with ``-p no:agentctx``): the entry point module's own hook configures them.
REORDERED_PLUGIN = """
import importlib
import random

from pytest_agentctx import plugin as entry

ORDER = list(entry.PLUGIN_MODULES)
if {order!r} == "reversed":
    ORDER.reverse()
else:
    random.Random(29).shuffle(ORDER)

def pytest_addhooks(pluginmanager):
    for name in ORDER:
        pluginmanager.register(importlib.import_module(name), name)

pytest_configure = entry.pytest_configure
"""

REGISTRATION_ORDERS = ["reversed", "shuffled"]


def reordered(pytester: pytest.Pytester, order: str) -> tuple[str, ...]:
    """The arguments that load the plugin with its modules registered in ``order``."""
    pytester.makepyfile(agentctx_reordered=REORDERED_PLUGIN.format(order=order))
    pytester.syspathinsert()
    return ("-p", "no:agentctx", "-p", "agentctx_reordered", "-p", "no:randomly")


@pytest.mark.parametrize("order", REGISTRATION_ORDERS)
def test_the_session_is_configured_in_the_declared_order_whatever_the_registration(
    agent_pytester: pytest.Pytester, order: str
) -> None:
    """``options`` puts the limits in force before ``reports`` reads the baseline; the
    features read their options in the order of ``CONFIGURED`` (the first bad one stops
    the session); the plugins they register come in that order, so the reports' summary
    prints before the late requests' and the suites' lines."""
    args = reordered(agent_pytester, order)
    agent_pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    agent_pytester.makeconftest(
        """
        import json
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_configure(config):
            names = [n for n, _ in config.pluginmanager.list_name_plugin()]
            with open("registered.json", "w") as stream:
                json.dump([n for n in names if n.startswith("agentctx-")], stream)
        """
    )
    (agent_pytester.path / "base.json").write_text('{"tests": []' + " " * 100 + "}")

    limited = agent_pytester.runpytest(
        *args, "-o", "agent_max_file_bytes=10", "--agent-baseline", "base.json"
    )
    several_bad = agent_pytester.runpytest(
        *args,
        "-o",
        "agent_clock_step=x",
        "-o",
        "agent_cassette_format=bad",
        "-o",
        "agent_budget_max_tokens=lots",
    )
    fine = agent_pytester.runpytest(*args)

    limited.stderr.fnmatch_lines(["*--agent-baseline*past the limit agent_max_file_bytes = 10*"])
    several_bad.stderr.fnmatch_lines(["ERROR: ini option agent_budget_max_tokens = 'lots'*"])
    fine.assert_outcomes(passed=1)
    registered = json.loads((agent_pytester.path / "registered.json").read_text())
    assert registered == [
        "agentctx-suites",
        "agentctx-late-requests",
        "agentctx-ignored-requests",
        "agentctx-reports",
        "agentctx-shown-ids",
    ]


@pytest.mark.parametrize("order", REGISTRATION_ORDERS)
def test_the_repeat_error_and_the_fixture_order_hold_whatever_the_registration(
    agent_pytester: pytest.Pytester, order: str
) -> None:
    """A test with a bad ``agent_repeat`` marker gets its error, not its bad budget's; the
    autouse cassette is set up before the autouse prices."""
    args = reordered(agent_pytester, order)
    agent_pytester.makepyfile(
        test_order="""
        import pytest

        def test_plain():
            pass

        @pytest.mark.agent_repeat(0)
        @pytest.mark.agent_budget(max_tokens="lots")
        def test_bad():
            pass
        """
    )

    plan = agent_pytester.runpytest(*args, "--setup-plan", "test_order.py::test_plain")
    result = agent_pytester.runpytest(*args)

    plan.stdout.fnmatch_lines(
        [
            "*SETUP    F _agentctx_cassette",
            "*SETUP    F _agentctx_prices*",
            "*TEARDOWN F _agentctx_prices",
            "*TEARDOWN F _agentctx_cassette",
        ]
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["E   pytest_agentctx.RepeatError: *agent_repeat run count 0*"])
    result.stdout.no_fnmatch_line("*agent_budget*max_tokens*")


def test_an_integration_tests_keys_are_released_under_the_integration_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On an xdist worker, the integration wrapper releases the test's keys itself before
    it lets the lock go, whichever of it and the ``keys`` wrapper pytest calls first."""
    import contextlib
    from collections.abc import Iterator
    from typing import cast

    from pytest_agentctx.plugin.keys import SUITE_SCOPE_KEY
    from pytest_agentctx.plugin.suites import SuiteScope, _sorting, integration

    events: list[str] = []

    @contextlib.contextmanager
    def lock(run_id: str) -> Iterator[None]:
        events.append(f"lock {run_id}")
        yield
        events.append("unlock")

    class Scope:
        def integration(self, item: object) -> bool:
            return True

    class Config:
        def __init__(self) -> None:
            self.workerinput = {"testrunuid": "run-1"}
            self.stash = pytest.Stash()

    class Item:
        config = Config()

    Item.config.stash[SUITE_SCOPE_KEY] = cast("SuiteScope", Scope())
    monkeypatch.setattr(_sorting, "serial_lock", lock)
    monkeypatch.setattr(integration, "release", lambda item: events.append("release"))
    wrapper = integration.pytest_runtest_protocol(cast("pytest.Item", Item()), None)

    next(wrapper)
    events.append("protocol")
    with pytest.raises(StopIteration):
        wrapper.send(True)

    assert events == ["lock run-1", "protocol", "release", "unlock"]


def test_the_configured_features_read_their_options_in_configure() -> None:
    """The features of ``CONFIGURED`` have a ``configure`` the entry point's hook calls, and
    no ``pytest_configure`` of their own (pytest would call it in registration order)."""
    from importlib import import_module

    from pytest_agentctx import plugin

    assert set(plugin.CONFIGURED) <= set(plugin.PLUGIN_MODULES)
    for name in plugin.CONFIGURED:
        module = import_module(name)
        assert callable(getattr(module, "configure", None)), name
        assert not hasattr(module, "pytest_configure"), name
