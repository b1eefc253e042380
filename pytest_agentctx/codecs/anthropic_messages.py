"""The Anthropic Messages wire format (``POST /v1/messages``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..context import ToolCall
from ..exceptions import CodecError
from ..tools import ToolSpec
from .base import Completion, DecodedRequest, Usage, parse_arguments, require

__all__ = ["decode_request", "decode_response", "encode_request", "encode_response", "name"]

name = "anthropic_messages"

#: Anthropic requires ``max_tokens``; this is sent when the agent sets none.
DEFAULT_MAX_TOKENS = 1024


def _append(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Add content blocks, merging into the previous turn of the same role."""
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})


def encode_request(
    *,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> dict[str, Any]:
    """The JSON body of a Messages request.

    System messages become the top-level ``system``; tool results become ``tool_result``
    blocks of a user turn; consecutive turns of one role are merged, as the API requires.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            system.append(content or "")
        elif role == "user":
            _append(turns, "user", [{"type": "text", "text": content or ""}])
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            if content:
                blocks.append({"type": "text", "text": content})
            for call in message.get("tool_calls") or []:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["name"],
                        "input": call.get("arguments") or {},
                    }
                )
            _append(turns, "assistant", blocks)
        elif role == "tool":
            block: dict[str, Any] = {
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
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
        "messages": turns,
    }
    if system:
        body["system"] = "\n\n".join(system)
    if tools:
        body["tools"] = [
            {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}
            for spec in tools
        ]
    if temperature is not None:
        body["temperature"] = temperature
    return body


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block.get("text", "")
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    return "" if content is None else str(content)


def decode_request(body: Mapping[str, Any]) -> DecodedRequest:
    """A Messages request body in neutral form (tool results become ``tool`` messages)."""
    raw_turns = require(body, "messages", list, "anthropic_messages.decode_request")
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": _text_of(system)})
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
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for block in content or []:
            if not isinstance(block, Mapping):
                raise CodecError(
                    f"anthropic_messages.decode_request: messages[{index}].content holds a "
                    f"{type(block).__name__}, expected content blocks (JSON objects)."
                )
            kind = block.get("type")
            if kind == "text":
                texts.append(block.get("text", ""))
            elif kind == "tool_use":
                calls.append(
                    {
                        "id": block.get("id", ""),
                        "name": block.get("name", ""),
                        "arguments": parse_arguments(block.get("input")),
                    }
                )
            elif kind == "tool_result":
                message: dict[str, Any] = {
                    "role": "tool",
                    "content": _text_of(block.get("content")),
                    "tool_call_id": block.get("tool_use_id"),
                }
                if block.get("is_error"):
                    message["is_error"] = True
                messages.append(message)
        if role == "assistant":
            assistant: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if calls:
                assistant["tool_calls"] = calls
            messages.append(assistant)
        elif texts:
            messages.append({"role": role, "content": "".join(texts)})
    tools = [
        {
            "name": t.get("name"),
            "description": t.get("description", ""),
            "parameters": t.get("input_schema", {}),
        }
        for t in body.get("tools") or []
        if isinstance(t, Mapping)
    ]
    return DecodedRequest(
        model=body.get("model"), messages=messages, tools=tools, stream=bool(body.get("stream"))
    )


def decode_response(body: Mapping[str, Any]) -> Completion:
    """A Messages response body as a :class:`Completion`."""
    blocks = require(body, "content", list, "anthropic_messages.decode_response")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            texts.append(block.get("text", ""))
        elif kind == "tool_use":
            calls.append(
                ToolCall(
                    id=block.get("id") or "",
                    name=block.get("name", ""),
                    arguments=parse_arguments(block.get("input")),
                )
            )
    usage_data = body.get("usage")
    usage = (
        Usage(
            input_tokens=int(usage_data.get("input_tokens") or 0)
            + int(usage_data.get("cache_read_input_tokens") or 0)
            + int(usage_data.get("cache_creation_input_tokens") or 0),
            output_tokens=int(usage_data.get("output_tokens") or 0),
        )
        if isinstance(usage_data, Mapping)
        else None
    )
    return Completion(
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        model=body.get("model"),
        usage=usage,
        stop_reason=body.get("stop_reason"),
        response_id=body.get("id"),
    )


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, Any]:
    """A Messages response body for ``completion`` (what the fake model serves)."""
    content: list[dict[str, Any]] = []
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
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
    }
