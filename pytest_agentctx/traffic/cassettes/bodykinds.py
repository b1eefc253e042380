"""Request bodies as a ``body_hook`` sees them, by their kind: the kind of a body
(:data:`BODY_KINDS`), a form's fields and a multipart body's parts."""

from __future__ import annotations

from pytest_agentctx.traffic.cassettes.mediatypes import media_type
from pytest_agentctx.traffic.cassettes.multipart import hook_parts, split_parts

#: The kinds of request body a ``body_hook`` may be given, by what it receives: ``json``
#: the parsed JSON value, ``form`` a dict of field names to lists of values, ``multipart``
#: a list of parts (:func:`.multipart.hook_parts`), ``text`` a ``str``, ``bytes`` the bytes.
BODY_KINDS = ("json", "form", "multipart", "text", "bytes")


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
    if kind.startswith("multipart/") or (not kind and _is_multipart(raw)):
        return "multipart"
    return "text" if text else "bytes"


def _is_multipart(raw: bytes) -> bool:
    """Whether ``raw``, without a content type, is a multipart body: its first line is a
    boundary that closes it (:func:`.multipart.split_parts`)."""
    return raw.startswith(b"--") and split_parts(raw, None) is not None


def parse_form(raw: bytes) -> dict[str, list[str]]:
    """A form body (``a=1&b=2&a=3``) as its field names, in order, each with its values."""
    from urllib.parse import parse_qsl

    fields: dict[str, list[str]] = {}
    for name, value in parse_qsl(raw.decode("utf-8"), keep_blank_values=True):
        fields.setdefault(name, []).append(value)
    return fields


def hook_value(kind: str, raw: bytes, content_type: str | None) -> object:
    """What a body hook of ``kind`` (not ``json``) is given of the body ``raw``."""
    if kind == "form":
        return parse_form(raw)
    if kind == "multipart":
        return hook_parts(raw, content_type)
    if kind == "text":
        return raw.decode("utf-8")
    return raw
