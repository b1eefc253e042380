"""The fake MCP server: :class:`FakeMcp`, scripted with tools, resources and prompts,
answering MCP at the message level (:meth:`FakeMcp.answer`) and keeping what it was asked.

Its transports are thin: the SDK's in-memory streams (:meth:`FakeMcp.streams`,
:meth:`FakeMcp.session`), streamable HTTP answered in-process at :attr:`FakeMcp.url` (see
:mod:`.http`) and stdio through the stdio seam (:meth:`FakeMcp.stdio_parameters`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import re
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from pytest_agentctx.doubles.errors import UnscriptedMcpRequest
from pytest_agentctx.doubles.fake_mcp.protocol import METHODS, McpMethods, McpToolCall
from pytest_agentctx.doubles.fake_mcp.script import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING,
    JsonRpcError,
    PromptMessages,
    ScriptedPrompt,
    ScriptedResource,
    ScriptedTool,
    prompt_arguments,
    schema_from_properties,
    schema_of,
)
from pytest_agentctx.traffic.capture.exchange import Exchange
from pytest_agentctx.traffic.mcp.stdio import local_server, server_label
from pytest_agentctx.traffic.mcp.wire import stdio_url

if TYPE_CHECKING:
    from mcp import ClientSession, StdioServerParameters

    from pytest_agentctx.doubles.fake_mcp.http import McpHttpEndpoint
    from pytest_agentctx.doubles.freeze import FrozenClock

_F = TypeVar("_F", bound=Callable[..., object])


class FakeMcp(McpMethods):
    """A scripted MCP server for tests: no process, no socket.

    >>> fake = FakeMcp("orders")
    >>> fake.tool("get_order", {"id": 42}, schema={"order_id": {"type": "integer"}})
    FakeMcp('orders': 1 tools, 0 resources, 0 prompts, 0 calls)
    """

    def __init__(
        self,
        name: str = "fake-mcp",
        *,
        version: str = "1.0.0",
        instructions: str | None = None,
        clock: FrozenClock | None = None,
        log: Callable[[Exchange], None] | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.instructions = instructions
        #: The frozen clock a tool's ``delay`` moves (else freezegun's active clock, if any).
        self.clock = clock
        #: Told every exchange as it is answered (the fixture gives ``fake_llm``'s log).
        self._log = log
        self._tools: dict[str, ScriptedTool] = {}
        self._resources: dict[str, ScriptedResource] = {}
        self._prompts: dict[str, ScriptedPrompt] = {}
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._calls: list[McpToolCall] = []
        self._exchanges: list[Exchange] = []
        #: The requests the script had no answer for (a tool, resource, prompt or method
        #: it does not know): :meth:`verify` fails with them.
        self.unscripted: list[str] = []
        self._http: McpHttpEndpoint | None = None
        self._stdio: contextlib.ExitStack | None = None

    # -- scripting ---------------------------------------------------------------------

    @overload
    def tool(self, name: _F, /) -> _F: ...

    @overload
    def tool(
        self,
        name: None = None,
        *,
        schema: Mapping[str, Any] | None = None,
        description: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        raises: BaseException | None = None,
        error: JsonRpcError | str | tuple[int, str] | None = None,
        is_error: bool = False,
        delay: float = 0.0,
        real_time: bool = False,
    ) -> Callable[[_F], _F]: ...

    @overload
    def tool(
        self,
        name: str,
        result: object = MISSING,
        *,
        fn: Callable[..., object] | None = None,
        schema: Mapping[str, Any] | None = None,
        description: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        raises: BaseException | None = None,
        error: JsonRpcError | str | tuple[int, str] | None = None,
        is_error: bool = False,
        delay: float = 0.0,
        real_time: bool = False,
    ) -> FakeMcp: ...

    def tool(
        self,
        name: str | Callable[..., object] | None = None,
        result: object = MISSING,
        *,
        schema: Mapping[str, Any] | None = None,
        description: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        fn: Callable[..., object] | None = None,
        raises: BaseException | None = None,
        error: JsonRpcError | str | tuple[int, str] | None = None,
        is_error: bool = False,
        delay: float = 0.0,
        real_time: bool = False,
    ) -> Any:
        """Script the tool ``name``; returns the fake (to chain), or, used as a decorator
        (``@fake.tool`` or ``@fake.tool(delay=2)``), the function, which answers the calls.

        It answers with ``result`` (a string is text; a dict is structured content and its
        JSON text; a dict with ``content`` is the whole MCP result), or calls ``fn`` with
        the call's arguments (sync or async; its signature is the input schema when no
        ``schema`` is given). ``is_error=True`` marks the result ``isError``; ``raises``
        (or an exception ``fn`` raises) becomes an ``isError`` result with its text;
        ``error`` (a message, a ``(code, message)`` pair, or a :class:`JsonRpcError` with
        data) answers with a JSON-RPC error; so does an ``McpError`` of the SDK that ``fn``
        raises. ``delay`` seconds pass before it answers: the frozen clock moves on when one
        is active; it sleeps in real time only with ``real_time=True``.

        ``schema`` is a whole JSON schema, or only its properties (then all required).
        """
        options: dict[str, Any] = {
            "schema": schema,
            "description": description,
            "output_schema": output_schema,
            "annotations": annotations,
            "raises": raises,
            "error": error,
            "is_error": is_error,
            "delay": delay,
            "real_time": real_time,
        }
        if callable(name):
            self._add_tool(name.__name__, MISSING, fn=name, **options)
            return name
        if name is None or (result is MISSING and fn is None and raises is None and error is None):
            tool_name = name

            def decorate(function: Callable[..., object]) -> Callable[..., object]:
                self._add_tool(tool_name or function.__name__, MISSING, fn=function, **options)
                return function

            if name is None:
                return decorate
            raise TypeError(
                f"fake_mcp.tool({name!r}) needs what the tool answers: a result "
                f"(fake_mcp.tool({name!r}, 'text')), fn=, raises= or error=; or use "
                "@fake_mcp.tool on a function."
            )
        self._add_tool(name, result, fn=fn, **options)
        return self

    def _add_tool(
        self,
        name: str,
        result: object,
        *,
        fn: Callable[..., object] | None,
        schema: Mapping[str, Any] | None,
        description: str | None,
        output_schema: Mapping[str, Any] | None,
        annotations: Mapping[str, Any] | None,
        raises: BaseException | None,
        error: JsonRpcError | str | tuple[int, str] | None,
        is_error: bool,
        delay: float,
        real_time: bool,
    ) -> None:
        answers = [
            what
            for what, given in (
                ("a result", result is not MISSING),
                ("fn=", fn is not None),
                ("raises=", raises is not None),
                ("error=", error is not None),
            )
            if given
        ]
        if len(answers) > 1:
            raise TypeError(
                f"fake_mcp.tool({name!r}) got {' and '.join(answers)}: give one of them."
            )
        if delay < 0:
            raise ValueError(f"fake_mcp.tool({name!r}, delay={delay!r}): a delay is >= 0 seconds.")
        if schema is None and fn is not None:
            input_schema = schema_of(fn)
        else:
            input_schema = schema_from_properties(schema)
        if description is None and fn is not None and fn.__doc__:
            description = fn.__doc__.strip()
        if isinstance(error, str):
            error = JsonRpcError(INTERNAL_ERROR, error)
        elif isinstance(error, tuple):
            error = JsonRpcError(*error)
        self._tools[name] = ScriptedTool(
            name=name,
            input_schema=input_schema,
            description=description,
            output_schema=dict(output_schema) if output_schema is not None else None,
            annotations=dict(annotations) if annotations is not None else None,
            result=result,
            fn=fn,
            raises=raises,
            error=error,
            is_error=is_error,
            delay=delay,
            real_time=real_time,
        )

    def resource(
        self,
        uri: str,
        text: str,
        *,
        name: str | None = None,
        mime_type: str = "text/plain",
        description: str | None = None,
    ) -> FakeMcp:
        """Script the resource ``uri`` with its text (``resources/list``, ``resources/read``)."""
        label = name or uri.rstrip("/").rsplit("/", 1)[-1] or uri
        self._resources[uri] = ScriptedResource(uri, text, label, mime_type, description)
        return self

    def prompt(
        self,
        name: str,
        messages: PromptMessages,
        *,
        arguments: Sequence[str | Mapping[str, Any]] | None = None,
        description: str | None = None,
    ) -> FakeMcp:
        """Script the prompt ``name``: its ``messages`` (a text, ``(role, text)`` pairs whose
        ``{argument}`` fields are filled in, MCP message dicts, or a function of the
        arguments giving one of those) and its ``arguments`` (names, required; or MCP's
        argument dicts)."""
        self._prompts[name] = ScriptedPrompt(
            name, messages, prompt_arguments(arguments), description
        )
        return self

    # -- what it received --------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every message the clients sent it (requests and notifications), in order."""
        with self._lock:
            return list(self._requests)

    @property
    def methods(self) -> list[str]:
        """The method of every message the clients sent it, in order."""
        return [str(message.get("method")) for message in self.requests if "method" in message]

    @property
    def calls(self) -> list[McpToolCall]:
        """Every ``tools/call`` it received, in order, with what it answered."""
        with self._lock:
            return list(self._calls)

    def called(self, name: str, /, **arguments: object) -> bool:
        """Whether a ``tools/call`` of ``name`` came with these arguments (those named; any
        call of ``name`` when none are named)."""
        return any(
            call.name == name
            and all(call.arguments.get(key, MISSING) == value for key, value in arguments.items())
            for call in self.calls
        )

    @property
    def exchanges(self) -> list[Exchange]:
        """Every message answered, as an exchange capture reads: over HTTP the POSTs (and
        the GET and DELETE) at :attr:`url`; over the in-memory streams and stdio a ``POST``
        to :attr:`stdio_url` whose response is the server's messages, one JSON per
        line, as an MCP stdio exchange is kept in a cassette."""
        with self._lock:
            return list(self._exchanges)

    def verify(self) -> None:
        """Raise :class:`~pytest_agentctx.UnscriptedMcpRequest` if a client asked for
        something the script does not have (a tool, resource, prompt or method), even if
        the agent went on after the error it got."""
        if self.unscripted:
            listed = "; ".join(self.unscripted)
            raise UnscriptedMcpRequest(
                f"fake_mcp {self.name!r} got {len(self.unscripted)} request(s) it has no "
                f"script for: {listed}. Script them (fake_mcp.tool(...), .resource(...), "
                ".prompt(...)), or find why the agent asked for them."
            )

    # -- answering ---------------------------------------------------------------------

    async def answer(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The messages the server sends back for one client message: one response for a
        request, none for a notification or a response. Kept in :attr:`exchanges` as a
        stdio exchange (over the in-memory streams too)."""
        replies = await self.serve(message)
        self._note(Exchange("POST", self.stdio_url, 200, {"json": message}, _ndjson(replies)))
        return replies

    async def serve(self, message: object) -> list[dict[str, Any]]:
        """As :meth:`answer`, without keeping the exchange (the transports keep it)."""
        if isinstance(message, list):  # a JSON-RPC batch
            replies: list[dict[str, Any]] = []
            for item in message:
                replies.extend(await self.serve(item))
            return replies
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return [_error(None, INVALID_REQUEST, f"not a JSON-RPC 2.0 message: {message!r}")]
        with self._lock:
            self._requests.append(message)
        method = message.get("method")
        if not isinstance(method, str):
            return []  # a response to a request of ours (the fake sends none)
        if "id" not in message:
            return []  # a notification: notifications/initialized, cancelled, progress...
        request_id = message["id"]
        params = message.get("params") or {}
        handler = METHODS.get(method)
        if handler is None:
            self._unscripted(f"method {method}")
            return [
                _error(
                    request_id,
                    METHOD_NOT_FOUND,
                    f"Method not found: {method} (fake_mcp {self.name!r} answers "
                    f"{', '.join(sorted(METHODS))})",
                )
            ]
        try:
            result = await handler(self, params)
        except JsonRpcError as exc:
            return [{"jsonrpc": "2.0", "id": request_id, "error": exc.as_error()}]
        return [{"jsonrpc": "2.0", "id": request_id, "result": result}]

    def _note(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)
        if self._log is not None:
            self._log(exchange)

    # -- transports --------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        """The mcp SDK's in-memory client streams ``(read, write)`` connected to the fake,
        for ``mcp.ClientSession(read, write)`` or a framework that takes them."""
        from pytest_agentctx.doubles.fake_mcp.memory import connected_streams

        async with connected_streams(self) as pair:
            yield pair

    @contextlib.asynccontextmanager
    async def session(
        self, *, initialize: bool = True, **options: Any
    ) -> AsyncIterator[ClientSession]:
        """An ``mcp.ClientSession`` over :meth:`streams`, initialised unless
        ``initialize=False`` (``options`` go to the session)."""
        from mcp import ClientSession

        async with self.streams() as (read, write), ClientSession(read, write, **options) as client:
            if initialize:
                await client.initialize()
            yield client

    @property
    def host(self) -> str:
        """The host of :attr:`url`: the name, made a DNS label, under ``agentctx.invalid``
        (a reserved name: nothing on a network answers it)."""
        label = re.sub(r"[^a-z0-9-]+", "-", self.name.lower()).strip("-") or "fake-mcp"
        return f"{label}.agentctx.invalid"

    @property
    def url(self) -> str:
        """The streamable HTTP endpoint, answered in-process while the fake is started."""
        return f"http://{self.host}/mcp"

    @property
    def stdio_url(self) -> str:
        """The URL its stdio and in-memory exchanges are kept under:
        ``mcp+stdio://<label>/``, the label of :attr:`stdio_command` (``fake-mcp``,
        ``fake-mcp-orders``)."""
        return stdio_url(server_label(self.stdio_command, []))

    @property
    def stdio_command(self) -> str:
        """The command :meth:`stdio_parameters` names (``fake-mcp``, ``fake-mcp-<name>``):
        answered in-process while the fake is started, never run."""
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.name)
        return name if name.startswith("fake-mcp") else f"fake-mcp-{name}"

    def stdio_parameters(self, **options: Any) -> StdioServerParameters:
        """``mcp.StdioServerParameters`` of a server the started fake answers in-process
        (no process is spawned); ``options`` go to the parameters (``env``, ``cwd``)."""
        from mcp import StdioServerParameters

        return StdioServerParameters(command=self.stdio_command, args=[], **options)

    @property
    def started(self) -> bool:
        return self._http is not None

    def start(self) -> None:
        """Answer :attr:`url` and :meth:`stdio_parameters`' command from now on."""
        if self._http is not None:
            return
        from pytest_agentctx.doubles.fake_mcp.http import McpHttpEndpoint

        self._stdio = _stdio_seam(self)
        self._http = McpHttpEndpoint(self)
        self._http.start()

    def stop(self) -> None:
        """Stop answering :attr:`url` and the stdio command."""
        http, self._http = self._http, None
        stdio, self._stdio = self._stdio, None
        try:
            if http is not None:
                http.stop()
        finally:
            if stdio is not None:
                stdio.close()

    def __enter__(self) -> FakeMcp:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"FakeMcp({self.name!r}: {len(self._tools)} tools, {len(self._resources)} "
            f"resources, {len(self._prompts)} prompts, {len(self.calls)} calls)"
        )


def _error(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _ndjson(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Messages as the body of an MCP stdio exchange: one JSON per line."""
    return {"text": "".join(json.dumps(message, ensure_ascii=False) + "\n" for message in messages)}


def _stdio_seam(fake: FakeMcp) -> contextlib.ExitStack:
    """Enter the stdio seam for the fake's command (see :func:`.stdio.local_server`); not
    without the mcp SDK, whose stdio client is the only one it serves."""
    stack = contextlib.ExitStack()
    if importlib.util.find_spec("mcp") is None:
        return stack
    try:
        stack.enter_context(local_server(fake.stdio_command, fake.answer))
    except ValueError:
        raise ValueError(
            f"Another FakeMcp named {fake.name!r} is started already, and answers the stdio "
            f"command {fake.stdio_command!r}: give each fake of a test its own name "
            "(FakeMcp('orders'), FakeMcp('billing'))."
        ) from None
    return stack
