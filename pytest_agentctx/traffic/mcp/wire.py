"""How MCP traffic lives in a cassette, and its exchanges read back from one.

A cassette keeps MCP traffic as interactions, one per message the client sends, in order,
in either file format:

- over stdio: ``POST mcp+stdio://<server>/`` (:func:`stdio_url`), the request's body the
  client's JSON-RPC message, its headers ``content-type: application/json`` and
  ``mcp-transport: stdio`` (and ``mcp-command``, the redacted command line, never
  compared); the response ``200``, ``content-type: application/x-ndjson``, its body the
  messages the server wrote after that message and before the client's next one, one JSON
  per line (empty when none);
- over streamable HTTP and the legacy SSE transport: the HTTP interactions themselves.

A request is MCP when its URL has the ``mcp+stdio`` scheme or its body is a JSON-RPC 2.0
message or batch (:func:`is_jsonrpc`): no model API sends JSON-RPC. An HTTP stream the
client opens without a body (streamable HTTP's ``GET``, the legacy ``GET /sse``) or closes
(``DELETE``) is MCP when it carries the ``mcp-session-id`` header or its response holds
JSON-RPC messages (or the legacy transport's ``endpoint`` event).

:func:`mcp_exchanges` reads a cassette's MCP exchanges (:class:`McpExchange`) back: what the
iteration context and the foreign cassettes' converters work from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pytest_agentctx.traffic.cassettes.body import Body, body_bytes
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.mcp.jsonrpc import is_jsonrpc_value, is_message
from pytest_agentctx.traffic.transport.wire import WireResponse

#: The URL scheme of an MCP server reached over stdio, in a cassette.
STDIO_SCHEME = "mcp+stdio"

#: The request header naming an MCP interaction's transport (``stdio``).
TRANSPORT_HEADER = "mcp-transport"
#: The request header with a stdio server's command line, redacted; informative only.
COMMAND_HEADER = "mcp-command"
#: The content type of a stdio interaction's response: the server's messages, one per line.
NDJSON = "application/x-ndjson"
#: The response extension a replayed MCP interaction carries its recorded JSON-RPC message
#: in (:func:`with_recorded`): a stdio session rewrites the recorded ids it replays.
RECORDED_EXTENSION = "agentctx_recorded_request"


def stdio_url(server: str) -> str:
    """The URL of the stdio server labelled ``server`` in a cassette:
    ``mcp+stdio://<server>/``."""
    return f"{STDIO_SCHEME}://{server}/"


def is_stdio_url(url: str) -> bool:
    """Whether ``url`` names a stdio server (:func:`stdio_url`)."""
    return url[: len(STDIO_SCHEME) + 1].lower() == STDIO_SCHEME + ":"


def is_jsonrpc(body: object) -> bool:
    """Whether ``body`` is a JSON-RPC 2.0 message or a non-empty batch of them: a parsed
    JSON value, or its text or bytes."""
    if isinstance(body, (str, bytes, bytearray)):
        head = body.lstrip()[:1]
        if head not in ("{", "[", b"{", b"["):
            return False
        try:
            body = json.loads(body)
        except ValueError:
            return False
    return is_jsonrpc_value(body)


def with_recorded(response: WireResponse, interaction: Interaction) -> WireResponse:
    """``response``, the replay of ``interaction``, with the recorded request's JSON-RPC
    message under :data:`RECORDED_EXTENSION` when it is an MCP request."""
    body = interaction.request_body
    message = body.get("json") if body is not None else None
    extensions = response.extensions
    if isinstance(extensions, dict) and is_jsonrpc_value(message):
        extensions[RECORDED_EXTENSION] = message
    return response


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _request_json(body: Body) -> object:
    if body is None:
        return None
    if "json" in body:
        return body["json"]
    try:
        return json.loads(body_bytes(body))
    except ValueError:
        return None


def _messages(value: object) -> list[dict[str, Any]]:
    """The JSON-RPC messages in a parsed value: it, or a batch's items."""
    if isinstance(value, list):
        return [dict(item) for item in value if is_message(item)]
    return [dict(value)] if is_message(value) else []  # type: ignore[call-overload]


def received_messages(body: Body) -> list[dict[str, Any]]:
    """The server's JSON-RPC messages in a stored response body: a JSON body (a message or a
    batch), the ``data`` of server-sent events, or NDJSON lines (a stdio interaction's
    body, which a single message is stored as JSON)."""
    if body is None:
        return []
    if "json" in body:
        return _messages(body["json"])
    if "sse" in body:
        found: list[dict[str, Any]] = []
        for event in body["sse"]:
            if isinstance(event, Mapping):
                data = event.get("data")
                if isinstance(data, str):
                    try:
                        data = json.loads(data)
                    except ValueError:
                        continue
                found.extend(_messages(data))
        return found
    try:
        text = body_bytes(body).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return []
    found = []
    for line in text.splitlines():
        if line.strip():
            try:
                found.extend(_messages(json.loads(line)))
            except ValueError:
                continue
    return found


def _is_endpoint_stream(body: Body) -> bool:
    """Whether ``body`` is the legacy SSE transport's stream (its ``endpoint`` event)."""
    return bool(body and "sse" in body) and any(
        isinstance(event, Mapping) and event.get("event") == "endpoint"
        for event in body["sse"]  # type: ignore[index]
    )


def is_mcp(interaction: Interaction) -> bool:
    """Whether ``interaction`` is MCP traffic (see the module's documentation)."""
    if is_stdio_url(interaction.url):
        return True
    if is_jsonrpc(_request_json(interaction.request_body)):
        return True
    if interaction.request_body is not None:
        return False
    if _header(interaction.request_headers, "mcp-session-id") is not None:
        return True
    return bool(received_messages(interaction.response_body)) or _is_endpoint_stream(
        interaction.response_body
    )


@dataclass(frozen=True)
class McpExchange:
    """One MCP interaction of a cassette: what the client sent and the server answered."""

    #: The interaction's index in the list it was read from.
    position: int
    #: The stdio label (``orders_server``), or the HTTP URL without its query.
    server: str
    #: ``"stdio"``, or ``"http"`` (streamable HTTP and the legacy SSE transport).
    transport: str
    #: The HTTP method (``"POST"`` for stdio).
    method: str
    #: The client's JSON-RPC message(s) (``[]`` for an HTTP ``GET`` or ``DELETE``).
    sent: list[dict[str, Any]]
    #: The server's messages in the interaction's response (a JSON body, the ``data`` of
    #: server-sent events, or NDJSON lines).
    received: list[dict[str, Any]]


def server_of(url: str) -> str:
    """The server an MCP interaction's URL names: a stdio label, or the URL without its
    query and fragment."""
    parts = urlsplit(url)
    if parts.scheme.lower() == STDIO_SCHEME:
        return parts.netloc
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def mcp_exchange(interaction: Interaction, position: int) -> McpExchange | None:
    """The MCP exchange of ``interaction`` (at ``position`` in its list), or ``None`` when
    it is not MCP traffic (:func:`is_mcp`)."""
    if not is_mcp(interaction):
        return None
    stdio = is_stdio_url(interaction.url)
    return McpExchange(
        position=position,
        server=server_of(interaction.url),
        transport="stdio" if stdio else "http",
        method=interaction.method.upper(),
        sent=_messages(_request_json(interaction.request_body)),
        received=received_messages(interaction.response_body),
    )


def mcp_exchanges(interactions: Sequence[Interaction]) -> list[McpExchange]:
    """The MCP exchanges among ``interactions``, in order, each with its position."""
    found = (mcp_exchange(interaction, at) for at, interaction in enumerate(interactions))
    return [exchange for exchange in found if exchange is not None]
