"""What a :class:`~pytest_agentctx.doubles.fake_mcp.FakeMcp` is scripted with: its tools
(:class:`ScriptedTool`: a canned result, a function, an ``isError`` result, a JSON-RPC
error, a raised exception, a delay), resources (:class:`ScriptedResource`) and prompts
(:class:`ScriptedPrompt`), and how each becomes the MCP message that answers a request.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The JSON-RPC error codes the fake answers with.
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
#: MCP's code for a resource that does not exist.
RESOURCE_NOT_FOUND = -32002


class JsonRpcError(Exception):
    """Raised by a scripted tool's function (or given as ``error=``) to answer the call
    with a JSON-RPC error instead of a result."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def as_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class _Missing:
    """The type of :data:`MISSING`: no ``result=`` given (``None`` is a result)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


@dataclass
class ScriptedTool:
    """One tool of the fake server and how it answers ``tools/call``."""

    name: str
    input_schema: dict[str, Any]
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    result: object = MISSING
    fn: Callable[..., object] | None = None
    raises: BaseException | None = None
    error: JsonRpcError | None = None
    is_error: bool = False
    delay: float = 0.0
    real_time: bool = False

    def listing(self) -> dict[str, Any]:
        """The tool as ``tools/list`` gives it."""
        tool: dict[str, Any] = {"name": self.name, "inputSchema": self.input_schema}
        if self.description is not None:
            tool["description"] = self.description
        if self.output_schema is not None:
            tool["outputSchema"] = self.output_schema
        if self.annotations is not None:
            tool["annotations"] = self.annotations
        return tool

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The ``tools/call`` result for ``arguments``; raises :class:`JsonRpcError` for a
        tool scripted to answer with one."""
        if self.error is not None:
            raise self.error
        try:
            if self.raises is not None:
                raise self.raises
            if self.fn is not None:
                value = self.fn(**arguments)
                if inspect.isawaitable(value):
                    value = await value
            else:
                value = self.result
        except JsonRpcError:
            raise
        except Exception as exc:  # a failing tool is an isError result, as SDK servers give
            if _is_mcp_error(exc):
                raise JsonRpcError(exc.error.code, exc.error.message, exc.error.data) from exc  # type: ignore[attr-defined]
            return {
                "content": [_text(f"Error executing tool {self.name}: {exc}")],
                "isError": True,
            }
        result = tool_result(value)
        if self.is_error:
            result["isError"] = True
        return result


def _is_mcp_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the mcp SDK's ``McpError`` (its ``error`` is a JSON-RPC error)."""
    error = getattr(exc, "error", None)
    return isinstance(getattr(error, "code", None), int) and isinstance(
        getattr(error, "message", None), str
    )


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_result(value: object) -> dict[str, Any]:
    """The ``tools/call`` result of a tool that returned ``value``: text for a string, a
    JSON object as structured content and its text, other values as their JSON text. A
    mapping with ``content`` (a list) is taken as a whole result, as MCP spells it."""
    if isinstance(value, Mapping) and isinstance(value.get("content"), list):
        result = dict(value)
        result.setdefault("isError", False)
        return result
    if isinstance(value, str):
        return {"content": [_text(value)], "isError": False}
    if value is None:
        return {"content": [], "isError": False}
    text = json.dumps(value, ensure_ascii=False, default=str)
    result = {"content": [_text(text)], "isError": False}
    if isinstance(value, Mapping):
        result["structuredContent"] = json.loads(text)
    return result


def schema_of(fn: Callable[..., object]) -> dict[str, Any]:
    """The JSON schema of ``fn``'s keyword arguments (from its signature and annotations),
    as an MCP tool's ``inputSchema``."""
    from pydantic import ConfigDict, create_model

    signature = inspect.signature(fn)
    try:
        hints = _type_hints(fn)
    except Exception:  # an annotation that cannot be resolved: the parameter takes anything
        hints = {}
    fields: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    model = create_model(
        f"{fn.__name__}Arguments", __config__=ConfigDict(arbitrary_types_allowed=True), **fields
    )
    schema: dict[str, Any] = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _type_hints(fn: Callable[..., object]) -> dict[str, Any]:
    import typing

    module = sys.modules.get(getattr(fn, "__module__", ""), None)
    namespace = vars(module) if module is not None else None
    return typing.get_type_hints(fn, globalns=namespace)


def schema_from_properties(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """An ``inputSchema`` from what was given: a whole JSON schema (with ``type``), or only
    its properties (``{"order_id": {"type": "integer"}}``, all of them required)."""
    if schema is None:
        return {"type": "object", "properties": {}}
    if schema.get("type") == "object" or "properties" in schema:
        return {"type": "object", **dict(schema)}
    return {"type": "object", "properties": dict(schema), "required": list(schema)}


@dataclass
class ScriptedResource:
    """One resource of the fake server, with its text."""

    uri: str
    text: str
    name: str
    mime_type: str = "text/plain"
    description: str | None = None

    def listing(self) -> dict[str, Any]:
        resource: dict[str, Any] = {"uri": self.uri, "name": self.name, "mimeType": self.mime_type}
        if self.description is not None:
            resource["description"] = self.description
        return resource

    def contents(self) -> dict[str, Any]:
        """The ``resources/read`` result."""
        return {"contents": [{"uri": self.uri, "mimeType": self.mime_type, "text": self.text}]}


#: A prompt's messages: one text (a user message), ``(role, text)`` pairs, MCP's message
#: objects, or a function of the prompt's arguments giving one of those.
PromptMessages = (
    str
    | Sequence[tuple[str, str] | Mapping[str, Any]]
    | Callable[..., str | Sequence[tuple[str, str] | Mapping[str, Any]]]
)


@dataclass
class ScriptedPrompt:
    """One prompt of the fake server: its arguments and messages."""

    name: str
    messages: PromptMessages
    arguments: list[dict[str, Any]] = field(default_factory=list)
    description: str | None = None

    def listing(self) -> dict[str, Any]:
        prompt: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.description is not None:
            prompt["description"] = self.description
        return prompt

    async def get(self, arguments: Mapping[str, str]) -> dict[str, Any]:
        """The ``prompts/get`` result for ``arguments``; raises :class:`JsonRpcError` when
        a required argument is missing."""
        missing = [
            argument["name"]
            for argument in self.arguments
            if argument.get("required") and argument["name"] not in arguments
        ]
        if missing:
            raise JsonRpcError(
                INVALID_PARAMS,
                f"prompt {self.name!r} needs the argument(s) {', '.join(missing)}; "
                f"got {sorted(arguments) or 'none'}",
            )
        messages: object = self.messages
        if callable(messages):
            messages = messages(**arguments)
            if inspect.isawaitable(messages):
                messages = await messages
        if isinstance(messages, str):
            messages = [("user", messages)]
        result: dict[str, Any] = {
            "messages": [
                _prompt_message(message, arguments)
                for message in messages  # type: ignore[attr-defined]
            ]
        }
        if self.description is not None:
            result["description"] = self.description
        return result


def _prompt_message(message: object, arguments: Mapping[str, str]) -> dict[str, Any]:
    if isinstance(message, Mapping):
        return dict(message)
    if isinstance(message, tuple) and len(message) == 2:
        role, text = message
        return {"role": role, "content": _text(str(text).format_map(_Keep(arguments)))}
    raise TypeError(
        f"a prompt message is a (role, text) pair or an MCP message dict, not {message!r}"
    )


class _Keep(dict[str, str]):
    """Formats a prompt's text with its arguments, keeping ``{name}`` for the others."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def prompt_arguments(arguments: Sequence[str | Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """A prompt's arguments as ``prompts/list`` gives them: a name is a required argument."""
    listed: list[dict[str, Any]] = []
    for argument in arguments or ():
        if isinstance(argument, str):
            listed.append({"name": argument, "required": True})
        else:
            listed.append(dict(argument))
    return listed


#: How a delay waits: given the seconds and whether to sleep in real time.
Wait = Callable[[float, bool], Awaitable[None]]
