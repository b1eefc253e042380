"""The OpenAI Responses wire format (``POST /v1/responses``).

The conversation is a list of *input items*: messages, ``function_call`` items (the
model's tool calls, by ``call_id``), ``function_call_output`` items (their results) and
``reasoning`` items, which reasoning models need back on the next call. The reply's
``output`` holds items of the same kinds. System messages become ``instructions``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, TypedDict

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.codecs.base import (
    Completion,
    DecodedRequest,
    NeutralMessage,
    NeutralTool,
    Usage,
    as_int,
    concat_text,
    each,
    fields,
    join_texts,
    member,
    nested_count,
    parse_arguments,
    require_list,
    require_object,
    text_or_none,
    tier_or_none,
    token_count,
)
from pytest_agentctx.traffic.codecs.sse import SSEEvent, parse_sse, split_text
from pytest_agentctx.traffic.errors import CodecError

name = "openai_responses"


def _text_parts(content: object) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return join_texts(
            part.get("text") or part.get("refusal") or ""  # a refusal part holds "refusal"
            for part in content
            if isinstance(part, Mapping)
            and part.get("type") in ("input_text", "output_text", "text", "refusal")
        )
    return str(content)


def encode_request(
    *,
    model: str,
    messages: Sequence[Mapping[str, object]],
    tools: Sequence[ToolSpec] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> dict[str, object]:
    """The JSON body of a Responses request."""
    instructions: list[object] = []
    items: list[dict[str, object]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            instructions.append(content or "")
        elif role == "user":
            items.append({"role": "user", "content": content or ""})
        elif role == "assistant":
            items.extend(dict(fields(item)) for item in each(message.get("reasoning")))
            if content:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": content}],
                    }
                )
            for call in each(message.get("tool_calls")):
                items.append(
                    {
                        "type": "function_call",
                        "call_id": member(call, "id"),
                        "name": member(call, "name"),
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
    body: dict[str, object] = {"model": model, "input": items}
    if instructions:
        body["instructions"] = join_texts(instructions, "\n\n")
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


def _separate_texts(content: object) -> list[object]:
    """The text parts of a content array, each on its own."""
    if not isinstance(content, list):
        return []
    return [
        part.get("text") or ""
        for part in content
        if isinstance(part, Mapping) and part.get("type") in ("input_text", "output_text", "text")
    ]


def _calls_by_item_id(items: object) -> dict[str, str]:
    """The ``call_id`` of each echoed ``function_call`` item, by the item's own ``id``
    (``fc_...``), for the clients that answer a call with its item's id as ``call_id``;
    an id that is some call's ``call_id`` stays that call's."""
    calls = [
        raw
        for raw in each(items)
        if isinstance(raw, Mapping) and raw.get("type") == "function_call"
    ]
    call_ids = {item.get("call_id") for item in calls}
    found: dict[str, str] = {}
    for item in calls:
        item_id, call_id = item.get("id"), item.get("call_id")
        if isinstance(item_id, str) and isinstance(call_id, str) and item_id not in call_ids:
            found[item_id] = call_id
    return found


def decode_request(body: Mapping[str, object]) -> DecodedRequest:
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
    messages: list[NeutralMessage] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": _text_parts(body["instructions"])})
    items = [{"role": "user", "content": raw_input}] if isinstance(raw_input, str) else raw_input
    assistant: NeutralMessage | None = None
    item_calls = _calls_by_item_id(items)

    def current_assistant() -> NeutralMessage:
        nonlocal assistant
        if assistant is None:
            assistant = {"role": "assistant", "content": None}
            messages.append(assistant)
        return assistant

    for raw in each(items):
        item = fields(raw)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role == "developer":
                role = "system"
            if role == "assistant":
                target = current_assistant()
                text = _text_parts(item.get("content"))
                target["content"] = concat_text(target.get("content") or "", text or "")
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
            call_id = item.get("call_id")
            messages.append(
                {
                    "role": "tool",
                    "content": output if isinstance(output, str) else _text_parts(output),
                    "tool_call_id": item_calls.get(call_id, call_id)
                    if isinstance(call_id, str)
                    else call_id,
                }
            )
    tools: list[NeutralTool] = [
        {
            "name": t.get("name"),
            "description": t.get("description", ""),
            "parameters": t.get("parameters", {}),
        }
        for t in each(body.get("tools"))
        if isinstance(t, Mapping) and t.get("type") == "function"
    ]
    return DecodedRequest(
        model=text_or_none(body.get("model")),
        messages=messages,
        tools=tools,
        stream=bool(body.get("stream")),
    )


def _decode_usage(data: object, service_tier: object = None) -> Usage | None:
    """The response's ``usage``: ``input_tokens`` counts the tokens read from the cache
    (``input_tokens_details.cached_tokens``) and written to it (``cache_write_tokens``) too,
    ``output_tokens`` the reasoning ones (``output_tokens_details.reasoning_tokens``);
    ``service_tier`` is the response's."""
    if not isinstance(data, Mapping):
        return None
    return Usage(
        input_tokens=token_count(data.get("input_tokens")),
        output_tokens=token_count(data.get("output_tokens")),
        cache_read_tokens=nested_count(data, "input_tokens_details", "cached_tokens"),
        cache_write_tokens=nested_count(data, "input_tokens_details", "cache_write_tokens"),
        reasoning_tokens=nested_count(data, "output_tokens_details", "reasoning_tokens"),
        service_tier=tier_or_none(service_tier),
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


def _server_tool(item: Mapping[str, object], kind: str) -> dict[str, object]:
    name, asked_fields = _SERVER_CALLS[kind]
    asked: dict[str, object] = {}
    for key in asked_fields:
        if key in item:
            value = item[key]
            asked.update(value if key == "action" and isinstance(value, Mapping) else {key: value})
    return {"id": item.get("id"), "name": name, "input": asked}


def decode_response(body: Mapping[str, object]) -> Completion:
    """A Responses response body as a :class:`Completion` (the calls of the tools OpenAI
    runs itself, such as ``web_search_call``, as its server tools)."""
    output = require_list(body, "output", "openai_responses.decode_response")
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, object]] = []
    server_tools: list[dict[str, object]] = []
    for item in output:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind in _SERVER_CALLS:
            server_tools.append(_server_tool(item, str(kind)))
        elif kind == "message":
            texts.append(_text_parts(item.get("content")) or "")
        elif kind == "function_call":
            calls.append(
                ToolCall.model_validate(
                    {
                        "id": item.get("call_id") or item.get("id") or "",
                        "name": item.get("name", ""),
                        "arguments": parse_arguments(item.get("arguments")),
                    }
                )
            )
        elif kind == "reasoning":
            reasoning.append(dict(item))
    status = text_or_none(body.get("status"))
    return Completion(
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        model=text_or_none(body.get("model")),
        usage=_decode_usage(body.get("usage"), body.get("service_tier")),
        stop_reason=("tool_calls" if calls else status) if status == "completed" else status,
        response_id=text_or_none(body.get("id")),
        reasoning=tuple(reasoning),
        server_tools=tuple(server_tools),
    )


class _TextPart(TypedDict):
    """An ``output_text`` content part of a message output item."""

    type: str
    text: str
    annotations: list[object]


class _MessageItem(TypedDict):
    """The ``message`` output item of a reply's text."""

    type: str
    id: str
    status: str
    role: str
    content: list[_TextPart]


class _CallItem(TypedDict):
    """A ``function_call`` output item: one tool call of a reply."""

    type: str
    id: str
    call_id: str
    name: str
    arguments: str
    status: str


def _message_item(completion: Completion, suffix: str) -> _MessageItem | None:
    if completion.content is None:
        return None
    text: _TextPart = {"type": "output_text", "text": completion.content, "annotations": []}
    return {
        "type": "message",
        "id": f"msg_{suffix}",
        "status": "completed",
        "role": "assistant",
        "content": [text],
    }


def _call_items(completion: Completion, suffix: str) -> list[_CallItem]:
    return [
        {
            "type": "function_call",
            "id": f"fc_{suffix}_{index}",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments_json,
            "status": "completed",
        }
        for index, call in enumerate(completion.tool_calls)
    ]


def _output_items(completion: Completion, response_id: str) -> list[dict[str, object]]:
    """The reply's output items: its reasoning items, its message, its tool calls."""
    suffix = response_id.removeprefix("resp_")
    items: list[dict[str, object]] = [dict(item) for item in completion.reasoning]
    message = _message_item(completion, suffix)
    if message is not None:
        items.append(dict(message))
    items.extend(dict(call) for call in _call_items(completion, suffix))
    return items


def _response(
    completion: Completion, response_id: str, created: int, status: str
) -> dict[str, object]:
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
            "input_tokens_details": {
                "cached_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
            },
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        },
        **({"service_tier": usage.service_tier} if usage.service_tier else {}),
    }


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, object]:
    """A Responses body for ``completion`` (what the fake model serves)."""
    return _response(completion, response_id, created, "completed")


def encode_stream(completion: Completion, *, response_id: str, created: int = 0) -> list[SSEEvent]:
    """The events the Responses API streams for ``completion``: ``response.created``, each
    output item added, its text or argument deltas, done, then ``response.completed``."""
    events: list[SSEEvent] = []
    sequence = 0

    def emit(kind: str, **fields: object) -> None:
        nonlocal sequence
        data = {"type": kind, "sequence_number": sequence, **fields}
        events.append(SSEEvent(kind, json.dumps(data, ensure_ascii=False, separators=(",", ":"))))
        sequence += 1

    suffix = response_id.removeprefix("resp_")
    emit("response.created", response=_response(completion, response_id, created, "in_progress"))
    index = 0
    for reasoning in completion.reasoning:
        item = dict(reasoning)
        emit("response.output_item.added", output_index=index, item=item)
        emit("response.output_item.done", output_index=index, item=item)
        index += 1
    message = _message_item(completion, suffix)
    if message is not None:
        _emit_message(emit, index, message)
        index += 1
    for call in _call_items(completion, suffix):
        _emit_call(emit, index, call)
        index += 1
    emit("response.completed", response=_response(completion, response_id, created, "completed"))
    return events


class _Emit(Protocol):
    """Adds one event of a Responses stream: its type and its fields."""

    def __call__(self, kind: str, **fields: object) -> None: ...


def _emit_message(emit: _Emit, index: int, item: _MessageItem) -> None:
    """The events of the message output item: added, its text in deltas, done."""
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
    emit("response.output_item.done", output_index=index, item=item)


def _emit_call(emit: _Emit, index: int, item: _CallItem) -> None:
    """The events of a function call output item: added, its arguments in deltas, done."""
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
    emit("response.output_item.done", output_index=index, item=item)


def decode_stream(events: Iterable[SSEEvent] | bytes | str) -> Completion:
    """A streamed response (its events, or the raw body) as a :class:`Completion`.

    The ``response.completed`` (or ``response.incomplete``) event carries the whole
    response, which is decoded; a stream cut before it is rebuilt from the
    ``output_item.done`` events, with stop reason ``incomplete``. An ``error`` event or a
    ``response.failed`` event raises :class:`CodecError`.
    """
    if isinstance(events, (bytes, str)):
        events = parse_sse(events)
    items: dict[int, object] = {}
    created: object = {}
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
            error = data.get("message") or fields(data.get("response") or {}).get("error") or data
            raise CodecError(
                f"openai_responses.decode_stream: event #{position} ({kind}) reports an "
                f"error: {error!r}."
            )
        if kind in ("response.completed", "response.incomplete"):
            where = f"openai_responses.decode_stream event #{position} ({kind})"
            return decode_response(require_object(data, "response", where))
        if kind == "response.created":
            created = data.get("response") or {}
        elif kind == "response.output_item.done":
            items[as_int(data.get("output_index", len(items)))] = data["item"]
    if not isinstance(created, Mapping):
        raise TypeError(f"{type(created).__name__!r} object is not a mapping")
    partial = {**created, "output": [items[i] for i in sorted(items)], "status": "incomplete"}
    return decode_response(partial)
