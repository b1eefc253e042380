"""An MCP server's tool contract, and what changed in it: tools added or removed, and each
field of a tool's schemas and annotations that changed.

The contract is what a server's ``tools/list`` answer gives: per tool its ``name``,
``description``, ``inputSchema``, ``outputSchema`` and ``annotations``.
:func:`contract_changes` compares a recorded contract with today's and
:func:`render_changes` names the tool and the field::

    tool get_order: inputSchema.properties.order_id removed; inputSchema.properties.order_ref
    added (integer)

(one line per tool).

:func:`tools_list_change` and :func:`model_tools_change` are what a miss message says when
a ``tools/list`` answer, or the tools a model call offers, differ from the recorded ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

#: How far a change is described inside a schema; a deeper one names its parent as changed.
_DEPTH = 12
#: The longest value shown in a change before it is cut.
_SHOWN = 60
#: What may stand between a server's name and a tool's in the name a framework gives the
#: model (``orders_get_order``, ``mcp__orders__get_order``, ``orders.get_order``).
_SEPARATORS = frozenset("_-.:/")


def names_match(model_name: str, tool: str) -> bool:
    """Whether the model's tool ``model_name`` is the MCP tool ``tool``: the same name, or
    the name with a prefix a framework put before it (the server's name or a chosen prefix)
    that ends with one of ``_ - . : /`` (``orders_get_order``, ``mcp__orders__get_order``)."""
    if model_name == tool:
        return True
    return (
        len(model_name) > len(tool) + 1
        and model_name.endswith(tool)
        and model_name[-len(tool) - 1] in _SEPARATORS
    )


@dataclass(frozen=True)
class ContractChange:
    """One change of a tool: ``field`` is ``""`` for the tool itself (added or removed),
    else the dotted path of the field (``inputSchema.properties.order_id``)."""

    tool: str
    kind: Literal["added", "removed", "changed"]
    field: str = ""
    before: object = None
    after: object = None

    def describe(self) -> str:
        """``inputSchema.properties.order_ref added (integer)``, ``tool get_order removed``."""
        if not self.field:
            return f"tool {self.tool} {self.kind}"
        if self.kind == "added":
            return f"{self.field} added ({_shown(self.after)})"
        if self.kind == "removed":
            return f"{self.field} removed"
        return f"{self.field} changed: {_shown(self.before)} -> {_shown(self.after)}"


def _shown(value: object) -> str:
    if isinstance(value, Mapping) and isinstance(value.get("type"), str):
        return str(value["type"])
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _tools(listing: object) -> dict[str, Mapping[str, Any]]:
    """The tools of a contract by name: a list of tools, a ``tools/list`` result
    (``{"tools": [...]}``) or its JSON-RPC response (``{"result": {"tools": [...]}}``)."""
    if isinstance(listing, Mapping):
        listing = listing.get("result", listing)
        listing = listing.get("tools") if isinstance(listing, Mapping) else None
    found: dict[str, Mapping[str, Any]] = {}
    for tool in listing if isinstance(listing, list) else ():
        if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
            found.setdefault(tool["name"], tool)
    return found


def _fields(
    tool: str, path: str, before: object, after: object, depth: int
) -> Iterable[ContractChange]:
    if before == after:
        return
    if isinstance(before, Mapping) and isinstance(after, Mapping) and depth < _DEPTH:
        for key in before:
            inner = f"{path}.{key}" if path else str(key)
            if key not in after:
                yield ContractChange(tool, "removed", inner, before=before[key])
            else:
                yield from _fields(tool, inner, before[key], after[key], depth + 1)
        for key in after:
            if key not in before:
                inner = f"{path}.{key}" if path else str(key)
                yield ContractChange(tool, "added", inner, after=after[key])
        return
    yield ContractChange(tool, "changed", path, before=before, after=after)


def contract_changes(recorded_tools: object, now_tools: object) -> list[ContractChange]:
    """What changed from the ``recorded_tools`` to the ``now_tools`` (each a list of tools,
    a ``tools/list`` result or its response): tools removed (in the recorded order), tools
    added (in today's order), then, tool by tool, every field of a tool that both list
    that was removed, added or changed (``name`` aside: it is the tool)."""
    before, after = _tools(recorded_tools), _tools(now_tools)
    changes = [ContractChange(name, "removed") for name in before if name not in after]
    changes += [ContractChange(name, "added") for name in after if name not in before]
    for name, tool in before.items():
        if name in after:
            old = {k: v for k, v in tool.items() if k != "name"}
            new = {k: v for k, v in after[name].items() if k != "name"}
            changes.extend(_fields(name, "", old, new, 0))
    return changes


def render_changes(changes: Sequence[ContractChange]) -> str:
    """One line per tool: ``tool get_order: <change>; <change>``, or ``tool X added``."""
    lines: list[str] = []
    by_tool: dict[str, list[str]] = {}
    for change in changes:
        if not change.field:
            lines.append(change.describe())
        else:
            by_tool.setdefault(change.tool, []).append(change.describe())
    lines += [f"tool {tool}: {'; '.join(parts)}" for tool, parts in by_tool.items()]
    return "\n".join(lines)


def tools_list_change(recorded: object, now: object, *, server: str = "") -> str | None:
    """For a miss on a ``tools/list`` request whose answer changed: what changed between the
    ``recorded`` answer and the answer ``now`` (each a response message, its result or a
    list of tools), and what to do; ``None`` when the tools are the same."""
    changes = contract_changes(recorded, now)
    if not changes:
        return None
    named = f"MCP server {server}" if server else "the MCP server"
    body = "\n".join(f"  {line}" for line in render_changes(changes).splitlines())
    return (
        f"the tools of {named} changed since the cassette was recorded:\n{body}\n"
        "If the new tools are meant, record the cassette again (pytest --agent-record); "
        "otherwise run the server version the cassette was recorded with."
    )


def _model_tool(given: object) -> list[tuple[str, dict[str, object]]]:
    """A model request's tool, in any wire format, as ``(name, {"description",
    "inputSchema"})`` (several for a Gemini tool that declares several functions)."""
    if not isinstance(given, Mapping):
        return []
    tool: Mapping[str, Any] = given
    if isinstance(tool.get("function"), Mapping):  # OpenAI chat completions
        tool = tool["function"]
    if isinstance(tool.get("toolSpec"), Mapping):  # Bedrock Converse
        spec = tool["toolSpec"]
        schema = spec.get("inputSchema")
        schema = schema.get("json", schema) if isinstance(schema, Mapping) else schema
        tool = {"name": spec.get("name"), "description": spec.get("description"), "schema": schema}
    declared = tool.get("functionDeclarations") or tool.get("function_declarations")
    if isinstance(declared, list):  # Gemini
        return [item for entry in declared for item in _model_tool(entry)]
    name = tool.get("name")
    if not isinstance(name, str):
        return []
    schema = next(
        (
            tool[key]
            for key in (
                "parameters",
                "input_schema",
                "inputSchema",
                "schema",
                "parametersJsonSchema",
            )
            if key in tool
        ),
        None,
    )
    shape: dict[str, object] = {"inputSchema": schema}
    if tool.get("description") is not None:
        shape["description"] = tool["description"]
    return [(name, shape)]


def _request_tools(body: object) -> list[dict[str, object]]:
    tools: object = None
    if isinstance(body, Mapping):
        tools = body.get("tools")
        config = body.get("toolConfig")
        if tools is None and isinstance(config, Mapping):
            tools = config.get("tools")
    found = (
        [item for tool in tools or () for item in _model_tool(tool)]
        if isinstance(tools, list)
        else []
    )
    return [{"name": name, **shape} for name, shape in found]


def model_tools_change(
    recorded_request: object,
    now_request: object,
    contract: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> str | None:
    """For a miss on a model call whose ``tools`` differ from the recorded request's: which
    tool changed and which field (``parameters``/``input_schema`` read as ``inputSchema``),
    naming the MCP server of each tool found in ``contract`` (the cassette's tool contract,
    by server); ``None`` when the requests' tools are the same."""
    changes = contract_changes(_request_tools(recorded_request), _request_tools(now_request))
    if not changes:
        return None
    servers = {
        tool_name: server
        for server, tools in (contract or {}).items()
        for tool in tools
        if isinstance((tool_name := tool.get("name")), str)
    }
    lines = render_changes(changes).splitlines()
    mcp = sorted(
        {
            server
            for change in changes
            for tool_name, server in servers.items()
            if names_match(change.tool, tool_name)
        }
    )
    text = "the tools the model call offers differ from the recorded request's:\n"
    text += "\n".join(f"  {line}" for line in lines)
    if mcp:
        text += (
            f"\n  (tools of MCP server {', '.join(mcp)}: its tool schema changed since the "
            "cassette was recorded)"
        )
    return text + (
        "\nIf the new tools are meant, record the cassette again (pytest --agent-record); "
        "otherwise give the agent the tools it was recorded with."
    )
