"""A test's prompt-cache failure, and the markers and ini value that ask for the checks."""

from __future__ import annotations

import pytest

from pytest_agentctx.traffic.capture.cachechecks import (
    cache_failure,
    declared_breakpoints,
    exemption,
    prefix_setting,
)
from pytest_agentctx.traffic.capture.cacheprefix import CallBlocks, blocks_of
from pytest_agentctx.traffic.errors import CacheMarkerError

WHERE = "test_x.py::test_y"


def _call(
    system: str, texts: list[str], position: int, wire_format: str = "anthropic_messages"
) -> CallBlocks:
    roles = ["user", "assistant"]
    body = {
        "system": system,
        "messages": [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)],
    }
    return blocks_of(wire_format, body, position=position)


@pytest.mark.parametrize(
    ("value", "on"), [("", True), ("check", True), (" Check ", True), ("off", False)]
)
def test_the_ini_value_turns_the_check_on_or_off(value: str, on: bool) -> None:
    assert prefix_setting(value) is on


def test_an_unknown_ini_value_is_an_error_naming_it() -> None:
    with pytest.raises(
        CacheMarkerError, match=r"^ini option agent_cache_prefix = 'warn'; it takes check"
    ):
        prefix_setting("warn")


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((), {"reason": "compacts its history"}), (("compacts its history",), {})],
)
def test_an_exemption_gives_its_reason(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    assert exemption([(args, kwargs)], WHERE) == "compacts its history"


def test_no_exemption_marker_is_no_exemption() -> None:
    assert exemption([], WHERE) is None


@pytest.mark.parametrize(
    ("args", "kwargs", "shown"),
    [
        ((), {}, "@pytest.mark.agent_cache_exempt()"),
        ((), {"reason": "  "}, "@pytest.mark.agent_cache_exempt(reason='  ')"),
        ((), {"reason": 3}, "@pytest.mark.agent_cache_exempt(reason=3)"),
        ((), {"why": "x"}, "@pytest.mark.agent_cache_exempt(why='x')"),
    ],
)
def test_an_exemption_without_a_reason_is_an_error_naming_the_marker(
    args: tuple[object, ...], kwargs: dict[str, object], shown: str
) -> None:
    with pytest.raises(CacheMarkerError) as raised:
        exemption([(args, kwargs)], WHERE)
    assert str(raised.value).startswith(f"{WHERE}: {shown} gives no reason; ")


def test_breakpoint_markers_declare_their_parts_once_each() -> None:
    marks: list[tuple[tuple[object, ...], dict[str, object]]] = [
        ((), {"breakpoints": ["system", "tools"]}),
        ((), {"breakpoints": "tools"}),
    ]
    assert declared_breakpoints(marks, WHERE) == ("system", "tools")


@pytest.mark.parametrize(
    "kwargs", [{}, {"breakpoints": []}, {"breakpoints": ["prompt"]}, {"breakpoints": 3}]
)
def test_a_bad_breakpoint_marker_is_an_error_naming_it(kwargs: dict[str, object]) -> None:
    with pytest.raises(
        CacheMarkerError,
        match=r"cannot work; it takes breakpoints=, a list of parts among tools, system, messages",
    ):
        declared_breakpoints([((), kwargs)], WHERE)


def test_a_prefix_break_fails_the_test_with_the_block_and_what_to_do() -> None:
    calls = [_call("A", ["hi"], 0), _call("B", ["hi", "yes", "go"], 1)]
    message = cache_failure(calls, WHERE, check=True, parts=())
    assert message is not None
    lines = message.splitlines()
    assert lines[0].startswith(f"{WHERE}: 1 model call(s) break the prompt-cache prefix")
    assert lines[1].endswith("the first block that moved or changed is system[0]")
    assert lines[2:4] == ['    before (request #1): "A"', '    after  (request #2): "B"']
    assert "@pytest.mark.agent_cache_exempt(reason=" in lines[-1]


def test_without_the_check_a_prefix_break_says_nothing() -> None:
    calls = [_call("A", ["hi"], 0), _call("B", ["hi", "yes", "go"], 1)]
    assert cache_failure(calls, WHERE, check=False, parts=()) is None


def test_a_declared_breakpoint_missing_fails_the_test_naming_the_call() -> None:
    calls = [_call("A", ["hi"], 0)]
    message = cache_failure(calls, WHERE, check=True, parts=("system",))
    assert message is not None
    assert message.splitlines()[:2] == [
        f"{WHERE}: @pytest.mark.agent_cache(breakpoints=['system']), but 1 of 1 call(s) lack one:",
        "  request #1 (anthropic_messages) has no cache breakpoint on system",
    ]


def test_declared_breakpoints_without_an_anthropic_or_bedrock_call_fail() -> None:
    calls = [_call("A", ["hi"], 0, wire_format="openai_responses")]
    message = cache_failure(calls, WHERE, check=False, parts=("system",))
    assert message is not None
    assert "the test made no Anthropic Messages or Bedrock call" in message


def test_a_declared_part_that_no_call_sent_fails_the_test() -> None:
    message = cache_failure([_call("A", ["hi"], 0)], WHERE, check=False, parts=("tools",))
    assert message is not None
    assert message.startswith(
        f"{WHERE}: @pytest.mark.agent_cache(breakpoints=['tools']) declares a cache breakpoint "
        "on tools, but no Anthropic Messages or Bedrock call of the test (1) sent that part"
    )
