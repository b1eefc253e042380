"""Gemini requests: the URL that names the model and says whether it streams, and the
``generateContent`` body, encoded from neutral messages and decoded back to them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TypedDict

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.codecs.base import (
    DecodedRequest,
    NeutralCall,
    NeutralMessage,
    NeutralTool,
    each,
    fields,
    join_texts,
    member,
    require_list,
)
from pytest_agentctx.traffic.codecs.gemini.parts import (
    completion_of,
    get,
    is_synthetic,
    model_parts,
    synthetic_call_id,
    text_of,
    turn_parts,
)
from pytest_agentctx.traffic.errors import CodecError

_MODEL_IN_PATH = re.compile(r"/(?:models|tunedModels)/([^/:]+):[A-Za-z]+$")


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


class _Turn(TypedDict):
    """A turn of a ``generateContent`` request: its role and its parts."""

    role: str
    parts: list[dict[str, object]]


def _append(turns: list[_Turn], role: str, parts: list[dict[str, object]]) -> None:
    """Add parts, merging into the previous turn of the same role (function responses of
    parallel calls go back in one turn)."""
    if turns and turns[-1]["role"] == role:
        turns[-1]["parts"].extend(parts)
    elif parts:
        turns.append({"role": role, "parts": parts})


def _response_part(
    message: Mapping[str, object], names: Mapping[object, object]
) -> dict[str, object]:
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
    function_response: dict[str, object] = {
        "name": tool,
        "response": {key: message.get("content") or ""},
    }
    if not is_synthetic(call_id):
        function_response["id"] = call_id
    return {"functionResponse": function_response}


def encode_request(
    *,
    model: str,
    messages: Sequence[Mapping[str, object]],
    tools: Sequence[ToolSpec] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> dict[str, object]:
    """The JSON body of a ``generateContent`` request, with a ``model`` key for the provider
    (which sends the model in the URL and the rest as the body).

    System messages become ``systemInstruction``; assistant messages ``model`` turns (text
    and ``functionCall`` parts); tool results ``functionResponse`` parts of a ``user`` turn
    (``{"result": content}``, or ``{"error": content}`` for an error); consecutive turns of
    one role are merged. Tools are declared with their JSON Schema
    (``parametersJsonSchema``).
    """
    system: list[object] = []
    turns: list[_Turn] = []
    names: dict[object, object] = {}
    for message in messages:
        role = message.get("role")
        if role == "system":
            system.append(message.get("content") or "")
        elif role == "user":
            _append(turns, "user", [{"text": message.get("content") or ""}])
        elif role == "assistant":
            for call in each(message.get("tool_calls")):
                names[fields(call).get("id") or ""] = member(call, "name")
            _append(turns, "model", model_parts(message))
        elif role == "tool":
            _append(turns, "user", [_response_part(message, names)])
        else:
            raise CodecError(
                f"gemini.encode_request: message role {role!r} is not one of system, user, "
                "assistant, tool."
            )
    body: dict[str, object] = {"model": model, "contents": turns}
    if system:
        body["systemInstruction"] = {"parts": [{"text": join_texts(system, "\n\n")}]}
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
    config: dict[str, object] = {}
    if temperature is not None:
        config["temperature"] = temperature
    if max_tokens is not None:
        config["maxOutputTokens"] = max_tokens
    if config:
        body["generationConfig"] = config
    return body


def _response_content(response: object) -> tuple[str, bool]:
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

    def __init__(self, first_turn: int = 0) -> None:
        self.messages: list[NeutralMessage] = []
        #: The ids of the last model turn's calls not answered yet, by function name.
        self.unanswered: dict[str, list[str]] = {}
        #: The number of the next model turn in the whole conversation (0: the first).
        self.turn = first_turn

    def model_turn(self, parts: list[Mapping[str, object]], where: str) -> None:
        completion = completion_of(parts, where, self.turn)
        self.turn += 1
        message: NeutralMessage = {"role": "assistant", "content": completion.content}
        if completion.tool_calls:
            message["tool_calls"] = [_neutral_call(call) for call in completion.tool_calls]
        if completion.reasoning:
            message["reasoning"] = [dict(item) for item in completion.reasoning]
        self.messages.append(message)
        self.unanswered = {}
        for call in completion.tool_calls:
            self.unanswered.setdefault(call.name, []).append(call.id)

    def user_turn(self, parts: list[Mapping[str, object]], where: str) -> None:
        texts: list[str] = []
        for index, part in enumerate(parts):
            response = get(part, "functionResponse")
            if response is None:
                if "text" in part and not part.get("thought"):
                    texts.append(str(part["text"]))
                continue
            if not isinstance(response, Mapping):
                raise CodecError(f"{where}.parts[{index}]: functionResponse is not an object.")
            self._flush(texts)
            tool = str(response.get("name") or "")
            call_id = self._answered(tool, index, response.get("id"))
            content, is_error = _response_content(response.get("response"))
            message: NeutralMessage = {
                "role": "tool",
                "content": content,
                "tool_call_id": call_id,
                "name": tool,
            }
            if is_error:
                message["is_error"] = True
            self.messages.append(message)
        self._flush(texts)

    def _answered(self, tool: str, index: int, given: object) -> str:
        """The id of the call a function response answers: the id it gives when a call of
        the model turn before has it; else (no id, or one only the client knows) the first
        unanswered call of its name whose id was made up."""
        waiting = self.unanswered.get(tool) or []
        if isinstance(given, str) and given:
            for ids in self.unanswered.values():
                if given in ids:
                    ids.remove(given)
                    return given
            made_up = next((call_id for call_id in waiting if is_synthetic(call_id)), None)
            if made_up is None:
                return given
            waiting.remove(made_up)
            return made_up
        if waiting:
            return waiting.pop(0)
        return synthetic_call_id(tool, {}, index, self.turn)

    def _flush(self, texts: list[str]) -> None:
        if texts:
            self.messages.append({"role": "user", "content": "".join(texts)})
            texts.clear()


def _neutral_call(call: ToolCall) -> NeutralCall:
    """A tool call of a decoded model turn, as its JSON."""
    data = call.model_dump(mode="json")
    return {"id": data["id"], "name": data["name"], "arguments": data["arguments"]}


def _declarations(tools: object) -> list[NeutralTool]:
    if isinstance(tools, Mapping):
        tools = [tools]
    declared: list[NeutralTool] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping):
            continue
        for declaration in each(get(tool, "functionDeclarations")):
            if not isinstance(declaration, Mapping):
                continue
            schema = get(declaration, "parametersJsonSchema")
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


def decode_request(body: Mapping[str, object], *, first_turn: int = 0) -> DecodedRequest:
    """A ``generateContent`` body in neutral form (function responses become ``tool``
    messages, joined to their calls).

    ``first_turn``: how many model turns came before the first of ``contents`` (when they
    are the end of a longer conversation), for the synthetic ids of its function calls.

    The body names no model and does not say whether it streams: the URL does (see
    :func:`request_for_path`). A ``model`` key, as :func:`encode_request` adds, is read.
    """
    where = "gemini.decode_request"
    contents = require_list(body, "contents", where)
    turns = _Turns(first_turn)
    system = get(body, "systemInstruction")
    if system:
        turns.messages.append({"role": "system", "content": text_of(system, where)})
    for index, turn in enumerate(contents):
        at = f"{where}: contents[{index}]"
        parts = turn_parts(turn, at)
        if fields(turn).get("role") == "model":
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
