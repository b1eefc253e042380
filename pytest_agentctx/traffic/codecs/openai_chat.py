"""The OpenAI chat completions wire format (``POST /v1/chat/completions``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

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
    function_tools,
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
from pytest_agentctx.traffic.codecs.sse import DONE, SSEEvent, event_chunk, parse_sse, split_text
from pytest_agentctx.traffic.errors import CodecError

name = "openai_chat"


def _encode_message(message: Mapping[str, object]) -> dict[str, object]:
    role = message.get("role")
    if role in ("system", "user"):
        return {"role": role, "content": message.get("content") or ""}
    if role == "assistant":
        data: dict[str, object] = {"role": "assistant", "content": message.get("content")}
        calls = list(each(message.get("tool_calls")))
        if calls:
            data["tool_calls"] = [
                {
                    "id": member(call, "id"),
                    "type": "function",
                    "function": {
                        "name": member(call, "name"),
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
    messages: Sequence[Mapping[str, object]],
    tools: Sequence[ToolSpec] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> dict[str, object]:
    """The JSON body of a chat completions request."""
    body: dict[str, object] = {
        "model": model,
        "messages": [_encode_message(m) for m in messages],
    }
    if tools:
        body["tools"] = function_tools(tools)
    if max_tokens is not None:
        body["max_completion_tokens"] = max_tokens
    if temperature is not None:
        body["temperature"] = temperature
    return body


def _content_text(content: object) -> str | None:
    """Message content as text: a string, or the text parts of a content array."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return join_texts(_separate_texts(content))
    return str(content)


def _separate_texts(content: object) -> list[object]:
    """The text parts of a content array, each on its own."""
    if not isinstance(content, list):
        return []
    return [
        part.get("text", "")
        for part in content
        if isinstance(part, Mapping) and part.get("type") in ("text", "input_text")
    ]


def decode_request(body: Mapping[str, object]) -> DecodedRequest:
    """A chat completions request body in neutral form.

    The text parts of a user or system message's content array stay apart: each is a
    message of its own, in order (as if the client had sent one message per part).
    """
    raw_messages = require_list(body, "messages", "openai_chat.decode_request")
    messages: list[NeutralMessage] = []
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, Mapping):
            raise CodecError(
                f"openai_chat.decode_request: messages[{index}] is a {type(raw).__name__}, "
                "expected a JSON object with a 'role'."
            )
        role = raw.get("role")
        if role == "developer":
            role = "system"
        parts = _separate_texts(raw.get("content")) if role in ("user", "system") else []
        if len(parts) > 1:
            messages.extend({"role": role, "content": text} for text in parts)
            continue
        message: NeutralMessage = {"role": role, "content": _content_text(raw.get("content"))}
        if role == "assistant" and raw.get("tool_calls"):
            message["tool_calls"] = [_request_call(call) for call in each(raw["tool_calls"])]
        if role == "tool":
            message["tool_call_id"] = raw.get("tool_call_id")
        messages.append(message)
    tools: list[NeutralTool] = [
        {
            "name": fields(t.get("function", {})).get("name"),
            "description": fields(t.get("function", {})).get("description", ""),
            "parameters": fields(t.get("function", {})).get("parameters", {}),
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


def _request_call(call: object) -> NeutralCall:
    """A tool call of an assistant message in a request."""
    function = fields(fields(call).get("function", {}))
    return {
        "id": fields(call).get("id", ""),
        "name": function.get("name", ""),
        "arguments": parse_arguments(function.get("arguments")),
    }


def _decode_tool_call(call: object, where: str) -> ToolCall:
    function = require_object(call, "function", where)
    return ToolCall.model_validate(
        {
            "id": fields(call).get("id") or "",
            "name": function.get("name") or "",
            "arguments": parse_arguments(function.get("arguments")),
        }
    )


def _decode_usage(usage_data: object, service_tier: object = None) -> Usage | None:
    """The ``usage`` of a response or chunk. ``prompt_tokens`` counts the tokens read from
    the cache (``prompt_tokens_details.cached_tokens``) and written to it
    (``prompt_tokens_details.cache_write_tokens``) too, ``completion_tokens`` the reasoning ones
    (``completion_tokens_details.reasoning_tokens``); ``service_tier`` is the body's."""
    if not isinstance(usage_data, Mapping):
        return None
    return Usage(
        input_tokens=token_count(usage_data.get("prompt_tokens")),
        output_tokens=token_count(usage_data.get("completion_tokens")),
        cache_read_tokens=nested_count(usage_data, "prompt_tokens_details", "cached_tokens"),
        cache_write_tokens=nested_count(usage_data, "prompt_tokens_details", "cache_write_tokens"),
        reasoning_tokens=nested_count(usage_data, "completion_tokens_details", "reasoning_tokens"),
        service_tier=tier_or_none(service_tier),
    )


def _usage_json(usage: Usage) -> dict[str, object]:
    """The ``usage`` object of a response or last chunk; the details only when they count
    something."""
    data: dict[str, object] = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }
    cached = {
        "cached_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }
    if usage.cache_read_tokens or usage.cache_write_tokens:
        data["prompt_tokens_details"] = {key: value for key, value in cached.items() if value}
    if usage.reasoning_tokens:
        data["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return data


def decode_response(body: Mapping[str, object]) -> Completion:
    """A chat completions response body as a :class:`Completion`.

    The tools a provider ran itself and lists in the message's ``executed_tools`` (Groq's
    compound models: web search, code execution) are its server tools.
    """
    choices = require_list(body, "choices", "openai_chat.decode_response")
    if not choices:
        raise CodecError(
            "openai_chat.decode_response: 'choices' is empty; the response holds no reply."
        )
    choice = choices[0]
    if isinstance(choice, Mapping) and choice.get("finish_reason") == "content_filter":
        # A choice that ended before any message: Azure OpenAI's content filter stops it
        # with finish_reason "content_filter" and no message at all.
        message = fields(choice.get("message") or {})
    else:
        message = require_object(choice, "message", "openai_chat.decode_response choices[0]")
    calls = tuple(
        _decode_tool_call(call, f"openai_chat.decode_response choices[0].message.tool_calls[{i}]")
        for i, call in enumerate(each(message.get("tool_calls")))
    )
    return Completion(
        content=_content_text(message.get("content")),
        tool_calls=calls,
        model=text_or_none(body.get("model")),
        usage=_decode_usage(body.get("usage"), body.get("service_tier")),
        stop_reason=text_or_none(fields(choice).get("finish_reason")),
        response_id=text_or_none(body.get("id")),
        server_tools=tuple(
            {"name": tool.get("type"), "input": parse_arguments(tool.get("arguments"))}
            for tool in each(message.get("executed_tools"))
            if isinstance(tool, Mapping)
        ),
    )


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, object]:
    """A chat completions response body for ``completion`` (what the fake model serves)."""
    message: dict[str, object] = {
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
        "usage": _usage_json(usage),
        **_tier_json(usage),
    }


def _tier_json(usage: Usage) -> dict[str, object]:
    """The body's ``service_tier`` when the usage names one."""
    return {"service_tier": usage.service_tier} if usage.service_tier else {}


# -- streaming (``stream: true``) ------------------------------------------------------


def _json(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def encode_stream(
    completion: Completion, *, response_id: str, created: int = 0, include_usage: bool = False
) -> list[SSEEvent]:
    """The events OpenAI streams for ``completion`` (a request with ``stream: true``).

    In order, as the API sends them: a chunk with ``role`` (carrying the first tool call's
    ``id`` and ``name`` when there is no text), the text in token-like pieces, for each tool
    call a chunk with its ``index``, ``id`` and ``name`` and then its arguments in pieces, a
    chunk with ``finish_reason`` and an empty delta, with ``include_usage`` (the request's
    ``stream_options.include_usage``) a last chunk with no choices and the usage, and
    ``data: [DONE]``. With ``include_usage`` every chunk has ``"usage": null``, as OpenAI
    sends it.
    """
    model = completion.model or "unknown"
    calls = completion.tool_calls

    def chunk(delta: dict[str, object], finish_reason: str | None = None) -> SSEEvent:
        data: dict[str, object] = {
            "id": response_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:
            data["usage"] = None
        return SSEEvent(None, _json(data))

    def announce(index: int, call: ToolCall) -> dict[str, object]:
        return {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }

    first: dict[str, object] = {
        "role": "assistant",
        "content": None if completion.content is None else "",
    }
    announced = completion.content is None and bool(calls)
    if announced:
        first["tool_calls"] = [announce(0, calls[0])]
    first["refusal"] = None
    events = [chunk(first)]
    events.extend(chunk({"content": piece}) for piece in split_text(completion.content or ""))
    for index, call in enumerate(calls):
        if not (announced and index == 0):
            events.append(chunk({"tool_calls": [announce(index, call)]}))
        events.extend(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in split_text(call.arguments_json)
        )
    finish_reason = completion.stop_reason or ("tool_calls" if calls else "stop")
    events.append(chunk({}, finish_reason))
    if include_usage:
        usage = completion.usage or Usage()
        data = {
            "id": response_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": _usage_json(usage),
            **_tier_json(usage),
        }
        events.append(SSEEvent(None, _json(data)))
    events.append(SSEEvent(None, DONE))
    return events


class _StreamedCalls:
    """The tool calls of a stream, joined from their deltas.

    OpenAI numbers each call with an ``index``: deltas of one index are one call (its
    ``id`` and ``name`` first, then argument fragments), in index order. Some
    OpenAI-compatible servers (Mistral, some local ones) send no ``index``: there a delta
    with an ``id`` not seen yet starts a new call, and a delta with neither continues the
    last call. A delta whose ``id`` differs from the one its index already has is a new
    call too (servers that number every call 0), so calls never run into each other.
    """

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._by_index: dict[int, _Slot] = {}
        self._by_id: dict[object, _Slot] = {}

    def add(self, delta: Mapping[str, object]) -> None:
        call_id = delta.get("id") or ""
        index = delta.get("index")
        index = index if isinstance(index, int) else None
        slot = self._by_id.get(call_id) if call_id else None
        if slot is None and index is not None:
            slot = self._by_index.get(index)
        elif slot is None and not call_id and self._slots:
            slot = self._slots[-1]
        if slot is None or (call_id and slot.id and slot.id != call_id):
            slot = _Slot()
            self._slots.append(slot)
        if index is not None:
            self._by_index[index] = slot
        if call_id:
            slot.id = call_id
            self._by_id[call_id] = slot
        function = fields(delta.get("function") or {})
        slot.name = concat_text(slot.name, function.get("name") or "")
        slot.args.append(function.get("arguments") or "")

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The calls in the order they started (OpenAI's index order)."""
        return tuple(
            ToolCall.model_validate(
                {
                    "id": slot.id,
                    "name": slot.name,
                    "arguments": parse_arguments(join_texts(slot.args)),
                }
            )
            for slot in self._slots
        )


class _Slot:
    """One streamed tool call being joined: its id, its name, its argument fragments."""

    def __init__(self) -> None:
        self.id: object = ""
        self.name = ""
        self.args: list[object] = []


def decode_stream(events: Iterable[SSEEvent] | bytes | str) -> Completion:
    """A streamed chat completion (its events, or the raw body) as a :class:`Completion`.

    Joins the text and tool-call deltas the way the SDK does (tool calls by ``index``,
    argument fragments concatenated; by ``id`` when a server sends no index, see
    :class:`_StreamedCalls`); usage comes from the chunk that carries it, if the request
    asked for one. Stops at ``data: [DONE]``.
    """
    if isinstance(events, (bytes, str)):
        events = parse_sse(events)
    response_id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: Usage | None = None
    texts: list[str] | None = None
    calls = _StreamedCalls()
    for position, item in enumerate(events):
        if item.data == DONE:
            break
        where = f"openai_chat.decode_stream event #{position}"
        chunk = event_chunk(item.data, where, "chat completions stream")
        response_id = text_or_none(chunk.get("id")) or response_id
        model = text_or_none(chunk.get("model")) or model
        usage = _decode_usage(chunk.get("usage"), chunk.get("service_tier")) or usage
        for choice in require_list(chunk, "choices", where):
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            delta = fields(choice.get("delta") or {})
            content = delta.get("content")
            if isinstance(content, str):
                texts = texts if texts is not None else []
                texts.append(content)
            for call in each(delta.get("tool_calls")):
                if isinstance(call, Mapping):
                    calls.add(call)
            stop_reason = text_or_none(choice.get("finish_reason")) or stop_reason
    return Completion(
        content=None if texts is None else "".join(texts),
        tool_calls=calls.tool_calls(),
        model=model,
        usage=usage,
        stop_reason=stop_reason,
        response_id=response_id,
    )
