"""Patterns over the structure of a value: records, exactness, collections, the whole tree.

- :class:`Like` matches a model (or a mapping shaped like it) on the fields it names;
- :class:`Exact` also forbids whatever it does not name, at every depth;
- :class:`Unordered` and :class:`Contains` match a sequence's items one to one in any
  order, through the assignment of ``assignment``, with the patterns indexed on their most
  selective literal field (a tool call's ``name``, a message's ``role``);
- :class:`Each` states a rule for every item, :class:`Nowhere` for every value inside.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields, is_dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel

from pytest_agentctx.assertions.patterns.assignment import Keyer, assign
from pytest_agentctx.assertions.patterns.base import Pattern
from pytest_agentctx.assertions.patterns.engine import (
    MISSING,
    SCALARS,
    Handler,
    Named,
    fields_at,
    is_sequence,
    match_at,
    model_pattern_fields,
    not_a_sequence,
    probe,
    shaped_like,
)
from pytest_agentctx.assertions.patterns.exact import exact_at, exact_record, named, probe_with
from pytest_agentctx.assertions.patterns.mismatch import (
    Mismatch,
    Out,
    PathCell,
    format_path,
    miss,
    report_closest,
    short,
)
from pytest_agentctx.context.errors import PatternError
from pytest_agentctx.context.model import Iteration


def _check_model_fields(cls: type, names: Sequence[str], what: str) -> None:
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        return
    known = set(cls.model_fields)
    unknown = [name for name in names if name not in known and not hasattr(cls, name)]
    if unknown:
        raise PatternError(
            f"{what}: {cls.__name__} has no field {unknown[0]!r}. Its fields are "
            f"{', '.join(cls.model_fields)}."
        )


class Like(Pattern):
    """Matches instances of ``cls`` (or mappings shaped like it) on the given fields only.

    Positional arguments follow the class's ``__match_args__``:
    ``Like(ToolCall, "get_weather", {"city": "Paris"})`` is
    ``Like(ToolCall, name="get_weather", arguments={"city": "Paris"})``.
    """

    __slots__ = ("cls", "fields")

    def __init__(self, cls: type, /, *args: Any, **fields: Any) -> None:
        if not isinstance(cls, type):
            raise PatternError(
                f"Like() takes a class first, got {type(cls).__name__}: {cls!r}. "
                "Example: Like(ToolCall, name='get_weather')."
            )
        names: tuple[str, ...] = getattr(cls, "__match_args__", ())
        if len(args) > len(names):
            raise PatternError(
                f"Like({cls.__name__}, ...) got {len(args)} positional patterns but "
                f"{cls.__name__} takes at most {len(names)} ({', '.join(names) or 'none'}). "
                "Name the fields as keywords."
            )
        given: dict[str, Any] = {}
        for name, arg in zip(names, args, strict=False):
            if name in fields:
                raise PatternError(
                    f"Like({cls.__name__}, ...) got field {name!r} twice, positionally and "
                    "as a keyword. Give it once."
                )
            given[name] = arg
        given.update(fields)
        _check_model_fields(cls, list(given), f"Like({cls.__name__}, ...)")
        self.cls = cls
        self.fields = given

    def _accepts(self, value: Any, path: PathCell, out: Out) -> bool:
        if isinstance(value, self.cls) or (
            isinstance(value, Mapping) and shaped_like(value, self.cls)
        ):
            return True
        if out is not None:
            miss(out, path, f"expected {self.cls.__name__}, got {short(value)}")
        return False

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        return self._accepts(value, path, out) and fields_at(value, self.fields, path, out)

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        return self._accepts(value, path, out) and exact_record(
            value, self.fields, self.cls, path, out, also
        )

    def _names(self) -> Named | None:
        return Named(frozenset(self.fields), self.cls)

    def __repr__(self) -> str:
        args = "".join(f", {name}={pattern!r}" for name, pattern in self.fields.items())
        return f"Like({self.cls.__name__}{args})"


class Exact(Pattern):
    """Matches what ``expected`` matches, and nothing that ``expected`` does not name is set.

    What counts as set: a key of a mapping; a field of a model or dataclass whose value
    differs from the field's default (a required field is always set); in a mapping shaped
    like the model a ``Like`` names, a key whose value differs from that field's default.
    Every dict, ``Like`` and list inside is compared this way, at every depth:

    - a dict or ``Like`` names its keys; a model instance names all its fields (the value
      must be of its very type, every field compared); ``a & b`` names what either names;
    - a list names its items: as many as the pattern has, or any number at each ``...``;
      ``Unordered``, ``Contains`` and ``Each`` compare their items exactly;
    - ``a | b`` matches if one alternative matches exactly;
    - leaves (plain values, ``ANY``, classes, regular expressions, predicates, dirty-equals
      types), ``~p`` and ``Nowhere(p)`` judge the whole value as without ``Exact``;
    - a nested ``Exact`` is checked on its own; other pattern classes are leaves unless
      they override ``Pattern._match_exact``.
    """

    __slots__ = ("expected",)

    def __init__(self, expected: Any) -> None:
        self.expected = expected

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        return exact_at(value, self.expected, path, out)

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        return exact_at(value, self.expected, path, out)

    def _names(self) -> Named | None:
        return named(self.expected)

    def __repr__(self) -> str:
        return f"Exact({short(self.expected)})"


class Unordered(Pattern):
    """Matches a sequence whose items match the patterns one to one, in any order.

    Add ``...`` to allow other items as well: ``Unordered(a, b, ...)``.
    """

    __slots__ = ("allow_extra", "patterns")

    def __init__(self, *patterns: Any) -> None:
        self.patterns = [p for p in patterns if p is not ...]
        self.allow_extra = len(self.patterns) != len(patterns)

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        return self._assign(value, path, out, match_at)

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        return self._assign(value, path, out, exact_at)

    def _assign(self, value: Any, path: PathCell, out: Out, compare: Handler) -> bool:
        if not is_sequence(value):
            return not_a_sequence(value, path, out)
        items = list(value)
        if out is None and (
            len(items) < len(self.patterns)
            or (not self.allow_extra and len(items) != len(self.patterns))
        ):
            return False
        test = probe if compare is match_at else partial(probe_with, compare)
        pattern_of, item_of = assign(items, self.patterns, test, keyer=_literal_keyer)
        ok = all(i is not None for i in item_of) and (
            self.allow_extra or all(j is not None for j in pattern_of)
        )
        if ok or out is None:
            return ok
        free_items = [i for i, j in enumerate(pattern_of) if j is None]
        for j, item in enumerate(item_of):
            if item is None:
                _report_unmatched(items, free_items, self.patterns[j], path, out, compare)
        if not self.allow_extra:
            for i in free_items:
                miss(out, (path, i), f"unexpected item {short(items[i])}")
        return False

    def __repr__(self) -> str:
        parts = [short(p) for p in self.patterns] + (["..."] if self.allow_extra else [])
        return f"{type(self).__name__}({', '.join(parts)})"


class Contains(Unordered):
    """Matches a sequence that has an item for each pattern (in any order, one to one)."""

    __slots__ = ()

    def __init__(self, *patterns: Any) -> None:
        if not patterns:
            raise PatternError(
                "Contains() needs at least one pattern, e.g. Contains({'name': 'x'})."
            )
        super().__init__(*patterns, ...)

    def __repr__(self) -> str:
        return f"Contains({', '.join(short(p) for p in self.patterns)})"


class Each(Pattern):
    """Matches a sequence whose every item matches ``pattern`` (an empty one too).

    ``Each(~p)`` is a negative rule: no item may match ``p``; each one that does is reported.
    """

    __slots__ = ("pattern",)

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        return self._each(value, path, out, match_at)

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        return self._each(value, path, out, exact_at)

    def _each(self, value: Any, path: PathCell, out: Out, compare: Handler) -> bool:
        if not is_sequence(value):
            return not_a_sequence(value, path, out)
        ok = True
        pattern = self.pattern
        for index, item in enumerate(value):
            if not compare(item, pattern, (path, index), out):
                ok = False
                if out is None:
                    return False
        return ok

    def __repr__(self) -> str:
        return f"Each({short(self.pattern)})"


_WALK_ORDER: dict[type, tuple[str, ...]] = {
    Iteration: ("number", "tool_calls", "messages", "started_at", "completed_at", "metadata"),
}


def _children(node: Any) -> list[tuple[Any, Any]]:
    if isinstance(node, BaseModel):
        cls = type(node)
        names = _WALK_ORDER.get(cls) or tuple(cls.model_fields)
        return [(name, getattr(node, name)) for name in names]
    if isinstance(node, Mapping):
        return list(node.items())
    if is_sequence(node):
        return list(enumerate(node))
    if is_dataclass(node) and not isinstance(node, type):
        return [(f.name, getattr(node, f.name)) for f in fields(node)]
    return []


class Nowhere(Pattern):
    """A negative rule over the whole value: nothing inside it may match ``pattern``.

    Every model field, mapping value and sequence item is visited (iteration metadata and
    the sub-agent runs stored there included); each match is reported with its path.
    ``Nowhere(Like(ToolCall, name="delete_user"))`` reads "no iteration calls delete_user".
    """

    __slots__ = ("pattern",)

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        ok = True
        pattern = self.pattern
        seen: set[int] = set()
        stack: list[tuple[Any, PathCell]] = [(value, path)]
        while stack:
            node, node_path = stack.pop()
            leaf = isinstance(node, SCALARS)
            if not leaf:
                if id(node) in seen:
                    continue
                seen.add(id(node))
            if match_at(node, pattern, node_path, None):
                ok = False
                if out is None:
                    return False
                miss(
                    out,
                    node_path,
                    f"{short(node)} matches {short(pattern)}, which must appear nowhere",
                )
                continue
            if not leaf:
                children = _children(node)
                for key, child in reversed(children):
                    stack.append((child, (node_path, key)))
        return ok

    def __repr__(self) -> str:
        return f"Nowhere({short(self.pattern)})"


# -- the index of Unordered's patterns ---------------------------------------------------


def _literal_fields(pattern: Any, prefix: tuple[Any, ...], depth: int) -> Iterator[tuple[Any, Any]]:
    """The (path, literal) pairs a value must have to match ``pattern``."""
    if isinstance(pattern, SCALARS):
        yield prefix, pattern
        return
    if depth >= 3:
        return
    if isinstance(pattern, Like):
        items: Mapping[Any, Any] = pattern.fields
    elif isinstance(pattern, BaseModel):
        items = model_pattern_fields(pattern)
    elif isinstance(pattern, Mapping):
        items = pattern
    else:
        return
    for key, sub in items.items():
        if isinstance(sub, (*SCALARS, Mapping, Like, BaseModel)):
            yield from _literal_fields(sub, (*prefix, key), depth + 1)


def _extract(value: Any, path: tuple[Any, ...]) -> Any:
    """The value at ``path`` inside ``value`` (``Keyer.NO_KEY`` if there is none)."""
    for key in path:
        if isinstance(value, Mapping):
            value = value.get(key, MISSING)
        elif isinstance(key, str) and not isinstance(value, SCALARS):
            value = getattr(value, key, MISSING)
        else:
            return Keyer.NO_KEY
        if value is MISSING:
            return Keyer.NO_KEY
    return value


class _LiteralKeyer(Keyer):
    """Indexes patterns on their most selective literal field (``name``, ``role``...)."""

    def __init__(self, path: tuple[Any, ...]) -> None:
        self.path = path

    def pattern_key(self, pattern: Any) -> Any:
        for path, literal in _literal_fields(pattern, (), 0):
            if path == self.path:
                return literal
        return Keyer.WILD

    def item_key(self, item: Any) -> Any:
        return _extract(item, self.path)


def _literal_keyer(patterns: Sequence[Any]) -> Keyer | None:
    """An index on the literal field most patterns give, with two values at least
    (``None`` below eight patterns, or without such a field)."""
    if len(patterns) < 8:
        return None
    values: dict[tuple[Any, ...], set[Any]] = {}
    counts: dict[tuple[Any, ...], int] = {}
    for pattern in patterns:
        for path, literal in _literal_fields(pattern, (), 0):
            try:
                values.setdefault(path, set()).add(literal)
            except TypeError:
                continue
            counts[path] = counts.get(path, 0) + 1
    candidates = [path for path, count in counts.items() if 2 * count >= len(patterns)]
    if not candidates:
        return None
    best = max(candidates, key=lambda path: (len(values[path]), counts[path], -len(path)))
    if len(values[best]) < 2:
        return None
    return _LiteralKeyer(best)


def _report_unmatched(
    items: Sequence[Any],
    free_items: Sequence[int],
    pattern: Any,
    path: PathCell,
    out: list[Mismatch],
    compare: Handler,
) -> None:
    """Report a pattern no item matched, with the closest free item's mismatches."""

    def mismatches_at(i: int) -> list[Mismatch]:
        found: list[Mismatch] = []
        compare(items[i], pattern, (path, i), found)
        return found

    message = f"no item matches {short(pattern)}"
    if not report_closest(
        out,
        format_path(path),
        message,
        list(free_items) or range(len(items)),
        mismatches_at,
        lambda i: format_path((path, i)),
    ):
        miss(out, path, message)
