"""The media type of a ``content-type`` value, and a header read whatever its case: what
the body kinds, the multipart reader, the matchers and the miss messages share."""

from __future__ import annotations

from collections.abc import Mapping


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
