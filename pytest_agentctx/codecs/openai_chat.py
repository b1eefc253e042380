"""The OpenAI chat completions wire format (``POST /v1/chat/completions``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..context import ToolCall
from ..exceptions import CodecError
from ..tools import ToolSpec
from .base import Completion, DecodedRequest, Usage, parse_arguments, require

__all__ = ["decode_request", "decode_response", "encode_request", "encode_response", "name"]

name = "openai_chat"


def _encode_message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = message.get("role")
    if role in ("system", "user"):
        return {"role": role, "content": message.get("content") or ""}
    if role == "assistant":
        data: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        calls = message.get("tool_calls") or []
        if calls:
            data["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": ToolCall.model_validate(call).arguments_json,
                    },
                }
                for call in calls
            ]
        return data
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.get("tool_call_id"),
            "content": message.get("content") or "",
        }
    raise CodecError(
        f"openai_chat.encode_request: message role {role!r} is not one of "
        "system, user, assistant, tool."
    )


def encode_request(
    *,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> dict[str, Any]:
    """The JSON body of a chat completions request."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [_encode_message(m) for m in messages],
    }
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.parameters,
                },
            }
            for spec in tools
        ]
    if max_tokens is not None:
        body["max_completion_tokens"] = max_tokens
    if temperature is not None:
        body["temperature"] = temperature
    return body


def _content_text(content: Any) -> str | None:
    """Message content as text: a string, or the text parts of a content array."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part.get("text", "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", "input_text")
        ]
        return "".join(texts)
    return str(content)


def decode_request(body: Mapping[str, Any]) -> DecodedRequest:
    """A chat completions request body in neutral form."""
    raw_messages = require(body, "messages", list, "openai_chat.decode_request")
    messages: list[dict[str, Any]] = []
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, Mapping):
            raise CodecError(
                f"openai_chat.decode_request: messages[{index}] is a {type(raw).__name__}, "
                "expected a JSON object with a 'role'."
            )
        role = raw.get("role")
        if role == "developer":
            role = "system"
        message: dict[str, Any] = {"role": role, "content": _content_text(raw.get("content"))}
        if role == "assistant" and raw.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": call.get("id", ""),
                    "name": call.get("function", {}).get("name", ""),
                    "arguments": parse_arguments(call.get("function", {}).get("arguments")),
                }
                for call in raw["tool_calls"]
            ]
        if role == "tool":
            message["tool_call_id"] = raw.get("tool_call_id")
        messages.append(message)
    tools = [
        {
            "name": t.get("function", {}).get("name"),
            "description": t.get("function", {}).get("description", ""),
            "parameters": t.get("function", {}).get("parameters", {}),
        }
        for t in body.get("tools") or []
        if isinstance(t, Mapping)
    ]
    return DecodedRequest(
        model=body.get("model"), messages=messages, tools=tools, stream=bool(body.get("stream"))
    )


def _decode_tool_call(call: Any, where: str) -> ToolCall:
    function = require(call, "function", Mapping, where)
    return ToolCall(
        id=call.get("id") or "",
        name=function.get("name") or "",
        arguments=parse_arguments(function.get("arguments")),
    )


def decode_response(body: Mapping[str, Any]) -> Completion:
    """A chat completions response body as a :class:`Completion`."""
    choices = require(body, "choices", list, "openai_chat.decode_response")
    if not choices:
        raise CodecError(
            "openai_chat.decode_response: 'choices' is empty; the response holds no reply."
        )
    choice = choices[0]
    message = require(choice, "message", Mapping, "openai_chat.decode_response choices[0]")
    calls = tuple(
        _decode_tool_call(call, f"openai_chat.decode_response choices[0].message.tool_calls[{i}]")
        for i, call in enumerate(message.get("tool_calls") or [])
    )
    usage_data = body.get("usage")
    usage = (
        Usage(
            input_tokens=int(usage_data.get("prompt_tokens") or 0),
            output_tokens=int(usage_data.get("completion_tokens") or 0),
        )
        if isinstance(usage_data, Mapping)
        else None
    )
    return Completion(
        content=_content_text(message.get("content")),
        tool_calls=calls,
        model=body.get("model"),
        usage=usage,
        stop_reason=choice.get("finish_reason"),
        response_id=body.get("id"),
    )


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, Any]:
    """A chat completions response body for ``completion`` (what the fake model serves)."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": completion.content,
        "refusal": None,
    }
    if completion.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in completion.tool_calls
        ]
    usage = completion.usage or Usage()
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": created,
        "model": completion.model or "unknown",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": completion.stop_reason
                or ("tool_calls" if completion.tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        },
    }
