"""The prompt-cache prefix check: requests of each wire format split into blocks, and the
first block a later call of a conversation moved or changed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, strategies as st

from pytest_agentctx.traffic.capture.cacheprefix import (
    CallBlocks,
    blocks_of,
    calls_of,
    missing_breakpoints,
    prefix_breaks,
)
from pytest_agentctx.traffic.capture.exchange import Exchange

Turn = tuple[str, str]  # (role: "user" or "assistant", text)
Body = dict[str, object]


def _anthropic(tools: Sequence[str], system: str, turns: Sequence[Turn]) -> Body:
    return {
        "model": "claude-x",
        "max_tokens": 10,
        "tools": [{"name": n, "description": f"{n} tool", "input_schema": {}} for n in tools],
        "system": system,
        "messages": [{"role": r, "content": t} for r, t in turns],
    }


def _openai_chat(tools: Sequence[str], system: str, turns: Sequence[Turn]) -> Body:
    return {
        "model": "gpt-x",
        "tools": [
            {"type": "function", "function": {"name": n, "description": f"{n} tool"}} for n in tools
        ],
        "messages": [{"role": "system", "content": system}]
        + [{"role": r, "content": t} for r, t in turns],
    }


def _responses(tools: Sequence[str], system: str, turns: Sequence[Turn]) -> Body:
    items: list[object] = [
        {"role": "user", "content": t}
        if r == "user"
        else {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": t}],
        }
        for r, t in turns
    ]
    return {
        "model": "gpt-x",
        "tools": [{"type": "function", "name": n, "description": f"{n} tool"} for n in tools],
        "instructions": system,
        "input": items,
    }


def _gemini(tools: Sequence[str], system: str, turns: Sequence[Turn]) -> Body:
    return {
        "tools": [
            {"functionDeclarations": [{"name": n, "description": f"{n} tool"} for n in tools]}
        ],
        "systemInstruction": {"parts": [{"text": system}]},
        "contents": [
            {"role": "user" if r == "user" else "model", "parts": [{"text": t}]} for r, t in turns
        ],
    }


def _bedrock(tools: Sequence[str], system: str, turns: Sequence[Turn]) -> Body:
    return {
        "toolConfig": {
            "tools": [{"toolSpec": {"name": n, "description": f"{n} tool"}} for n in tools]
        },
        "system": [{"text": system}],
        "messages": [{"role": r, "content": [{"text": t}]} for r, t in turns],
    }


Maker = Callable[[Sequence[str], str, Sequence[Turn]], Body]
#: Each wire format: its request maker, and the labels of tools[i], the system prompt and
#: the i-th turn.
FORMATS: dict[str, tuple[Maker, Callable[[int], str], str, Callable[[int], str]]] = {
    "anthropic_messages": (_anthropic, "tools[{}]".format, "system[0]", "messages[{}]".format),
    "openai_chat": (
        _openai_chat,
        "tools[{}]".format,
        "messages[0]",
        lambda i: f"messages[{i + 1}]",
    ),
    "openai_responses": (_responses, "tools[{}]".format, "instructions", "input[{}]".format),
    "gemini": (
        _gemini,
        "tools[0].functionDeclarations[{}]".format,
        "systemInstruction.parts[0]",
        "contents[{}]".format,
    ),
    "bedrock": (_bedrock, "toolConfig.tools[{}]".format, "system[0]", "messages[{}]".format),
}
TOOLS = ["lookup", "search", "write"]
SYSTEM = "You answer questions about orders."
FIRST: list[Turn] = [("user", "Where is order 7?"), ("assistant", "Looking."), ("user", "ok")]
MORE: list[Turn] = [("assistant", "It shipped."), ("user", "thanks")]


def _calls(wire_format: str, *bodies: Body) -> list[CallBlocks]:
    return [blocks_of(wire_format, body, position=i) for i, body in enumerate(bodies)]


@pytest.mark.parametrize("wire_format", FORMATS)
def test_messages_appended_keep_the_prefix(wire_format: str) -> None:
    make = FORMATS[wire_format][0]
    calls = _calls(wire_format, make(TOOLS, SYSTEM, FIRST), make(TOOLS, SYSTEM, FIRST + MORE))
    assert prefix_breaks(calls) == []


@pytest.mark.parametrize("wire_format", FORMATS)
def test_a_tool_changed_between_turns_is_named(wire_format: str) -> None:
    make, tool_label, _, _ = FORMATS[wire_format]
    changed = make(["lookup", "find", "write"], SYSTEM, FIRST + MORE)
    (found,) = prefix_breaks(_calls(wire_format, make(TOOLS, SYSTEM, FIRST), changed))
    assert found.block == f"{tool_label(1)} `search`"
    assert "search" in found.before
    assert "find" in found.after


@pytest.mark.parametrize("wire_format", FORMATS)
def test_a_system_prompt_changed_between_turns_is_named(wire_format: str) -> None:
    make, _, system_label, _ = FORMATS[wire_format]
    earlier = make(TOOLS, SYSTEM, FIRST)
    later = make(TOOLS, "You answer questions about refunds.", FIRST + MORE)
    (found,) = prefix_breaks(_calls(wire_format, earlier, later))
    assert (found.block, found.earlier.position, found.later.position) == (system_label, 0, 1)
    assert "orders" in found.before
    assert "refunds" in found.after


@pytest.mark.parametrize("wire_format", FORMATS)
def test_a_message_rewritten_in_the_middle_is_named(wire_format: str) -> None:
    make, _, _, message_label = FORMATS[wire_format]
    rewritten = [FIRST[0], ("assistant", "Looking it up."), FIRST[2]]
    calls = _calls(wire_format, make(TOOLS, SYSTEM, FIRST), make(TOOLS, SYSTEM, rewritten + MORE))
    (found,) = prefix_breaks(calls)
    assert found.block == message_label(1)
    assert "Looking." in found.before
    assert "Looking it up." in found.after


@pytest.mark.parametrize("wire_format", FORMATS)
def test_a_handoff_to_another_agent_starts_a_conversation(wire_format: str) -> None:
    # both the tools and the instructions change: another agent took the history over
    make = FORMATS[wire_format][0]
    calls = _calls(
        wire_format,
        make(["transfer_to_refunds"], SYSTEM, FIRST),
        make(["refund"], "You handle refunds.", FIRST + MORE),
    )
    assert prefix_breaks(calls) == []


@pytest.mark.parametrize("wire_format", FORMATS)
def test_a_compacted_history_starts_a_conversation(wire_format: str) -> None:
    make = FORMATS[wire_format][0]
    long = FIRST + MORE + [("assistant", "Anything else?"), ("user", "no")]
    summary: list[Turn] = [("user", "Summary: order 7 shipped."), ("assistant", "Noted.")]
    calls = _calls(wire_format, make(TOOLS, SYSTEM, long), make(TOOLS, SYSTEM, summary + MORE))
    assert prefix_breaks(calls) == []


def test_an_anthropic_cache_control_moved_to_the_newest_message_is_no_change() -> None:
    mark = {"type": "ephemeral"}
    earlier = _anthropic(TOOLS, SYSTEM, FIRST)
    earlier["messages"] = [
        {"role": "user", "content": "Where is order 7?"},
        {"role": "assistant", "content": "Looking."},
        {"role": "user", "content": [{"type": "text", "text": "ok", "cache_control": mark}]},
    ]
    earlier["system"] = [{"type": "text", "text": SYSTEM, "cache_control": mark}]
    later = _anthropic(TOOLS, SYSTEM, FIRST + MORE)
    later["messages"][-1] = {  # type: ignore[index]
        "role": "user",
        "content": [{"type": "text", "text": "thanks", "cache_control": mark}],
    }
    assert prefix_breaks(_calls("anthropic_messages", earlier, later)) == []


def test_a_bedrock_cache_point_moved_to_the_newest_message_is_no_change() -> None:
    point = {"cachePoint": {"type": "default"}}
    earlier = _bedrock(TOOLS, SYSTEM, FIRST)
    earlier["messages"][-1]["content"].append(point)  # type: ignore[index]
    earlier["system"].append(point)  # type: ignore[attr-defined]
    later = _bedrock(TOOLS, SYSTEM, FIRST + MORE)
    later["messages"][-1]["content"].append(point)  # type: ignore[index]
    assert prefix_breaks(_calls("bedrock", earlier, later)) == []


def test_a_tool_removed_between_turns_is_named_with_nothing_after() -> None:
    calls = _calls(
        "anthropic_messages",
        _anthropic(TOOLS, SYSTEM, FIRST),
        _anthropic(TOOLS[:2], SYSTEM, FIRST + MORE),
    )
    (found,) = prefix_breaks(calls)
    assert (found.block, found.after) == ("tools[2] `write`", "(none)")


def test_a_tool_added_between_turns_is_named_with_nothing_before() -> None:
    calls = _calls(
        "anthropic_messages",
        _anthropic(TOOLS, SYSTEM, FIRST),
        _anthropic([*TOOLS, "delete"], SYSTEM, FIRST + MORE),
    )
    (found,) = prefix_breaks(calls)
    assert (found.block, found.before) == ("tools[3] `delete`", "(none)")


def test_each_conversation_is_checked_against_its_own_previous_call() -> None:
    # two agents run side by side, each with its own prompt: no call breaks the other's
    other: list[Turn] = [("user", "Refund order 9")]
    calls = _calls(
        "anthropic_messages",
        _anthropic(TOOLS, SYSTEM, FIRST),
        _anthropic(TOOLS, "You handle refunds.", other),
        _anthropic(TOOLS, "You handle refunds.", [*other, ("assistant", "Done."), ("user", "ty")]),
        _anthropic(TOOLS, SYSTEM, FIRST + MORE),
    )
    assert prefix_breaks(calls) == []


def test_a_break_names_the_conversation_and_both_requests_with_their_origin() -> None:
    earlier = blocks_of("anthropic_messages", _anthropic(TOOLS, SYSTEM, FIRST), position=0)
    later = blocks_of(
        "anthropic_messages",
        _anthropic(TOOLS, "Other.", FIRST + MORE),
        position=2,
        origin="cassettes/test_x.yaml#2",
    )
    (found,) = prefix_breaks([earlier, later])
    assert found.message().splitlines() == [
        "conversation 1 (anthropic_messages): request #3 (cassettes/test_x.yaml#2) does not "
        "start with the cacheable prefix of request #1; the first block that moved or "
        "changed is system[0]",
        f'  before (request #1): "{SYSTEM}"',
        '  after  (request #3 (cassettes/test_x.yaml#2)): "Other."',
    ]


def test_a_long_block_is_shown_around_its_first_difference() -> None:
    head = "x" * 500
    calls = _calls(
        "anthropic_messages",
        _anthropic(TOOLS, head + " orders", FIRST),
        _anthropic(TOOLS, head + " refunds", FIRST + MORE),
    )
    (found,) = prefix_breaks(calls)
    assert found.before.startswith("…")
    assert "orders" in found.before
    assert len(found.after) < 200
    assert "refunds" in found.after


def test_a_responses_call_on_a_stored_response_is_not_checked() -> None:
    earlier = _responses(TOOLS, SYSTEM, FIRST)
    later = {**_responses(TOOLS, "Other.", [("user", "more")]), "previous_response_id": "r1"}
    assert prefix_breaks(_calls("openai_responses", earlier, later)) == []


def test_calls_of_keeps_model_calls_at_their_positions_among_the_exchanges() -> None:
    def post(url: str, body: object, origin: str) -> Exchange:
        return Exchange("POST", url, 200, {"json": body}, origin=origin)

    exchanges = [
        post("https://api.example.com/embed", {"input": "x"}, "c.yaml#0"),
        post("https://api.anthropic.com/v1/messages", _anthropic(TOOLS, SYSTEM, FIRST), "c.yaml#1"),
        Exchange("GET", "https://api.openai.com/v1/chat/completions", 200),
    ]
    (call,) = calls_of(exchanges)
    assert (call.position, call.wire_format, call.origin) == (1, "anthropic_messages", "c.yaml#1")


def test_breakpoints_are_read_from_each_part_of_an_anthropic_request() -> None:
    mark = {"type": "ephemeral"}
    body = _anthropic(TOOLS, SYSTEM, FIRST)
    body["tools"][-1]["cache_control"] = mark  # type: ignore[index]
    (call,) = _calls("anthropic_messages", body)
    assert call.breakpoints == {"tools"}
    assert missing_breakpoints([call], ["tools", "system"]) == [
        "request #1 (anthropic_messages) has no cache breakpoint on system"
    ]


def test_breakpoints_are_read_from_the_cache_points_of_a_bedrock_request() -> None:
    body = _bedrock(TOOLS, SYSTEM, FIRST)
    body["system"].append({"cachePoint": {"type": "default"}})  # type: ignore[attr-defined]
    body["messages"][-1]["content"].append({"cachePoint": {"type": "default"}})  # type: ignore[index]
    (call,) = _calls("bedrock", body)
    assert call.breakpoints == {"system", "messages"}
    assert missing_breakpoints([call], ["system", "messages"]) == []


def test_a_part_the_request_does_not_have_needs_no_breakpoint() -> None:
    (call,) = _calls("anthropic_messages", _anthropic([], SYSTEM, FIRST))
    assert missing_breakpoints([call], ["tools"]) == []


# -- laws --------------------------------------------------------------------------

_texts = st.text(alphabet="abcdefgh ", min_size=1, max_size=12)
_turns = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), _texts), max_size=5)


@st.composite
def _conversations(draw: st.DrawFn) -> tuple[str, list[str], str, list[Turn]]:
    wire_format = draw(st.sampled_from(sorted(FORMATS)))
    tools = draw(st.lists(_texts, max_size=3, unique=True))
    system = draw(_texts)
    first = [("user", draw(_texts))] + [
        (role, text) for role, text in draw(st.lists(st.tuples(st.just("x"), _texts), max_size=3))
    ]
    turns: list[Turn] = [
        ("user" if i % 2 == 0 else "assistant", text) for i, (_, text) in enumerate(first)
    ]
    return wire_format, tools, system, turns


@given(_conversations(), st.lists(_turns, min_size=1, max_size=4))
def test_appending_messages_never_breaks_the_prefix(
    conversation: tuple[str, list[str], str, list[Turn]], appended: list[list[Turn]]
) -> None:
    wire_format, tools, system, turns = conversation
    make = FORMATS[wire_format][0]
    bodies = []
    for more in appended:
        bodies.append(make(tools, system, turns))
        turns = turns + more
    bodies.append(make(tools, system, turns))
    assert prefix_breaks(_calls(wire_format, *bodies)) == []


@given(_conversations(), st.data())
def test_changing_any_single_earlier_block_breaks_the_prefix_and_names_it(
    conversation: tuple[str, list[str], str, list[Turn]], data: st.DataObject
) -> None:
    wire_format, tools, system, turns = conversation
    make, tool_label, system_label, message_label = FORMATS[wire_format]
    kinds = ["system"] + (["tool"] if tools else []) + (["message"] if len(turns) >= 2 else [])
    kind = data.draw(st.sampled_from(kinds))
    new_tools, new_system, new_turns = list(tools), system, list(turns)
    if kind == "tool":
        index = data.draw(st.integers(0, len(tools) - 1))
        new_tools[index] = tools[index] + "!"
        expected = f"{tool_label(index)} `{tools[index]}`"
    elif kind == "system":
        new_system, expected = system + "!", system_label
    else:
        index = data.draw(st.integers(0, len(turns) - 1))
        new_turns[index] = (turns[index][0], turns[index][1] + "!")
        expected = message_label(index)
    reply: Turn = ("assistant", "done")
    calls = _calls(
        wire_format, make(tools, system, turns), make(new_tools, new_system, [*new_turns, reply])
    )
    (found,) = prefix_breaks(calls)
    assert found.block == expected
