"""Bodies as a cassette stores them: readable, decoded, and turned back into wire bytes.

A stored body is one of ``None`` (empty), ``{"json": value}``, ``{"sse": [events]}``,
``{"text": str}`` or ``{"base64": str}``. Compressed bodies are stored decompressed, so a
cassette is readable in a diff; on replay the body is served uncompressed, without the
``content-encoding`` header. Server-sent events keep their boundaries: each event is one
chunk on replay, and an event's ``data`` is stored as JSON when it is a JSON object.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from collections.abc import Mapping
from typing import Any

__all__ = [
    "Body",
    "body_bytes",
    "body_chunks",
    "decompress",
    "encode_body",
    "format_sse_event",
    "parse_sse",
]

Body = dict[str, Any] | None


def decompress(raw: bytes, encoding: str | None) -> tuple[bytes, bool]:
    """Undo a ``content-encoding``; returns the bytes and whether they were decoded."""
    name = (encoding or "").strip().lower()
    if not name or name == "identity" or not raw:
        return raw, True
    try:
        if name in ("gzip", "x-gzip"):
            try:
                return gzip.decompress(raw), True
            except EOFError:
                # A stream the client closed before the gzip trailer arrived (the openai
                # SDK stops reading at ``data: [DONE]``): keep everything that did arrive.
                return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw), True
        if name == "deflate":
            try:
                return zlib.decompress(raw), True
            except zlib.error:
                return zlib.decompress(raw, -zlib.MAX_WBITS), True
    except (OSError, zlib.error, EOFError):
        return raw, False
    return raw, False


def parse_sse(text: str) -> list[dict[str, Any]]:
    """Split server-sent events into ``{"event": ..., "data": ...}`` dicts, in order."""
    events: list[dict[str, Any]] = []
    normalised = text.replace("\r\n", "\n").replace("\r", "\n")
    for block in normalised.split("\n\n"):
        if not block.strip():
            continue
        event: dict[str, Any] = {}
        data: list[str] = []
        comments: list[str] = []
        for line in block.split("\n"):
            if line.startswith(":"):
                comments.append(line[1:].lstrip())
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field in ("event", "id", "retry"):
                event[field] = value
        if comments and not data and not event:
            events.append({"comment": "\n".join(comments)})
            continue
        if data:
            text_data = "\n".join(data)
            event["data"] = _maybe_json(text_data)
        events.append(event)
    return events


def _maybe_json(text: str) -> Any:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    return text


def format_sse_event(event: Mapping[str, Any]) -> bytes:
    """One stored event back as its wire bytes, ending with the blank line."""
    if "comment" in event:
        return f": {event['comment']}\n\n".encode()
    lines = []
    for field in ("id", "event", "retry"):
        if field in event:
            lines.append(f"{field}: {event[field]}")
    if "data" in event:
        data = event["data"]
        text = (
            data
            if isinstance(data, str)
            else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        )
        lines.extend(f"data: {line}" for line in text.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


def _is_sse(raw: bytes, content_type: str) -> bool:
    if "text/event-stream" in content_type:
        return True
    head = raw[:200].lstrip()
    return head.startswith((b"data:", b"event:", b"id:")) and (
        b"\n\n" in raw or b"\r\n\r\n" in raw or b"\r\r" in raw
    )


def encode_body(raw: bytes, content_type: str | None = None) -> Body:
    """The stored form of ``raw`` (already decompressed)."""
    if not raw:
        return None
    kind = (content_type or "").lower()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}
    if _is_sse(raw, kind):
        return {"sse": parse_sse(text)}
    if "json" in kind or text.lstrip().startswith(("{", "[")):
        try:
            return {"json": json.loads(text)}
        except json.JSONDecodeError:
            pass
    return {"text": text}


def body_chunks(body: Body) -> list[bytes]:
    """Wire bytes of a stored body, one chunk per server-sent event."""
    if body is None:
        return []
    if "json" in body:
        return [json.dumps(body["json"], ensure_ascii=False).encode()]
    if "sse" in body:
        return [format_sse_event(event) for event in body["sse"]]
    if "text" in body:
        return [str(body["text"]).encode()]
    if "base64" in body:
        return [base64.b64decode(body["base64"])]
    raise ValueError(
        f"A stored body has keys {sorted(body)}; expected one of json, sse, text, base64."
    )


def body_bytes(body: Body) -> bytes:
    """Wire bytes of a stored body in one piece."""
    return b"".join(body_chunks(body))
