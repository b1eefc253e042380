"""The parts of a Gemini turn, read and written: text, function calls, thoughts and
thought signatures (see the package docstring for how ids and signatures are kept).

Both directions of the codec use them: a request's ``model`` turns and a response's
candidate hold the same parts. The API accepts camelCase and snake_case field names
alike; :func:`get` reads either.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.traffic.codecs.base import Completion, each, fields, member, parse_arguments
from pytest_agentctx.traffic.errors import CodecError

#: The start of the ids this codec makes up for function calls that have none.
SYNTHETIC_ID_PREFIX = "gemini-call-"

#: The reasoning item types of a thought summary and of a thought signature.
THOUGHT = "gemini_thought"
SIGNATURE = "gemini_signature"

_CAMEL_HUMP = re.compile(r"(?<!^)([A-Z])")


def get(data: Mapping[str, object], key: str, default: object = None) -> object:
    """``data[key]`` under its camelCase name, or its snake_case one."""
    if key in data:
        value: object = data[key]
        return value
    return data.get(_CAMEL_HUMP.sub(r"_\1", key).lower(), default)


def synthetic_call_id(name: str, arguments: Mapping[str, object], index: int, turn: int = 0) -> str:
    """The id given to the ``index``-th function call of the ``turn``-th model turn of a
    conversation (0: the first) when it has none.

    Deterministic, so a call read from a response and from the next request's echo of it
    get the same id; two identical calls in different turns get different ones. The first
    turn's ids depend on the index, the name and the arguments only (the ids recorded
    before the turn counted are kept).
    """
    shown: list[object] = [index, name, arguments]
    if turn:
        shown.insert(0, turn)
    key = json.dumps(shown, sort_keys=True, ensure_ascii=False, default=str)
    return SYNTHETIC_ID_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:16]


def model_turns(contents: object) -> int:
    """How many model turns a request's ``contents`` hold: the turn number of the reply it
    asks for (see :func:`synthetic_call_id`)."""
    if not isinstance(contents, Sequence) or isinstance(contents, str):
        return 0
    return sum(1 for turn in contents if isinstance(turn, Mapping) and turn.get("role") == "model")


def is_synthetic(call_id: object) -> bool:
    """Whether ``call_id`` is none, or one this codec made up (never sent on the wire)."""
    return not call_id or (isinstance(call_id, str) and call_id.startswith(SYNTHETIC_ID_PREFIX))


def turn_parts(turn: object, where: str) -> list[Mapping[str, object]]:
    """The ``parts`` of a turn (a content), checked: a :class:`CodecError` names ``where``."""
    if not isinstance(turn, Mapping):
        raise CodecError(
            f"{where}: expected a JSON object with 'parts', got {type(turn).__name__}."
        )
    parts = get(turn, "parts") or []
    if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
        raise CodecError(f"{where}: 'parts' is not a list of JSON objects: {parts!r:.80}.")
    return [part for part in parts if isinstance(part, Mapping)]


def text_of(turn: object, where: str) -> str:
    """The text of a ``systemInstruction`` (a string, a part, or a content with parts)."""
    if isinstance(turn, str):
        return turn
    if isinstance(turn, Mapping) and "text" in turn:
        return str(turn["text"])
    return "".join(str(part.get("text", "")) for part in turn_parts(turn, where))


def model_parts(message: Mapping[str, object]) -> list[dict[str, object]]:
    """The parts of an assistant message: thoughts, text, function calls, and the thought
    signatures put back on the parts that carried them."""
    reasoning = [item for item in each(message.get("reasoning")) if isinstance(item, Mapping)]
    signatures: dict[tuple[object, object], object] = {
        (item.get("part"), item.get("index", 0)): item.get("thoughtSignature")
        for item in reasoning
        if item.get("type") == SIGNATURE
    }
    parts: list[dict[str, object]] = []
    for item in reasoning:
        if item.get("type") == THOUGHT:
            thought: dict[str, object] = {"text": item.get("text", ""), "thought": True}
            if item.get("thoughtSignature"):
                thought["thoughtSignature"] = item["thoughtSignature"]
            parts.append(thought)
    content = message.get("content")
    if content:
        text: dict[str, object] = {"text": content}
        if signatures.get(("text", 0)):
            text["thoughtSignature"] = signatures[("text", 0)]
        parts.append(text)
    for index, call in enumerate(each(message.get("tool_calls"))):
        function_call: dict[str, object] = {
            "name": member(call, "name"),
            "args": fields(call).get("arguments") or {},
        }
        if not is_synthetic(fields(call).get("id")):
            function_call["id"] = member(call, "id")
        part: dict[str, object] = {"functionCall": function_call}
        if signatures.get(("functionCall", index)):
            part["thoughtSignature"] = signatures[("functionCall", index)]
        parts.append(part)
    return parts


def completion_of(parts: Sequence[Mapping[str, object]], where: str, turn: int = 0) -> Completion:
    """Text, function calls and reasoning items of the ``turn``-th model turn's parts."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, object]] = []
    for position, part in enumerate(parts):
        signature = get(part, "thoughtSignature")
        call = get(part, "functionCall")
        if part.get("thought"):
            thought: dict[str, object] = {"type": THOUGHT, "text": part.get("text", "")}
            if signature:
                thought["thoughtSignature"] = signature
            reasoning.append(thought)
        elif call is not None:
            if not isinstance(call, Mapping):
                raise CodecError(f"{where}: parts[{position}].functionCall is not an object.")
            arguments = parse_arguments(call.get("args"))
            index = len(calls)
            tool = str(call.get("name") or "")
            call_id = call.get("id") or synthetic_call_id(tool, arguments, index, turn)
            calls.append(
                ToolCall.model_validate({"id": call_id, "name": tool, "arguments": arguments})
            )
            if signature:
                reasoning.append(
                    {
                        "type": SIGNATURE,
                        "part": "functionCall",
                        "index": index,
                        "thoughtSignature": signature,
                    }
                )
        elif "text" in part:
            texts.append(str(part["text"]))
            if signature:
                reasoning.append(
                    {"type": SIGNATURE, "part": "text", "index": 0, "thoughtSignature": signature}
                )
    # A stream ends with an empty text part next to its finish reason: no text is None.
    return Completion(
        content="".join(texts) or None,
        tool_calls=tuple(calls),
        reasoning=tuple(reasoning),
    )
