"""End-to-end tests of the prompt-cache checks: a raw ``anthropic`` SDK agent whose calls
change their prefix fails its test after its call with the block that moved, unless the test
is exempt with a reason or the ini switch is off; ``agent_cache(breakpoints=...)`` fails a
test whose calls lack a declared cache breakpoint.

The agent's model calls are answered by ``fake_llm`` (the client points at
``http://127.0.0.1:9``, where nobody listens): nothing leaves the process.
"""

from __future__ import annotations

import anthropic  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest

from pytest_agentctx import LoopbackProvider

AGENT = '''
import os

import anthropic

BASE = os.environ.get("AGENT_BASE_URL", "http://127.0.0.1:9")
TOOLS = [{"name": "get_weather", "input_schema": {"type": "object"}}]


def weather_agent(question, system=lambda turn: "You are a weather bot.", mark=False):
    """A raw Messages tool loop; ``system(turn)`` is the system prompt of each call, and
    ``mark`` puts a cache breakpoint on the system prompt and the newest message."""
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=BASE, max_retries=0)
    messages = [{"role": "user", "content": question}]
    turn = 0
    while True:
        sent = [dict(m) for m in messages]
        prompt = system(turn)
        if mark:
            prompt = [{"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}]
            content = sent[-1]["content"]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            newest = {**content[-1], "cache_control": {"type": "ephemeral"}}
            sent[-1]["content"] = [*content[:-1], newest]
        reply = client.messages.create(
            model="claude-haiku-4-5", max_tokens=200, system=prompt, messages=sent, tools=TOOLS
        )
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in reply.content if b.type == "text")
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": c.id, "content": "Sunny"} for c in calls
                ],
            }
        )
        turn += 1


def drifting(turn):
    """A system prompt that changes every turn (a step counter in it): the cache misses."""
    return f"You are a weather bot. Step {turn}. {os.environ.get('ACME_SERVICE_TOKEN', '')}"
'''

#: The inner test of an agent whose system prompt changes between its two calls.
DRIFTING_TEST = """
import pytest
from weather import drifting, weather_agent

{marker}
def test_weather(fake_llm):
    fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
    assert weather_agent("Weather in Paris?", system=drifting) == "Sunny in Paris."
"""


@pytest.fixture
def project(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(weather=AGENT)
    return agent_pytester


def test_a_system_prompt_changed_between_turns_fails_with_the_block_before_and_after(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_drift=DRIFTING_TEST.format(marker=""))

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_drift.py::test_weather: 1 model call(s) break the prompt-cache prefix of "
            "their conversation*",
            "*conversation 1 (anthropic_messages): request #2 * does not start with the "
            "cacheable prefix of request #1 *; the first block that moved or changed is "
            "system[[]0]",
            '*before (request #1 *): "You are a weather bot. Step 0. "',
            '*after  (request #2 *): "You are a weather bot. Step 1. "',
            "*@pytest.mark.agent_cache_exempt(reason=*",
        ]
    )


def test_the_blocks_shown_pass_the_test_s_redactor(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACME_SERVICE_TOKEN", "tok-5ecret-value-93f1a7")
    project.makepyfile(test_drift=DRIFTING_TEST.format(marker=""))

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ['*before (request #1 *): "You are a weather bot. Step 0. *REDACTED*']
    )
    assert "tok-5ecret-value-93f1a7" not in result.stdout.str()


def test_an_exempt_test_with_a_reason_passes(project: pytest.Pytester) -> None:
    marker = '@pytest.mark.agent_cache_exempt(reason="the prompt carries the step on purpose")'
    project.makepyfile(test_drift=DRIFTING_TEST.format(marker=marker))

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("marker", ["agent_cache_exempt", 'agent_cache_exempt(reason="")'])
def test_an_exemption_without_a_reason_is_an_error_of_the_test(
    project: pytest.Pytester, marker: str
) -> None:
    project.makepyfile(test_drift=DRIFTING_TEST.format(marker=f"@pytest.mark.{marker}"))

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(errors=1)
    shown = "agent_cache_exempt()" if "(" not in marker else "agent_cache_exempt(reason='')"
    result.stdout.fnmatch_lines(
        [
            "E   *CacheMarkerError: test_drift.py::test_weather: "
            f"@pytest.mark.{shown} gives no reason;*"
        ]
    )


def test_the_ini_switch_turns_the_check_off(project: pytest.Pytester) -> None:
    project.makepyfile(test_drift=DRIFTING_TEST.format(marker=""))

    result = project.runpytest("-p", "no:cacheprovider", "-o", "agent_cache_prefix=off")

    result.assert_outcomes(passed=1)


def test_an_unknown_ini_value_stops_the_session(project: pytest.Pytester) -> None:
    project.makepyfile(test_drift=DRIFTING_TEST.format(marker=""))

    result = project.runpytest("-p", "no:cacheprovider", "-o", "agent_cache_prefix=warn")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agent_cache_prefix = 'warn'; it takes check*"])


def test_a_test_that_fails_on_its_own_keeps_its_failure(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_drift="""
        from weather import drifting, weather_agent

        def test_weather(fake_llm):
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
            assert weather_agent("Weather in Paris?", system=drifting) == "Rain"
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    assert "prompt-cache prefix" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*assert 'Sunny in Paris.' == 'Rain'*"])


def test_a_stable_prefix_with_its_breakpoint_moving_to_the_newest_message_passes(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_stable="""
        import pytest
        from weather import weather_agent

        @pytest.mark.agent_cache(breakpoints=["system", "messages"])
        def test_weather(fake_llm):
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
            assert weather_agent("Weather in Paris?", mark=True) == "Sunny in Paris."
            assert len(fake_llm.exchanges) == 2
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


def test_a_declared_breakpoint_the_calls_lack_fails_the_test(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_unmarked="""
        import pytest
        from weather import weather_agent

        @pytest.mark.agent_cache(breakpoints=["system"])
        def test_weather(fake_llm):
            fake_llm.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
            assert weather_agent("Weather in Paris?") == "Sunny in Paris."
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_unmarked.py::test_weather: "
            "@pytest.mark.agent_cache(breakpoints=[[]'system'[]]), but 2 of 2 call(s) lack one:",
            "*request #1 * (anthropic_messages) has no cache breakpoint on system",
        ]
    )


def test_a_bad_breakpoint_marker_is_an_error_of_the_test(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.agent_cache(breakpoints=["prompt"])
        def test_bad(fake_llm):
            pass
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["E   *CacheMarkerError: test_bad.py::test_bad: @pytest.mark.agent_cache(breakpoints=*"]
    )


def test_a_replayed_cassette_names_the_interactions_that_broke_the_prefix(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    test = """
    import pytest
    from weather import drifting, weather_agent

    @pytest.mark.agent
    {marker}
    def test_weather():
        assert weather_agent("Weather in Paris?", system=drifting) == "Sunny in Paris."
    """
    exempt = '@pytest.mark.agent_cache_exempt(reason="recorded once")'
    project.makepyfile(test_drift=test.format(marker=exempt))
    with LoopbackProvider() as provider:
        provider.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
        monkeypatch.setenv("AGENT_BASE_URL", provider.base_url)
        project.runpytest("-p", "no:cacheprovider", "--agent-record").assert_outcomes(passed=1)
    monkeypatch.delenv("AGENT_BASE_URL")
    project.makepyfile(test_drift=test.format(marker=""))

    replayed = project.runpytest("-p", "no:cacheprovider")

    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(
        [
            "*conversation 1 (anthropic_messages): request #2 (*test_weather*#1) does not start "
            "with the cacheable prefix of request #1 (*test_weather*#0);*system[[]0]",
        ]
    )


def test_declared_breakpoints_of_a_test_with_no_captured_traffic_fail(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_plain="""
        import pytest

        @pytest.mark.agent_cache(breakpoints=["system"])
        def test_plain():
            pass
        """
    )

    result = project.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*but the test made no Anthropic Messages or Bedrock call*"])
