"""Request bodies as a ``body_hook`` sees them, by their kind: the media type of a
``content-type``, a header read whatever its case, the kind of a body (:data:`BODY_KINDS`),
a form's fields and a multipart body's parts."""

from __future__ import annotations

from collections.abc import Mapping

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
