"""Bodies as a cassette stores them: readable, decoded, and turned back into wire bytes.

A stored body is one of ``None`` (empty), ``{"json": value}``, ``{"sse": [events]}``,
``{"text": str}`` or ``{"base64": str}``. Compressed bodies are stored decompressed, so a
cassette is readable in a diff (and can be scrubbed of secrets); on replay the body is
served uncompressed, without the ``content-encoding`` header. Server-sent events keep their
boundaries: each event is one chunk on replay, and an event's ``data`` is stored as JSON
when it is a JSON object.

Content encodings: ``gzip`` and ``deflate`` always; ``br`` with the ``brotli`` (or
``brotlicffi``) package and ``zstd`` with the ``zstandard`` package (or the standard
library's ``compression.zstd`` / ``backports.zstd``), when installed: the ``compression``
extra (``pip install 'pytest-agentctx[compression]'``) brings both. Several codings
(``gzip, br``) are undone in reverse order. :func:`decode_content` raises
:class:`UndecodableBody` for what it cannot undo, saying why and what to do.
"""

from __future__ import annotations

import base64
import gzip
import importlib
import json
import zlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = [
    "Body",
    "UndecodableBody",
    "body_bytes",
    "body_chunks",
    "decode_content",
    "decompress",
    "encode_body",
    "format_sse_event",
    "parse_sse",
    "whole_events",
]

Body = dict[str, Any] | None


#: What a client can ask for instead of an encoding this package cannot undo.
_ASK_FOR_GZIP = (
    "or make the client ask for an encoding this package decodes: send the request header "
    "'Accept-Encoding: gzip' (or 'identity')"
)


class UndecodableBody(ValueError):
    """A body that cannot be read here (a ``content-encoding`` it cannot undo), so cannot be
    scrubbed of secrets either.

    ``header`` and ``encoding`` name what was given (``content-encoding: 'compress'``),
    ``problem`` says why it cannot be read and ``fix`` what to do about it.
    """

    def __init__(
        self, encoding: str, problem: str, fix: str, *, header: str = "content-encoding"
    ) -> None:
        self.encoding = encoding
        self.problem = problem
        self.fix = fix
        self.header = header
        super().__init__(f"{header} {encoding!r}: {problem}; {fix}")


def _optional(*names: str) -> ModuleType | None:
    """The first of the modules ``names`` that imports, or ``None``."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _gunzip(raw: bytes) -> bytes:
    try:
        return gzip.decompress(raw)
    except EOFError:
        # A stream the client closed before the gzip trailer arrived (the openai SDK
        # stops reading at ``data: [DONE]``): keep everything that did arrive.
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw)


def _inflate(raw: bytes) -> bytes:
    try:
        return zlib.decompress(raw)
    except zlib.error:
        return zlib.decompress(raw, -zlib.MAX_WBITS)


def _unbrotli(raw: bytes) -> bytes:
    module = _optional("brotli", "brotlicffi")
    if module is None:
        raise _missing("br", "brotli")
    try:
        return bytes(module.decompress(raw))
    except module.error:
        # A stream cut short keeps what did arrive; bytes that decode to nothing are no
        # brotli stream at all.
        decompressor = module.Decompressor()
        process = getattr(decompressor, "process", None) or decompressor.decompress
        out = bytes(process(raw))
        if not out:
            raise
        return out


def _unzstd(raw: bytes) -> bytes:
    zstandard = _optional("zstandard")
    if zstandard is not None:
        reader = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)
        out = bytes(reader.decompress(raw))
        if not out and not reader.eof:
            raise ValueError("no complete zstd frame")
        return out
    module = _optional("compression.zstd", "backports.zstd")
    if module is None:
        raise _missing("zstd", "zstandard")
    parts: list[bytes] = []
    while raw:
        decompressor = module.ZstdDecompressor()
        parts.append(decompressor.decompress(raw))
        if not decompressor.eof:
            break
        raw = decompressor.unused_data
    return b"".join(parts)


def _missing(encoding: str, package: str) -> UndecodableBody:
    return UndecodableBody(
        encoding,
        f"decoding it needs the {package} package, which is not installed",
        f"install it (pip install {package}, or pip install 'pytest-agentctx[compression]') "
        + _ASK_FOR_GZIP,
    )


_DECODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": _gunzip,
    "x-gzip": _gunzip,
    "deflate": _inflate,
    "br": _unbrotli,
    "zstd": _unzstd,
}


def decode_content(raw: bytes, encoding: str | None) -> bytes:
    """``raw`` with its ``content-encoding`` undone (codings listed as ``gzip, br`` are
    undone last first); :class:`UndecodableBody` when it cannot be."""
    names = [name.strip().lower() for name in (encoding or "").split(",")]
    for name in reversed(names):
        if not name or name == "identity" or not raw:
            continue
        decoder = _DECODERS.get(name)
        if decoder is None:
            raise UndecodableBody(
                name,
                "pytest-agentctx does not know this encoding (it decodes gzip, deflate, br "
                "and zstd)",
                _ASK_FOR_GZIP[len("or ") :],
            )
        try:
            raw = decoder(raw)
        except UndecodableBody:
            raise
        except Exception as exc:  # each library has its own error class
            raise UndecodableBody(
                name,
                f"the bytes are not valid {name} data ({type(exc).__name__}: {exc})",
                "check what the server sent, " + _ASK_FOR_GZIP,
            ) from None
    return raw


def decompress(raw: bytes, encoding: str | None) -> tuple[bytes, bool]:
    """Undo a ``content-encoding``; returns the bytes and whether they were decoded (the
    bytes as given when they could not be, see :func:`decode_content`)."""
    try:
        return decode_content(raw, encoding), True
    except UndecodableBody:
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


def whole_events(data: bytes, content_type: str | None) -> bytes:
    """A server-sent-event stream cut short, up to the end of its last whole event (other
    bodies as they are)."""
    if "event-stream" not in (content_type or "").lower():
        return data
    ends = [
        at + len(sep) for sep in (b"\n\n", b"\r\n\r\n", b"\r\r") if (at := data.rfind(sep)) >= 0
    ]
    return data[: max(ends)] if ends else b""
