"""The prompt-cache prefix of model calls: each request split into the blocks a provider
caches, in the provider's order (each tool definition, each system block, each message),
and checked call after call.

A provider's prompt cache (Anthropic's ``cache_control``, Bedrock's ``cachePoint``, OpenAI's
and Gemini's automatic prefix caching) hits only when a call starts with the same prefix as
an earlier one. Within one conversation, each call must therefore send all of the previous
call's blocks again, unchanged and in the same order: the messages may only grow at the end.
:func:`prefix_breaks` names, for each pair of consecutive calls that does not, the first
block that moved or changed.

Which calls belong to one conversation is decided as capture decides it (a call whose
messages start with the messages of an earlier call continues it), with two more cases that
capture counts as new conversations and this check must not: a call whose messages continue
an earlier call's under another system prompt or tool list, and a call that sends an earlier
call's messages with some of them rewritten (at most as many rewritten as kept, at the same
places) followed by that call's reply. A call that drops more than that (a history compacted
to a summary, a sliding window) starts a conversation of its own: the cache break is then
deliberate. So does a call that changes both the tools and the system prompt: another agent
took the conversation over (a handoff). Requests that continue a stored response (OpenAI
Responses ``previous_response_id`` or ``conversation``) send only their new items and are
not checked.

Cache markers are no change: ``cache_control`` keys and ``cachePoint`` blocks are left out,
and a one-text-block content reads as its text (see :func:`.items.without_annotations`).
:func:`missing_breakpoints` checks the other way round that the calls of the formats with
explicit markers (Anthropic Messages, Bedrock) carry one on each part the author declared.
:mod:`.cachechecks` words a test's failure from both.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from pytest_agentctx.traffic.capture.exchange import Exchange
from pytest_agentctx.traffic.capture.items import without_annotations
from pytest_agentctx.traffic.codecs.base import codec_for_path
from pytest_agentctx.traffic.roles import DEFAULT_ROLE

#: The parts of a request, in the order a provider caches them.
PARTS = ("tools", "system", "messages")
#: The formats whose requests carry explicit cache markers (:func:`missing_breakpoints`).
MARKED_FORMATS = frozenset({"anthropic_messages", "bedrock"})
#: How many characters of a block a message shows, before and after.
_SHOWN = 120
#: OpenAI Responses items that are the model's own output (a reply echoed back).
_REPLY_TYPES = frozenset(
    {
        "function_call",
        "reasoning",
        "custom_tool_call",
        "computer_call",
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "mcp_call",
        "local_shell_call",
        "image_generation_call",
    }
)


class Block(NamedTuple):
    """One cacheable block of a request: where it is in the body (``tools[2] `search```,
    ``system[0]``, ``messages[3]``) and its value without cache markers."""

    label: str
    value: object


class CallBlocks(NamedTuple):
    """A model call's cacheable prefix, split into blocks per part."""

    #: The call's exchange: its position among the test's exchanges (0, 1...) and origin
    #: (``<cassette>#<index>``, ``recorded#<slot>``, ``live#<slot>``; empty when unknown).
    position: int
    origin: str
    wire_format: str
    tools: tuple[Block, ...] = ()
    system: tuple[Block, ...] = ()
    messages: tuple[Block, ...] = ()
    #: The parts that carry a cache marker (``cache_control``, ``cachePoint``).
    breakpoints: frozenset[str] = frozenset()
    #: The request continues a stored response: its messages are only the new ones.
    stored: bool = False
    role: str = DEFAULT_ROLE

    def where(self) -> str:
        """The call for messages: ``request #3 (cassettes/test_x.yaml#2)``."""
        origin = f" ({self.origin})" if self.origin else ""
        return f"request #{self.position + 1}{origin}"


class PrefixBreak(NamedTuple):
    """A call that does not start with the blocks of the call before it in its conversation."""

    conversation: int
    earlier: CallBlocks
    later: CallBlocks
    #: The first block that moved or changed (the earlier call's, or the later call's when
    #: the later call added it where the earlier call had none).
    block: str
    before: str
    after: str

    def message(self) -> str:
        """What failed, the block before and after, and what to do."""
        return (
            f"conversation {self.conversation} ({self.later.wire_format}): "
            f"{self.later.where()} does not start with the cacheable prefix of "
            f"{self.earlier.where()}; the first block that moved or changed is {self.block}\n"
            f"  before ({self.earlier.where()}): {self.before}\n"
            f"  after  ({self.later.where()}): {self.after}"
        )


class _Chain:
    """The calls of one conversation so far (``tail``: the last)."""

    __slots__ = ("calls", "number", "tail")

    def __init__(self, number: int, tail: CallBlocks, calls: list[CallBlocks]) -> None:
        self.number = number
        self.tail = tail
        self.calls = calls


# -- a request split into blocks -----------------------------------------------------


def blocks_of(
    wire_format: str,
    body: Mapping[str, object],
    *,
    position: int = 0,
    origin: str = "",
    role: str = DEFAULT_ROLE,
) -> CallBlocks:
    """The cacheable blocks of one request body of ``wire_format`` (a codec's name)."""
    layout = wire_format
    if wire_format == "bedrock" and "anthropic_version" in body:
        layout = "anthropic_messages"  # InvokeModel with an Anthropic Messages body
    tools, system, messages = _LAYOUTS.get(layout, _openai_chat)(body)
    marked = frozenset(
        part
        for part, blocks in zip(PARTS, _raw_parts(layout, body), strict=True)
        if _has_marker(blocks)
    )
    stored = wire_format == "openai_responses" and (
        body.get("previous_response_id") is not None or body.get("conversation") is not None
    )
    return CallBlocks(
        position,
        origin,
        wire_format,
        tuple(tools),
        tuple(system),
        tuple(messages),
        marked,
        stored,
        role,
    )


def _blocks(values: object, label: str, names: bool = False) -> list[Block]:
    if not isinstance(values, list):
        return []
    result = []
    for index, value in enumerate(values):
        if _is_marker_block(value):
            continue
        name = _tool_name(value) if names else None
        shown = f"{label}[{index}]" + (f" `{name}`" if name else "")
        result.append(Block(shown, without_annotations(value)))
    return result


def _text_blocks(value: object, label: str) -> list[Block]:
    """A system field that is a string (one block) or a list of blocks."""
    if isinstance(value, str):
        return [Block(label if label.endswith("instructions") else f"{label}[0]", value)]
    # a text block reads as its text: a client may send a string, then a block to mark it
    return [Block(block.label, _text_of(block.value)) for block in _blocks(value, label)]


def _text_of(value: object) -> object:
    if (
        isinstance(value, Mapping)
        and value.keys() == {"type", "text"}
        and value["type"] == "text"
        and isinstance(value["text"], str)
    ):
        return value["text"]
    if isinstance(value, Mapping) and value.keys() == {"text"} and isinstance(value["text"], str):
        return value["text"]
    return value


def _anthropic(body: Mapping[str, object]) -> tuple[list[Block], list[Block], list[Block]]:
    return (
        _blocks(body.get("tools"), "tools", names=True),
        _text_blocks(body.get("system"), "system"),
        _blocks(body.get("messages"), "messages"),
    )


def _openai_chat(body: Mapping[str, object]) -> tuple[list[Block], list[Block], list[Block]]:
    # The system prompt is the first message (role system or developer): a message block.
    return (
        _blocks(body.get("tools"), "tools", names=True),
        [],
        _blocks(body.get("messages"), "messages"),
    )


def _responses(body: Mapping[str, object]) -> tuple[list[Block], list[Block], list[Block]]:
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    return (
        _blocks(body.get("tools"), "tools", names=True),
        _text_blocks(body.get("instructions"), "instructions"),
        _blocks(items, "input"),
    )


def _gemini(body: Mapping[str, object]) -> tuple[list[Block], list[Block], list[Block]]:
    tools: list[Block] = []
    entries = body.get("tools")
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        declared = None
        if isinstance(entry, Mapping):
            declared = entry.get("functionDeclarations", entry.get("function_declarations"))
        if isinstance(declared, list):
            tools += _blocks(declared, f"tools[{index}].functionDeclarations", names=True)
        else:
            tools.append(Block(f"tools[{index}]", without_annotations(entry)))
    key = "systemInstruction" if "systemInstruction" in body else "system_instruction"
    instruction = body.get(key)
    parts = instruction.get("parts") if isinstance(instruction, Mapping) else instruction
    system = _text_blocks(parts, f"{key}.parts") if parts is not None else []
    return tools, system, _blocks(body.get("contents"), "contents")


def _bedrock(body: Mapping[str, object]) -> tuple[list[Block], list[Block], list[Block]]:
    config = body.get("toolConfig")
    tools = config.get("tools") if isinstance(config, Mapping) else None
    return (
        _blocks(tools, "toolConfig.tools", names=True),
        _text_blocks(body.get("system"), "system"),
        _blocks(body.get("messages"), "messages"),
    )


_LAYOUTS = {
    "anthropic_messages": _anthropic,
    "openai_chat": _openai_chat,
    "openai_responses": _responses,
    "gemini": _gemini,
    "bedrock": _bedrock,
}


def _raw_parts(layout: str, body: Mapping[str, object]) -> tuple[object, object, object]:
    """The request's tools, system and messages as sent (cache markers kept)."""
    if layout == "bedrock":
        config = body.get("toolConfig")
        tools = config.get("tools") if isinstance(config, Mapping) else None
        return tools, body.get("system"), body.get("messages")
    return body.get("tools"), body.get("system"), body.get("messages")


def _has_marker(value: object) -> bool:
    if isinstance(value, Mapping):
        if "cache_control" in value or _is_marker_block(value):
            return True
        return any(_has_marker(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_marker(item) for item in value)
    return False


def _is_marker_block(value: object) -> bool:
    return isinstance(value, Mapping) and len(value) == 1 and "cachePoint" in value


def _tool_name(tool: object) -> str | None:
    if not isinstance(tool, Mapping):
        return None
    for holder in (tool, tool.get("function"), tool.get("toolSpec")):
        if isinstance(holder, Mapping) and isinstance(holder.get("name"), str):
            return str(holder["name"])
    kind = tool.get("type")
    return kind if isinstance(kind, str) else None


# -- the test's calls ----------------------------------------------------------------


def calls_of(exchanges: Iterable[Exchange]) -> list[CallBlocks]:
    """The model calls among ``exchanges`` (POSTs to a model endpoint with a JSON object
    body), split into blocks, with their positions among ``exchanges``."""
    calls = []
    for position, exchange in enumerate(exchanges):
        codec = codec_for_path(exchange.path) if exchange.method == "POST" else None
        body = exchange.request_json() if codec is not None else None
        if codec is None or not isinstance(body, Mapping):
            continue
        calls.append(
            blocks_of(
                codec.name, body, position=position, origin=exchange.origin, role=exchange.role
            )
        )
    return calls


# -- the check -----------------------------------------------------------------------


def prefix_breaks(calls: Sequence[CallBlocks]) -> list[PrefixBreak]:
    """Each call (in request order) that does not start with the blocks of the call before
    it in its conversation, with the first block that moved or changed."""
    chains: list[_Chain] = []
    found = []
    for call in calls:
        if call.stored:
            continue
        chain = _continued(chains, call)
        if chain is None:
            chains.append(_Chain(len(chains) + 1, call, [call]))
            continue
        broken = _first_change(chain.tail, call)
        if broken is not None:
            label, before, after = broken
            found.append(PrefixBreak(chain.number, chain.tail, call, label, before, after))
        chain.tail = call
        chain.calls.append(call)
    return found


def _continued(chains: Sequence[_Chain], call: CallBlocks) -> _Chain | None:
    """The conversation ``call`` continues: the latest whose last call's messages start its
    own (one with the same tools and system first), else the latest whose last call's
    messages it sends with at most as many rewritten as kept, followed by a reply."""
    exact: list[_Chain] = []
    rewritten: list[_Chain] = []
    for chain in chains:
        tail = chain.tail
        if (tail.wire_format, tail.role) != (call.wire_format, call.role):
            continue
        if _other_agent(tail, call):
            continue
        size = len(tail.messages)
        if len(call.messages) <= size:
            continue
        pairs = list(zip(tail.messages, call.messages[:size], strict=True))
        kept = sum(old.value == new.value for old, new in pairs)
        if kept == size:
            exact.append(chain)
        elif 0 < size - kept <= kept and _is_reply(call.messages[size].value):
            rewritten.append(chain)
    if exact:
        same = [c for c in exact if _first_change(c.tail, call) is None]
        return (same or exact)[-1]
    return rewritten[-1] if rewritten else None


def _other_agent(earlier: CallBlocks, later: CallBlocks) -> bool:
    """Whether ``later`` is made by another agent than ``earlier``: both its tools and its
    instructions (the system blocks, or OpenAI chat's leading system messages) differ. A
    handoff (openai-agents, swarms) sends the history under another agent's instructions
    and tools: that agent's cache starts there, a break no single agent can avoid."""
    return _values(earlier.tools) != _values(later.tools) and _instructions(
        earlier
    ) != _instructions(later)


def _values(blocks: Sequence[Block]) -> list[object]:
    return [block.value for block in blocks]


def _instructions(call: CallBlocks) -> list[object]:
    if call.system or call.wire_format != "openai_chat":
        return _values(call.system)
    leading: list[object] = []
    for block in call.messages:
        value = block.value
        if not isinstance(value, Mapping) or value.get("role") not in ("system", "developer"):
            break
        leading.append(value)
    return leading


def _is_reply(item: object) -> bool:
    """Whether a request item is the model's own output (the previous reply, echoed)."""
    if not isinstance(item, Mapping):
        return False
    return item.get("role") in ("assistant", "model") or item.get("type") in _REPLY_TYPES


def _first_change(earlier: CallBlocks, later: CallBlocks) -> tuple[str, str, str] | None:
    """The first block of ``earlier`` that ``later`` does not send unchanged at the same
    place: its label and the two sides shown. Tools and system must be the same; the
    messages of ``later`` must start with those of ``earlier``."""
    for old, new, grows in (
        (earlier.tools, later.tools, False),
        (earlier.system, later.system, False),
        (earlier.messages, later.messages, True),
    ):
        size = len(old) if grows else max(len(old), len(new))
        for index in range(size):
            before = old[index] if index < len(old) else None
            after = new[index] if index < len(new) else None
            if before is not None and after is not None and before.value == after.value:
                continue
            shown = before if before is not None else after
            assert shown is not None  # index < len(old) or index < len(new)
            return _sides(shown.label, before, after)
    return None


def _sides(label: str, before: Block | None, after: Block | None) -> tuple[str, str, str]:
    old = _dump(before.value) if before is not None else ""
    new = _dump(after.value) if after is not None else ""
    common = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        common += 1
    start = max(0, common - _SHOWN // 3)

    def shown(block: Block | None, text: str) -> str:
        if block is None:
            return "(none)"
        prefix = f"{block.label}: " if block.label != label else ""
        cut = ("…" if start else "") + text[start : start + _SHOWN]
        return prefix + cut + ("…" if len(text) > start + _SHOWN else "")

    return label, shown(before, old), shown(after, new)


def _dump(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(value)


# -- declared breakpoints ------------------------------------------------------------


def missing_breakpoints(calls: Sequence[CallBlocks], parts: Iterable[str]) -> list[str]:
    """For each call of a format with explicit cache markers (Anthropic Messages, Bedrock)
    that has a part of ``parts`` without a marker in it, a line naming the call and the
    parts. A call without the part at all (no tools) is not counted."""
    wanted = tuple(parts)
    lines = []
    for call in calls:
        if call.wire_format not in MARKED_FORMATS:
            continue
        present = {"tools": call.tools, "system": call.system, "messages": call.messages}
        lacking = [p for p in wanted if present[p] and p not in call.breakpoints]
        if lacking:
            lines.append(
                f"{call.where()} ({call.wire_format}) has no cache breakpoint on "
                + ", ".join(lacking)
            )
    return lines


def marked_calls(calls: Sequence[CallBlocks]) -> list[CallBlocks]:
    """The calls of the formats with explicit cache markers."""
    return [call for call in calls if call.wire_format in MARKED_FORMATS]
