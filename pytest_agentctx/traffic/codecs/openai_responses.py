"""The OpenAI Responses wire format (``POST /v1/responses``).

The conversation is a list of *input items*: messages, ``function_call`` items (the
model's tool calls, by ``call_id``), ``function_call_output`` items (their results) and
``reasoning`` items, which reasoning models need back on the next call. The reply's
``output`` holds items of the same kinds. System messages become ``instructions``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.codecs.base import (
    Completion,
    DecodedRequest,
    Usage,
    parse_arguments,
    require,
)
from pytest_agentctx.traffic.codecs.sse import SSEEvent, parse_sse, split_text
from pytest_agentctx.traffic.errors import CodecError

__all__ = [
    "decode_request",
    "decode_response",
    "decode_stream",
    "encode_request",
    "encode_response",
    "encode_stream",
    "name",
]

name = "openai_responses"


def _text_parts(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text") or part.get("refusal") or ""  # a refusal part holds "refusal"
            for part in content
            if isinstance(part, Mapping)
            and part.get("type") in ("input_text", "output_text", "text", "refusal")
        )
    return str(content)


def encode_request(
    *,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> dict[str, Any]:
    """The JSON body of a Responses request."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            instructions.append(content or "")
        elif role == "user":
            items.append({"role": "user", "content": content or ""})
        elif role == "assistant":
            items.extend(dict(item) for item in message.get("reasoning") or [])
            if content:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": content}],
                    }
                )
            for call in message.get("tool_calls") or []:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": call["name"],
                        "arguments": ToolCall.model_validate(call).arguments_json,
                    }
                )
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": content or "",
                }
            )
        else:
            raise CodecError(
                f"openai_responses.encode_request: message role {role!r} is not one of "
                "system, user, assistant, tool."
            )
    body: dict[str, Any] = {"model": model, "input": items}
    if instructions:
        body["instructions"] = "\n\n".join(instructions)
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
            }
            for spec in tools
        ]
    if max_tokens is not None:
        body["max_output_tokens"] = max_tokens
    if temperature is not None:
        body["temperature"] = temperature
    return body


def _separate_texts(content: Any) -> list[str]:
    """The text parts of a content array, each on its own."""
    if not isinstance(content, list):
        return []
    return [
        part.get("text") or ""
        for part in content
        if isinstance(part, Mapping) and part.get("type") in ("input_text", "output_text", "text")
    ]


def decode_request(body: Mapping[str, Any]) -> DecodedRequest:
    """A Responses request body in neutral form (reasoning items join the assistant).

    The text parts of a user, system or developer message stay apart: each is a message of
    its own, in order (as if the client had sent one message per part).
    """
    raw_input = body.get("input")
    if raw_input is None:
        raise CodecError(
            "openai_responses.decode_request: the body has no 'input' field (it has "
            f"{sorted(body)}). Is this a Responses request?"
        )
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": _text_parts(body["instructions"])})
    items = [{"role": "user", "content": raw_input}] if isinstance(raw_input, str) else raw_input
    assistant: dict[str, Any] | None = None

    def current_assistant() -> dict[str, Any]:
        nonlocal assistant
        if assistant is None:
            assistant = {"role": "assistant", "content": None}
            messages.append(assistant)
        return assistant

    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role == "developer":
                role = "system"
            if role == "assistant":
                target = current_assistant()
                text = _text_parts(item.get("content"))
                target["content"] = (target["content"] or "") + (text or "")
                continue
            assistant = None
            parts = _separate_texts(item.get("content"))
            if len(parts) > 1:
                messages.extend({"role": role, "content": text} for text in parts)
            else:
                messages.append({"role": role, "content": _text_parts(item.get("content"))})
        elif kind == "reasoning":
            current_assistant().setdefault("reasoning", []).append(dict(item))
        elif kind == "function_call":
            current_assistant().setdefault("tool_calls", []).append(
                {
                    "id": item.get("call_id", ""),
                    "name": item.get("name", ""),
                    "arguments": parse_arguments(item.get("arguments")),
                }
            )
        elif kind == "function_call_output":
            assistant = None
            output = item.get("output")
            messages.append(
                {
                    "role": "tool",
                    "content": output if isinstance(output, str) else _text_parts(output),
                    "tool_call_id": item.get("call_id"),
                }
            )
    tools = [
        {
            "name": t.get("name"),
            "description": t.get("description", ""),
            "parameters": t.get("parameters", {}),
        }
        for t in body.get("tools") or []
        if isinstance(t, Mapping) and t.get("type") == "function"
    ]
    return DecodedRequest(
        model=body.get("model"), messages=messages, tools=tools, stream=bool(body.get("stream"))
    )


def _decode_usage(data: Any) -> Usage | None:
    if not isinstance(data, Mapping):
        return None
    return Usage(
        input_tokens=int(data.get("input_tokens") or 0),
        output_tokens=int(data.get("output_tokens") or 0),
    )


#: Output items of the tools OpenAI runs itself, by the name they get as server tools, and
#: the fields that say what each was asked (the results stay out).
_SERVER_CALLS = {
    "web_search_call": ("web_search", ("action",)),
    "file_search_call": ("file_search", ("queries",)),
    "code_interpreter_call": ("code_interpreter", ("code", "container_id")),
    "image_generation_call": ("image_generation", ()),
    "mcp_call": ("mcp", ("server_label", "name", "arguments")),
}


def _server_tool(item: Mapping[str, Any]) -> dict[str, Any]:
    name, fields = _SERVER_CALLS[item["type"]]
    asked: dict[str, Any] = {}
    for key in fields:
        if key in item:
            value = item[key]
            asked.update(value if key == "action" and isinstance(value, Mapping) else {key: value})
    return {"id": item.get("id"), "name": name, "input": asked}


def decode_response(body: Mapping[str, Any]) -> Completion:
    """A Responses response body as a :class:`Completion` (the calls of the tools OpenAI
    runs itself, such as ``web_search_call``, as its server tools)."""
    output = require(body, "output", list, "openai_responses.decode_response")
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    server_tools: list[dict[str, Any]] = []
    for item in output:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind in _SERVER_CALLS:
            server_tools.append(_server_tool(item))
        elif kind == "message":
            texts.append(_text_parts(item.get("content")) or "")
        elif kind == "function_call":
            calls.append(
                ToolCall(
                    id=item.get("call_id") or item.get("id") or "",
                    name=item.get("name", ""),
                    arguments=parse_arguments(item.get("arguments")),
                )
            )
        elif kind == "reasoning":
            reasoning.append(dict(item))
    status = body.get("status")
    return Completion(
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        model=body.get("model"),
        usage=_decode_usage(body.get("usage")),
        stop_reason=("tool_calls" if calls else status) if status == "completed" else status,
        response_id=body.get("id"),
        reasoning=tuple(reasoning),
        server_tools=tuple(server_tools),
    )


def _output_items(completion: Completion, response_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [dict(item) for item in completion.reasoning]
    suffix = response_id.removeprefix("resp_")
    if completion.content is not None:
        items.append(
            {
                "type": "message",
                "id": f"msg_{suffix}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": completion.content, "annotations": []}],
            }
        )
    for index, call in enumerate(completion.tool_calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{suffix}_{index}",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments_json,
                "status": "completed",
            }
        )
    return items


def _response(
    completion: Completion, response_id: str, created: int, status: str
) -> dict[str, Any]:
    usage = completion.usage or Usage()
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "model": completion.model or "unknown",
        "output": _output_items(completion, response_id) if status == "completed" else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            # cache_write_tokens: required by the current SDK's models
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, Any]:
    """A Responses body for ``completion`` (what the fake model serves)."""
    return _response(completion, response_id, created, "completed")


def encode_stream(completion: Completion, *, response_id: str, created: int = 0) -> list[SSEEvent]:
    """The events the Responses API streams for ``completion``: ``response.created``, each
    output item added, its text or argument deltas, done, then ``response.completed``."""
    events: list[SSEEvent] = []
    sequence = 0

    def emit(kind: str, **fields: Any) -> None:
        nonlocal sequence
        data = {"type": kind, "sequence_number": sequence, **fields}
        events.append(SSEEvent(kind, json.dumps(data, ensure_ascii=False, separators=(",", ":"))))
        sequence += 1

    emit("response.created", response=_response(completion, response_id, created, "in_progress"))
    for index, item in enumerate(_output_items(completion, response_id)):
        kind = item["type"]
        if kind == "message":
            text = item["content"][0]["text"]
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            for piece in split_text(text):
                emit(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            emit(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part={**part, "text": text},
            )
        elif kind == "function_call":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for piece in split_text(item["arguments"]):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        else:
            emit("response.output_item.added", output_index=index, item=item)
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=_response(completion, response_id, created, "completed"))
    return events


def decode_stream(events: Iterable[SSEEvent] | bytes | str) -> Completion:
    """A streamed response (its events, or the raw body) as a :class:`Completion`.

    The ``response.completed`` (or ``response.incomplete``) event carries the whole
    response, which is decoded; a stream cut before it is rebuilt from the
    ``output_item.done`` events, with stop reason ``incomplete``. An ``error`` event or a
    ``response.failed`` event raises :class:`CodecError`.
    """
    if isinstance(events, (bytes, str)):
        events = parse_sse(events)
    items: dict[int, dict[str, Any]] = {}
    created: dict[str, Any] = {}
    for position, event in enumerate(events):
        try:
            data = json.loads(event.data)
        except json.JSONDecodeError:
            raise CodecError(
                f"openai_responses.decode_stream: event #{position} is not JSON: "
                f"{event.data[:80]!r}."
            ) from None
        if not isinstance(data, Mapping):
            raise CodecError(
                f"openai_responses.decode_stream: event #{position} is not a JSON object: "
                f"{event.data[:80]!r}."
            )
        kind = data.get("type") or event.event
        if kind in ("error", "response.failed"):
            error = data.get("message") or (data.get("response") or {}).get("error") or data
            raise CodecError(
                f"openai_responses.decode_stream: event #{position} ({kind}) reports an "
                f"error: {error!r}."
            )
        if kind in ("response.completed", "response.incomplete"):
            where = f"openai_responses.decode_stream event #{position} ({kind})"
            return decode_response(require(data, "response", Mapping, where))
        if kind == "response.created":
            created = data.get("response") or {}
        elif kind == "response.output_item.done":
            items[int(data.get("output_index", len(items)))] = data["item"]
    partial = {**created, "output": [items[i] for i in sorted(items)], "status": "incomplete"}
    return decode_response(partial)
