"""Ollama's native chat wire format (``POST /api/chat``), whole and streamed.

A request has ``model`` (required: a body without one is no Ollama request; many web
apps have an ``/api/chat`` of their own), ``messages`` (roles ``system``, ``user``,
``assistant``, ``tool``; ``images`` are not read), ``tools`` (``{"type": "function",
"function": {...}}``), ``options`` (``temperature``, ``num_predict``...) and ``stream``,
which is **true when absent**: a request streams unless it says ``"stream": false``.

A reply is ``{"model", "created_at", "message": {"role", "content", "thinking",
"tool_calls"}, "done", "done_reason", "prompt_eval_count", "eval_count", ...}``: the
usage is ``prompt_eval_count`` (input) and ``eval_count`` (output), the stop reason is
``done_reason`` (``stop``, also after tool calls, or ``length``). A reply has no id. A
stream is NDJSON (``application/x-ndjson``): one such object per line, each with a piece
of the message, the last with ``"done": true``, the stop reason and the counts.
:func:`encode_stream` gives the objects, :func:`format_ndjson` their wire bytes.

Tool calls: ``{"function": {"name", "arguments"}}`` with the arguments as a JSON object
and no id from Ollama, while some clients add one of their own to the echo of the call
(``"id"``) and to its result (``"tool_call_id"``). Every call gets a deterministic id
(:func:`synthetic_call_id`: from its position in the reply, its name and its arguments),
the same when read from a reply and from the next request's echo of it, whatever id the
echo carries; a tool message answers the call whose echo carries its ``tool_call_id``,
else the first call not answered yet in the assistant message before it with its
``tool_name`` (or the first such call when it names none). Synthetic ids are never sent
on the wire. ``thinking`` is a reasoning item ``{"type": "thinking", "thinking": ...}``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.codecs.base import (
    Completion,
    DecodedRequest,
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
from pytest_agentctx.traffic.codecs.sse import SSEEvent, split_text
from pytest_agentctx.traffic.errors import CodecError

name = "ollama_chat"

#: The start of the ids this codec makes up for tool calls that have none.
SYNTHETIC_ID_PREFIX = "ollama-call-"
#: The reasoning item type of a message's thinking.
_THINKING = "thinking"
#: The stop reason this codec writes when a completion has none (Ollama's, with or
#: without tool calls).
_STOP = "stop"


def synthetic_call_id(name: str, arguments: Mapping[str, object], index: int) -> str:
    """The id given to the ``index``-th tool call of a reply when it has none.

    Deterministic, so a call read from a reply and from the next request's echo of it
    get the same id.
    """
    key = json.dumps([index, name, arguments], sort_keys=True, ensure_ascii=False, default=str)
    return SYNTHETIC_ID_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:16]


def _is_synthetic(call_id: object) -> bool:
    return not call_id or (isinstance(call_id, str) and call_id.startswith(SYNTHETIC_ID_PREFIX))


def _calls(raw_calls: object, where: str) -> list[tuple[object, ToolCall]]:
    """The tool calls of a message, each with its deterministic id, beside the id the wire
    gave it (``None`` for none)."""
    calls: list[tuple[object, ToolCall]] = []
    for index, call in enumerate(each(raw_calls)):
        function = require_object(call, "function", f"{where}[{index}]")
        arguments = parse_arguments(function.get("arguments"))
        tool = str(function.get("name") or "")
        call_id = synthetic_call_id(tool, arguments, index)
        calls.append(
            (
                fields(call).get("id"),
                ToolCall.model_validate({"id": call_id, "name": tool, "arguments": arguments}),
            )
        )
    return calls


# -- requests --------------------------------------------------------------------------


def _encode_message(message: Mapping[str, object]) -> dict[str, object]:
    role = message.get("role")
    if role in ("system", "user"):
        return {"role": role, "content": message.get("content") or ""}
    if role == "assistant":
        data: dict[str, object] = {"role": "assistant", "content": message.get("content") or ""}
        for item in each(message.get("reasoning")):
            if isinstance(item, Mapping) and item.get("type") == _THINKING:
                data["thinking"] = item.get(_THINKING)
        calls = list(each(message.get("tool_calls")))
        if calls:
            encoded: list[dict[str, object]] = []
            for call in calls:
                entry: dict[str, object] = {
                    "function": {
                        "name": member(call, "name"),
                        "arguments": fields(call).get("arguments") or {},
                    }
                }
                if not _is_synthetic(fields(call).get("id")):
                    entry["id"] = member(call, "id")
                encoded.append(entry)
            data["tool_calls"] = encoded
        return data
    if role == "tool":
        data = {"role": "tool", "content": message.get("content") or ""}
        if message.get("name"):
            data["tool_name"] = message.get("name")
        if not _is_synthetic(message.get("tool_call_id")):
            data["tool_call_id"] = message.get("tool_call_id")
        return data
    raise CodecError(
        f"ollama_chat.encode_request: message role {role!r} is not one of "
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
    """The JSON body of an ``/api/chat`` request (``"stream": false``: Ollama streams
    when the body does not say)."""
    body: dict[str, object] = {
        "model": model,
        "messages": [_encode_message(m) for m in messages],
        "stream": False,
    }
    if tools:
        body["tools"] = function_tools(tools)
    options: dict[str, object] = {}
    if max_tokens is not None:
        options["num_predict"] = max_tokens
    if temperature is not None:
        options["temperature"] = temperature
    if options:
        body["options"] = options
    return body


def _answer(
    message: Mapping[str, object], unanswered: list[ToolCall], given_ids: Mapping[object, str]
) -> object:
    """The id of the call a tool message answers: the call whose echo carries its
    ``tool_call_id``, else the first unanswered call of its ``tool_name`` (or the first
    unanswered call); taken from ``unanswered``."""
    given = message.get("tool_call_id")
    if given and given in given_ids:
        found = given_ids[given]
        unanswered[:] = [call for call in unanswered if call.id != found]
        return found
    tool = message.get("tool_name") or message.get("name")
    for position, call in enumerate(unanswered):
        if not tool or call.name == tool:
            del unanswered[position]
            return call.id
    return given


def decode_request(body: Mapping[str, object]) -> DecodedRequest:
    """An ``/api/chat`` request body in neutral form; ``stream`` is true unless the body
    says ``"stream": false``."""
    model = body.get("model")
    raw_messages = body.get("messages")
    if not isinstance(model, str) or not isinstance(raw_messages, list):
        raise CodecError(
            "ollama_chat.decode_request: expected a 'model' string and a 'messages' list, "
            f"the body has {sorted(body)}. Is this a request to Ollama's /api/chat?"
        )
    messages: list[NeutralMessage] = []
    unanswered: list[ToolCall] = []
    given_ids: dict[object, str] = {}
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, Mapping):
            raise CodecError(
                f"ollama_chat.decode_request: messages[{index}] is a {type(raw).__name__}, "
                "expected a JSON object with a 'role'."
            )
        role = raw.get("role")
        content = raw.get("content")
        message: NeutralMessage = {"role": role, "content": content}
        if role == "assistant":
            message["content"] = content or None
            pairs = _calls(raw.get("tool_calls"), f"ollama_chat messages[{index}].tool_calls")
            calls = [call for _, call in pairs]
            if calls:
                message["tool_calls"] = [
                    {"id": call.id, "name": call.name, "arguments": call.arguments}
                    for call in calls
                ]
            given_ids.update((given, call.id) for given, call in pairs if given)
            unanswered = calls
            if raw.get("thinking"):
                message["reasoning"] = [{"type": _THINKING, _THINKING: raw["thinking"]}]
        elif role == "tool":
            message["tool_call_id"] = _answer(raw, unanswered, given_ids)
            if raw.get("tool_name"):
                message["name"] = raw["tool_name"]
        messages.append(message)
    tools: list[NeutralTool] = function_tools_of(body.get("tools"))
    return DecodedRequest(
        model=model, messages=messages, tools=tools, stream=body.get("stream", True) is not False
    )


# -- responses -------------------------------------------------------------------------


def _decode_usage(body: Mapping[str, object]) -> Usage | None:
    if body.get("prompt_eval_count") is None and body.get("eval_count") is None:
        return None
    return Usage(
        input_tokens=token_count(body.get("prompt_eval_count")),
        output_tokens=token_count(body.get("eval_count")),
    )


def decode_response(body: Mapping[str, object]) -> Completion:
    """An ``/api/chat`` reply (``"stream": false``, or the one line of a stream that is
    all in its last object) as a :class:`Completion`."""
    if body.get("error"):
        raise CodecError(f"ollama_chat.decode_response: the reply is an error: {body['error']!r}.")
    message = require_object(body, "message", "ollama_chat.decode_response")
    thinking = message.get("thinking")
    return Completion(
        content=text_or_none(message.get("content")) or None,
        tool_calls=tuple(
            call for _, call in _calls(message.get("tool_calls"), "ollama_chat message.tool_calls")
        ),
        model=text_or_none(body.get("model")),
        usage=_decode_usage(body),
        stop_reason=text_or_none(body.get("done_reason")),
        reasoning=({"type": _THINKING, _THINKING: thinking},) if thinking else (),
    )


def _timestamp(created: int) -> str:
    return datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _thinking_of(completion: Completion) -> str:
    return "".join(
        str(item.get(_THINKING) or "")
        for item in completion.reasoning
        if item.get("type") == _THINKING
    )


def _message(completion: Completion) -> dict[str, object]:
    message: dict[str, object] = {"role": "assistant", "content": completion.content or ""}
    thinking = _thinking_of(completion)
    if thinking:
        message[_THINKING] = thinking
    if completion.tool_calls:
        message["tool_calls"] = [
            {"function": {"name": call.name, "arguments": call.arguments}}
            if _is_synthetic(call.id)
            else {"id": call.id, "function": {"name": call.name, "arguments": call.arguments}}
            for call in completion.tool_calls
        ]
    return message


def _done(completion: Completion) -> dict[str, object]:
    usage = completion.usage or Usage()
    return {
        "done": True,
        "done_reason": completion.stop_reason or _STOP,
        "total_duration": 0,
        "load_duration": 0,
        "prompt_eval_count": usage.input_tokens,
        "prompt_eval_duration": 0,
        "eval_count": usage.output_tokens,
        "eval_duration": 0,
    }


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, object]:
    """An ``/api/chat`` reply for ``completion`` (``"stream": false``). Ollama's replies
    have no id: ``response_id`` is not written."""
    return {
        "model": completion.model or "unknown",
        "created_at": _timestamp(created),
        "message": _message(completion),
        **_done(completion),
    }


# -- streaming (the default) -----------------------------------------------------------


def encode_stream(
    completion: Completion, *, response_id: str, created: int = 0
) -> list[dict[str, object]]:
    """The NDJSON objects Ollama streams for ``completion``, in order: the thinking and
    then the text in token-like pieces, the tool calls in one object, and a last object
    with an empty message, ``"done": true``, the stop reason and the counts.
    :func:`format_ndjson` writes them as the wire does."""
    model = completion.model or "unknown"
    at = _timestamp(created)

    def chunk(message: dict[str, object]) -> dict[str, object]:
        return {
            "model": model,
            "created_at": at,
            "message": {"role": "assistant", **message},
            "done": False,
        }

    chunks = [
        chunk({"content": "", _THINKING: piece}) for piece in split_text(_thinking_of(completion))
    ]
    chunks.extend(chunk({"content": piece}) for piece in split_text(completion.content or ""))
    if completion.tool_calls:
        calls = _message(completion)["tool_calls"]
        chunks.append(chunk({"content": "", "tool_calls": calls}))
    last = chunk({"content": ""})
    last.update(_done(completion))
    chunks.append(last)
    return chunks


def format_ndjson(chunks: Iterable[Mapping[str, object]]) -> bytes:
    """The wire bytes of a stream's objects: one compact JSON object per line."""
    return b"".join(
        json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        for chunk in chunks
    )


def _chunks(stream: Iterable[Mapping[str, object] | SSEEvent] | bytes | str) -> Iterable[object]:
    """The objects of a stream: parsed from NDJSON text, or given (an event's data)."""
    if isinstance(stream, bytes):
        try:
            stream = stream.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(
                f"ollama_chat.decode_stream: the body is not UTF-8 ({exc}); an NDJSON stream "
                "is UTF-8 text. Was it compressed? Decode its content-encoding first."
            ) from None
    if isinstance(stream, str):
        # NDJSON lines end with \n only: a U+2028 or U+0085 in a string stays in its line
        lines = [line for line in stream.split("\n") if line.strip()]
        parsed: list[object] = []
        for number, line in enumerate(lines):
            try:
                parsed.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise CodecError(
                    f"ollama_chat.decode_stream line #{number}: not JSON ({exc}): "
                    f"{line[:80]!r}. Is this an Ollama NDJSON stream?"
                ) from None
        return parsed
    return (item.json() if isinstance(item, SSEEvent) else item for item in stream)


def decode_stream(stream: Iterable[Mapping[str, object] | SSEEvent] | bytes | str) -> Completion:
    """A streamed ``/api/chat`` reply (the NDJSON body, or its objects) as a
    :class:`Completion`: the pieces of text and thinking joined, the tool calls of every
    object in order, the stop reason and counts from the object with ``"done": true``.
    An object with an ``error`` raises :class:`CodecError`."""
    texts: list[object] = []
    thinking: list[object] = []
    raw_calls: list[object] = []
    model: str | None = None
    last: Mapping[str, object] = {}
    for position, chunk in enumerate(_chunks(stream)):
        where = f"ollama_chat.decode_stream object #{position}"
        if not isinstance(chunk, Mapping):
            raise CodecError(f"{where}: expected a JSON object, got {type(chunk).__name__}.")
        if chunk.get("error"):
            raise CodecError(f"{where}: the stream reports an error: {chunk['error']!r}.")
        message = fields(chunk.get("message") or {})
        texts.append(message.get("content") or "")
        thinking.append(message.get(_THINKING) or "")
        raw_calls.extend(each(message.get("tool_calls")))
        model = text_or_none(chunk.get("model")) or model
        if chunk.get("done"):
            last = chunk
    joined_thinking = join_texts(thinking)
    return Completion(
        content=join_texts(texts) or None,
        tool_calls=tuple(call for _, call in _calls(raw_calls, "ollama_chat.decode_stream calls")),
        model=model,
        usage=_decode_usage(last),
        stop_reason=text_or_none(last.get("done_reason")),
        reasoning=({"type": _THINKING, _THINKING: joined_thinking},) if joined_thinking else (),
    )
