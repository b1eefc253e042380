"""JSON-RPC 2.0 messages of MCP as matching compares them, and as messages name them.

Two MCP requests match when they differ only in what changes from run to run without
changing what the client asks (:data:`VOLATILE`): the JSON-RPC ``id`` a session numbers its
requests with, the progress token a request carries in ``params._meta.progressToken``, and
over HTTP the ``Mcp-Session-Id`` header and the legacy SSE transport's ``session_id`` query
parameter, both given by the server. The W3C trace context a client puts in ``params._meta``
when an OpenTelemetry span is active (fastmcp's client does, so pydantic-ai's MCP toolsets
do) is left out whether it is there or not (:data:`TRACE_CONTEXT`): another test in the same
process that set up tracing must not turn a recorded request into a miss. :func:`normalised`
is a message as it is compared; :func:`with_id` a copy under another id; :func:`describe`
names a message in a few words (``tools/call get_order``), for miss messages and reports.

Nothing here imports the mcp SDK, or the cassettes: the cassettes' matching imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: What a compared message holds where a volatile value was: its presence is kept (a
#: request and a notification of the same method still differ), its value not.
PLACEHOLDER = "<volatile>"


@dataclass(frozen=True)
class Volatile:
    """What matching ignores in MCP requests."""

    #: Paths into a message: the top-level ``id``, ``params._meta.progressToken``.
    fields: tuple[tuple[str, ...], ...]
    #: Request headers (lower-case): streamable HTTP's session.
    headers: frozenset[str]
    #: Query parameters: the legacy SSE transport's session.
    query: frozenset[str]
    #: Keys of ``params._meta`` left out entirely (present or not): W3C trace context.
    trace_context: frozenset[str]


#: What matching ignores in every MCP request (stdio and HTTP).
VOLATILE = Volatile(
    fields=(("id",), ("params", "_meta", "progressToken")),
    headers=frozenset({"mcp-session-id"}),
    query=frozenset({"session_id"}),
    trace_context=frozenset({"traceparent", "tracestate", "baggage"}),
)

#: The ``params._meta`` keys a tracing client adds: matching never sees them.
TRACE_CONTEXT = VOLATILE.trace_context


def is_message(value: object) -> bool:
    """Whether ``value`` is one JSON-RPC 2.0 message (a mapping with ``"jsonrpc": "2.0"``)."""
    return isinstance(value, Mapping) and value.get("jsonrpc") == "2.0"


def is_jsonrpc_value(value: object) -> bool:
    """Whether the parsed JSON ``value`` is a JSON-RPC 2.0 message or a non-empty batch."""
    if isinstance(value, list):
        return bool(value) and all(is_message(item) for item in value)
    return is_message(value)


def _replaced(value: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any]:
    """``value`` with the field at ``path`` made :data:`PLACEHOLDER` (itself when absent)."""
    head, rest = path[0], path[1:]
    if head not in value:
        return value
    inner = value[head]
    if not rest:
        new: object = PLACEHOLDER
    elif isinstance(inner, Mapping):
        new = _replaced(inner, rest)
        if new is inner:
            return value
    else:
        return value
    return {**value, head: new}


def _untraced(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """``message`` without the trace context keys of ``params._meta`` (itself when it has
    none); a ``_meta`` left empty goes too (an empty one means nothing), so a traced request
    and an untraced one compare equal."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    if not isinstance(meta, Mapping) or (meta and TRACE_CONTEXT.isdisjoint(meta)):
        return message
    kept = {key: value for key, value in meta.items() if key not in TRACE_CONTEXT}
    assert isinstance(params, Mapping)
    rest = {key: value for key, value in params.items() if key != "_meta"}
    return {**message, "params": {**rest, "_meta": kept} if kept else rest}


def normalised(message: object) -> object:
    """``message`` as matching compares it: each volatile field (:data:`VOLATILE`) it has
    made :data:`PLACEHOLDER`, a batch item by item; any other value as it is. Never changes
    ``message``; idempotent."""
    if isinstance(message, list):
        if not is_jsonrpc_value(message):
            return message
        return [normalised(item) for item in message]
    if not is_message(message):
        return message
    result: Mapping[str, Any] = _untraced(message)  # type: ignore[arg-type]
    for path in VOLATILE.fields:
        result = _replaced(result, path)
    return dict(result) if result is not message else message


def with_id(message: Mapping[str, Any], id: object) -> dict[str, Any]:
    """A copy of ``message`` whose JSON-RPC ``id`` is ``id``."""
    return {**message, "id": id}


def progress_token(message: Mapping[str, Any]) -> object:
    """The progress token a request carries (``params._meta.progressToken``), or ``None``."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return meta.get("progressToken") if isinstance(meta, Mapping) else None


#: The argument that names what a request of these methods is about.
_SUBJECT = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "resources/subscribe": "uri",
    "resources/unsubscribe": "uri",
    "completion/complete": "ref",
}

#: A result's keys that tell which request it answers.
_RESULT_OF = (
    ("protocolVersion", "initialize"),
    ("tools", "tools/list"),
    ("resources", "resources/list"),
    ("resourceTemplates", "resources/templates/list"),
    ("prompts", "prompts/list"),
    ("contents", "resources/read"),
    ("messages", "prompts/get"),
    ("completion", "completion/complete"),
    ("roots", "roots/list"),
    ("action", "elicitation/create"),
    ("model", "sampling/createMessage"),
    ("content", "tools/call"),
    ("structuredContent", "tools/call"),
)


def _subject(method: str, params: object) -> str:
    key = _SUBJECT.get(method)
    if key is None or not isinstance(params, Mapping):
        return ""
    value = params.get(key)
    if isinstance(value, Mapping):  # completion's ref: a prompt or a resource template
        value = value.get("name") or value.get("uri")
    return f" {value}" if isinstance(value, str) and value else ""


def answered_method(result: object) -> str | None:
    """The method a result most likely answers, read from its keys, or ``None``."""
    if not isinstance(result, Mapping):
        return None
    return next((method for key, method in _RESULT_OF if key in result), None)


def describe(message: object, methods: Mapping[object, str] | None = None) -> str:
    """``message`` in a few words: ``tools/call get_order``, ``initialize``,
    ``notifications/progress``, ``response to tools/list``, ``error response to
    tools/call (-32602: ...)``, ``batch of 2: ...``. ``methods`` maps request ids to their
    methods, when known; else a response's method is read from its result's keys."""
    if isinstance(message, list):
        return f"batch of {len(message)}: " + ", ".join(describe(m, methods) for m in message)
    if not isinstance(message, Mapping):
        return "not a JSON-RPC message"
    method = message.get("method")
    if isinstance(method, str):
        return method + _subject(method, message.get("params"))
    known = (methods or {}).get(_hashable(message.get("id")))
    if "error" in message:
        error = message.get("error")
        detail = ""
        if isinstance(error, Mapping):
            detail = f" ({error.get('code')}: {error.get('message')})"
        return f"error response{f' to {known}' if known else ''}{detail}"
    answered = known or answered_method(message.get("result"))
    return f"response to {answered}" if answered else f"response to request {message.get('id')!r}"


def _hashable(value: object) -> object:
    return value if isinstance(value, str | int | float | bool | None) else repr(value)
