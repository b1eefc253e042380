"""The Anthropic Messages wire format (``POST /v1/messages``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.codecs.base import (
    Completion,
    DecodedRequest,
    NeutralCall,
    NeutralMessage,
    NeutralTool,
    Usage,
    concat_text,
    each,
    fields,
    join_texts,
    member,
    nested_count,
    parse_arguments,
    require,
    require_int,
    require_list,
    require_object,
    text_or_none,
    tier_or_none,
    token_count,
)
from pytest_agentctx.traffic.codecs.sse import SSEEvent, parse_sse, split_text
from pytest_agentctx.traffic.errors import CodecError

name = "anthropic_messages"

#: Content blocks of extended thinking, kept as reasoning items (Message.reasoning).
_THINKING = frozenset({"thinking", "redacted_thinking"})

#: Anthropic requires ``max_tokens``; this is sent when the agent sets none.
DEFAULT_MAX_TOKENS = 1024


class _Turn(TypedDict):
    """A turn of a Messages request: its role and its content blocks."""

    role: str
    content: list[dict[str, object]]


def _append(turns: list[_Turn], role: str, blocks: list[dict[str, object]]) -> None:
    """Add content blocks, merging into the previous turn of the same role."""
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})


def encode_request(
    *,
    model: str,
    messages: Sequence[Mapping[str, object]],
    tools: Sequence[ToolSpec] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> dict[str, object]:
    """The JSON body of a Messages request.

    System messages become the top-level ``system``; tool results become ``tool_result``
    blocks of a user turn; consecutive turns of one role are merged, as the API requires.
    """
    system: list[object] = []
    turns: list[_Turn] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            system.append(content or "")
        elif role == "user":
            _append(turns, "user", [{"type": "text", "text": content or ""}])
        elif role == "assistant":
            # thinking blocks go back first, as the API returned them: a model that thinks
            # and calls tools needs them on the next call
            blocks: list[dict[str, object]] = [
                dict(fields(item))
                for item in each(message.get("reasoning"))
                if fields(item).get("type") in _THINKING
            ]
            if content:
                blocks.append({"type": "text", "text": content})
            for call in each(message.get("tool_calls")):
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": member(call, "id"),
                        "name": member(call, "name"),
                        "input": fields(call).get("arguments") or {},
                    }
                )
            _append(turns, "assistant", blocks)
        elif role == "tool":
            block: dict[str, object] = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id"),
                "content": content or "",
            }
            if message.get("is_error"):
                block["is_error"] = True
            _append(turns, "user", [block])
        else:
            raise CodecError(
                f"anthropic_messages.encode_request: message role {role!r} is not one of "
                "system, user, assistant, tool."
            )
    body: dict[str, object] = {
        "model": model,
        "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
        "messages": turns,
    }
    if system:
        body["system"] = join_texts(system, "\n\n")
    if tools:
        body["tools"] = [
            {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}
            for spec in tools
        ]
    if temperature is not None:
        body["temperature"] = temperature
    return body


#: What separates the text blocks of a reply that other blocks (server tool calls and their
#: results, thinking, tool calls) stand between.
PARAGRAPH = "\n\n"


class _ReplyText:
    """The text of an assistant turn, from its blocks in order.

    Adjacent text blocks are one text cut in pieces (a reply that cites sources cuts a
    sentence at each citation): they are joined as they are. Text blocks that other blocks
    stand between (``Let me search.`` [web search] ``Found it.``) are separate paragraphs:
    they are joined with :data:`PARAGRAPH`.
    """

    def __init__(self) -> None:
        self.pieces: list[object] = []
        self.apart = False

    def text(self, piece: object) -> None:
        if self.pieces and self.apart:
            self.pieces.append(PARAGRAPH)
        self.pieces.append(piece)
        self.apart = False

    def other(self) -> None:
        self.apart = True

    def joined(self) -> str | None:
        """The text, or ``None`` when the turn has no text block."""
        return join_texts(self.pieces) if self.pieces else None


def _server_tool(block: Mapping[str, object], raw_input: object) -> dict[str, object]:
    """A ``server_tool_use`` block (web search, code execution) as a server tool entry."""
    return {"id": block.get("id"), "name": block.get("name"), "input": parse_arguments(raw_input)}


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return join_texts(
            block.get("text", "")
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    return "" if content is None else str(content)


def _system_messages(system: object) -> list[NeutralMessage]:
    """The ``system`` field as system messages: one per text block (or the string)."""
    if isinstance(system, list):
        return [
            {"role": "system", "content": block.get("text", "")}
            for block in system
            if isinstance(block, Mapping) and block.get("type") == "text"
        ]
    return [{"role": "system", "content": _text_of(system)}] if system else []


def decode_request(body: Mapping[str, object]) -> DecodedRequest:
    """A Messages request body in neutral form (tool results become ``tool`` messages).

    The text blocks of a user turn (and of ``system``) stay apart: each one is a message
    of its own, in order, which :func:`encode_request` merges back into one turn of the
    same blocks (the API treats consecutive turns of one role as one turn). An assistant
    turn's text blocks are one message whose content joins them, as in
    :func:`decode_response` (a reply that cites sources splits a sentence into blocks).
    """
    raw_turns = require_list(body, "messages", "anthropic_messages.decode_request")
    messages = _system_messages(body.get("system"))
    for index, turn in enumerate(raw_turns):
        if not isinstance(turn, Mapping):
            raise CodecError(
                f"anthropic_messages.decode_request: messages[{index}] is a "
                f"{type(turn).__name__}, expected a JSON object with a 'role'."
            )
        role = turn.get("role")
        content = turn.get("content")
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
            continue
        texts: list[object] = []
        reply = _ReplyText()
        calls: list[NeutralCall] = []
        for block in each(content):
            if not isinstance(block, Mapping):
                raise CodecError(
                    f"anthropic_messages.decode_request: messages[{index}].content holds a "
                    f"{type(block).__name__}, expected content blocks (JSON objects)."
                )
            kind = block.get("type")
            if kind == "text":
                texts.append(block.get("text", ""))
                reply.text(block.get("text", ""))
                continue
            reply.other()
            if kind == "tool_use":
                calls.append(
                    {
                        "id": block.get("id", ""),
                        "name": block.get("name", ""),
                        "arguments": parse_arguments(block.get("input")),
                    }
                )
            elif kind == "tool_result":
                message: NeutralMessage = {
                    "role": "tool",
                    "content": _text_of(block.get("content")),
                    "tool_call_id": block.get("tool_use_id"),
                }
                if block.get("is_error"):
                    message["is_error"] = True
                messages.append(message)
        if role == "assistant":
            assistant: NeutralMessage = {"role": "assistant", "content": reply.joined() or None}
            if calls:
                assistant["tool_calls"] = calls
            messages.append(assistant)
        else:
            messages.extend({"role": role, "content": text} for text in texts)
    tools: list[NeutralTool] = [
        {
            "name": t.get("name"),
            "description": t.get("description", ""),
            "parameters": t.get("input_schema", {}),
        }
        for t in each(body.get("tools"))
        if isinstance(t, Mapping)
    ]
    return DecodedRequest(
        model=text_or_none(body.get("model")),
        messages=messages,
        tools=tools,
        stream=bool(body.get("stream")),
    )


def _decode_usage(usage_data: object) -> Usage | None:
    """Usage of a message. Its ``input_tokens`` are the uncached ones only: the tokens read
    from the cache (``cache_read_input_tokens``) and written to it
    (``cache_creation_input_tokens``, split by lifetime in ``cache_creation``'s
    ``ephemeral_5m_input_tokens`` and ``ephemeral_1h_input_tokens``) are added to make the
    call's input. Thinking tokens are part of ``output_tokens``, with no count of their own."""
    if not isinstance(usage_data, Mapping):
        return None
    read = token_count(usage_data.get("cache_read_input_tokens"))
    write_1h = nested_count(usage_data, "cache_creation", "ephemeral_1h_input_tokens")
    write = token_count(usage_data.get("cache_creation_input_tokens")) or (
        nested_count(usage_data, "cache_creation", "ephemeral_5m_input_tokens") + write_1h
    )
    return Usage(
        input_tokens=token_count(usage_data.get("input_tokens")) + read + write,
        output_tokens=token_count(usage_data.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_1h_tokens=write_1h,
        service_tier=tier_or_none(usage_data.get("service_tier")),
    )


def _input_json(usage: Usage, *, tier: bool = True) -> dict[str, object]:
    """The input counts of a ``usage`` object for ``usage``: the uncached ``input_tokens``,
    then the cache figures and (with ``tier``; a stream's ``message_delta`` has none) the
    tier when there are any."""
    data: dict[str, object] = {"input_tokens": usage.uncached_input_tokens}
    if usage.cache_write_tokens:
        data["cache_creation_input_tokens"] = usage.cache_write_tokens
    if usage.cache_read_tokens:
        data["cache_read_input_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        data["cache_creation"] = {
            "ephemeral_5m_input_tokens": usage.cache_write_tokens - usage.cache_write_1h_tokens,
            "ephemeral_1h_input_tokens": usage.cache_write_1h_tokens,
        }
    if tier and usage.service_tier:
        data["service_tier"] = usage.service_tier
    return data


def decode_response(body: Mapping[str, object]) -> Completion:
    """A Messages response body as a :class:`Completion`."""
    blocks = require_list(body, "content", "anthropic_messages.decode_response")
    texts = _ReplyText()
    calls: list[ToolCall] = []
    reasoning: list[dict[str, object]] = []
    server_tools: list[dict[str, object]] = []
    for block in blocks:
        if not isinstance(block, Mapping):
            texts.other()
            continue
        kind = block.get("type")
        if kind == "text":
            texts.text(block.get("text", ""))
            continue
        texts.other()
        if kind in _THINKING:
            reasoning.append(dict(block))
        elif kind == "server_tool_use":
            server_tools.append(_server_tool(block, block.get("input")))
        elif kind == "tool_use":
            calls.append(
                ToolCall.model_validate(
                    {
                        "id": block.get("id") or "",
                        "name": block.get("name", ""),
                        "arguments": parse_arguments(block.get("input")),
                    }
                )
            )
    return Completion(
        content=texts.joined(),
        tool_calls=tuple(calls),
        model=text_or_none(body.get("model")),
        usage=_decode_usage(body.get("usage")),
        stop_reason=text_or_none(body.get("stop_reason")),
        response_id=text_or_none(body.get("id")),
        reasoning=tuple(reasoning),
        server_tools=tuple(server_tools),
    )


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, object]:
    """A Messages response body for ``completion`` (what the fake model serves)."""
    content: list[dict[str, object]] = []
    if completion.content:
        content.append({"type": "text", "text": completion.content})
    for call in completion.tool_calls:
        content.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    usage = completion.usage or Usage()
    return {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": completion.model or "unknown",
        "content": content,
        "stop_reason": completion.stop_reason
        or ("tool_use" if completion.tool_calls else "end_turn"),
        "stop_sequence": None,
        "usage": {**_input_json(usage), "output_tokens": usage.output_tokens},
    }


# -- streaming (``stream: true``) ------------------------------------------------------

#: The data of a ``ping`` event, byte for byte as the API sends it.
_PING = '{"type": "ping"}'


def _event(kind: str, **fields: object) -> SSEEvent:
    data = {"type": kind, **fields}
    return SSEEvent(kind, json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def encode_stream(completion: Completion, *, response_id: str, created: int = 0) -> list[SSEEvent]:
    """The events Anthropic streams for ``completion`` (a request with ``stream: true``).

    In order, each with its ``event:`` name as the API sends them: ``message_start`` (the
    message with no content, its input tokens), for each content block (the text, then one
    per tool call) ``content_block_start``, its deltas (``text_delta`` pieces, or
    ``input_json_delta`` fragments of the tool input after an empty one) and
    ``content_block_stop``, with a ``ping`` after the first block starts;
    ``message_delta`` (``stop_reason`` and the usage) and ``message_stop``. ``created`` is
    accepted for symmetry with the other codecs; Messages streams carry no timestamp.
    """
    usage = completion.usage or Usage()
    blocks: list[tuple[dict[str, object], list[dict[str, object]]]] = []
    if completion.content:
        blocks.append(
            (
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": piece} for piece in split_text(completion.content)],
            )
        )
    for call in completion.tool_calls:
        fragments = (
            split_text(json.dumps(call.arguments, ensure_ascii=False)) if call.arguments else []
        )
        blocks.append(
            (
                {"type": "tool_use", "id": call.id, "name": call.name, "input": {}},
                [{"type": "input_json_delta", "partial_json": piece} for piece in ["", *fragments]],
            )
        )
    events = [
        _event(
            "message_start",
            message={
                "id": response_id,
                "type": "message",
                "role": "assistant",
                "model": completion.model or "unknown",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {**_input_json(usage), "output_tokens": min(1, usage.output_tokens)},
            },
        )
    ]
    for index, (start, deltas) in enumerate(blocks):
        events.append(_event("content_block_start", index=index, content_block=start))
        if index == 0:
            events.append(SSEEvent("ping", _PING))
        events.extend(_event("content_block_delta", index=index, delta=delta) for delta in deltas)
        events.append(_event("content_block_stop", index=index))
    if not blocks:
        events.append(SSEEvent("ping", _PING))
    events.append(
        _event(
            "message_delta",
            delta={
                "stop_reason": completion.stop_reason
                or ("tool_use" if completion.tool_calls else "end_turn"),
                "stop_sequence": None,
            },
            usage={**_input_json(usage, tier=False), "output_tokens": usage.output_tokens},
        )
    )
    events.append(_event("message_stop"))
    return events


def decode_stream(events: Iterable[SSEEvent] | bytes | str) -> Completion:
    """A streamed message (its events, or the raw body) as a :class:`Completion`.

    Joins the deltas the way the SDK does: text deltas into their text block, tool input
    fragments into their ``tool_use`` block's input; usage from ``message_start`` updated
    by ``message_delta``; thinking blocks joined from their ``thinking_delta`` and
    ``signature_delta`` events. ``ping`` events are skipped; an ``error`` event raises
    :class:`CodecError`.
    """
    if isinstance(events, (bytes, str)):
        events = parse_sse(events)
    message: Mapping[str, object] = {}
    usage_data: dict[str, object] = {}
    stop_reason: object = None
    blocks: dict[int, dict[str, object]] = {}
    parts: dict[int, list[object]] = {}
    for position, item in enumerate(events):
        if item.event == "ping" or not item.data:
            continue
        where = f"anthropic_messages.decode_stream event #{position} ({item.event})"
        try:
            data: object = json.loads(item.data)
        except json.JSONDecodeError as exc:
            raise CodecError(
                f"{where}: the data is not JSON ({exc}): {item.data[:80]!r}. Is this a "
                "Messages stream?"
            ) from None
        kind = require(data, "type", str, where)
        if kind == "error":
            raise CodecError(
                f"{where}: the stream reports an error: {fields(data).get('error')!r}."
            )
        if kind == "message_start":
            message = require_object(data, "message", where)
            usage_data.update(fields(message.get("usage") or {}))
        elif kind == "content_block_start":
            index = require_int(data, "index", where)
            blocks[index] = dict(require_object(data, "content_block", where))
            parts[index] = []
        elif kind == "content_block_delta":
            index = require_int(data, "index", where)
            delta = require_object(data, "delta", where)
            if index not in parts:
                raise CodecError(
                    f"{where}: a delta for content block {index}, which never started. "
                    "Is the stream complete and in order?"
                )
            _add_delta(blocks[index], parts[index], delta)
        elif kind == "message_delta":
            data = fields(data)
            stop_reason = fields(data.get("delta") or {}).get("stop_reason") or stop_reason
            usage = fields(data.get("usage") or {})
            usage_data.update({k: v for k, v in usage.items() if v is not None})
    finished = [
        _finished(block, join_texts(parts[index])) for index, block in sorted(blocks.items())
    ]
    return decode_response(
        {
            "content": finished,
            "model": message.get("model"),
            "usage": usage_data or None,
            "stop_reason": stop_reason,
            "id": message.get("id"),
        }
    )


def _add_delta(block: dict[str, object], parts: list[object], delta: Mapping[str, object]) -> None:
    """One ``content_block_delta`` of ``block``: text, thinking and tool input pieces go to
    ``parts``; a signature is added to the block."""
    kind = delta.get("type")
    if kind == "text_delta":
        parts.append(delta.get("text", ""))
    elif kind == "thinking_delta":
        parts.append(delta.get("thinking", ""))
    elif kind == "signature_delta":
        block["signature"] = concat_text(block.get("signature") or "", delta.get("signature", ""))
    elif kind == "input_json_delta":
        parts.append(delta.get("partial_json", ""))


def _finished(block: Mapping[str, object], joined: str) -> dict[str, object]:
    """A streamed content block with its deltas ``joined`` in, as a reply holds it."""
    kind = block.get("type")
    if kind == "text":
        return {**block, "text": concat_text(block.get("text", ""), joined)}
    if kind == "thinking":
        return {**block, "thinking": concat_text(block.get("thinking", ""), joined)}
    if kind in ("tool_use", "server_tool_use"):
        return {**block, "input": parse_arguments(joined or block.get("input"))}
    return dict(block)
