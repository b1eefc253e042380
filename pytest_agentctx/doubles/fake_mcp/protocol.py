"""How a :class:`~pytest_agentctx.doubles.fake_mcp.server.FakeMcp` answers each MCP method
(:class:`McpMethods`, which it inherits) from its script, and the record of a tool call
(:class:`McpToolCall`)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_agentctx.doubles.fake_mcp.script import (
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    JsonRpcError,
    ScriptedPrompt,
    ScriptedResource,
    ScriptedTool,
)

if TYPE_CHECKING:
    from pytest_agentctx.doubles.freeze import FrozenClock

#: The protocol versions the fake speaks; it answers ``initialize`` with the client's when
#: it is one of them, else with the newest.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


@dataclass(frozen=True)
class McpToolCall:
    """One ``tools/call`` the fake received: the tool, its arguments and what it answered
    (the ``tools/call`` result, or ``{"error": ...}`` for a JSON-RPC error)."""

    name: str
    arguments: dict[str, Any]
    answer: dict[str, Any] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        """Whether the call failed: an ``isError`` result or a JSON-RPC error."""
        return bool(self.answer.get("isError")) or "error" in self.answer


class McpMethods:
    """The answer to each MCP request method, from the script the fake keeps."""

    name: str
    version: str
    instructions: str | None
    clock: FrozenClock | None
    _tools: dict[str, ScriptedTool]
    _resources: dict[str, ScriptedResource]
    _prompts: dict[str, ScriptedPrompt]
    _calls: list[McpToolCall]
    _lock: threading.Lock
    unscripted: list[str]

    def _unscripted(self, what: str) -> None:
        with self._lock:
            self.unscripted.append(what)

    async def _initialize(self, params: Mapping[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": False},
                "resources": {"subscribe": False, "listChanged": False},
                "prompts": {"listChanged": False},
            },
            "serverInfo": {"name": self.name, "version": self.version},
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    async def _ping(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    async def _list_tools(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {"tools": [tool.listing() for tool in self._tools.values()]}

    async def _call_tool(self, params: Mapping[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise JsonRpcError(
                INVALID_PARAMS,
                f"tools/call takes a tool name and an object of arguments, got {dict(params)!r}",
            )
        tool = self._tools.get(name)
        if tool is None:
            self._unscripted(f"tools/call {name}")
            known = ", ".join(sorted(self._tools)) or "no tools"
            error = JsonRpcError(
                INVALID_PARAMS,
                f"Unknown tool: {name} (fake_mcp {self.name!r} has {known}; script it with "
                f"fake_mcp.tool({name!r}, ...))",
            )
            self._keep_call(McpToolCall(name, arguments, {"error": error.as_error()}))
            raise error
        try:
            if tool.delay:
                await self._wait(tool.delay, tool.real_time)
            result = await tool.call(arguments)
        except JsonRpcError as exc:
            self._keep_call(McpToolCall(name, arguments, {"error": exc.as_error()}))
            raise
        self._keep_call(McpToolCall(name, arguments, result))
        return result

    def _keep_call(self, call: McpToolCall) -> None:
        with self._lock:
            self._calls.append(call)

    async def _wait(self, seconds: float, real_time: bool) -> None:
        """Let ``seconds`` pass: the frozen clock moves on when one is active; a real
        sleep only when asked for."""
        if self.clock is not None and self.clock.active:
            self.clock.tick(seconds)
        else:
            _tick_freezegun(seconds)
        if real_time:
            import anyio

            await anyio.sleep(seconds)

    async def _list_resources(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {"resources": [resource.listing() for resource in self._resources.values()]}

    async def _list_templates(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {"resourceTemplates": []}

    async def _read_resource(self, params: Mapping[str, Any]) -> dict[str, Any]:
        uri = str(params.get("uri"))
        resource = self._resources.get(uri)
        if resource is None:
            self._unscripted(f"resources/read {uri}")
            known = ", ".join(sorted(self._resources)) or "no resources"
            raise JsonRpcError(
                RESOURCE_NOT_FOUND,
                f"Resource not found: {uri} (fake_mcp {self.name!r} has {known}; script it "
                f"with fake_mcp.resource({uri!r}, text))",
                {"uri": uri},
            )
        return resource.contents()

    async def _list_prompts(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {"prompts": [prompt.listing() for prompt in self._prompts.values()]}

    async def _get_prompt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        name = str(params.get("name"))
        prompt = self._prompts.get(name)
        if prompt is None:
            self._unscripted(f"prompts/get {name}")
            known = ", ".join(sorted(self._prompts)) or "no prompts"
            raise JsonRpcError(
                INVALID_PARAMS,
                f"Unknown prompt: {name} (fake_mcp {self.name!r} has {known}; script it "
                f"with fake_mcp.prompt({name!r}, messages))",
            )
        arguments = params.get("arguments") or {}
        return await prompt.get({str(key): str(value) for key, value in arguments.items()})

    async def _empty(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {}


#: The request methods answered, each by its method of :class:`McpMethods`.
METHODS: dict[str, Callable[[McpMethods, Mapping[str, Any]], Awaitable[dict[str, Any]]]] = {
    "initialize": McpMethods._initialize,
    "ping": McpMethods._ping,
    "tools/list": McpMethods._list_tools,
    "tools/call": McpMethods._call_tool,
    "resources/list": McpMethods._list_resources,
    "resources/templates/list": McpMethods._list_templates,
    "resources/read": McpMethods._read_resource,
    "prompts/list": McpMethods._list_prompts,
    "prompts/get": McpMethods._get_prompt,
    "logging/setLevel": McpMethods._empty,
}


def _tick_freezegun(seconds: float) -> None:
    """Move freezegun's active clock (a :class:`FrozenClock`, ``freeze_time``) on, if any."""
    api = sys.modules.get("freezegun.api")
    factories = getattr(api, "freeze_factories", None)
    if factories:
        from datetime import timedelta

        factories[-1].tick(timedelta(seconds=seconds))
