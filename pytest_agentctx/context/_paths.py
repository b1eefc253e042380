"""Paths into a context, as the assertions and snapshots print them.

A path reads like the Python that reaches the value: ``iterations[1].messages[2].content``
(list indexes from 0), with ``['some key']`` for mapping keys that are not identifiers.

Path globs select paths: ``*`` stands for any run of characters inside one segment
(``iterations[*].metadata``), ``**`` for any run across segments (``**.latency_ms``), and a
bare name such as ``latency_ms`` matches that field or key wherever it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SEGMENT_CHARS = r"[^.\[\]]*"


def segment(prefix: str, key: object) -> str:
    """The path of ``key`` inside the value at ``prefix`` (``""`` for the root)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{prefix}[{key}]"
    if isinstance(key, str) and key.isidentifier():
        return f"{prefix}.{key}" if prefix else key
    return f"{prefix}[{key!r}]"


def join(segments: Iterable[object]) -> str:
    """The path of a chain of keys and indexes from the root."""
    path = ""
    for key in segments:
        path = segment(path, key)
    return path


def _glob_to_regex(glob: str) -> str:
    bare = not any(char in glob for char in ".[]")
    parts: list[str] = []
    index = 0
    while index < len(glob):
        if glob.startswith("**", index):
            parts.append(".*")
            index += 2
        elif glob[index] == "*":
            parts.append(_SEGMENT_CHARS)
            index += 1
        else:
            parts.append(re.escape(glob[index]))
            index += 1
    body = "".join(parts)
    if bare and not glob.startswith("**"):
        return rf"(?:.*\.)?{body}"
    return body


def compile_globs(globs: Iterable[str]) -> re.Pattern[str] | None:
    """One regular expression whose ``fullmatch`` matches the paths any of ``globs`` match.

    The match's ``lastgroup`` is ``g<index>`` of the first glob that matched.
    Returns ``None`` when ``globs`` is empty.
    """
    alternatives = [f"(?P<g{index}>{_glob_to_regex(glob)})" for index, glob in enumerate(globs)]
    if not alternatives:
        return None
    return re.compile("|".join(alternatives))
