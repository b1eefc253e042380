"""How a request differs from a recording, shown so that the change can be read.

:func:`field_diffs` lists the fields of two JSON bodies that differ, by path
(``messages[0].content``). :func:`field_lines` shows one of them: a short value whole
(``recorded "Paris?" != now "Rome?"``), a long one as a window around its first
difference, the same characters of both sides one above the other with ``...`` where
text is left out, so that a word changed deep in a long system prompt is visible.
:func:`unified_diff` is the complete diff of two bodies, pretty-printed with sorted keys.
:func:`body_diffs` compares two bodies of any kind as they are matched
(:class:`~.matcher.Compared`): JSON and form bodies by field, multipart bodies part by
part (:func:`part_diffs`: a part added, removed, or changed in its file name, content type
or content), text as a window around its first difference, bytes by their sizes and the
offset of their first difference.

Nothing here redacts: the caller passes bodies whose secrets are already redacted (a
window may cut a text anywhere, so the redactor could no longer recognise a secret cut in
two), and the caller's message passes the redactor once more.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pytest_agentctx.traffic.cassettes.mediatypes import media_type
from pytest_agentctx.traffic.cassettes.multipart import Part, described, digest, split_parts

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes.matcher import Compared

#: The value of a field one side does not have.
MISSING: Final = object()

#: A value whose JSON text is at most this long is shown whole, on one line.
SHORT = 60
#: Characters shown before the first difference, and after the differing part.
CONTEXT = 30
#: Characters of the differing part shown, at most, before it is cut.
SPAN = 60


@dataclass(frozen=True)
class FieldDiff:
    """One field that differs: its path, and its value recorded and now (:data:`MISSING`
    when that side does not have it); ``plain``: the values are texts shown as they are,
    not JSON values (a request line)."""

    path: str
    recorded: object
    now: object
    plain: bool = False


def field_diffs(
    recorded: object, now: object, *, limit: int = 10_000, prefix: str = ""
) -> list[FieldDiff]:
    """The fields of ``recorded`` and ``now`` (JSON values) that differ, in the order of
    their sorted paths, at most ``limit``: a field both have is compared down to its
    leaves, a field one of them lacks is one difference. ``prefix`` starts every path."""
    out: list[FieldDiff] = []
    for diff in _walk(recorded, now, prefix):
        out.append(diff)
        if len(out) >= limit:
            break
    return out


def _walk(recorded: object, now: object, path: str) -> Iterator[FieldDiff]:
    if isinstance(recorded, dict) and isinstance(now, dict):
        for key in sorted(set(recorded) | set(now), key=str):
            sub = f"{path}.{key}" if path else str(key)
            yield from _walk(recorded.get(key, MISSING), now.get(key, MISSING), sub)
        return
    if isinstance(recorded, list) and isinstance(now, list):
        for index in range(max(len(recorded), len(now))):
            yield from _walk(
                recorded[index] if index < len(recorded) else MISSING,
                now[index] if index < len(now) else MISSING,
                f"{path}[{index}]",
            )
        return
    if recorded != now or type(recorded) is not type(now):
        yield FieldDiff(path or "(body)", recorded, now)


def _shown(value: object) -> object:
    """A value :mod:`json` does not write (bytes of a multipart part, what a body hook
    returned), as its ``repr``."""
    return repr(value)


def _text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=_shown)


def one_line(text: object, width: int) -> str:
    """``text`` on one line (runs of whitespace made one space), cut to ``width``
    characters with ``...`` when longer."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def _clip(text: str, width: int) -> str:
    """``text`` cut to about ``width`` characters, saying how long it was."""
    if len(text) <= width:
        return text
    return f"{text[:width]}... ({len(text):,} characters)"


def _common_prefix(a: str, b: str) -> int:
    size = min(len(a), len(b))
    low, high = 0, size  # binary search over slices: fast for long texts
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def window(recorded: str, now: str, *, context: int = CONTEXT, span: int = SPAN) -> tuple[str, str]:
    """The part of ``recorded`` and ``now`` around their first difference: ``context``
    characters before it, the differing part (cut at ``span`` characters), ``context``
    characters after; ``...`` marks text left out. Both start at the same character, so
    printed one above the other the difference is in the same column."""
    prefix = _common_prefix(recorded, now)
    room = min(len(recorded), len(now)) - prefix
    suffix = _common_prefix(recorded[::-1], now[::-1]) if room else 0
    suffix = min(suffix, room)
    start = max(0, prefix - context)

    def cut(text: str) -> str:
        changed_end = len(text) - suffix
        if changed_end - prefix > span:
            end = prefix + span
        else:
            end = min(len(text), max(changed_end, prefix) + context)
        head = "..." if start > 0 else ""
        tail = "..." if end < len(text) else ""
        return f"{head}{text[start:end]}{tail}"

    return cut(recorded), cut(now)


def field_lines(diff: FieldDiff) -> tuple[list[str], bool]:
    """How ``diff`` is shown, and whether some of it was left out (a window, a value
    cut): a short value on one line, a long one as the window around its first
    difference (:func:`window`) of each side, aligned."""
    if diff.recorded is MISSING:
        text = _text(diff.now)
        return [f"{diff.path}: not recorded, now {_clip(text, SHORT * 2)}"], len(text) > SHORT * 2
    if diff.now is MISSING:
        text = _text(diff.recorded)
        return [f"{diff.path}: recorded {_clip(text, SHORT * 2)}, now missing"], (
            len(text) > SHORT * 2
        )
    if diff.plain:
        recorded, now = str(diff.recorded), str(diff.now)
    else:
        recorded, now = _text(diff.recorded), _text(diff.now)
    if len(recorded) <= SHORT and len(now) <= SHORT:
        return [f"{diff.path}: recorded {recorded} != now {now}"], False
    return [_where(diff), *_pair(*window(recorded, now))], True


def _where(diff: FieldDiff) -> str:
    """The heading of a long field's window: where it first differs and how long each
    side is (in characters of the text, for strings; of the JSON, otherwise)."""
    if diff.plain or (isinstance(diff.recorded, str) and isinstance(diff.now, str)):
        recorded, now, unit = str(diff.recorded), str(diff.now), "characters"
    else:
        recorded, now, unit = _text(diff.recorded), _text(diff.now), "characters of JSON"
    at = _common_prefix(recorded, now)
    return (
        f"{diff.path}: first differs at character {at + 1:,} "
        f"(recorded {len(recorded):,} {unit}, now {len(now):,}):"
    )


def _pair(recorded: str, now: str) -> list[str]:
    return [f"  recorded: {recorded}", f"  now:      {now}"]


def unified_diff(recorded: object, now: object) -> list[str]:
    """The complete diff of two JSON bodies, pretty-printed with sorted keys (``-`` the
    recorded lines, ``+`` the lines now, three lines of context)."""
    return list(
        difflib.unified_diff(_pretty(recorded), _pretty(now), "recorded", "now", n=3, lineterm="")
    )


def _pretty(value: object) -> list[str]:
    if value is MISSING:
        return []
    if isinstance(value, str):  # a text body: line by line
        return value.splitlines()
    return json.dumps(
        value, ensure_ascii=False, sort_keys=True, indent=2, default=_shown
    ).splitlines()


#: The kinds of body compared field by field.
_STRUCTURED = ("json", "form", "multipart")


def body_diffs(recorded: Compared, now: Compared) -> list[FieldDiff]:
    """How two request bodies differ as they are matched (see the module docstring)."""
    if recorded.kind != now.kind:
        kinds = {recorded.kind, now.kind}
        if kinds == {"json", "empty"} or (recorded.hooked and now.hooked):
            return field_diffs(recorded.value, now.value)
        return [FieldDiff("(body)", _kind(recorded), _kind(now), plain=True)]
    if recorded.kind == "json":
        return field_diffs(recorded.value, now.value)
    if recorded.kind == "multipart" and not recorded.hooked:
        parts = part_diffs(recorded, now)
        if parts is not None:
            return parts
    out = _value_diffs(recorded, now)
    if out or recorded.hooked or recorded.raw == now.raw:
        return out
    return [byte_diff(recorded.raw, now.raw, f"({recorded.kind} body bytes)")]


def part_diffs(recorded: Compared, now: Compared) -> list[FieldDiff] | None:
    """How two multipart bodies differ, part by part (``None`` when one of them cannot be
    split into parts): a part added or removed, and of a part both have, its file name,
    content type, and content (a text as text, other content by size and digest). Parts
    are paired as they are matched (:func:`~.multipart.ordered`): a form's by name (the
    second part of a name with the other's second), the others by position."""
    before = split_parts(recorded.raw, recorded.content_type)
    after = split_parts(now.raw, now.content_type)
    if before is None or after is None:
        return None
    by_name = media_type(recorded.content_type) in ("multipart/form-data", "")
    old, new = _paired(before, by_name), _paired(after, by_name)
    out: list[FieldDiff] = []
    for label in [*old, *(label for label in new if label not in old)]:
        was, now_part = old.get(label), new.get(label)
        if was is None:
            out.append(FieldDiff(label, MISSING, described([new[label]])[0]))  # added
        elif now_part is None:
            out.append(FieldDiff(label, described([was])[0], MISSING))  # removed
        else:
            out.extend(_part_diffs(label, was, now_part))
    return out


def _paired(parts: list[Part], by_name: bool) -> dict[str, Part]:
    """``parts`` by the label a miss shows: ``part "file"`` (``#2`` for a name's second)
    in a form, ``part 1`` (and its name) otherwise."""
    out: dict[str, Part] = {}
    seen: dict[str | None, int] = {}
    for index, part in enumerate(parts):
        if by_name:
            count = seen[part.name] = seen.get(part.name, 0) + 1
            label = f'part "{part.name}"' if part.name is not None else "part without a name"
            out[label + (f" #{count}" if count > 1 else "")] = part
        else:
            named = f' "{part.name}"' if part.name is not None else ""
            out[f"part {index + 1}{named}"] = part
    return out


def _part_diffs(label: str, was: Part, now: Part) -> list[FieldDiff]:
    out = []
    if was.filename != now.filename:
        out.append(FieldDiff(f"{label}.filename", was.filename, now.filename))
    if was.content_type != now.content_type:
        out.append(FieldDiff(f"{label}.content_type", was.content_type, now.content_type))
    if was.content != now.content:
        before, after = was.text, now.text
        if before is not None and after is not None:
            out.append(FieldDiff(f"{label}.text", before, after))
        else:
            at = _common_prefix(was.content.decode("latin-1"), now.content.decode("latin-1"))
            after = f"{_sized(now)}, first differs at byte offset {at:,}"
            out.append(FieldDiff(f"{label}.content", _sized(was), after, plain=True))
    return out


def _sized(part: Part) -> str:
    return f"{len(part.content):,} bytes, sha256 {digest(part.content)[:8]}"


def _value_diffs(recorded: Compared, now: Compared) -> list[FieldDiff]:
    """The differences of two bodies of one kind (not JSON), by what is compared."""
    before, after = recorded.value, now.value
    if isinstance(before, bytes | bytearray) and isinstance(after, bytes | bytearray):
        return [] if before == after else [byte_diff(bytes(before), bytes(after), "(body bytes)")]
    if isinstance(before, str) and isinstance(after, str):
        return [] if before == after else [FieldDiff("(body text)", before, after, plain=True)]
    if recorded.kind in _STRUCTURED or isinstance(before, dict | list):
        return field_diffs(before, after, prefix="parts" if recorded.kind == "multipart" else "")
    return [] if before == after else [FieldDiff("(body)", before, after)]


def _kind(body: Compared) -> str:
    if body.kind == "empty":
        return "no body"
    kind = f" ({body.content_type})" if body.content_type else ""
    return f"a {body.kind} body{kind}"


def byte_diff(recorded: bytes, now: bytes, path: str) -> FieldDiff:
    """Two byte strings that differ: their sizes, and the offset of their first difference."""
    at = _common_prefix(recorded.decode("latin-1"), now.decode("latin-1"))
    return FieldDiff(
        path,
        f"{len(recorded):,} bytes",
        f"{len(now):,} bytes (they first differ at byte offset {at:,})",
        plain=True,
    )
