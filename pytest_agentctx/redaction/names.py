"""Names made from test ids (cassette and snapshot files, the ids the reports show): one per
test id, the same on every run and machine, readable, and never holding a secret.

A file name keeps the characters a file system takes and replaces the others (its
``slug``); a secret in the id is replaced by ``REDACTED`` first. When the name is the id
as it was (nothing replaced, nothing cut), it is the id: the names of existing files do not
change. Otherwise two ids could give one name (``is it safe?`` and ``is it safe!``), so
``~`` and the first :data:`DIGEST_LENGTH` hex digits of the SHA-256 of the raw id are
appended: ``test_ask[is it safe_]~5d2c6a1e``. No id that keeps its name holds a ``~``
followed by such digits at its end, and two ids that differ differ in their digest (the
digest is of the raw id: two secrets give two names, and no secret is in either).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

#: How many hex digits of the raw id's SHA-256 a name that lost information carries.
DIGEST_LENGTH = 8
#: What separates a name's readable part from its digest.
SEPARATOR = "~"


def digest(raw: str) -> str:
    """The first :data:`DIGEST_LENGTH` hex digits of the SHA-256 of ``raw`` (UTF-8)."""
    data = raw.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:DIGEST_LENGTH]


def file_stem(
    raw: str,
    slug: Callable[[str], str],
    *,
    redact: Callable[[str], str] | None = None,
    max_length: int = 200,
) -> str:
    """The file name (without its extension) of the test id ``raw``: ``slug`` of ``raw``
    with its secrets redacted (``redact``), and, when that is not ``raw`` itself or is
    longer than ``max_length``, cut to fit and followed by ``~`` and :func:`digest` of
    ``raw``."""
    shown = raw if redact is None else redact(raw)
    stem = slug(shown)
    if stem == raw and len(stem) <= max_length:
        return stem
    tail = f"{SEPARATOR}{digest(raw)}"
    return f"{stem[: max_length - len(tail)]}{tail}"


def shown_id(raw: str, redact: Callable[[str], str]) -> str:
    """The test id ``raw`` as a report shows it: itself, or, when it holds a secret, with
    the secret redacted and ``~`` and :func:`digest` of ``raw`` at its end (two ids that
    differ only in their secret stay two ids), inside the brackets of its parameters when
    it has some: ``test_x[REDACTED~5d2c6a1e]`` stays a well-formed test id, which pytest's
    JUnit XML parses into a test case name."""
    shown = redact(raw)
    if shown == raw:
        return raw
    tail = f"{SEPARATOR}{digest(raw)}"
    return f"{shown[:-1]}{tail}]" if shown.endswith("]") else f"{shown}{tail}"
