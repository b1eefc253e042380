"""The pytest configuration file ``pytest-agentctx migrate`` edits, edited line by line.

:func:`load_config` finds the file pytest would use (:func:`~.config.find_ini`'s search)
and :class:`ConfigFile` changes its pytest section one line at a time: an option added
after the section's last one, ``addopts`` tokens dropped or added where they are. Every
other line, comment and blank line stays as it was written: the file is never parsed and
serialised again. Two shapes: the ini files (``pytest.ini``, ``tox.ini``, ``setup.cfg``,
``key = value`` with indented continuation lines) and ``pyproject.toml``'s
``[tool.pytest.ini_options]`` (``key = "value"``, ``addopts`` a string or an array).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_agentctx.cli.config import find_ini
from pytest_agentctx.exceptions import UsageError

#: The section header of each kind of file (``None``: pyproject.toml).
_HEADERS = {
    "pytest.ini": "[pytest]",
    ".pytest.ini": "[pytest]",
    "tox.ini": "[pytest]",
    "setup.cfg": "[tool:pytest]",
    "pyproject.toml": "[tool.pytest.ini_options]",
}
_INI_KEY = re.compile(r"^([A-Za-z0-9_.-]+)\s*[=:]")
_TOML_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")
_TABLE = re.compile(r"^\s*\[")
#: A shell word of an ini ``addopts`` line, quotes included.
_WORD = re.compile(r"""(?:[^\s"']+|"[^"]*"|'[^']*')+""")
#: A TOML string literal (basic or literal) in an ``addopts`` array.
_TOML_STRING = re.compile(r""""(?:[^"\\]|\\.)*"|'[^']*'""")

#: Decides the ``addopts`` tokens to drop: given the tokens, the indexes to remove.
TokenFilter = Callable[[Sequence[str]], set[int]]


@dataclass
class _Entry:
    key: str
    start: int
    end: int


@dataclass(frozen=True)
class _Token:
    line: int
    start: int
    end: int
    text: str


class ConfigFile:
    """The lines of a pytest configuration file (``lines``, ends kept) and its pytest
    section, with the edits made so far."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.toml = path.name == "pyproject.toml"
        self.original = text
        self.lines = text.splitlines(keepends=True)
        self._header = _HEADERS.get(path.name, "[pytest]")

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def _section(self) -> tuple[int, int]:
        """The header's index and the index past the section's last line (-1, -1: none)."""
        start = next(
            (
                index
                for index, line in enumerate(self.lines)
                if line.split("#", 1)[0].split(";", 1)[0].strip() == self._header
            ),
            -1,
        )
        if start < 0:
            return -1, -1
        end = next(
            (
                index
                for index in range(start + 1, len(self.lines))
                if _TABLE.match(self.lines[index]) and not self._inside_value(start, index)
            ),
            len(self.lines),
        )
        return start, end

    def _inside_value(self, start: int, index: int) -> bool:
        return any(entry.start < index < entry.end for entry in self._entries(start, index))

    def _entries(self, start: int, stop: int | None = None) -> list[_Entry]:
        entries: list[_Entry] = []
        index = start + 1
        limit = len(self.lines) if stop is None else stop
        while index < limit:
            line = self.lines[index]
            if self.toml:
                if _TABLE.match(line):
                    break
                match = _TOML_KEY.match(line)
            else:
                if line.startswith("["):
                    break
                match = _INI_KEY.match(line)
            if match is None:
                index += 1
                continue
            end = self._toml_end(index) if self.toml else self._ini_end(index)
            entries.append(_Entry(match.group(1), index, end))
            index = end
        return entries

    def _ini_end(self, index: int) -> int:
        end = index + 1
        while end < len(self.lines):
            line = self.lines[end]
            if line.strip() and line[0] in " \t":
                end += 1
                continue
            if not line.strip():
                following = next((later for later in self.lines[end:] if later.strip()), "x")
                if following[0] in " \t":
                    end += 1
                    continue
            break
        return end

    def _toml_end(self, index: int) -> int:
        for end in range(index + 1, min(len(self.lines), index + 500) + 1):
            try:
                tomllib.loads("".join(self.lines[index:end]))
            except tomllib.TOMLDecodeError:
                continue
            return end
        raise UsageError(
            f"{self.path}:{index + 1}: the value of {self.lines[index].strip()!r} cannot be "
            "read as TOML; expected a pyproject.toml that pytest can read. Fix that line, "
            "then run pytest-agentctx migrate again."
        )

    def entry(self, key: str) -> _Entry | None:
        start, _ = self._section()
        if start < 0:
            return None
        return next((entry for entry in self._entries(start) if entry.key == key), None)

    def line_of(self, key: str) -> int | None:
        """The 1-based line of option ``key`` in the section (``None``: not set)."""
        found = self.entry(key)
        return None if found is None else found.start + 1

    def add(self, lines: Sequence[tuple[str, str]], comment: str) -> None:
        """Add the options ``(key, value)`` after the section's last option, under a
        ``comment`` line; the section is added at the end of the file when it is missing."""
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"
        start, end = self._section()
        if start < 0:
            if self.lines and self.lines[-1].strip():
                self.lines.append("\n")
            self.lines.append(self._header + "\n")
            start, end = self._section()
        del end
        entries = self._entries(start)
        where = entries[-1].end if entries else start + 1
        new = [f"# {comment}\n"]
        for key, value in lines:
            shown = f'"{value}"' if self.toml else value
            new.append(f"{key} = {shown}\n")
        self.lines[where:where] = new

    def tokens(self, key: str) -> list[str]:
        """The arguments of option ``key`` (``addopts``), as pytest splits them."""
        found = self.entry(key)
        if found is None:
            return []
        array = self.toml and self._array(found)
        return [_unquote(token.text, array) for token in self._tokens(found)]

    def _array(self, entry: _Entry) -> bool:
        value = tomllib.loads("".join(self.lines[entry.start : entry.end]))[entry.key]
        return isinstance(value, list)

    def _tokens(self, entry: _Entry) -> list[_Token]:
        tokens: list[_Token] = []
        array = self.toml and self._array(entry)
        for index in range(entry.start, entry.end):
            line = self.lines[index]
            offset = 0
            if index == entry.start:
                offset = line.index("=") + 1
            if self.toml and not array:
                quoted = _TOML_STRING.search(line, offset)
                if quoted is None:
                    continue
                body, offset = quoted.group()[1:-1], quoted.start() + 1
                found = [
                    _Token(index, offset + m.start(), offset + m.end(), m.group())
                    for m in _WORD.finditer(body)
                ]
            else:
                pattern = _TOML_STRING if array else _WORD
                code = line if array else line.split(" #", 1)[0]
                found = [
                    _Token(index, m.start(), m.end(), m.group())
                    for m in pattern.finditer(code, offset)
                    if not (array and "#" in code[offset : m.start()])
                ]
            tokens.extend(found)
        return tokens

    def edit_tokens(self, key: str, drop: TokenFilter, add: Sequence[str]) -> bool:
        """Remove the tokens of option ``key`` that ``drop`` picks and append ``add``;
        ``False`` when the option is not set (nothing changed)."""
        found = self.entry(key)
        if found is None:
            return False
        array = self.toml and self._array(found)
        tokens = self._tokens(found)
        doomed = drop([_unquote(token.text, array) for token in tokens])
        if add and array:
            self._append_to_array(found, add)
        elif add:
            self._append(found, tokens, add)
        for index in sorted(doomed, reverse=True):
            self._remove(tokens[index], array)
        emptied = {tokens[index].line for index in doomed} - {found.start}
        for index in sorted(emptied, reverse=True):
            if not self.lines[index].strip():
                del self.lines[index]
        return True

    def _append(self, entry: _Entry, tokens: list[_Token], add: Sequence[str]) -> None:
        words = " ".join(add)
        if tokens:
            last = tokens[-1]
            line = self.lines[last.line]
            self.lines[last.line] = line[: last.end] + " " + words + line[last.end :]
            return
        body = self.lines[entry.start].rstrip("\n")
        cut = len(body)
        if self.toml:
            quoted = _TOML_STRING.search(body, body.index("=") + 1)
            assert quoted is not None
            cut = quoted.end() - 1
        gap = "" if body[cut - 1] in "\"' " else " "
        self.lines[entry.start] = body[:cut] + gap + words + body[cut:] + "\n"

    def _append_to_array(self, entry: _Entry, add: Sequence[str]) -> None:
        items = ", ".join(f'"{item}"' for item in add)
        closing = max(i for i in range(entry.start, entry.end) if "]" in self.lines[i])
        line = self.lines[closing]
        cut = line.rindex("]")
        before = line[:cut]
        if before.strip():
            # the array closes on a line with items (`addopts = ["-v"]`) or is empty
            inner = before[before.index("[") + 1 :] if "[" in before else before
            if not inner.strip():
                self.lines[closing] = before + items + line[cut:]
            else:
                comma = "" if inner.rstrip().endswith(",") else ","
                self.lines[closing] = before.rstrip() + comma + " " + items + line[cut:]
            return
        # a multi-line array: the new items on a line of their own, indented as the others
        previous = closing - 1
        while previous > entry.start and not self.lines[previous].strip():
            previous -= 1
        pad = "    "
        if previous > entry.start:
            prev_line = self.lines[previous]
            pad = prev_line[: len(prev_line) - len(prev_line.lstrip())]
            code, hash_, comment = prev_line.rstrip("\n").partition(" #")
            if not code.rstrip().endswith(","):
                self.lines[previous] = code.rstrip() + "," + (hash_ + comment) + "\n"
        self.lines.insert(closing, f"{pad}{items},\n")

    def _remove(self, token: _Token, array: bool) -> None:
        line = self.lines[token.line]
        start, end = token.start, token.end
        if array:
            comma = re.match(r"\s*,", line[end:])
            if comma:
                end += comma.end()
            elif (before := re.search(r",\s*$", line[:start])) is not None:
                start = before.start()
        while end < len(line) and line[end] in " \t":
            end += 1
        rest = line[end:].rstrip("\n")
        if not rest or (not array and rest[0] in "\"'#"):
            while start > 0 and line[start - 1] in " \t" and line[start - 2 : start - 1] != "=":
                start -= 1
        self.lines[token.line] = line[:start] + line[end:]


def _unquote(text: str, array: bool) -> str:
    if array:
        value = tomllib.loads(f"v = {text}")["v"]
        return str(value)
    try:
        words = shlex.split(text)
    except ValueError:
        return text
    return words[0] if len(words) == 1 else text


def load_config(directory: Path) -> ConfigFile:
    """The configuration file pytest uses for ``directory`` (the nearest above it)."""
    if not directory.is_dir():
        raise UsageError(
            f"{directory} is not a folder; expected the project's folder (the one you run "
            "pytest from): pytest-agentctx migrate PATH/TO/PROJECT"
        )
    ini = find_ini(directory)
    if ini.path is None:
        raise UsageError(
            f"no pytest configuration in {directory} or any folder above it; expected "
            "pytest.ini, pyproject.toml with [tool.pytest.ini_options], tox.ini with "
            "[pytest] or setup.cfg with [tool:pytest], as pytest finds them. Create one in "
            "the folder you run pytest from (a pytest.ini holding the line [pytest] will do), "
            "then run pytest-agentctx migrate again."
        )
    try:
        text = ini.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{ini.path} cannot be read ({exc}); expected the project's pytest configuration "
            "as UTF-8 text. Fix it, then run pytest-agentctx migrate again."
        ) from None
    return ConfigFile(ini.path, text)
