"""Bedrock streams: event-stream messages (see :mod:`..eventstream`).

ConverseStream sends ``messageStart``, then for each content block an optional
``contentBlockStart`` (a ``toolUse`` with its id and name), ``contentBlockDelta`` events
(``text``, ``toolUse.input`` JSON fragments, ``reasoningContent`` text, signature or
redacted content) and ``contentBlockStop``; then ``messageStop`` with the stop reason and
``metadata`` with the usage. InvokeModelWithResponseStream sends ``chunk`` events whose
``bytes`` is the base64 of one event of the model's own stream (Anthropic's Messages
events here). An error in the middle of a stream is a message of type ``exception``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping

from pytest_agentctx.traffic.codecs import anthropic_messages
from pytest_agentctx.traffic.codecs.base import Completion, concat_text, each, fields
from pytest_agentctx.traffic.codecs.bedrock.blocks import (
    blocks_of,
    completion_of,
    decode_usage,
    encode_tier,
    encode_usage,
)
from pytest_agentctx.traffic.codecs.bedrock.response import reply_blocks, stop_reason_of
from pytest_agentctx.traffic.codecs.eventstream import EventMessage, decode_messages, event
from pytest_agentctx.traffic.codecs.sse import SSEEvent, split_text
from pytest_agentctx.traffic.errors import CodecError


def _delta_events(index: int, block: Mapping[str, object]) -> list[EventMessage]:
    """The events that stream one content block."""
    events: list[EventMessage] = []

    def delta(value: Mapping[str, object]) -> None:
        events.append(event("contentBlockDelta", {"delta": value, "contentBlockIndex": index}))

    if "toolUse" in block:
        use = fields(block["toolUse"])
        start = {"toolUseId": use.get("toolUseId"), "name": use.get("name")}
        events.append(
            event("contentBlockStart", {"start": {"toolUse": start}, "contentBlockIndex": index})
        )
        arguments = json.dumps(use.get("input") or {}, ensure_ascii=False)
        for piece in split_text(arguments):
            delta({"toolUse": {"input": piece}})
    elif "reasoningContent" in block:
        content = fields(block["reasoningContent"])
        text = fields(content.get("reasoningText") or {})
        for piece in split_text(str(text.get("text") or "")):
            delta({"reasoningContent": {"text": piece}})
        if text.get("signature"):
            delta({"reasoningContent": {"signature": text["signature"]}})
        if content.get("redactedContent"):
            delta({"reasoningContent": {"redactedContent": content["redactedContent"]}})
    else:
        for piece in split_text(str(block.get("text") or "")) or [""]:
            delta({"text": piece})
    events.append(event("contentBlockStop", {"contentBlockIndex": index}))
    return events


def encode_stream(
    completion: Completion, *, response_id: str, created: int = 0
) -> list[EventMessage]:
    """The ConverseStream messages for ``completion``: ``messageStart``, each block's
    deltas (text and reasoning in token-like pieces, tool input as JSON fragments),
    ``messageStop`` and ``metadata``. Encode each with
    :func:`~pytest_agentctx.traffic.codecs.eventstream.encode_message` for the wire."""
    messages = [event("messageStart", {"role": "assistant"})]
    for index, block in enumerate(reply_blocks(completion)):
        messages.extend(_delta_events(index, block))
    messages.append(event("messageStop", {"stopReason": stop_reason_of(completion)}))
    messages.append(
        event(
            "metadata",
            {
                "usage": encode_usage(completion.usage),
                "metrics": {"latencyMs": 0},
                **encode_tier(completion.usage),
            },
        )
    )
    return messages


def encode_invoke_stream(
    completion: Completion, *, response_id: str, created: int = 0
) -> list[EventMessage]:
    """The InvokeModelWithResponseStream messages for ``completion`` with Anthropic's
    Messages: one ``chunk`` per Messages stream event, its JSON in base64."""
    return [
        event("chunk", {"bytes": base64.b64encode(item.data.encode()).decode("ascii")})
        for item in anthropic_messages.encode_stream(completion, response_id=response_id)
    ]


def _raise_exception(position: int, message: EventMessage) -> None:
    kind = message.headers.get(":exception-type") or message.headers.get(":error-code")
    kind = kind if isinstance(kind, str) else message.message_type
    try:
        text = fields(message.json()).get("message")
    except (CodecError, AttributeError):
        text = message.payload[:200].decode(errors="replace")
    raise CodecError(f"bedrock.decode_stream: message #{position} is an error: {kind}: {text}")


class _Blocks:
    """The content blocks of a ConverseStream reply, built from its events by index."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, object]] = {}

    def start(self, payload: Mapping[str, object]) -> None:
        index = int(str(payload.get("contentBlockIndex", 0)))
        start = fields(payload.get("start") or {})
        use = fields(start.get("toolUse") or {})
        if use:
            self.blocks[index] = {"toolUse": {**use, "input": ""}}
        result = fields(start.get("toolResult") or {})
        if result:
            self.blocks[index] = {"toolResult": {**result, "content": []}}

    def delta(self, payload: Mapping[str, object]) -> None:
        index = int(str(payload.get("contentBlockIndex", 0)))
        delta = fields(payload.get("delta") or {})
        block = self.blocks.setdefault(index, {})
        if "text" in delta:
            block["text"] = concat_text(block.get("text", ""), delta["text"])
        elif "toolUse" in delta:
            use = fields(block.setdefault("toolUse", {"input": ""}))
            piece = fields(delta["toolUse"]).get("input") or ""
            block["toolUse"] = {**use, "input": concat_text(use.get("input") or "", piece)}
        elif "reasoningContent" in delta:
            self._reasoning(block, fields(delta["reasoningContent"]))
        elif "toolResult" in delta:
            result = fields(block.setdefault("toolResult", {}))
            content = [*each(result.get("content")), *each(delta["toolResult"])]
            block["toolResult"] = {**result, "content": content}

    @staticmethod
    def _reasoning(block: dict[str, object], delta: Mapping[str, object]) -> None:
        content = dict(fields(block.get("reasoningContent") or {}))
        if "redactedContent" in delta:
            content["redactedContent"] = delta["redactedContent"]
        else:
            text = dict(fields(content.get("reasoningText") or {}))
            if "text" in delta:
                text["text"] = concat_text(text.get("text", ""), delta["text"])
            if "signature" in delta:
                text["signature"] = delta["signature"]
            content["reasoningText"] = text
        block["reasoningContent"] = content

    def content(self) -> list[dict[str, object]]:
        return [self.blocks[index] for index in sorted(self.blocks) if self.blocks[index]]


def _chunk_event(position: int, payload: Mapping[str, object]) -> SSEEvent:
    """The Anthropic stream event an InvokeModelWithResponseStream ``chunk`` carries."""
    try:
        data = base64.b64decode(str(payload.get("bytes") or ""), validate=True).decode()
        kind = fields(json.loads(data)).get("type")
    except (binascii.Error, UnicodeDecodeError, ValueError, AttributeError) as exc:
        raise CodecError(
            f"bedrock.decode_stream: chunk #{position} does not hold the base64 of a JSON "
            f"event ({exc}). Is this an InvokeModelWithResponseStream of an Anthropic model?"
        ) from None
    return SSEEvent(kind if isinstance(kind, str) else None, data)


def decode_stream(messages: Iterable[EventMessage] | bytes) -> Completion:
    """A ConverseStream or InvokeModelWithResponseStream reply (its messages, or the raw
    body) as a :class:`Completion`.

    Blocks are joined by ``contentBlockIndex``; the stop reason comes from
    ``messageStop``, the usage from ``metadata``. ``chunk`` messages are read as the
    Anthropic Messages stream they carry. An exception message raises
    :class:`CodecError` with its type and message.
    """
    if isinstance(messages, (bytes, bytearray)):
        messages = decode_messages(bytes(messages))
    blocks = _Blocks()
    chunks: list[SSEEvent] = []
    stop_reason: object = None
    usage: object = None
    tier: object = None
    for position, message in enumerate(messages):
        if message.message_type in ("exception", "error"):
            _raise_exception(position, message)
        payload = fields(message.json())
        kind = message.event_type
        if kind == "chunk":
            chunks.append(_chunk_event(position, payload))
        elif kind == "contentBlockStart":
            blocks.start(payload)
        elif kind == "contentBlockDelta":
            blocks.delta(payload)
        elif kind == "messageStop":
            stop_reason = payload.get("stopReason")
        elif kind == "metadata":
            usage = payload.get("usage")
            tier = payload.get("serviceTier")
    if chunks:
        return anthropic_messages.decode_stream(chunks)
    where = "bedrock.decode_stream"
    content = blocks.content()
    completion = completion_of(blocks_of({"content": content}, where), where)
    return Completion(
        content=completion.content,
        tool_calls=completion.tool_calls,
        usage=decode_usage(usage, tier),
        stop_reason=stop_reason if isinstance(stop_reason, str) else None,
        reasoning=completion.reasoning,
        server_tools=completion.server_tools,
    )
