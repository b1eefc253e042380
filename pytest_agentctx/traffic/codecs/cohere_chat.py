"""The Cohere v2 chat wire format (``POST /v2/chat``), whole and streamed.

A request has ``model``, ``messages`` (roles ``system``, ``user``, ``assistant``, ``tool``),
``tools`` (``{"type": "function", "function": {name, description, parameters}}``) and
``stream``. An assistant message carries ``tool_calls`` (``id``, ``function.name``,
``function.arguments`` as a JSON string) and the ``tool_plan`` the model wrote before
calling them; a tool message answers ``tool_call_id`` with a string or a list of ``text``
and ``document`` blocks (a document's ``data`` is read as its JSON).

A response has ``id``, ``message`` (``content`` blocks of type ``text`` or ``thinking``,
``tool_plan``, ``tool_calls``, ``citations``), ``finish_reason`` (``COMPLETE``,
``TOOL_CALL``, ``MAX_TOKENS``, ``STOP_SEQUENCE``, ``ERROR``, ``TIMEOUT``) and ``usage``
(``tokens`` and ``billed_units``, each with ``input_tokens`` and ``output_tokens``). It
names no model: the request's model stands for it.

How a reply reads: its text is the ``text`` blocks joined; a reply with no text block
gives its ``tool_plan`` as its text (a reply that calls tools says what it plans there,
and its echo in the next request keeps it), so :func:`encode_response` writes the text of
a reply with tool calls as its ``tool_plan``. ``thinking`` blocks are reasoning items,
kept as Cohere sends them (``{"type": "thinking", "thinking": ...}``). Usage is the
``tokens`` count (what the model read and wrote), else ``billed_units``. Citations are
not read.

A stream is server-sent events named by their ``type``: ``message-start`` (the id),
``content-start`` / ``content-delta`` / ``content-end`` (text and thinking by ``index``),
``tool-plan-delta``, ``tool-call-start`` / ``tool-call-delta`` / ``tool-call-end`` (by
``index``), ``citation-start`` / ``citation-end``, and ``message-end`` with the
``finish_reason`` and the usage; then ``data: [DONE]``.
"""

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
    each,
    fields,
    function_tools,
    function_tools_of,
    join_texts,
    member,
    parse_arguments,
    require_object,
    text_or_none,
    token_count,
)
from pytest_agentctx.traffic.codecs.sse import DONE, SSEEvent, event_chunk, parse_sse, split_text
from pytest_agentctx.traffic.errors import CodecError

name = "cohere_chat"

#: The stop reasons this codec writes when a completion has none.
_TEXT_STOP = "COMPLETE"
_TOOL_STOP = "TOOL_CALL"
#: The reasoning item type of a thinking block.
_THINKING = "thinking"


# -- requests --------------------------------------------------------------------------


def _encode_message(message: Mapping[str, object]) -> dict[str, object]:
    role = message.get("role")
    if role in ("system", "user"):
        return {"role": role, "content": message.get("content") or ""}
    if role == "assistant":
        data: dict[str, object] = {"role": "assistant"}
        calls = list(each(message.get("tool_calls")))
        content = message.get("content")
        thinking = [
            dict(item)
            for item in each(message.get("reasoning"))
            if isinstance(item, Mapping) and item.get("type") == _THINKING
        ]
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
            if content:
                data["tool_plan"] = content
            if thinking:
                data["content"] = thinking
        elif thinking:
            data["content"] = [*thinking, {"type": "text", "text": content or ""}]
        else:
            data["content"] = content or ""
        return data
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.get("tool_call_id"),
            "content": message.get("content") or "",
        }
    raise CodecError(
        f"cohere_chat.encode_request: message role {role!r} is not one of "
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
    """The JSON body of a ``/v2/chat`` request."""
    body: dict[str, object] = {
        "model": model,
        "messages": [_encode_message(m) for m in messages],
    }
    if tools:
        body["tools"] = function_tools(tools)
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if temperature is not None:
        body["temperature"] = temperature
    body["stream"] = False
    return body


def _block_text(block: object) -> str | None:
    """The text of a content block: a ``text`` block's text, a ``document`` block's data
    (a string, or its JSON), ``None`` for other blocks (images, thinking)."""
    if isinstance(block, str):
        return block
    if not isinstance(block, Mapping):
        return None
    if block.get("type") == "text":
        text = block.get("text")
        return text if isinstance(text, str) else ""
    if block.get("type") == "document":
        data = fields(block.get("document") or {}).get("data")
        if isinstance(data, str):
            return data
        return json.dumps(data, ensure_ascii=False)
    return None


def _content_text(content: object) -> str | None:
    """Message content as text: a string, or the text of its blocks joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [text for text in map(_block_text, content) if text is not None]
        return join_texts(texts, "\n") if texts else None
    return str(content)


def _thinking(content: object) -> list[dict[str, object]]:
    """The thinking blocks of a content array, as reasoning items."""
    if not isinstance(content, list):
        return []
    return [
        dict(block)
        for block in content
        if isinstance(block, Mapping) and block.get("type") == _THINKING
    ]


def _reply_text(content: object, tool_plan: object) -> str | None:
    """The text of an assistant message: its ``text`` blocks, else its tool plan."""
    if isinstance(content, list):
        texts = [
            block.get("text")
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        ]
        text: str | None = join_texts(texts) if texts else None
    else:
        text = _content_text(content)
    if text is None and isinstance(tool_plan, str) and tool_plan:
        return tool_plan
    return text


def _request_call(call: object) -> NeutralCall:
    function = fields(fields(call).get("function") or {})
    return {
        "id": fields(call).get("id") or "",
        "name": function.get("name") or "",
        "arguments": parse_arguments(function.get("arguments")),
    }


def decode_request(body: Mapping[str, object]) -> DecodedRequest:
    """A ``/v2/chat`` request body in neutral form."""
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list):
        raise CodecError(
            "cohere_chat.decode_request: the body has no 'messages' list (it has "
            f"{sorted(body)}). Is this a Cohere v2 chat request?"
        )
    messages: list[NeutralMessage] = []
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, Mapping):
            raise CodecError(
                f"cohere_chat.decode_request: messages[{index}] is a {type(raw).__name__}, "
                "expected a JSON object with a 'role'."
            )
        role = raw.get("role")
        content = raw.get("content")
        if role == "assistant":
            message: NeutralMessage = {
                "role": role,
                "content": _reply_text(content, raw.get("tool_plan")),
            }
            if raw.get("tool_calls"):
                message["tool_calls"] = [_request_call(call) for call in each(raw["tool_calls"])]
            thinking = _thinking(content)
            if thinking:
                message["reasoning"] = thinking
        else:
            message = {"role": role, "content": _content_text(content)}
        if role == "tool":
            message["tool_call_id"] = raw.get("tool_call_id")
        messages.append(message)
    tools: list[NeutralTool] = function_tools_of(body.get("tools"))
    return DecodedRequest(
        model=text_or_none(body.get("model")),
        messages=messages,
        tools=tools,
        stream=bool(body.get("stream")),
    )


# -- responses -------------------------------------------------------------------------


def _decode_usage(usage: object) -> Usage | None:
    """The ``tokens`` counts of a usage object, else its ``billed_units``."""
    if not isinstance(usage, Mapping):
        return None
    for key in ("tokens", "billed_units"):
        counts = usage.get(key)
        if isinstance(counts, Mapping) and (
            counts.get("input_tokens") is not None or counts.get("output_tokens") is not None
        ):
            return Usage(
                input_tokens=token_count(counts.get("input_tokens")),
                output_tokens=token_count(counts.get("output_tokens")),
            )
    return None


def _decode_call(call: object, where: str) -> ToolCall:
    function = require_object(call, "function", where)
    return ToolCall.model_validate(
        {
            "id": fields(call).get("id") or "",
            "name": function.get("name") or "",
            "arguments": parse_arguments(function.get("arguments")),
        }
    )


def decode_response(body: Mapping[str, object]) -> Completion:
    """A ``/v2/chat`` response body as a :class:`Completion`."""
    message = require_object(body, "message", "cohere_chat.decode_response")
    calls = tuple(
        _decode_call(call, f"cohere_chat.decode_response message.tool_calls[{i}]")
        for i, call in enumerate(each(message.get("tool_calls")))
    )
    return Completion(
        content=_reply_text(message.get("content"), message.get("tool_plan")),
        tool_calls=calls,
        model=text_or_none(body.get("model")),
        usage=_decode_usage(body.get("usage")),
        stop_reason=text_or_none(body.get("finish_reason")),
        response_id=text_or_none(body.get("id")),
        reasoning=tuple(_thinking(message.get("content"))),
    )


def _usage_json(usage: Usage) -> dict[str, object]:
    counts = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    return {"billed_units": dict(counts), "tokens": dict(counts)}


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, object]:
    """A ``/v2/chat`` response body for ``completion``.

    ``created`` is not part of this wire format (the argument is the protocol's)."""
    message: dict[str, object] = {"role": "assistant"}
    content: list[dict[str, object]] = [
        dict(item) for item in completion.reasoning if item.get("type") == _THINKING
    ]
    if completion.tool_calls:
        if completion.content:
            message["tool_plan"] = completion.content
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in completion.tool_calls
        ]
    elif completion.content is not None:
        content.append({"type": "text", "text": completion.content})
    if content:
        message["content"] = content
    body: dict[str, object] = {"id": response_id, "message": message}
    body["finish_reason"] = completion.stop_reason or (
        _TOOL_STOP if completion.tool_calls else _TEXT_STOP
    )
    body["usage"] = _usage_json(completion.usage or Usage())
    return body


# -- streaming (``stream: true``) ------------------------------------------------------


def _json(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _event(data: dict[str, object]) -> SSEEvent:
    return SSEEvent(str(data["type"]), _json(data))


def encode_stream(completion: Completion, *, response_id: str, created: int = 0) -> list[SSEEvent]:
    """The events Cohere streams for ``completion`` (a request with ``stream: true``).

    In order: ``message-start``, each thinking block and then the text as ``content-*``
    events (a reply with tool calls sends its text as ``tool-plan-delta`` events
    instead), each tool call as ``tool-call-start`` (id, name), ``tool-call-delta``
    (argument pieces) and ``tool-call-end``, ``message-end`` with the finish reason and
    usage, and ``data: [DONE]``.
    """
    events = [
        _event(
            {
                "id": response_id,
                "type": "message-start",
                "delta": {
                    "message": {
                        "role": "assistant",
                        "content": [],
                        "tool_plan": "",
                        "tool_calls": [],
                        "citations": [],
                    }
                },
            }
        )
    ]
    blocks: list[tuple[str, str]] = [
        (_THINKING, str(item.get("thinking") or ""))
        for item in completion.reasoning
        if item.get("type") == _THINKING
    ]
    if not completion.tool_calls and completion.content is not None:
        blocks.append(("text", completion.content))
    for index, (kind, text) in enumerate(blocks):
        start = {"type": kind, kind: ""}
        events.append(
            _event(
                {"type": "content-start", "index": index, "delta": {"message": {"content": start}}}
            )
        )
        events.extend(
            _event(
                {
                    "type": "content-delta",
                    "index": index,
                    "delta": {"message": {"content": {kind: piece}}},
                }
            )
            for piece in split_text(text)
        )
        events.append(_event({"type": "content-end", "index": index}))
    if completion.tool_calls:
        events.extend(
            _event({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}})
            for piece in split_text(completion.content or "")
        )
    for index, call in enumerate(completion.tool_calls):
        announce = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(
            _event(
                {
                    "type": "tool-call-start",
                    "index": index,
                    "delta": {"message": {"tool_calls": announce}},
                }
            )
        )
        events.extend(
            _event(
                {
                    "type": "tool-call-delta",
                    "index": index,
                    "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}},
                }
            )
            for piece in split_text(call.arguments_json)
        )
        events.append(_event({"type": "tool-call-end", "index": index}))
    finish = completion.stop_reason or (_TOOL_STOP if completion.tool_calls else _TEXT_STOP)
    usage = _usage_json(completion.usage or Usage())
    events.append(
        _event({"type": "message-end", "delta": {"finish_reason": finish, "usage": usage}})
    )
    events.append(SSEEvent(None, DONE))
    return events


class _Reply:
    """A streamed reply being joined: its blocks, tool plan and tool calls by index."""

    def __init__(self) -> None:
        self.response_id: str | None = None
        self.blocks: dict[object, tuple[str, list[object]]] = {}
        self.plan: list[object] = []
        self.calls: dict[object, tuple[object, object, list[object]]] = {}
        self.stop_reason: str | None = None
        self.usage: Usage | None = None

    def add(self, chunk: Mapping[str, object], kind: object, where: str) -> None:
        delta = fields(chunk.get("delta") or {})
        message = fields(delta.get("message") or {})
        index = chunk.get("index", 0)
        if kind == "message-start":
            self.response_id = text_or_none(chunk.get("id")) or self.response_id
        elif kind in ("content-start", "content-delta"):
            content = fields(message.get("content") or {})
            block_kind = str(content.get("type") or "")
            if not block_kind:
                block_kind = _THINKING if _THINKING in content else "text"
            block = self.blocks.setdefault(index, (block_kind, []))
            block[1].append(content.get(block[0]) or "")
        elif kind == "tool-plan-delta":
            self.plan.append(message.get("tool_plan") or "")
        elif kind in ("tool-call-start", "tool-call-delta"):
            call = fields(message.get("tool_calls") or {})
            function = fields(call.get("function") or {})
            call_id, call_name, pieces = self.calls.get(index, ("", "", []))
            self.calls[index] = (
                call.get("id") or call_id,
                function.get("name") or call_name,
                [*pieces, function.get("arguments") or ""],
            )
        elif kind == "message-end":
            error = delta.get("error")
            if error:
                raise CodecError(f"{where}: the stream reports an error: {error!r}.")
            self.stop_reason = text_or_none(delta.get("finish_reason")) or self.stop_reason
            self.usage = _decode_usage(delta.get("usage")) or self.usage

    def completion(self) -> Completion:
        texts = [pieces for kind, pieces in self.blocks.values() if kind == "text"]
        content: str | None = join_texts(p for pieces in texts for p in pieces) if texts else None
        if content is None and self.plan:
            content = join_texts(self.plan) or None
        return Completion(
            content=content,
            tool_calls=tuple(
                ToolCall.model_validate(
                    {
                        "id": call_id,
                        "name": call_name,
                        "arguments": parse_arguments(join_texts(pieces)),
                    }
                )
                for call_id, call_name, pieces in self.calls.values()
            ),
            usage=self.usage,
            stop_reason=self.stop_reason,
            response_id=self.response_id,
            reasoning=tuple(
                {"type": _THINKING, _THINKING: join_texts(pieces)}
                for kind, pieces in self.blocks.values()
                if kind == _THINKING
            ),
        )


def decode_stream(events: Iterable[SSEEvent] | bytes | str) -> Completion:
    """A streamed ``/v2/chat`` reply (its events, or the raw body) as a :class:`Completion`.

    Joins the text, tool plan and tool-call deltas by ``index``; the finish reason and
    usage come from ``message-end``. Stops at ``data: [DONE]``; an event's kind is its
    ``type`` (or its ``event:`` name). A ``message-end`` that reports an error raises
    :class:`CodecError`.
    """
    if isinstance(events, (bytes, str)):
        events = parse_sse(events)
    reply = _Reply()
    for position, item in enumerate(events):
        if item.data == DONE:
            break
        where = f"cohere_chat.decode_stream event #{position}"
        chunk = event_chunk(item.data, where, "Cohere v2 chat stream")
        reply.add(chunk, chunk.get("type") or item.event, where)
    return reply.completion()
