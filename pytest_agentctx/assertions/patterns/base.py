"""The pattern objects' base class, the leaf patterns, and how patterns compose.

:class:`Pattern` is the base class of every pattern object: it compares equal to the values
it matches (``value == pattern``) and composes with ``&`` (:class:`AllOf`), ``|``
(:class:`AnyOf`) and ``~`` (:class:`Not`). The leaves: :data:`ANY` matches anything,
:class:`Regex` searches a string, :class:`Predicate` asks a function. The patterns over a
value's structure (``Like``, ``Exact``, ``Unordered``...) are in ``structure``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final

from pytest_agentctx.assertions.patterns.engine import Matcher, Named, match_at, predicate_at
from pytest_agentctx.assertions.patterns.exact import exact_at, extra_keys, merge_named, named
from pytest_agentctx.assertions.patterns.mismatch import Out, PathCell, miss, short
from pytest_agentctx.context.errors import PatternError


class Pattern(Matcher):
    """Base class of pattern objects.

    A pattern compares equal to the values it matches (``value == pattern``), and composes
    with ``&`` (all), ``|`` (any) and ``~`` (not). Subclasses implement :meth:`_match`;
    those that name keys also ``_match_exact`` and ``_names`` (see ``Exact``).
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return match_at(other, self, None, None)

    def __ne__(self, other: object) -> bool:
        return not match_at(other, self, None, None)

    __hash__ = object.__hash__

    def __and__(self, other: Any) -> AllOf:
        return AllOf(self, other)

    def __rand__(self, other: Any) -> AllOf:
        return AllOf(other, self)

    def __or__(self, other: Any) -> AnyOf:
        return AnyOf(self, other)

    def __ror__(self, other: Any) -> AnyOf:
        return AnyOf(other, self)

    def __invert__(self) -> Pattern:
        return Not(self)


class _Anything(Pattern):
    __slots__ = ()

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        return True

    def __repr__(self) -> str:
        return "ANY"


#: Matches any value.
ANY: Final[Pattern] = _Anything()


class Regex(Pattern):
    """Matches strings in which the regular expression is found (``re.search``).

    Anchor it (``r"^...$"``) to match the whole string.
    """

    __slots__ = ("regex",)

    def __init__(self, pattern: str | re.Pattern[str], flags: int = 0) -> None:
        if isinstance(pattern, re.Pattern):
            if flags:
                raise PatternError(
                    f"Regex({pattern.pattern!r}, flags={flags}): flags only apply to a "
                    "pattern given as a string; compile the flags into the pattern instead."
                )
            self.regex: re.Pattern[str] = pattern
            return
        if not isinstance(pattern, str):
            raise PatternError(
                f"Regex() takes a regular expression as a str, got "
                f"{type(pattern).__name__}: {pattern!r}. Example: Regex(r'sunny|clear')."
            )
        try:
            self.regex = re.compile(pattern, flags)
        except re.error as exc:
            raise PatternError(
                f"Regex({pattern!r}) is not a valid regular expression: {exc}. Escape "
                "special characters with re.escape() to match them literally."
            ) from None

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        if isinstance(value, str) and self.regex.search(value) is not None:
            return True
        if out is not None:
            miss(out, path, f"{short(value)} does not match {self!r}")
        return False

    def __repr__(self) -> str:
        flags = self.regex.flags & ~re.UNICODE
        return (
            f"Regex({self.regex.pattern!r}, flags={flags})"
            if flags
            else (f"Regex({self.regex.pattern!r})")
        )


class Predicate(Pattern):
    """Matches values for which ``fn(value)`` is truthy; an exception counts as no match."""

    __slots__ = ("description", "fn")

    def __init__(self, fn: Callable[[Any], object], description: str | None = None) -> None:
        if not callable(fn):
            raise PatternError(
                f"Predicate() takes a function of one value, got {type(fn).__name__}: {fn!r}."
            )
        self.fn = fn
        self.description = description or getattr(fn, "__qualname__", None) or repr(fn)

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        return predicate_at(self.fn, self.description, value, path, out)

    def __repr__(self) -> str:
        return f"Predicate({self.description})"


def _flatten(kind: type[AllOf | AnyOf], patterns: Sequence[Any]) -> list[Any]:
    flat: list[Any] = []
    for pattern in patterns:
        if type(pattern) is kind:
            flat.extend(pattern.patterns)
        else:
            flat.append(pattern)
    return flat


def _grouped(pattern: Any) -> str:
    text = short(pattern)
    return f"({text})" if isinstance(pattern, (AllOf, AnyOf)) else text


class AllOf(Pattern):
    """Matches values that match every pattern (``a & b``); reports every failing part."""

    __slots__ = ("patterns",)

    def __init__(self, *patterns: Any) -> None:
        if not patterns:
            raise PatternError("AllOf() needs at least one pattern.")
        self.patterns = _flatten(AllOf, patterns)

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        ok = True
        for pattern in self.patterns:
            if not match_at(value, pattern, path, out):
                ok = False
                if out is None:
                    return False
        return ok

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        # Each part is compared exactly, with what the other parts name counted as named.
        names = [named(pattern) for pattern in self.patterns]
        start = len(out) if out is not None else 0
        ok = True
        for index, pattern in enumerate(self.patterns):
            others = merge_named([also, *names[:index], *names[index + 1 :]])
            if not exact_at(value, pattern, path, out, others):
                ok = False
                if out is None:
                    return False
        if out is not None:  # each part reports a key none of them names: keep it once
            out[start:] = dict.fromkeys(out[start:])
        return ok

    def _names(self) -> Named | None:
        return merge_named([named(part) for part in self.patterns])

    def __repr__(self) -> str:
        return " & ".join(_grouped(p) for p in self.patterns)


class AnyOf(Pattern):
    """Matches values that match at least one of the patterns (``a | b``)."""

    __slots__ = ("patterns",)

    def __init__(self, *patterns: Any) -> None:
        if not patterns:
            raise PatternError("AnyOf() needs at least one pattern.")
        self.patterns = _flatten(AnyOf, patterns)

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        for pattern in self.patterns:
            if match_at(value, pattern, path, None):
                return True
        if out is not None:
            miss(out, path, f"{short(value)} matches none of {self!r}")
        return False

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        for pattern in self.patterns:
            if exact_at(value, pattern, path, None, also) and (
                # An alternative that names no keys leaves every key to the other parts
                # of the ``&`` this one is in: a key set that none of them names is extra.
                also is None or named(pattern) is not None or not extra_keys(value, also)
            ):
                return True
        if out is not None:
            miss(out, path, f"{short(value)} matches none of {self!r} exactly")
        return False

    def _names(self) -> Named | None:
        return merge_named([named(part) for part in self.patterns])

    def __repr__(self) -> str:
        return " | ".join(_grouped(p) for p in self.patterns)


class Not(Pattern):
    """Matches values that do not match ``pattern`` (``~pattern``)."""

    __slots__ = ("pattern",)

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        if not match_at(value, self.pattern, path, None):
            return True
        if out is not None:
            miss(out, path, f"{short(value)} matches {short(self.pattern)}, which it must not")
        return False

    def __invert__(self) -> Any:
        return self.pattern

    def __repr__(self) -> str:
        return f"~{_grouped(self.pattern)}"
