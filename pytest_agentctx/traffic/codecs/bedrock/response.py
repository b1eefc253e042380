"""Bedrock responses: the Converse body (``output.message``, ``stopReason``, ``usage``,
``metrics``) decoded into a :class:`Completion` and encoded from one; an InvokeModel
response with Anthropic's Messages body is read by the ``anthropic_messages`` codec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pytest_agentctx.traffic.codecs import anthropic_messages
from pytest_agentctx.traffic.codecs.base import Completion, require_object, text_or_none
from pytest_agentctx.traffic.codecs.bedrock.blocks import (
    assistant_blocks,
    blocks_of,
    completion_of,
    decode_usage,
    encode_tier,
    encode_usage,
)
from pytest_agentctx.traffic.errors import CodecError

#: The stop reasons Converse sends.
STOP_REASONS = frozenset(
    {
        "end_turn",
        "tool_use",
        "max_tokens",
        "stop_sequence",
        "guardrail_intervened",
        "content_filtered",
    }
)


def is_messages_body(body: Mapping[str, object]) -> bool:
    """Whether ``body`` is an Anthropic Messages response (InvokeModel), not Converse."""
    return "output" not in body and (body.get("type") == "message" or "content" in body)


def decode_response(body: Mapping[str, object]) -> Completion:
    """A Converse response body (or an InvokeModel one with Anthropic's Messages) as a
    :class:`Completion`. Converse names no model and no response id: capture takes the
    model from the URL."""
    where = "bedrock.decode_response"
    if not isinstance(body, Mapping):
        raise CodecError(f"{where}: expected a JSON object, got {type(body).__name__}.")
    if is_messages_body(body):
        return anthropic_messages.decode_response(body)
    output = require_object(body, "output", where)
    message = require_object(output, "message", f"{where}: output")
    completion = completion_of(blocks_of(message, f"{where}: output.message"), where)
    return replace(
        completion,
        usage=decode_usage(body.get("usage"), body.get("serviceTier")),
        stop_reason=text_or_none(body.get("stopReason")),
    )


def reply_blocks(completion: Completion) -> list[dict[str, object]]:
    """The content blocks of the assistant message that replies ``completion``."""
    return assistant_blocks(
        {
            "content": completion.content,
            "tool_calls": [call.model_dump(mode="json") for call in completion.tool_calls],
            "reasoning": [dict(item) for item in completion.reasoning],
        }
    )


def stop_reason_of(completion: Completion) -> str:
    """The ``stopReason`` sent for ``completion``: its own, else ``tool_use`` for a reply
    with tool calls and ``end_turn`` for one without."""
    return completion.stop_reason or ("tool_use" if completion.tool_calls else "end_turn")


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, object]:
    """A Converse response body for ``completion`` (what the fake model serves).

    Converse sends no response id, model or timestamp: ``response_id`` and ``created`` are
    accepted for symmetry with the other codecs (the request id is an HTTP header).
    """
    return {
        "output": {"message": {"role": "assistant", "content": reply_blocks(completion)}},
        "stopReason": stop_reason_of(completion),
        "usage": encode_usage(completion.usage),
        "metrics": {"latencyMs": 0},
        **encode_tier(completion.usage),
    }
