"""MCP traffic in the iteration context: tool calls, the other MCP messages, the tool contract.

A test's exchange log holds its MCP traffic beside its model calls (see
:mod:`pytest_agentctx.traffic.mcp.wire`: one interaction per message the client sends over
stdio, the HTTP interactions themselves over streamable HTTP and the legacy SSE transport).
:func:`read_mcp` reads it once, before the conversations are rebuilt:

* each request the client sent is paired with the server's response of the same JSON-RPC
  id on the same server (a stdio label, or the scheme and host of an HTTP URL): the one in
  the same interaction first (a POST's JSON or SSE answer, a stdio message's output), else
  the latest earlier request of that id still unanswered (a stdio answer written after the
  client's next message), else the earliest later one (the legacy SSE transport answers a
  POST in the GET stream, which the log holds first);
* each ``tools/call`` becomes an :class:`McpCall`; :mod:`.builder` joins it to the model's
  tool call it carries out (:func:`joins`) and keeps it, as plain data
  (:meth:`McpCall.to_dict`), in its iteration's ``metadata["mcp"]``;
* each ``tools/list`` answer is the server's **tool contract** (pages given with a
  ``cursor`` are added to the listing they continue; a new listing replaces the old one);
* every MCP exchange gets a reason, listed with the other non-LLM exchanges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pytest_agentctx.traffic.capture.conversation import Conversation, IterationState
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.mcp.contract import model_tools_change, names_match
from pytest_agentctx.traffic.mcp.wire import McpExchange, mcp_exchanges

#: The iteration metadata key of the MCP tool calls made during the iteration.
METADATA_KEY = "mcp"
#: The keys of a tool a contract keeps from a ``tools/list`` answer (when present).
CONTRACT_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


@dataclass
class McpCall:
    """One ``tools/call`` the client made, and what the server answered."""

    #: The position of the interaction that sent the request (in the exchange log).
    position: int
    server: str
    transport: str
    tool: str
    arguments: dict[str, Any]
    #: The ``result`` (``content``, ``structuredContent``), or ``None`` when none came.
    result: dict[str, Any] | None = None
    is_error: bool = False
    #: The JSON-RPC ``error`` of the response (``code``, ``message``), or ``None``.
    error: dict[str, Any] | None = None
    #: The positions of the interactions that carried the request and its answer.
    positions: list[int] = field(default_factory=list)
    #: The id of the model's tool call it was joined to, or ``None`` (unjoined).
    tool_call_id: str | None = None

    def to_dict(self) -> dict[str, object]:
        """The call as it is kept in ``metadata["mcp"]``: plain JSON data."""
        return {
            "server": self.server,
            "transport": self.transport,
            "tool": self.tool,
            "arguments": self.arguments,
            "tool_call_id": self.tool_call_id,
            "result": self.result,
            "is_error": self.is_error,
            "error": self.error,
            "exchanges": list(self.positions),
        }


@dataclass
class McpTraffic:
    """What :func:`read_mcp` found in an exchange log."""

    #: The ``tools/call`` requests, by the position of the interaction that sent them.
    calls_at: dict[int, list[McpCall]] = field(default_factory=dict)
    #: Why each MCP exchange is not a model call, by position (``.non_llm_reasons``).
    reasons: dict[int, str] = field(default_factory=dict)
    #: Each server's last ``tools/list`` answer: its tools (:data:`CONTRACT_KEYS`).
    contract: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def calls(self) -> list[McpCall]:
        """Every ``tools/call``, in the order the client sent them."""
        return [call for position in sorted(self.calls_at) for call in self.calls_at[position]]


@dataclass
class _Request:
    position: int
    server: str
    origin: str
    message: dict[str, Any]
    answer: dict[str, Any] | None = None
    answered_at: int | None = None


def _origin(exchange: McpExchange) -> str:
    """Where JSON-RPC ids are unique: a stdio server, or an HTTP host (the legacy SSE
    transport's GET stream and POST endpoint have different URLs on the same host)."""
    if exchange.transport == "stdio":
        return f"stdio:{exchange.server}"
    parts = urlsplit(exchange.server)
    return f"{parts.scheme}://{parts.netloc}"


def _is_request(message: Mapping[str, Any]) -> bool:
    return isinstance(message.get("method"), str) and "id" in message


def _is_response(message: Mapping[str, Any]) -> bool:
    return (
        "method" not in message and "id" in message and ("result" in message or "error" in message)
    )


def _pair(exchanges: Sequence[McpExchange]) -> list[_Request]:
    """The client's requests, each with the server's response (see the module's doc)."""
    requests: list[_Request] = []
    #: The requests not answered yet, by where ids are unique and the id.
    waiting: dict[tuple[str, str], list[_Request]] = {}
    for exchange in exchanges:
        origin = _origin(exchange)
        for message in exchange.sent:
            if _is_request(message):
                request = _Request(exchange.position, exchange.server, origin, message)
                requests.append(request)
                waiting.setdefault((origin, repr(message["id"])), []).append(request)
    for exchange in exchanges:
        origin = _origin(exchange)
        for message in exchange.received:
            if not _is_response(message):
                continue
            open_ = waiting.get((origin, repr(message["id"])), [])
            same = [r for r in open_ if r.position == exchange.position]
            before = [r for r in open_ if r.position < exchange.position]
            after = [r for r in open_ if r.position > exchange.position]
            chosen = same[:1] or before[-1:] or after[:1]
            if chosen:
                chosen[0].answer = message
                chosen[0].answered_at = exchange.position
                open_.remove(chosen[0])
    return requests


def _call(request: _Request, transport: str) -> McpCall:
    params = request.message.get("params")
    params = params if isinstance(params, Mapping) else {}
    arguments = params.get("arguments")
    call = McpCall(
        position=request.position,
        server=request.server,
        transport=transport,
        tool=str(params.get("name", "")),
        arguments=dict(arguments) if isinstance(arguments, Mapping) else {},
        positions=[request.position],
    )
    answer = request.answer
    if answer is None:
        return call
    if request.answered_at is not None and request.answered_at != request.position:
        call.positions.append(request.answered_at)
    result = answer.get("result")
    if isinstance(result, Mapping):
        call.result = {
            key: result[key] for key in ("content", "structuredContent") if key in result
        }
        call.is_error = result.get("isError") is True
    error = answer.get("error")
    if isinstance(error, Mapping):
        call.error = dict(error)
    return call


def _contract_tools(result: object) -> list[dict[str, Any]]:
    tools = result.get("tools") if isinstance(result, Mapping) else None
    return [
        {key: tool[key] for key in CONTRACT_KEYS if key in tool}
        for tool in tools or ()
        if isinstance(tool, Mapping)
    ]


def _describe(message: Mapping[str, Any], server_side: bool) -> str:
    method = message.get("method")
    params = message.get("params")
    name = params.get("name") if isinstance(params, Mapping) else None
    if isinstance(method, str):
        text = method + (f" {name}" if isinstance(name, str) else "")
        return f"{text} (from the server)" if server_side else text
    return "a response" if not server_side else "a response of the server"


def _reason(exchange: McpExchange) -> str:
    sent = [_describe(m, False) for m in exchange.sent]
    asked = [_describe(m, True) for m in exchange.received if "method" in m]
    answers = sum(1 for m in exchange.received if _is_response(m))
    parts = sent + asked
    if answers and not exchange.sent:
        parts.append(f"{answers} response(s)")
    what = ", ".join(parts) if parts else f"{exchange.method} with no message"
    return f"MCP over {exchange.transport} ({exchange.server}): {what}"


def read_mcp(interactions: Sequence[Interaction]) -> McpTraffic:
    """The MCP tool calls, reasons and tool contract of an exchange log (see the module)."""
    exchanges = mcp_exchanges(interactions)
    traffic = McpTraffic()
    if not exchanges:
        return traffic
    transports = {e.position: e.transport for e in exchanges}
    for exchange in exchanges:
        traffic.reasons[exchange.position] = _reason(exchange)
    for request in _pair(exchanges):
        method = request.message.get("method")
        if method == "tools/call":
            call = _call(request, transports[request.position])
            traffic.calls_at.setdefault(request.position, []).append(call)
        elif method == "tools/list" and request.answer is not None:
            params = request.message.get("params")
            paged = isinstance(params, Mapping) and params.get("cursor") is not None
            tools = _contract_tools(request.answer.get("result"))
            if paged:
                traffic.contract.setdefault(request.server, []).extend(tools)
            else:
                traffic.contract[request.server] = tools
    return traffic


def _without_none(value: object) -> object:
    if isinstance(value, Mapping):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def same_arguments(model: Mapping[str, Any], sent: Mapping[str, Any]) -> bool:
    """Whether the model's arguments are those sent to the server: equal as JSON values
    (numbers by value), arguments given as ``null`` on either side aside (frameworks drop
    them, or send a tool's defaults as ``null``)."""
    return _without_none(model) == _without_none(sent)


def joins(model_name: str, model_arguments: Mapping[str, Any], call: McpCall) -> bool:
    """Whether the MCP ``call`` carries out the model's tool call of that name and those
    arguments (:func:`names_match` and :func:`same_arguments`)."""
    return names_match(model_name, call.tool) and same_arguments(model_arguments, call.arguments)


def as_interaction(item: object) -> Interaction:
    """A capture exchange as a cassette interaction (no headers: capture keeps none)."""
    if isinstance(item, Interaction):
        return item
    return Interaction(
        getattr(item, "method", ""),
        getattr(item, "url", ""),
        {},
        getattr(item, "request", None),
        getattr(item, "status", 0),
        {},
        getattr(item, "response", None),
        getattr(item, "origin", ""),
    )


def attach(
    conversations: Sequence[Conversation], calls: Sequence[McpCall], joined: set[tuple[int, str]]
) -> None:
    """Join each of ``calls`` to the pending tool call of the model it carries out
    (:func:`joins`; an exact name before a prefixed one, the conversation that got a reply
    last first, its calls in order; each tool call joined once, ``joined`` holding those
    taken), and keep it in the metadata of the iteration of that call. A call that joins
    none is kept unjoined (``tool_call_id`` ``None``) in the last iteration of the
    conversation that got a reply last; with no conversation yet, it is in no context."""
    ordered = sorted(conversations, key=lambda c: (c.last_event, c.number), reverse=True)
    for call in calls:
        target = _joined(ordered, call, joined)
        if target is None and ordered and ordered[0].iterations:
            target = ordered[0].iterations[-1]
        if target is None:
            continue
        kept = target.metadata.get(METADATA_KEY)
        target.metadata[METADATA_KEY] = [*(kept if isinstance(kept, list) else ()), call.to_dict()]


def _joined(
    ordered: Sequence[Conversation], call: McpCall, joined: set[tuple[int, str]]
) -> IterationState | None:
    for exact in (True, False):
        for conversation in ordered:
            for tool_call in conversation.pending.values():
                key = (conversation.number, tool_call.id)
                if key in joined or (exact and tool_call.name != call.tool):
                    continue
                if joins(tool_call.name, tool_call.arguments, call):
                    joined.add(key)
                    call.tool_call_id = tool_call.id
                    return conversation.iterations[-1]
    return None


def tools_miss_lines(
    recorded_body: object, now_body: object, recorded: Sequence[Interaction]
) -> list[str]:
    """The lines a miss message adds when a model call's tools differ from the recorded
    request's (:func:`~pytest_agentctx.traffic.mcp.contract.model_tools_change`, each
    indented by two spaces), naming the MCP server of each changed tool that the
    cassette's ``recorded`` interactions list in a ``tools/list`` answer; ``[]`` when the
    tools are the same. ``recorded_body`` and ``now_body`` are the requests' JSON."""
    text = model_tools_change(recorded_body, now_body, read_mcp(recorded).contract)
    return [f"  {line}" for line in text.splitlines()] if text else []
