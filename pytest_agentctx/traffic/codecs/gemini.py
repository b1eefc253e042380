"""The Google Gemini wire format (``generateContent`` and ``streamGenerateContent``).

The model is named by the URL, not the body: ``POST /v1beta/models/{model}:generateContent``
(the Gemini API, also under ``/v1``), the same with ``:streamGenerateContent?alt=sse`` for a
stream, and on Vertex AI
``/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:generateContent``.
:func:`model_of_path`, :func:`is_stream_path` and :func:`request_for_path` read what the URL
says; :func:`encode_request` adds a ``model`` key to the body for the runtime's provider,
which sends it in the URL instead.

A request has ``contents`` (turns of role ``user`` or ``model``, each a list of ``parts``:
``text``, ``functionCall``, ``functionResponse``), an optional ``systemInstruction``,
``tools`` (``functionDeclarations``) and ``generationConfig``. The API accepts the
snake_case spelling of every field too (``function_call``, ``system_instruction``...),
which some clients send: the decoders read both.

Tool call ids: the Gemini API usually sends function calls without an ``id`` and joins a
``functionResponse`` to its call by name and position. A call without an id gets a
deterministic one (:func:`synthetic_call_id`: from its position in the turn, its name and
its arguments), the same whether it is read from the response or from the next request's
echo of it; a ``functionResponse`` without an id takes the id of the first unanswered call
of the same name in the model turn before it. Synthetic ids are never sent on the wire.

Thinking: a part with ``"thought": true`` is a thought summary, and a ``thoughtSignature``
on a text or ``functionCall`` part must be sent back with it on the next call (Gemini 3
requires it for function calling). Both are kept as reasoning items of the assistant
message (see ``Message.reasoning``): ``{"type": "gemini_thought", "text": ...,
"thoughtSignature": ...}`` and ``{"type": "gemini_signature", "part": "text" |
"functionCall", "index": k, "thoughtSignature": ...}`` (``index``: the k-th function call
of the turn), which :func:`encode_request` puts back in place.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.exceptions import CodecError
from pytest_agentctx.traffic.codecs.base import (
    Completion,
    DecodedRequest,
    Usage,
    parse_arguments,
    require,
)
from pytest_agentctx.traffic.codecs.sse import SSEEvent, event_chunk, parse_sse, split_text

__all__ = [
    "SYNTHETIC_ID_PREFIX",
    "decode_request",
    "decode_response",
    "decode_stream",
    "encode_request",
    "encode_response",
    "encode_stream",
    "is_stream_path",
    "model_of_path",
    "name",
    "request_for_path",
    "synthetic_call_id",
]

name = "gemini"

#: The start of the ids this codec makes up for function calls that have none.
SYNTHETIC_ID_PREFIX = "gemini-call-"

_THOUGHT = "gemini_thought"
_SIGNATURE = "gemini_signature"

_MODEL_IN_PATH = re.compile(r"/(?:models|tunedModels)/([^/:]+):[A-Za-z]+$")
_CAMEL_HUMP = re.compile(r"(?<!^)([A-Z])")


# -- paths -----------------------------------------------------------------------------


def _trim(path: str) -> str:
    return path.partition("?")[0].rstrip("/")


def is_stream_path(path: str) -> bool:
    """Whether ``path`` is a streaming call (``...:streamGenerateContent``)."""
    return _trim(path).endswith(":streamGenerateContent")


def model_of_path(path: str) -> str | None:
    """The model a ``generateContent`` URL path names (``gemini-2.5-flash``), if any."""
    found = _MODEL_IN_PATH.search(_trim(path))
    return found.group(1) if found else None


def request_for_path(path: str, request: DecodedRequest) -> DecodedRequest:
    """``request`` completed with what its URL says: the model, and whether it streams."""
    return replace(
        request,
        model=request.model or model_of_path(path),
        stream=request.stream or is_stream_path(path),
    )


# -- helpers ---------------------------------------------------------------------------


def _get(data: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """``data[key]`` under its camelCase name, or its snake_case one."""
    if key in data:
        return data[key]
    return data.get(_CAMEL_HUMP.sub(r"_\1", key).lower(), default)


def synthetic_call_id(name: str, arguments: Mapping[str, Any], index: int) -> str:
    """The id given to the ``index``-th function call of a turn when it has none.

    Deterministic, so a call read from a response and from the next request's echo of it
    get the same id.
    """
    key = json.dumps([index, name, arguments], sort_keys=True, ensure_ascii=False, default=str)
    return SYNTHETIC_ID_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:16]


def _is_synthetic(call_id: Any) -> bool:
    return not call_id or (isinstance(call_id, str) and call_id.startswith(SYNTHETIC_ID_PREFIX))


def _parts(turn: Any, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(turn, Mapping):
        raise CodecError(
            f"{where}: expected a JSON object with 'parts', got {type(turn).__name__}."
        )
    parts = _get(turn, "parts") or []
    if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
        raise CodecError(f"{where}: 'parts' is not a list of JSON objects: {parts!r:.80}.")
    return parts


def _text_of(turn: Any, where: str) -> str:
    """The text of a ``systemInstruction`` (a string, a part, or a content with parts)."""
    if isinstance(turn, str):
        return turn
    if isinstance(turn, Mapping) and "text" in turn:
        return str(turn["text"])
    return "".join(str(part.get("text", "")) for part in _parts(turn, where))


# -- requests --------------------------------------------------------------------------


def _append(turns: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    """Add parts, merging into the previous turn of the same role (function responses of
    parallel calls go back in one turn)."""
    if turns and turns[-1]["role"] == role:
        turns[-1]["parts"].extend(parts)
    elif parts:
        turns.append({"role": role, "parts": parts})


def _model_parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The parts of an assistant message: thoughts, text, function calls, and the thought
    signatures put back on the parts that carried them."""
    reasoning = [item for item in message.get("reasoning") or [] if isinstance(item, Mapping)]
    signatures = {
        (item.get("part"), item.get("index", 0)): item.get("thoughtSignature")
        for item in reasoning
        if item.get("type") == _SIGNATURE
    }
    parts: list[dict[str, Any]] = []
    for item in reasoning:
        if item.get("type") == _THOUGHT:
            thought: dict[str, Any] = {"text": item.get("text", ""), "thought": True}
            if item.get("thoughtSignature"):
                thought["thoughtSignature"] = item["thoughtSignature"]
            parts.append(thought)
    content = message.get("content")
    if content:
        text: dict[str, Any] = {"text": content}
        if signatures.get(("text", 0)):
            text["thoughtSignature"] = signatures[("text", 0)]
        parts.append(text)
    for index, call in enumerate(message.get("tool_calls") or []):
        function_call: dict[str, Any] = {
            "name": call["name"],
            "args": call.get("arguments") or {},
        }
        if not _is_synthetic(call.get("id")):
            function_call["id"] = call["id"]
        part: dict[str, Any] = {"functionCall": function_call}
        if signatures.get(("functionCall", index)):
            part["thoughtSignature"] = signatures[("functionCall", index)]
        parts.append(part)
    return parts


def _response_part(message: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    call_id = message.get("tool_call_id")
    tool = message.get("name") or names.get(call_id or "")
    if not tool:
        raise CodecError(
            f"gemini.encode_request: the tool message answering call {call_id!r} has no "
            "name, and no earlier assistant message has a call with that id. Gemini "
            "joins a function response to its call by name: give the tool message its "
            "name."
        )
    key = "error" if message.get("is_error") else "result"
    function_response: dict[str, Any] = {
        "name": tool,
        "response": {key: message.get("content") or ""},
    }
    if not _is_synthetic(call_id):
        function_response["id"] = call_id
    return {"functionResponse": function_response}


def encode_request(
    *,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> dict[str, Any]:
    """The JSON body of a ``generateContent`` request, with a ``model`` key for the provider
    (which sends the model in the URL and the rest as the body).

    System messages become ``systemInstruction``; assistant messages ``model`` turns (text
    and ``functionCall`` parts); tool results ``functionResponse`` parts of a ``user`` turn
    (``{"result": content}``, or ``{"error": content}`` for an error); consecutive turns of
    one role are merged. Tools are declared with their JSON Schema
    (``parametersJsonSchema``).
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "system":
            system.append(message.get("content") or "")
        elif role == "user":
            _append(turns, "user", [{"text": message.get("content") or ""}])
        elif role == "assistant":
            for call in message.get("tool_calls") or []:
                names[call.get("id") or ""] = call["name"]
            _append(turns, "model", _model_parts(message))
        elif role == "tool":
            _append(turns, "user", [_response_part(message, names)])
        else:
            raise CodecError(
                f"gemini.encode_request: message role {role!r} is not one of system, user, "
                "assistant, tool."
            )
    body: dict[str, Any] = {"model": model, "contents": turns}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": spec.name,
                        "description": spec.description,
                        "parametersJsonSchema": spec.parameters,
                    }
                    for spec in tools
                ]
            }
        ]
    config: dict[str, Any] = {}
    if temperature is not None:
        config["temperature"] = temperature
    if max_tokens is not None:
        config["maxOutputTokens"] = max_tokens
    if config:
        body["generationConfig"] = config
    return body


def _response_content(response: Any) -> tuple[str, bool]:
    """A function response's payload as the text of a ``tool`` message, and whether it
    reports an error: the value of its one ``result``/``output``/``error`` key when that
    is a string, else the JSON."""
    if isinstance(response, Mapping) and len(response) == 1:
        (key, value), *_ = response.items()
        if isinstance(value, str) and key in ("result", "output", "return_value", "content"):
            return value, False
        if key == "error":
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), True
    if isinstance(response, str):
        return response, False
    return json.dumps(response, ensure_ascii=False, sort_keys=True), False


class _Turns:
    """Reads request turns into neutral messages, joining responses to calls."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        #: The ids of the last model turn's calls not answered yet, by function name.
        self.unanswered: dict[str, list[str]] = {}

    def model_turn(self, parts: list[Mapping[str, Any]], where: str) -> None:
        completion = _completion_of(parts, where)
        message: dict[str, Any] = {"role": "assistant", "content": completion.content}
        if completion.tool_calls:
            message["tool_calls"] = [call.model_dump(mode="json") for call in completion.tool_calls]
        if completion.reasoning:
            message["reasoning"] = [dict(item) for item in completion.reasoning]
        self.messages.append(message)
        self.unanswered = {}
        for call in completion.tool_calls:
            self.unanswered.setdefault(call.name, []).append(call.id)

    def user_turn(self, parts: list[Mapping[str, Any]], where: str) -> None:
        texts: list[str] = []
        for index, part in enumerate(parts):
            response = _get(part, "functionResponse")
            if response is None:
                if "text" in part and not part.get("thought"):
                    texts.append(str(part["text"]))
                continue
            if not isinstance(response, Mapping):
                raise CodecError(f"{where}.parts[{index}]: functionResponse is not an object.")
            self._flush(texts)
            tool = str(response.get("name") or "")
            call_id = response.get("id") or self._answered(tool, index)
            content, is_error = _response_content(response.get("response"))
            message: dict[str, Any] = {
                "role": "tool",
                "content": content,
                "tool_call_id": call_id,
                "name": tool,
            }
            if is_error:
                message["is_error"] = True
            self.messages.append(message)
        self._flush(texts)

    def _answered(self, tool: str, index: int) -> str:
        waiting = self.unanswered.get(tool)
        if waiting:
            return waiting.pop(0)
        return synthetic_call_id(tool, {}, index)

    def _flush(self, texts: list[str]) -> None:
        if texts:
            self.messages.append({"role": "user", "content": "".join(texts)})
            texts.clear()


def _declarations(tools: Any) -> list[dict[str, Any]]:
    if isinstance(tools, Mapping):
        tools = [tools]
    declared: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping):
            continue
        for declaration in _get(tool, "functionDeclarations") or []:
            if not isinstance(declaration, Mapping):
                continue
            schema = _get(declaration, "parametersJsonSchema")
            if schema is None:
                schema = declaration.get("parameters", {})
            declared.append(
                {
                    "name": declaration.get("name"),
                    "description": declaration.get("description", ""),
                    "parameters": schema,
                }
            )
    return declared


def decode_request(body: Mapping[str, Any]) -> DecodedRequest:
    """A ``generateContent`` body in neutral form (function responses become ``tool``
    messages, joined to their calls).

    The body names no model and does not say whether it streams: the URL does (see
    :func:`request_for_path`). A ``model`` key, as :func:`encode_request` adds, is read.
    """
    where = "gemini.decode_request"
    contents = require(body, "contents", list, where)
    turns = _Turns()
    system = _get(body, "systemInstruction")
    if system:
        turns.messages.append({"role": "system", "content": _text_of(system, where)})
    for index, turn in enumerate(contents):
        at = f"{where}: contents[{index}]"
        parts = _parts(turn, at)
        if turn.get("role") == "model":
            turns.model_turn(parts, at)
        else:
            turns.user_turn(parts, at)
    model = body.get("model")
    if isinstance(model, str):
        model = model.removeprefix("models/")
    return DecodedRequest(
        model=model if isinstance(model, str) else None,
        messages=turns.messages,
        tools=_declarations(body.get("tools")),
        stream=bool(body.get("stream")),
    )


# -- responses -------------------------------------------------------------------------


def _completion_of(parts: Sequence[Mapping[str, Any]], where: str) -> Completion:
    """Text, function calls and reasoning items of a model turn's parts."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for position, part in enumerate(parts):
        signature = _get(part, "thoughtSignature")
        call = _get(part, "functionCall")
        if part.get("thought"):
            thought: dict[str, Any] = {"type": _THOUGHT, "text": part.get("text", "")}
            if signature:
                thought["thoughtSignature"] = signature
            reasoning.append(thought)
        elif call is not None:
            if not isinstance(call, Mapping):
                raise CodecError(f"{where}: parts[{position}].functionCall is not an object.")
            arguments = parse_arguments(call.get("args"))
            index = len(calls)
            tool = str(call.get("name") or "")
            call_id = call.get("id") or synthetic_call_id(tool, arguments, index)
            calls.append(ToolCall(id=call_id, name=tool, arguments=arguments))
            if signature:
                reasoning.append(
                    {
                        "type": _SIGNATURE,
                        "part": "functionCall",
                        "index": index,
                        "thoughtSignature": signature,
                    }
                )
        elif "text" in part:
            texts.append(str(part["text"]))
            if signature:
                reasoning.append(
                    {"type": _SIGNATURE, "part": "text", "index": 0, "thoughtSignature": signature}
                )
    # A stream ends with an empty text part next to its finish reason: no text is None.
    return Completion(
        content="".join(texts) or None,
        tool_calls=tuple(calls),
        reasoning=tuple(reasoning),
    )


def _decode_usage(data: Any) -> Usage | None:
    """Usage of a response: tool-use prompt tokens count as input, thinking tokens as
    output (they are billed as output)."""
    if not isinstance(data, Mapping):
        return None
    return Usage(
        input_tokens=int(_get(data, "promptTokenCount") or 0)
        + int(_get(data, "toolUsePromptTokenCount") or 0),
        output_tokens=int(_get(data, "candidatesTokenCount") or 0)
        + int(_get(data, "thoughtsTokenCount") or 0),
    )


def decode_response(body: Mapping[str, Any]) -> Completion:
    """A ``generateContent`` response body as a :class:`Completion` (its first candidate).

    A response without candidates whose prompt was blocked is an empty reply whose stop
    reason is the block reason (``SAFETY``...).
    """
    where = "gemini.decode_response"
    if not isinstance(body, Mapping):
        raise CodecError(f"{where}: expected a JSON object, got {type(body).__name__}.")
    candidates = body.get("candidates")
    feedback = _get(body, "promptFeedback")
    if not candidates and isinstance(feedback, Mapping) and _get(feedback, "blockReason"):
        stop_reason: str | None = str(_get(feedback, "blockReason"))
        parts: list[Mapping[str, Any]] = []
    else:
        candidates = require(body, "candidates", list, where)
        if not candidates or not isinstance(candidates[0], Mapping):
            raise CodecError(
                f"{where}: 'candidates' holds no candidate object ({candidates!r:.80}). Is "
                "this a complete generateContent response?"
            )
        candidate = candidates[0]
        stop_reason = _get(candidate, "finishReason")
        content = candidate.get("content") or {}
        parts = _parts(content, f"{where}: candidates[0].content")
    completion = _completion_of(parts, where)
    return replace(
        completion,
        model=_get(body, "modelVersion"),
        usage=_decode_usage(_get(body, "usageMetadata")),
        stop_reason=stop_reason,
        response_id=_get(body, "responseId"),
    )


def _reply_parts(completion: Completion) -> list[dict[str, Any]]:
    message: dict[str, Any] = {
        "content": completion.content,
        "tool_calls": [call.model_dump(mode="json") for call in completion.tool_calls],
        "reasoning": [dict(item) for item in completion.reasoning],
    }
    return _model_parts(message)


def _usage_metadata(usage: Usage, *, final: bool = True) -> dict[str, int]:
    if not final:
        return {"promptTokenCount": usage.input_tokens, "totalTokenCount": usage.input_tokens}
    return {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.total_tokens,
    }


def _response(
    parts: list[dict[str, Any]],
    completion: Completion,
    response_id: str,
    *,
    final: bool = True,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if final:
        candidate["finishReason"] = completion.stop_reason or "STOP"
    candidate["index"] = 0
    return {
        "candidates": [candidate],
        "usageMetadata": _usage_metadata(completion.usage or Usage(), final=final),
        "modelVersion": completion.model or "unknown",
        "responseId": response_id,
    }


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, Any]:
    """A ``generateContent`` response body for ``completion`` (what the fake model serves).

    Function calls with a synthetic id are sent without one, as the Gemini API sends them.
    ``created`` is accepted for symmetry with the other codecs; Gemini sends no timestamp.
    """
    return _response(_reply_parts(completion), completion, response_id)


# -- streaming (``:streamGenerateContent?alt=sse``) ------------------------------------


def _event(data: Mapping[str, Any]) -> SSEEvent:
    return SSEEvent(None, json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def encode_stream(completion: Completion, *, response_id: str, created: int = 0) -> list[SSEEvent]:
    """The events Gemini streams for ``completion`` (``alt=sse``): data-only events, each
    a whole ``GenerateContentResponse`` holding the next parts.

    In order: thought parts, the text in token-like pieces, then one chunk with every
    function call (Gemini sends a call whole). The last chunk carries ``finishReason`` and
    the full usage; the ones before it the prompt's token count only. There is no end
    marker.
    """
    parts = _reply_parts(completion)
    chunks: list[list[dict[str, Any]]] = []
    calls = [part for part in parts if "functionCall" in part]
    for part in parts:
        if "functionCall" in part:
            continue
        if part.get("thought"):
            chunks.append([part])
            continue
        pieces = split_text(part["text"]) or [""]
        signature = part.get("thoughtSignature")
        for number, piece in enumerate(pieces):
            text: dict[str, Any] = {"text": piece}
            if signature and number == len(pieces) - 1:
                text["thoughtSignature"] = signature
            chunks.append([text])
    if calls:
        chunks.append(calls)
    if not chunks:
        chunks.append([])
    return [
        _event(_response(chunk, completion, response_id, final=number == len(chunks) - 1))
        for number, chunk in enumerate(chunks)
    ]


def _merge(parts: list[dict[str, Any]], new: Iterable[Mapping[str, Any]]) -> None:
    """Join streamed parts as the SDK's ``response.text`` does: consecutive text parts of
    the same kind (thought or not) into one; any other part as it comes."""
    for part in new:
        last = parts[-1] if parts else None
        if (
            last is not None
            and "text" in part
            and "text" in last
            and bool(part.get("thought")) == bool(last.get("thought"))
            and not _get(last, "thoughtSignature")
        ):
            last["text"] = last["text"] + str(part["text"])
            signature = _get(part, "thoughtSignature")
            if signature:
                last["thoughtSignature"] = signature
        else:
            parts.append(dict(part))


def decode_stream(events: Iterable[SSEEvent] | bytes | str) -> Completion:
    """A streamed response (its events, or the raw body) as a :class:`Completion`.

    Each event is a whole response with the next parts: their texts are joined, function
    calls taken as they come; the finish reason, usage, model and response id are the last
    ones sent. An event with an ``error`` raises :class:`CodecError`.
    """
    if isinstance(events, (bytes, str)):
        events = parse_sse(events)
    parts: list[dict[str, Any]] = []
    merged: dict[str, Any] = {}
    stop_reason: str | None = None
    for position, item in enumerate(events):
        if not item.data:
            continue
        where = f"gemini.decode_stream event #{position}"
        chunk = event_chunk(item.data, where, "Gemini stream (alt=sse)")
        for key in ("usageMetadata", "modelVersion", "responseId", "promptFeedback"):
            value = _get(chunk, key)
            if value:
                merged[key] = value
        candidates = chunk.get("candidates") or []
        if not candidates or not isinstance(candidates[0], Mapping):
            continue
        candidate = candidates[0]
        stop_reason = _get(candidate, "finishReason") or stop_reason
        _merge(parts, _parts(candidate.get("content") or {}, where))
    if parts or stop_reason or "promptFeedback" not in merged:
        merged["candidates"] = [{"content": {"parts": parts, "role": "model"}}]
        if stop_reason:
            merged["candidates"][0]["finishReason"] = stop_reason
    return decode_response(merged)
