"""Secrets known by their shape, whatever their value: AWS credentials.

The redactor (:mod:`.redactor`) scrubs the values it knows (secret environment variables,
values learned from requests). A few secrets are recognisable without being known, and
reach files where no request taught them: an access key id that an STS call answers, a
presigned URL (``X-Amz-Credential=AKIA...%2F20260101%2F...``), a SigV4 ``Authorization``
header quoted in an error message or a log line. Here they are found by their shape:

* AWS access key ids: ``AKIA`` (long-term) or ``ASIA`` (temporary, with a session token),
  then 16 upper-case letters or digits (20 characters in all);
* the query parameters a presigned URL is signed with (:data:`SIGNED_PARAMS`);
* the key id of a SigV4 credential scope, ``Credential=<key id>/<date>/<region>/...``
  (in an ``Authorization`` header, or percent-encoded in a presigned URL's query), whatever
  the key id looks like (a test's fake ``testing`` too).

:func:`marked` and :func:`marked_bytes` are the cheap looks (substring finds, one pass
over the text each: they are few) that tell whether a text may hold one; :func:`scrub` and
:func:`scrub_bytes` replace them (in bytes, by as many bytes of ``REDACTED``, so lengths
and offsets stay valid).
"""

from __future__ import annotations

import re

#: What every secret of a known shape holds: a text without any of them holds none.
MARKERS = ("AKIA", "ASIA", "Credential=")
_BYTE_MARKERS = tuple(marker.encode() for marker in MARKERS)

#: An access key id, not inside a longer run of upper-case letters and digits.
_KEY_ID = r"(?<![A-Z0-9])A[KS]IA[A-Z0-9]{16}(?![A-Z0-9])"
#: The key id of a credential scope: up to its ``/`` (or ``%2F``), a separator or the end.
_CREDENTIAL = r"(?<=Credential=)[^/%\s,;&\"'<>]+"
_SHAPES = re.compile(f"{_KEY_ID}|{_CREDENTIAL}")
_BYTE_SHAPES = re.compile(_SHAPES.pattern.encode())

REDACTED = "REDACTED"

#: The query parameters of a presigned URL (SigV4) that change with every signing: the
#: time, the credential scope (its date), the signature and the session token.
SIGNED_PARAMS = frozenset(
    {"x-amz-date", "x-amz-credential", "x-amz-signature", "x-amz-security-token"}
)


def marked(text: str) -> bool:
    """Whether ``text`` may hold a secret of a known shape (a quick look)."""
    return any(marker in text for marker in MARKERS)


def marked_bytes(raw: bytes) -> bool:
    """:func:`marked` for bytes."""
    return any(marker in raw for marker in _BYTE_MARKERS)


def scrub(text: str) -> str:
    """``text`` with every secret of a known shape replaced by ``REDACTED``."""
    if not marked(text):
        return text
    return _SHAPES.sub(REDACTED, text)


def scrub_bytes(raw: bytes) -> bytes:
    """``raw`` with every secret of a known shape overwritten by as many bytes of
    ``REDACTED``."""
    if not marked_bytes(raw):
        return raw
    return _BYTE_SHAPES.sub(_mask, raw)


def signed_param(name: str) -> bool:
    """Whether a query parameter is one of a presigned URL's :data:`SIGNED_PARAMS` (any
    case): its value is redacted whole, so the URL is stored and matched the same however
    often it is signed again."""
    return name.lower() in SIGNED_PARAMS


def key_id(authorization: str) -> str | None:
    """The access key id of a SigV4 ``Authorization`` header's credential scope
    (``AWS4-HMAC-SHA256 Credential=<key id>/...``), ``None`` for another header."""
    if not authorization.startswith("AWS4-"):
        return None
    found = re.search(_CREDENTIAL, authorization)
    return found[0] if found else None


def _mask(match: re.Match[bytes]) -> bytes:
    size = len(match[0])
    return (REDACTED.encode() * (size // len(REDACTED) + 1))[:size]
