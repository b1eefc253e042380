"""Bodies as a cassette stores them: readable, decoded, and turned back into wire bytes.

A stored body is one of ``None`` (empty), ``{"json": value}``, ``{"sse": [events]}``,
``{"text": str}``, ``{"base64": str}`` or ``{"eventstream": [messages]}`` (AWS's binary
streams, see :mod:`.eventbody`). Compressed bodies are stored decompressed, so a
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
import importlib
import json
import zlib
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

import orjson

from pytest_agentctx._untrusted import current_limits
from pytest_agentctx.traffic.cassettes.eventbody import encode_eventstream, eventstream_chunks

Body = dict[str, Any] | None

#: Every digit made ``0`` and every other byte a space: 19 zeros in a row in a text so
#: translated are 19 digits in a row, maybe an integer past 64 bits, which orjson would
#: read as a float. (A regular expression takes ten times as long on a 2 KB body.)
DIGITS_AS_ZEROS = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
LONG_NUMBER = b"0" * 19


def orjson_reads(raw: bytes) -> bool:
    """Whether orjson reads every JSON text in ``raw`` as :mod:`json` does when it reads
    it at all: no 19 digits in a row (maybe an integer past 64 bits, which orjson reads
    as a float). Where orjson refuses a text (``NaN``, infinities, lone surrogates),
    :func:`loads_json` lets :mod:`json` read it."""
    return LONG_NUMBER not in raw.translate(DIGITS_AS_ZEROS)


def loads_json(text: str | bytes, fast: bool) -> object:
    """``json.loads(text)`` (``text``: str, or UTF-8 bytes), by orjson when ``fast``
    (:func:`orjson_reads` said so) and it reads ``text``; :class:`json.JSONDecodeError`
    when :mod:`json` refuses it."""
    if fast:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)


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


class BodyTooLarge(ValueError):
    """A body that decodes to more than the ``body_bytes`` limit
    (:mod:`pytest_agentctx._untrusted`): decoding stopped there. Never an
    :class:`UndecodableBody`: nothing treats it as bytes to keep as they are."""

    def __init__(self, encoding: str, limit: int) -> None:
        self.encoding = encoding
        self.limit = limit
        super().__init__(f"content-encoding {encoding!r} decoding to more than {limit} bytes")


def _zlib(raw: bytes, wbits: int, limit: int, name: str) -> bytes:
    """``raw`` inflated, every member of it (gzip files may hold several), stopping past
    ``limit`` bytes; a stream cut short keeps what did arrive."""
    parts: list[bytes] = []
    size = 0
    while raw:
        decompressor = zlib.decompressobj(wbits)
        out = decompressor.decompress(raw, limit + 1 - size)
        size += len(out)
        if size > limit or decompressor.unconsumed_tail:
            raise BodyTooLarge(name, limit)
        parts.append(out)
        if not decompressor.eof:
            if not parts[0] and len(parts) == 1:
                raise zlib.error("no complete stream")
            break  # cut short: keep what arrived
        raw = decompressor.unused_data
        if name != "gzip" or not raw.startswith(b"\x1f\x8b"):
            break
    return b"".join(parts)


def _gunzip(raw: bytes, limit: int) -> bytes:
    # A stream the client closed before the gzip trailer arrived (the openai SDK stops
    # reading at ``data: [DONE]``) keeps everything that did arrive.
    if not raw.startswith(b"\x1f\x8b"):
        raise OSError("Not a gzipped file")
    return _zlib(raw, 16 + zlib.MAX_WBITS, limit, "gzip")


def _inflate(raw: bytes, limit: int) -> bytes:
    try:
        return _zlib(raw, zlib.MAX_WBITS, limit, "deflate")
    except zlib.error:
        return _zlib(raw, -zlib.MAX_WBITS, limit, "deflate")


#: Input fed at once to a brotli decompressor without an output limit (brotli < 1.2).
_BROTLI_STEP = 256


def _unbrotli(raw: bytes, limit: int) -> bytes:
    module = _optional("brotli", "brotlicffi")
    if module is None:
        raise _missing("br", "brotli")
    decompressor = module.Decompressor()
    process = getattr(decompressor, "process", None) or decompressor.decompress
    parts: list[bytes] = []
    size = 0
    try:
        try:  # brotli 1.2: output bounded as it is made
            chunks: Iterable[bytes] = [bytes(process(raw, output_buffer_limit=limit + 1))]
        except TypeError:
            chunks = (
                bytes(process(raw[at : at + _BROTLI_STEP]))
                for at in range(0, len(raw), _BROTLI_STEP)
            )
        for out in chunks:
            size += len(out)
            if size > limit:
                raise BodyTooLarge("br", limit)
            parts.append(out)
    except module.error:
        # A stream cut short keeps what did arrive; bytes that decode to nothing are no
        # brotli stream at all.
        if not size:
            raise
        return b"".join(parts)
    finished = getattr(decompressor, "is_finished", lambda: True)()
    if not size and not finished:
        raise ValueError("not a brotli stream (it decodes to nothing)")
    return b"".join(parts)


def _unzstd(raw: bytes, limit: int) -> bytes:
    zstandard = _optional("zstandard")
    if zstandard is not None:
        # A stream reader keeps the frames that arrived whole and what a cut one gave.
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        out = bytes(reader.read(limit + 1))
        if len(out) > limit:
            raise BodyTooLarge("zstd", limit)
        if not out:
            raise ValueError("no complete zstd frame")
        return out
    module = _optional("compression.zstd", "backports.zstd")
    if module is None:
        raise _missing("zstd", "zstandard")
    parts: list[bytes] = []
    size = 0
    while raw:
        decompressor = module.ZstdDecompressor()
        out = decompressor.decompress(raw, max_length=limit + 1 - size)
        size += len(out)
        if size > limit or (not decompressor.needs_input and not decompressor.eof):
            raise BodyTooLarge("zstd", limit)
        parts.append(out)
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


_DECODERS: dict[str, Callable[[bytes, int], bytes]] = {
    "gzip": _gunzip,
    "x-gzip": _gunzip,
    "deflate": _inflate,
    "br": _unbrotli,
    "zstd": _unzstd,
}


def decode_content(raw: bytes, encoding: str | None, *, limit: int | None = None) -> bytes:
    """``raw`` with its ``content-encoding`` undone (codings listed as ``gzip, br`` are
    undone last first); :class:`UndecodableBody` when it cannot be, :class:`BodyTooLarge`
    when it decodes to more than ``limit`` bytes (the ``body_bytes`` limit by default):
    decoding stops there, whatever the coding."""
    most = current_limits().body_bytes if limit is None else limit
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
            raw = decoder(raw, most)
        except (UndecodableBody, BodyTooLarge, MemoryError):
            raise
        except Exception as exc:  # each library has its own error class
            raise UndecodableBody(
                name,
                f"the bytes are not valid {name} data ({type(exc).__name__}: {exc})",
                "check what the server sent, " + _ASK_FOR_GZIP,
            ) from None
    return raw


def decode_recorded(raw: bytes, encoding: str | None) -> bytes:
    """A body being recorded, decoded (:func:`decode_content`); one past the
    ``body_bytes`` limit is an :class:`UndecodableBody` too: not recorded, and the test is
    told why."""
    try:
        return decode_content(raw, encoding)
    except BodyTooLarge as exc:
        raise UndecodableBody(
            exc.encoding,
            f"it decodes to more than {exc.limit} bytes (the limit agent_max_body_bytes)",
            "if the server really sends bodies that large, raise agent_max_body_bytes in the "
            "pytest ini file",
        ) from None


def decompress(raw: bytes, encoding: str | None) -> tuple[bytes, bool]:
    """Undo a ``content-encoding``; returns the bytes and whether they were decoded (the
    bytes as given when they could not be, see :func:`decode_content`). A body past the
    size limit raises :class:`BodyTooLarge`: never kept to be decoded by someone else."""
    try:
        return decode_content(raw, encoding), True
    except UndecodableBody:
        return raw, False


def parse_sse(text: str, *, fast: bool | None = None) -> list[dict[str, object]]:
    """Split server-sent events into ``{"event": ..., "data": ...}`` dicts, in order
    (``fast``: :func:`orjson_reads` of the text's bytes, when known)."""
    if fast is None:
        fast = orjson_reads(text.encode("utf-8", "surrogatepass"))
    events: list[dict[str, object]] = []
    normalised = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    for block in normalised.split("\n\n"):
        if not block.strip():
            continue
        simple = _simple_event(block, fast)  # most events: a data line, an event line before
        if simple is not None:
            events.append(simple)
            continue
        event: dict[str, object] = {}
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
            event["data"] = _maybe_json(text_data, fast)
        events.append(event)
    return events


def _simple_event(block: str, fast: bool) -> dict[str, object] | None:
    """The event of ``block`` when it is one ``data`` line, maybe after one ``event``
    line (what :func:`parse_sse` makes of it, sooner); else ``None``."""
    event: dict[str, object] = {}
    if block[:6] == "event:":
        name, _, block = block.partition("\n")
        event["event"] = name[7:] if name[6:7] == " " else name[6:]
    if block[:5] != "data:" or "\n" in block:
        return None
    event["data"] = _maybe_json(block[6:] if block[5:6] == " " else block[5:], fast)
    return event


def _maybe_json(text: str, fast: bool) -> object:
    head = text[:1]
    if head in _JSON_STARTS or (head.isspace() and text.lstrip()[:1] in _JSON_STARTS):
        try:
            return loads_json(text, fast)
        except json.JSONDecodeError:
            return text
    return text


#: The first characters of the JSON texts an event's data is read as (objects, arrays).
_JSON_STARTS = ("{", "[")


def format_sse_event(event: Mapping[str, object]) -> bytes:
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
    if "vnd.amazon.eventstream" in kind:
        return encode_eventstream(raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}
    fast = orjson_reads(raw)
    if _is_sse(raw, kind):
        return {"sse": parse_sse(text, fast=fast)}
    if "json" in kind or text.lstrip().startswith(("{", "[")):
        try:
            return {"json": loads_json(raw, fast)}
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
    if "eventstream" in body:
        return eventstream_chunks(body["eventstream"])
    raise ValueError(
        f"A stored body has keys {sorted(body)}; expected one of json, sse, text, base64, "
        "eventstream."
    )


def body_bytes(body: Body) -> bytes:
    """Wire bytes of a stored body in one piece."""
    return b"".join(body_chunks(body))


def not_json(body: Body, content_type: str | None) -> str | None:
    """Why a client cannot read the stored response ``body`` as the JSON it expects there,
    or ``None``: a ``text`` body whose content type says JSON but which does not parse (an
    HTML error page behind a 200), or an event of a stream whose data starts as JSON but
    does not parse (a cut or edited event). What :func:`encode_body` stored from a JSON
    response that parsed is never such a body."""
    if not body:
        return None
    if "text" in body and "json" in (content_type or "").lower():
        why = f"though its content-type ({content_type}) says it is"
        return _parse_problem("its body", str(body["text"]), why)
    for index, event in enumerate(body.get("sse") or ()):
        data = event.get("data") if isinstance(event, Mapping) else None
        if isinstance(data, str) and data.lstrip().startswith("{"):  # not [DONE]
            problem = _parse_problem(
                f"the data of its event #{index}", data, "though it starts as JSON"
            )
            if problem is not None:
                return problem
    return None


def _parse_problem(what: str, text: str, why: str) -> str | None:
    try:
        json.loads(text)
    except ValueError as error:
        shown = text if len(text) <= 80 else text[:77] + "..."
        return f"{what} is not JSON, {why} ({error}): {shown!r}"
    return None


def whole_events(data: bytes, content_type: str | None) -> bytes:
    """A server-sent-event stream cut short, up to the end of its last whole event (other
    bodies as they are)."""
    if "event-stream" not in (content_type or "").lower():
        return data
    ends = [
        at + len(sep) for sep in (b"\n\n", b"\r\n\r\n", b"\r\r") if (at := data.rfind(sep)) >= 0
    ]
    return data[: max(ends)] if ends else b""


# -- request bodies as a body hook sees them ------------------------------------------

#: The kinds of request body a ``body_hook`` may be given, by what it receives: ``json``
#: the parsed JSON value, ``form`` a dict of field names to lists of values, ``multipart``
#: a list of parts (:func:`parse_multipart`), ``text`` a ``str``, ``bytes`` the bytes.
BODY_KINDS = ("json", "form", "multipart", "text", "bytes")


def media_type(content_type: str | None) -> str:
    """The media type of a ``content-type`` value, lower case, without its parameters
    (``multipart/form-data; boundary=x`` gives ``multipart/form-data``)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def header_of(headers: Mapping[str, str], name: str) -> str:
    """The value of header ``name`` (lower case) in ``headers``, whatever their case."""
    value = headers.get(name)
    if value is not None:
        return value
    return next((v for k, v in headers.items() if k.lower() == name), "")


def body_kind(raw: bytes, content_type: str | None, *, is_json: bool) -> str:
    """Which of :data:`BODY_KINDS` a request body is (``is_json``: it parses as JSON):
    JSON whatever its content type, then by its content type a form or multipart body
    (one whose content type is missing but whose first line is a boundary is multipart
    too), then text when it is UTF-8, else bytes."""
    if is_json:
        return "json"
    kind = media_type(content_type)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        text = False
    else:
        text = True
    if kind == "application/x-www-form-urlencoded" and text:
        return "form"
    if kind.startswith("multipart/") or (not kind and _boundary_of(raw, "")):
        return "multipart"
    return "text" if text else "bytes"


def parse_form(raw: bytes) -> dict[str, list[str]]:
    """A form body (``a=1&b=2&a=3``) as its field names, in order, each with its values."""
    from urllib.parse import parse_qsl

    fields: dict[str, list[str]] = {}
    for name, value in parse_qsl(raw.decode("utf-8"), keep_blank_values=True):
        fields.setdefault(name, []).append(value)
    return fields


def _boundary_of(raw: bytes, content_type: str) -> str:
    """The boundary of a multipart body: its content type's, else its first line's."""
    for param in content_type.split(";")[1:]:
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "boundary" and value.strip():
            return value.strip().strip('"')
    if raw.startswith(b"--"):
        line = raw.split(b"\r\n", 1)[0].split(b"\n", 1)[0][2:].rstrip()
        if line and len(line) <= 200 and b" " not in line:
            try:
                return line.decode("ascii")
            except UnicodeDecodeError:
                return ""
    return ""


def multipart_boundary(raw: bytes, content_type: str | None) -> str:
    """The boundary of a multipart body (``""`` when it has none)."""
    return _boundary_of(raw, content_type or "")


def parse_multipart(raw: bytes, content_type: str | None) -> list[dict[str, object]]:
    """A multipart body as its parts, in order, without the boundary: each a dict of
    ``name`` and ``filename`` (from its ``content-disposition``, ``None`` when absent),
    ``headers`` (lower-case names) and ``content`` (a ``str`` when UTF-8, else ``bytes``).
    A body without a boundary is one part holding it all."""
    boundary = _boundary_of(raw, content_type or "")
    if not boundary:
        return [_part(b"", raw)]
    delimiter = b"--" + boundary.encode("ascii")
    parts: list[dict[str, object]] = []
    for chunk in raw.split(delimiter)[1:]:
        if chunk.startswith(b"--"):  # the closing delimiter
            break
        chunk = chunk[2:] if chunk.startswith(b"\r\n") else chunk.lstrip(b"\n")
        chunk = chunk[:-2] if chunk.endswith(b"\r\n") else chunk.removesuffix(b"\n")
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            head, sep, content = chunk.partition(b"\n\n")
        parts.append(_part(head, content) if sep else _part(b"", chunk))
    return parts


def _part(head: bytes, content: bytes) -> dict[str, object]:
    headers: dict[str, str] = {}
    for line in head.decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    disposition = _disposition(headers.get("content-disposition", ""))
    try:
        shown: object = content.decode("utf-8")
    except UnicodeDecodeError:
        shown = content
    return {
        "name": disposition.get("name"),
        "filename": disposition.get("filename"),
        "headers": headers,
        "content": shown,
    }


def _disposition(value: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for param in value.split(";")[1:]:
        name, sep, text = param.strip().partition("=")
        if sep:
            params[name.strip().lower()] = text.strip().strip('"')
    return params


def hook_value(kind: str, raw: bytes, content_type: str | None) -> object:
    """What a body hook of ``kind`` (not ``json``) is given of the body ``raw``."""
    if kind == "form":
        return parse_form(raw)
    if kind == "multipart":
        return parse_multipart(raw, content_type)
    if kind == "text":
        return raw.decode("utf-8")
    return raw
