"""Multipart request bodies (uploads) read part by part, to be matched, redacted and shown.

A multipart body gets a new random boundary on every request, so its bytes never match a
recording's. It is matched by its parts instead (:func:`multipart_key`): each part by its
name, its file name, its content type and a digest of its content, whatever the boundary,
the order of the headers in a part, or their case. In a ``multipart/form-data`` body the
order of parts of different names does not matter (a form is read by field name, and an
SDK may put its fields in another order from one version to the next); parts that share a
name keep their order (a list of values). In the other multipart types (``mixed``,
``related``: a metadata part, then the media) the parts keep their order.

A body whose boundary cannot be found (none in its content type, none as its first line,
or one its bytes do not hold) is no multipart body here: it is matched byte for byte.

A live upload is redacted part by part (:func:`redact_parts`: a text part as text, a
binary one in its bytes). A recording stores it part by part (:func:`stored_multipart`:
each part's header lines, its content as text or base64) when the parts give back its
bytes exactly, which is how httpx, requests and the SDKs frame them; otherwise as text or
base64, as any other body. Either way every byte is kept, never a digest only: vcrpy's
format and ``match_on``'s matchers are given the bytes.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentctx.traffic.cassettes.mediatypes import media_type

#: A parameter of a header value (``name="file"``, ``filename=a.txt``), quotes escaped.
_PARAM = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


@dataclass(frozen=True)
class Part:
    """One part of a multipart body: its ``name`` and ``filename`` (from its
    ``content-disposition``; ``None`` when absent), its ``content_type`` (``""`` when
    absent), its ``headers`` (lower-case names, in order) and its ``content``."""

    name: str | None
    filename: str | None
    content_type: str
    headers: tuple[tuple[str, str], ...]
    content: bytes

    @property
    def text(self) -> str | None:
        """The content as text when it is UTF-8, else ``None``."""
        try:
            return self.content.decode("utf-8")
        except UnicodeDecodeError:
            return None


def may_be_multipart(raw: bytes, content_type: str | None) -> bool:
    """Whether ``raw`` may be a multipart body, at a glance (before it is split): its
    content type says so, or it has none and starts as a boundary line."""
    if content_type:
        return media_type(content_type).startswith("multipart/")
    return raw[:2] == b"--"


def _boundary(raw: bytes, content_type: str) -> bytes | None:
    """The boundary of ``raw``: its content type's, else its first line's, the first of
    them whose delimiter the body holds (``None``: no multipart body)."""
    found = []
    for param, value in _PARAM.findall(";" + content_type.partition(";")[2]):
        if param.lower() == "boundary" and value.strip().strip('"'):
            found.append(value.strip().strip('"').encode("latin-1", "replace"))
    if raw.startswith(b"--"):  # without a content type: a first line that is closed too
        line = raw.split(b"\n", 1)[0][2:].rstrip(b"\r").rstrip()
        if line and len(line) <= 200 and (found or b"--" + line + b"--" in raw):
            found.append(line)
    return next((b for b in found if b"--" + b in raw), None)


def _unquoted(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def _part(chunk: bytes) -> Part:
    head, sep, content = chunk.partition(b"\r\n\r\n")
    if not sep:
        head, sep, content = chunk.partition(b"\n\n")
    if not sep:  # no header block: all content
        head, content = (b"", chunk[2:]) if chunk.startswith(b"\r\n") else (b"", chunk)
    headers = []
    for line in head.decode("utf-8", "replace").splitlines():
        name, colon, value = line.partition(":")
        if colon:
            headers.append((name.strip().lower(), value.strip()))
    found = dict(headers)
    params = {
        name.lower(): _unquoted(value)
        for name, value in _PARAM.findall(found.get("content-disposition", ""))
    }
    kind = found.get("content-type", "")
    return Part(
        params.get("name"),
        params.get("filename"),
        "; ".join(piece.strip() for piece in kind.split(";") if piece.strip()).lower(),
        tuple(headers),
        content,
    )


def split_parts(raw: bytes, content_type: str | None) -> list[Part] | None:
    """The parts of the multipart body ``raw``, in order, or ``None`` when it is none (see
    the module docstring). CRLF and bare LF line ends are both read (a recording whose
    line ends were changed still matches)."""
    if not media_type(content_type).startswith("multipart/") and content_type:
        return None
    boundary = _boundary(raw, content_type or "")
    if boundary is None:
        return None
    parts = []
    for chunk in raw.split(b"--" + boundary)[1:]:
        if chunk.startswith(b"--"):  # the closing delimiter
            break
        chunk = chunk[2:] if chunk.startswith(b"\r\n") else chunk.removeprefix(b"\n")
        chunk = chunk[:-2] if chunk.endswith(b"\r\n") else chunk.removesuffix(b"\n")
        parts.append(_part(chunk))
    return parts


def hook_parts(raw: bytes, content_type: str | None) -> list[dict[str, object]]:
    """A multipart body as a ``body_hook`` is given it: its parts, in order, without the
    boundary, each a dict of ``name`` and ``filename`` (from its ``content-disposition``,
    ``None`` when absent), ``headers`` (lower-case names) and ``content`` (a ``str`` when
    UTF-8, else ``bytes``). A body whose boundary cannot be found is one part holding it
    all."""
    parts = split_parts(raw, content_type)
    if parts is None:
        parts = [Part(None, None, "", (), raw)]
    return [
        {
            "name": part.name,
            "filename": part.filename,
            "headers": dict(part.headers),
            "content": part.content if part.text is None else part.text,
        }
        for part in parts
    ]


def ordered(parts: list[Part], content_type: str | None) -> list[Part]:
    """``parts`` in the order they are matched: a form's by name (parts that share a name
    in their order), the others as they are."""
    if media_type(content_type) in ("multipart/form-data", ""):
        return sorted(parts, key=lambda part: part.name or "")
    return list(parts)


def digest(content: bytes) -> str:
    """The SHA-256 digest of ``content``, in hex: what the key holds of a part's content."""
    return hashlib.sha256(content).hexdigest()


def described(parts: list[Part]) -> list[dict[str, object]]:
    """What is matched of each part, readable: name, file name, content type, size, the
    digest of the content, and the content itself when it is text."""
    out: list[dict[str, object]] = []
    for part in parts:
        shown: dict[str, object] = {"name": part.name}
        if part.filename is not None:
            shown["filename"] = part.filename
        if part.content_type:
            shown["content_type"] = part.content_type
        text = part.text
        if text is not None:
            shown["text"] = text
        else:
            shown["size"] = len(part.content)
            shown["sha256"] = digest(part.content)
        out.append(shown)
    return out


def multipart_key(raw: bytes, content_type: str | None) -> list[list[object]] | None:
    """What two multipart bodies must share to match (``None``: ``raw`` is no multipart
    body, see :func:`split_parts`): for each part, in :func:`ordered` order, its name,
    file name, content type and content digest."""
    parts = split_parts(raw, content_type)
    if parts is None:
        return None
    return [
        [part.name, part.filename, part.content_type, digest(part.content)]
        for part in ordered(parts, content_type)
    ]


def redact_parts(
    raw: bytes,
    content_type: str | None,
    text: Callable[[str], str],
    binary: Callable[[bytes], bytes],
) -> bytes | None:
    """``raw`` with each part redacted by what it is: its headers and a UTF-8 content by
    ``text``, other content by ``binary`` (which overwrites a secret in place); the
    boundary and every byte between the parts kept. ``None`` when ``raw`` is no
    multipart body."""
    boundary = _boundary(raw, content_type or "")
    if boundary is None:
        return None
    delimiter = b"--" + boundary
    chunks = raw.split(delimiter)
    out = [_redact_bytes(chunks[0], text, binary)]  # the preamble
    for chunk in chunks[1:]:
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            head, sep, content = chunk.partition(b"\n\n")
        if not sep:
            out.append(_redact_bytes(chunk, text, binary))
            continue
        tail = b""
        for end in (b"\r\n", b"\n"):
            if content.endswith(end):
                content, tail = content[: -len(end)], end
                break
        out.append(
            _redact_bytes(head, text, binary) + sep + _redact_bytes(content, text, binary) + tail
        )
    return delimiter.join(out)


def _redact_bytes(
    content: bytes, text: Callable[[str], str], binary: Callable[[bytes], bytes]
) -> bytes:
    try:
        decoded = content.decode("utf-8")
    except UnicodeDecodeError:
        return binary(content)
    return text(decoded).encode()


# -- the stored form -----------------------------------------------------------------


def stored_multipart(raw: bytes, content_type: str | None) -> dict[str, Any] | None:
    """The stored form of a multipart request body, readable part by part:
    ``{"boundary": ..., "parts": [{"headers": ["Content-Disposition: ...", ...], "text":
    ...}, {"headers": [...], "base64": ...}]}`` (a part's content as text when it is
    UTF-8), from which :func:`multipart_bytes` gives back ``raw`` byte for byte. ``None``
    for a body that is not so framed (a preamble, an epilogue, bare LF line ends, a header
    that is not UTF-8): stored as text or base64 instead."""
    if content_type and not media_type(content_type).startswith("multipart/"):
        return None
    boundary = _boundary(raw, content_type or "") if raw[:2] == b"--" else None
    if boundary is None:
        return None
    delimiter = b"--" + boundary
    closing = b"\r\n" + delimiter + b"--\r\n"
    if not raw.startswith(delimiter + b"\r\n") or not raw.endswith(closing):
        return None
    inner = raw[len(delimiter) + 2 : -len(closing)]
    parts: list[dict[str, Any]] = []
    for chunk in inner.split(b"\r\n" + delimiter + b"\r\n"):
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            return None
        try:
            lines = head.decode("utf-8").split("\r\n") if head else []
        except UnicodeDecodeError:
            return None
        part: dict[str, Any] = {"headers": lines}
        try:
            part["text"] = content.decode("utf-8")
        except UnicodeDecodeError:
            part["base64"] = base64.b64encode(content).decode("ascii")
        parts.append(part)
    try:
        stored = {"boundary": boundary.decode("ascii"), "parts": parts}
    except UnicodeDecodeError:
        return None
    return stored if multipart_bytes(stored) == raw else None


def multipart_bytes(stored: Mapping[str, Any]) -> bytes:
    """The wire bytes of a stored multipart body (:func:`stored_multipart`)."""
    delimiter = b"--" + str(stored["boundary"]).encode("ascii")
    out = []
    for part in stored["parts"]:
        head = "\r\n".join(str(line) for line in part["headers"]).encode()
        if "base64" in part:
            content = base64.b64decode(part["base64"])
        else:
            content = str(part["text"]).encode()
        out.append(delimiter + b"\r\n" + head + b"\r\n\r\n" + content + b"\r\n")
    return b"".join(out) + delimiter + b"--\r\n"


def check_stored(value: object) -> dict[str, Any]:
    """A stored multipart body as read from a file, checked (``ValueError`` saying what is
    wrong)."""
    if not isinstance(value, Mapping) or not isinstance(value.get("boundary"), str):
        raise ValueError("a multipart body is not {boundary: str, parts: [...]}")
    parts = value.get("parts")
    if not isinstance(parts, list):
        raise ValueError("a multipart body's parts are not a list")
    for index, part in enumerate(parts):
        content = [key for key in ("text", "base64") if isinstance(part, Mapping) and key in part]
        if (
            not isinstance(part, Mapping)
            or not isinstance(part.get("headers"), list)
            or not all(isinstance(line, str) for line in part["headers"])
            or len(content) != 1
            or not isinstance(part[content[0]], str)
        ):
            raise ValueError(
                f"multipart part #{index} is not {{headers: [str], text: str}} nor "
                "{headers: [str], base64: str}"
            )
    return {"boundary": value["boundary"], "parts": [dict(part) for part in parts]}


def redact_stored(
    stored: Mapping[str, Any], text: Callable[[str], str], binary: Callable[[bytes], bytes]
) -> dict[str, Any]:
    """A stored multipart body with each part redacted: its headers and text by ``text``,
    its bytes by ``binary``."""
    parts = []
    for part in stored["parts"]:
        redacted: dict[str, Any] = {"headers": [text(line) for line in part["headers"]]}
        if "base64" in part:
            raw = base64.b64decode(part["base64"])
            redacted["base64"] = base64.b64encode(binary(raw)).decode("ascii")
        else:
            redacted["text"] = text(part["text"])
        parts.append(redacted)
    return {"boundary": stored["boundary"], "parts": parts}
