"""MCP cassettes written by other recorders, read as the package's interactions.

Three recorders made for MCP alone keep a session in a file of their own; each is read here
into the package's interactions (:mod:`.wire`: one per message the client sent, stdio as
``POST mcp+stdio://<server>/`` answered with NDJSON, HTTP as HTTP interactions), which
``pytest-agentctx mcp import FILE --out CASSETTE`` writes as a cassette:

- **mcp-recorder** (JSON: ``version`` ``"1.x"``, ``metadata``, ``interactions`` of
  ``jsonrpc_request``, ``notification`` and ``lifecycle``): each interaction already pairs
  a client message with the server's answer. HTTP recordings become POSTs to the
  recorded server (its ``GET``/``DELETE`` too); stdio ones (``server_url``
  ``stdio://<command>``) stdio interactions. It keeps only the first message of each
  answer, so a server's notifications and requests sent during a call are not in the file.
- **mcp-cassette** for Python (JSON: ``format_version`` 1 or 2, ``transport``, ``messages``
  with ``seq``, ``sender``, ``kind``, ``payload``): a stream of messages. Over stdio each
  server message goes with the client message it follows (a response with the request it
  answers, or with the client's later answer to a request of the server's); over HTTP each
  ``exchange`` is one POST (one answer as JSON, several as server-sent events, as its
  replay serves them), and messages of the ``get`` channel one ``GET`` stream.
- **mcp-vcr** (YAML ``meta`` + ``messages`` of ``t``, ``dir``, ``payload``, or the same as
  NDJSON after a ``{"_type": "meta"}`` line) and the **mcp-cassette** of npm (JSONL: a
  ``header`` line, then ``frame`` lines of ``dir`` and ``frame``): a stream of messages
  as the client saw them over stdio, read as above.

What cannot be converted raises :class:`~pytest_agentctx.traffic.errors.CassetteFormatError`
saying what the file holds, why, and what to do. ``server`` names the stdio label (the one
the test's command gets: the stem of its first ``*.py`` argument, the module after ``-m``,
else the command's basename) or the HTTP server's URL.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pytest_agentctx._untrusted import LimitExceeded
from pytest_agentctx.traffic.cassettes.body import Body, encode_body
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.errors import CassetteFormatError
from pytest_agentctx.traffic.mcp.wire import NDJSON, TRANSPORT_HEADER, stdio_url

MCP_RECORDER = "mcp-recorder"
MCP_CASSETTE = "mcp-cassette"
MCP_CASSETTE_NPM = "mcp-cassette (npm)"
MCP_VCR = "mcp-vcr"

#: The session id given to an imported HTTP session whose file keeps none but whose client
#: opened streams a session id is needed for (its ``GET`` and ``DELETE``).
IMPORTED_SESSION = "imported-session"

_JSON = "application/json"
_SSE = "text/event-stream"
_NEXT = (
    "Record the session again with pytest-agentctx (pytest --agent-record) instead of "
    "importing this file."
)

Message = dict[str, Any]


@dataclass
class Imported:
    """A foreign cassette read: its format, its interactions, and what was left behind."""

    format: str
    transport: str
    server: str
    interactions: list[Interaction]
    notes: list[str] = field(default_factory=list)


def _error(where: str, what: str, why: str, then: str = _NEXT) -> CassetteFormatError:
    return CassetteFormatError(f"{where}: {what}; {why}. {then}")


def detect_format(text: str, where: str = "YAML document") -> str | None:
    """The recorder that wrote ``text`` (one of the names above), or ``None``."""
    first = text.lstrip().split("\n", 1)[0]
    try:
        head = json.loads(first)
    except ValueError:
        head = None
    if isinstance(head, dict) and "\n" in text.strip():
        if head.get("_type") == "meta":
            return MCP_VCR
        if head.get("type") == "header" and "cassetteVersion" in head:
            return MCP_CASSETTE_NPM
    data = _document(text, where)
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("interactions"), list) and isinstance(data.get("metadata"), dict):
        return MCP_RECORDER
    if isinstance(data.get("messages"), list) and "format_version" in data:
        return MCP_CASSETTE
    if isinstance(data.get("messages"), list) and isinstance(data.get("meta"), dict):
        return MCP_VCR
    return None


def _document(text: str, where: str = "YAML document") -> object:
    try:
        return json.loads(text)
    except ValueError:
        pass
    import yaml

    from pytest_agentctx.traffic.cassettes.yamlread import load

    try:
        return load(text, where)  # the safe loader's values, within the limits of untrusted files
    except (yaml.YAMLError, ValueError, OverflowError):
        return None


def import_foreign(text: str, where: str, *, server: str | None = None) -> Imported:
    """The interactions of the foreign cassette ``text`` (read from ``where``), its stdio
    label or HTTP URL ``server`` when given."""
    try:
        return _import(text, where, server)
    except LimitExceeded as exc:
        raise CassetteFormatError(str(exc)) from None
    except RecursionError:
        limit = LimitExceeded(where, "JSON nested deeper than its parser reads", "depth")
        raise CassetteFormatError(str(limit)) from None


def _import(text: str, where: str, server: str | None) -> Imported:
    kind = detect_format(text, where)
    if kind is None:
        data = _document(text, where)
        if isinstance(data, dict) and ("cassette" in data or "interactions" in data):
            raise _error(
                where,
                "this is a cassette the plugin reads as it is (its own format or vcrpy's)",
                "there is nothing to import",
                "Use it as the test's cassette (@pytest.mark.agent(cassette=...)).",
            )
        raise _error(
            where,
            "not a cassette of mcp-recorder, mcp-cassette or mcp-vcr",
            "expected mcp-recorder's JSON (version, metadata, interactions), mcp-cassette's "
            "JSON (format_version, messages) or JSONL (a header line, frame lines), or "
            "mcp-vcr's YAML (meta, messages) or NDJSON (a _type: meta line, messages)",
            "Give the file one of those recorders wrote.",
        )
    if kind == MCP_RECORDER:
        return _from_mcp_recorder(json.loads(text), where, server)
    if kind == MCP_CASSETTE:
        return _from_mcp_cassette(json.loads(text), where, server)
    if kind == MCP_CASSETTE_NPM:
        return _from_npm_cassette(_lines(text, where), where, server)
    return _from_mcp_vcr(text, where, server)


# -- labels and bodies ------------------------------------------------------------------


def label_of(argv: Sequence[str]) -> str:
    """The stdio label of a server started as ``argv``, as a test's command gets it
    (:func:`~pytest_agentctx.traffic.mcp.stdio.server_label`)."""
    from pytest_agentctx.traffic.mcp.stdio import server_label

    return server_label(argv[0], argv[1:]) if argv else "server"


def _clean_label(text: str) -> str:
    label = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return label or "server"


def check_label(label: str, where: str) -> str:
    """``label`` when it can name a stdio server in a URL, else an error."""
    if not label or _clean_label(label) != label:
        raise _error(
            where,
            f"--server {label!r} cannot be a stdio server's label",
            "a label is letters, digits, '.', '_' and '-' (the stem of the server's *.py, "
            "the module after -m, or the command's name)",
            "Give --server the label the test's command gets, e.g. --server orders_server.",
        )
    return label


def _ndjson(messages: Sequence[Message]) -> Body:
    if not messages:
        return None
    raw = "".join(json.dumps(m, ensure_ascii=False, separators=(",", ":")) + "\n" for m in messages)
    return encode_body(raw.encode("utf-8"), NDJSON)


def stdio_interaction(label: str, sent: Message, received: Sequence[Message]) -> Interaction:
    """The interaction of one client message ``sent`` to the stdio server ``label`` and
    the server's messages ``received`` after it."""
    return Interaction(
        method="POST",
        url=stdio_url(label),
        request_headers={"content-type": _JSON, TRANSPORT_HEADER: "stdio"},
        request_body={"json": sent},
        status=200,
        response_headers={"content-type": NDJSON},
        response_body=_ndjson(received),
    )


def http_answer(messages: Sequence[Message], *, sse: bool) -> tuple[dict[str, str], Body]:
    """The response headers and body of an HTTP POST answered with ``messages``."""
    if not messages:
        return {}, None
    if sse:
        events = [{"event": "message", "data": m} for m in messages]
        return {"content-type": _SSE}, {"sse": events}
    return {"content-type": _JSON}, {"json": messages[0]}


def http_url(given: str | None, recorded: str | None, where: str) -> str:
    """The URL an HTTP session's POSTs go to: ``given`` (``--server``), else ``recorded``."""
    url = given or recorded or ""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        shown = repr(recorded) if recorded else "none"
        raise _error(
            where,
            f"an HTTP session whose server URL is {shown if not given else repr(given)}",
            "its POSTs need the MCP endpoint's http(s) URL",
            "Give it: --server http://127.0.0.1:8000/mcp (the URL the test's client uses).",
        )
    return url


# -- message streams (stdio) -----------------------------------------------------------


def _is_response(message: Message) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


def stream_to_stdio(
    stream: Sequence[tuple[str, Message]], label: str, where: str
) -> list[Interaction]:
    """Interactions of a stdio session recorded as a stream of ``(sender, message)``,
    ``sender`` ``"client"`` or ``"server"``.

    Each server message goes with the latest client message the server had to see before
    writing it: a response with the request it answers, a notification or request with
    the oldest request still unanswered, each never before the client's latest answer to
    a request of the server's (sampling, elicitation). A client that wrote several
    messages before reading (pipelining) is so replayed message by message."""
    sent: list[Message] = []
    received: list[list[Message]] = []
    by_id: dict[str, int] = {}
    pending: list[int] = []
    answered_at = -1
    for sender, message in stream:
        if sender == "client":
            at = len(sent)
            sent.append(message)
            received.append([])
            if _is_response(message):
                answered_at = at
            elif "id" in message and "method" in message:
                by_id[json.dumps(message["id"])] = at
                pending.append(at)
            continue
        if not sent:
            raise _error(
                where,
                f"the server wrote {json.dumps(message)[:80]} before the client sent anything",
                "each interaction starts with a client message",
                "Remove the messages before the client's first one.",
            )
        if _is_response(message):
            asked = by_id.get(json.dumps(message.get("id")))
            if asked is not None and asked in pending:
                pending.remove(asked)
            target = asked if asked is not None else len(sent) - 1
        else:
            target = pending[0] if pending else len(sent) - 1
        received[max(target, answered_at)].append(message)
    return [
        stdio_interaction(label, message, answer)
        for message, answer in zip(sent, received, strict=True)
    ]


def _message(value: object, where: str, at: str) -> Message:
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
        raise _error(
            where,
            f"{at} is {json.dumps(value)[:80] if value is not None else 'empty'}",
            "a message must be a JSON-RPC 2.0 object (the package stores JSON-RPC only)",
            "Remove that message from the file, or record the session again.",
        )
    return value


# -- mcp-cassette (Python) -------------------------------------------------------------


def _from_mcp_cassette(data: dict[str, Any], where: str, server: str | None) -> Imported:
    version = data.get("format_version")
    if version not in (1, 2):
        raise _error(
            where,
            f"an mcp-cassette file of format_version {version!r}",
            "this converter reads format_version 1 and 2",
            "Re-save it with an mcp-cassette that writes version 2, or record again.",
        )
    notes: list[str] = []
    messages: list[dict[str, Any]] = []
    for raw in data["messages"]:
        if not isinstance(raw, dict) or raw.get("sender") not in ("client", "server"):
            raise _error(where, f"message {raw!r:.80}", "it has no sender client/server")
        if raw.get("kind") == "raw" or not isinstance(raw.get("payload"), dict):
            if raw.get("sender") == "client":
                raise _error(
                    where,
                    f"client message seq {raw.get('seq')} is not JSON ({raw.get('payload')!r:.60})",
                    "the package stores JSON-RPC messages only",
                )
            notes.append(f"dropped the server's non-JSON line at seq {raw.get('seq')}")
            continue
        messages.append(raw)
    messages.sort(key=lambda raw: raw.get("seq", 0))
    transport = data.get("transport", "stdio")
    info = data.get("server_info")
    if transport == "http":
        url = http_url(server, data.get("server_url"), where)
        if any(raw["sender"] == "server" and raw.get("channel") == "get" for raw in messages):
            notes.append(
                "the server's messages on its GET stream are replayed when the client opens "
                "that stream, not at the moment they were recorded"
            )
        return Imported(MCP_CASSETTE, "http", url, _cassette_http(messages, url, where), notes)
    if transport != "stdio":
        raise _error(where, f"transport {transport!r}", "expected stdio or http")
    name = info.get("name") if isinstance(info, dict) else None
    label = check_label(server, where) if server else _clean_label(str(name or "server"))
    stream = [
        (raw["sender"], _message(raw["payload"], where, f"message seq {raw.get('seq')}"))
        for raw in messages
    ]
    return Imported(MCP_CASSETTE, "stdio", label, stream_to_stdio(stream, label, where), notes)


def _cassette_http(messages: list[dict[str, Any]], url: str, where: str) -> list[Interaction]:
    exchanges: dict[int, tuple[list[Message], list[Message]]] = {}
    pushed: list[Message] = []
    for raw in messages:
        payload = _message(raw["payload"], where, f"message seq {raw.get('seq')}")
        if raw["sender"] == "server" and raw.get("channel") == "get":
            pushed.append(payload)
            continue
        number = raw.get("exchange")
        if not isinstance(number, int):
            raise _error(where, f"message seq {raw.get('seq')}", "it has no HTTP exchange number")
        client, server = exchanges.setdefault(number, ([], []))
        (client if raw["sender"] == "client" else server).append(payload)
    session = IMPORTED_SESSION if pushed else None
    found: list[Interaction] = []
    for number in sorted(exchanges):
        client, answer = exchanges[number]
        if not client:
            raise _error(where, f"HTTP exchange {number}", "it holds no client message")
        headers, body = http_answer(answer, sse=len(answer) > 1)
        if session and any(m.get("method") == "initialize" for m in client):
            headers["mcp-session-id"] = session
        found.append(
            Interaction(
                method="POST",
                url=url,
                request_headers={"content-type": _JSON},
                request_body={"json": client[0] if len(client) == 1 else client},
                status=200 if answer else 202,
                response_headers=headers,
                response_body=body,
            )
        )
        if session and any(m.get("method") == "notifications/initialized" for m in client):
            found.append(get_stream(url, session, pushed))
    return found


def get_stream(url: str, session: str, pushed: Sequence[Message]) -> Interaction:
    """The client's standalone ``GET`` stream, answered with the messages ``pushed``."""
    headers, body = http_answer(pushed, sse=True)
    return Interaction(
        method="GET",
        url=url,
        request_headers={"accept": _SSE, "mcp-session-id": session},
        request_body=None,
        status=200,
        response_headers=headers or {"content-type": _SSE},
        response_body=body,
    )


# -- mcp-vcr and mcp-cassette (npm) ----------------------------------------------------


def _lines(text: str, where: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise _error(
                where, f"line {number} is not JSON ({exc})", "each line is one JSON"
            ) from None
        if isinstance(value, dict):
            found.append(value)
    return found


def _directed(items: Iterator[tuple[object, object]], where: str) -> list[tuple[str, Message]]:
    stream: list[tuple[str, Message]] = []
    for at, (direction, payload) in enumerate(items):
        if direction not in ("c2s", "s2c"):
            raise _error(where, f"message {at} has dir {direction!r}", "expected c2s or s2c")
        sender = "client" if direction == "c2s" else "server"
        stream.append((sender, _message(payload, where, f"message {at}")))
    return stream


def _command_label(command: object, server: str | None, where: str) -> str:
    if server:
        return check_label(server, where)
    if isinstance(command, str):
        command = shlex.split(command)
    if isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        return _clean_label(label_of(command))
    return "server"


def _from_mcp_vcr(text: str, where: str, server: str | None) -> Imported:
    if text.lstrip().startswith("{") and '"_type"' in text.split("\n", 1)[0]:
        lines = _lines(text, where)
        meta, messages = lines[0], lines[1:]
    else:
        data = _document(text, where)
        assert isinstance(data, dict)
        meta, messages = data["meta"], [m for m in data["messages"] if isinstance(m, dict)]
    version = meta.get("version", 1)
    if version != 1:
        raise _error(
            where,
            f"an mcp-vcr transcript of version {version!r}",
            "this converter reads version 1",
            "Record again, or convert it with mcp-vcr to version 1.",
        )
    label = _command_label(meta.get("server_command"), server, where)
    stream = _directed(((m.get("dir"), m.get("payload")) for m in messages), where)
    return Imported(MCP_VCR, "stdio", label, stream_to_stdio(stream, label, where))


def _from_npm_cassette(lines: list[dict[str, Any]], where: str, server: str | None) -> Imported:
    header = lines[0]
    if header.get("transport", "stdio") != "stdio":
        raise _error(
            where,
            f"an mcp-cassette (npm) recording over {header.get('transport')!r}",
            "this converter reads its stdio recordings only",
        )
    frames = [line for line in lines[1:] if line.get("type") == "frame"]
    label = _command_label(header.get("command"), server, where)
    stream = _directed(((f.get("dir"), f.get("frame")) for f in frames), where)
    return Imported(MCP_CASSETTE_NPM, "stdio", label, stream_to_stdio(stream, label, where))


# -- mcp-recorder ----------------------------------------------------------------------


def _from_mcp_recorder(data: dict[str, Any], where: str, server: str | None) -> Imported:
    version = str(data.get("version", ""))
    if version.split(".")[0] != "1":
        raise _error(
            where,
            f"an mcp-recorder cassette of version {version!r}",
            "this converter reads version 1.x",
            "Record it again with mcp-recorder 0.x, or with pytest-agentctx.",
        )
    meta = data["metadata"]
    recorded = str(meta.get("server_url") or "")
    items = [item for item in data["interactions"] if isinstance(item, dict)]
    notes = [
        "mcp-recorder keeps the first message of each answer: notifications and requests "
        "the server sent before its response are not in the file"
    ]
    if meta.get("transport_type") == "stdio" or recorded.startswith("stdio://"):
        command = recorded.removeprefix("stdio://")
        label = _command_label(command or None, server, where)
        found = []
        for at, item in enumerate(items):
            if item.get("type") == "lifecycle":
                continue
            sent = _message(item.get("request"), where, f"interaction {at}'s request")
            answer = item.get("response")
            received = [_message(answer, where, f"interaction {at}'s response")] if answer else []
            found.append(stdio_interaction(label, sent, received))
        return Imported(MCP_RECORDER, "stdio", label, found, notes)
    lifecycle = [item for item in items if item.get("type") == "lifecycle"]
    base = recorded.rstrip("/")
    if server is None and recorded and not urlsplit(recorded).path.strip("/"):
        paths = {str(item.get("http_path") or "") for item in lifecycle} - {""}
        base += paths.pop() if len(paths) == 1 else "/mcp"
        notes.append(f"the file keeps no POST path: posted to {base} (--server to change it)")
    url = http_url(server, base or None, where)
    session = IMPORTED_SESSION if lifecycle else None
    found = [_recorder_http(item, at, url, session, where) for at, item in enumerate(items)]
    return Imported(MCP_RECORDER, "http", url, found, notes)


def _recorder_http(
    item: dict[str, Any], at: int, url: str, session: str | None, where: str
) -> Interaction:
    status = item.get("response_status", 200)
    if not isinstance(status, int):
        raise _error(where, f"interaction {at}'s response_status {status!r}", "expected a number")
    if item.get("type") == "lifecycle":
        method = str(item.get("http_method") or "")
        if method not in ("GET", "DELETE"):
            raise _error(where, f"interaction {at}: lifecycle {method!r}", "expected GET or DELETE")
        sse = bool(item.get("response_is_sse"))
        path = str(item.get("http_path") or "")
        parts = urlsplit(url)
        target = parts._replace(path=path).geturl() if path else url
        return Interaction(
            method=method,
            url=target,
            request_headers={"mcp-session-id": session or IMPORTED_SESSION},
            request_body=None,
            status=status,
            response_headers={"content-type": _SSE} if sse else {},
            response_body=None,
        )
    sent = _message(item.get("request"), where, f"interaction {at}'s request")
    answer = item.get("response")
    received = [_message(answer, where, f"interaction {at}'s response")] if answer else []
    headers, body = http_answer(received, sse=bool(item.get("response_is_sse")))
    if session and sent.get("method") == "initialize":
        headers["mcp-session-id"] = session
    return Interaction(
        method="POST",
        url=url,
        request_headers={"content-type": _JSON},
        request_body={"json": sent},
        status=status,
        response_headers=headers,
        response_body=body,
    )
