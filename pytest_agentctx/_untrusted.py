"""Files from strangers: the limits they are read within, and their text made printable.

Cassettes, snapshots, reports and cache entries arrive in pull requests: they are read as
untrusted input, within :class:`Limits` (docs/reference/cassettes.md, "Limits"):

- ``file_bytes``: the largest file read (512 MiB); anything that is not a regular file (a
  FIFO, a device such as ``/dev/zero``, a folder) is refused before a byte is read. A
  symbolic link to a regular file is followed, wherever it points: the size and kind are
  those of the file it reaches.
- ``body_bytes``: the largest body a ``content-encoding`` (gzip, deflate, br, zstd) may
  decode to (64 MiB); decoding stops past it.
- ``depth``: the deepest nesting of lists and mappings in a YAML document (200) or a
  report; a JSON document is also refused where its parser stops (about 1,000 levels).
- ``alias_nodes``: the most values YAML aliases may repeat in one document (100,000): a
  "billion laughs" document is refused, not expanded.

Each limit is raised by one ini option (``agent_max_file_bytes``, ``agent_max_body_bytes``,
``agent_max_depth``, ``agent_max_alias_nodes``), which the pytest plugin and the
``pytest-agentctx`` command both read from the project's ini file. Past a limit,
:class:`LimitExceeded` names the file (and the interaction), the limit and that option.

:func:`visible` is the one way untrusted text reaches a terminal: control characters
(ESC, BEL, backspace, carriage return, OSC sequences...) are shown as escapes (``\\x1b``).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from pytest_agentctx.exceptions import UsageError

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The bounds within which untrusted files are read (see the module)."""

    file_bytes: int = 512 * MIB
    body_bytes: int = 64 * MIB
    depth: int = 200
    alias_nodes: int = 100_000


#: The ini option that raises each limit, by field of :class:`Limits`.
LIMIT_OPTIONS = {
    "file_bytes": "agent_max_file_bytes",
    "body_bytes": "agent_max_body_bytes",
    "depth": "agent_max_depth",
    "alias_nodes": "agent_max_alias_nodes",
}

_limits = Limits()


def current_limits() -> Limits:
    """The limits in force (the defaults, or those :func:`use_limits` set)."""
    return _limits


def use_limits(limits: Limits) -> Limits:
    """Make ``limits`` the ones in force; returns those it replaces."""
    global _limits
    previous, _limits = _limits, limits
    return previous


def limits_from(values: dict[str, str]) -> Limits:
    """The limits an ini file gives: ``values`` maps option names (``agent_max_depth``) to
    their text; an empty or absent one keeps its default. :class:`UsageError` for a value
    that is not a whole number of 1 or more."""
    limits = Limits()
    for item in fields(Limits):
        option = LIMIT_OPTIONS[item.name]
        text = (values.get(option) or "").strip().replace("_", "")
        if not text:
            continue
        try:
            number = int(text)
        except ValueError:
            number = 0
        if number < 1:
            raise UsageError(
                f"{option} = {values[option]!r}: expected a whole number of 1 or more "
                f"(the default is {getattr(limits, item.name)}). Fix it in the ini file."
            )
        limits = replace(limits, **{item.name: number})
    return limits


class LimitExceeded(UsageError):
    """An untrusted file goes past one of the :class:`Limits`. The message names the file
    (``where``), what went past (``what``), the limit and the ini option raising it."""

    def __init__(self, where: str, what: str, limit: str) -> None:
        option = LIMIT_OPTIONS[limit]
        self.where, self.limit, self.option = where, limit, option
        value = getattr(current_limits(), limit)
        super().__init__(
            f"{where}: {what}, past the limit {option} = {value}. Files from an unknown "
            f"source are refused past it; if you trust this file, raise {option} in the "
            "pytest ini file (the pytest-agentctx command reads it too), or restore the "
            "file from version control."
        )


def read_untrusted(path: Path, *, limit: int | None = None) -> bytes:
    """The bytes of the file at ``path``, read within the limits: it is opened without
    blocking (a FIFO never hangs), must be a regular file (a link to one is followed) and
    at most ``limit`` bytes (``file_bytes`` by default). :class:`LimitExceeded` for a file
    too large, :class:`OSError` (``strerror`` saying why) for one that is not a regular
    file or cannot be read."""
    most = current_limits().file_bytes if limit is None else limit
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotAFile(path, _kind(info.st_mode))
        if info.st_size > most:
            raise LimitExceeded(str(path), f"a file of {info.st_size} bytes", "file_bytes")
        os.set_blocking(fd, True)
        chunks = []
        left = most + 1
        size = max(info.st_size + 1, 1 << 16)  # the whole file in one read, as a rule
        while left > 0 and (chunk := os.read(fd, min(left, size))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks) if len(chunks) != 1 else chunks[0]
    if len(data) > most:  # it grew while read
        raise LimitExceeded(str(path), f"a file of more than {most} bytes", "file_bytes")
    return data


class NotAFile(OSError):
    """What was to be read is not a regular file: ``kind`` says what it is (a FIFO, a
    character device such as ``/dev/zero``, a folder...)."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(0, f"{kind}, not a regular file", str(path))
        self.kind = kind


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


def refuse_constant(name: str) -> Any:
    """``parse_constant`` for :func:`json.loads`: ``NaN`` and ``Infinity`` refused."""
    raise ValueError(f"{name} is not a JSON number")


def load_json(data: bytes | str, where: str) -> Any:
    """``data`` parsed as strict JSON, within the limits: ``NaN`` and ``Infinity`` are
    refused, as are numbers of more digits than Python converts (:class:`ValueError`
    naming what) and documents nested deeper than ``depth`` or than the parser allows
    (:class:`LimitExceeded`). :class:`json.JSONDecodeError` (a ``ValueError``) for text
    that is not JSON."""
    try:
        value = json.loads(data, parse_constant=refuse_constant)
    except RecursionError:
        raise LimitExceeded(where, "JSON nested deeper than its parser reads", "depth") from None
    most = current_limits().depth
    if isinstance(data, bytes):
        brackets = data.count(b"[") + data.count(b"{")
    else:
        brackets = data.count("[") + data.count("{")
    if brackets > most:  # else it cannot nest deeper: no walk
        check_depth(value, where)
    return value


def check_depth(value: Any, where: str) -> None:
    """:class:`LimitExceeded` when lists and mappings in ``value`` nest deeper than the
    ``depth`` limit (a walk without recursion)."""
    most = current_limits().depth
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        for child in children:
            if isinstance(child, dict | list):
                if depth >= most:
                    raise LimitExceeded(
                        where, f"lists or mappings nested {depth + 1} deep", "depth"
                    )
                pending.append((child, depth + 1))


#: Control characters (C0 but newline and tab, DEL, C1) and the Unicode ones that reorder
#: or hide text (bidirectional overrides, zero-width marks).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` safe to print on a terminal: every control character but newline and tab
    shown as its escape (``\\x1b``, ``\\x07``, ``\\u202e``), so text from a cassette or a
    report never moves the cursor, sets the clipboard (OSC 52) or rings the bell."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text
