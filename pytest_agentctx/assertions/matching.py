"""Pattern-matching assertions: ``matches(value, pattern)`` and the pattern objects.

A pattern is plain data whose leaves may be pattern objects:

- a dict matches a mapping, a model or any object on the keys it names (fields and
  properties alike); other keys are ignored. ``Exact(p)`` also forbids whatever ``p`` does
  not name, at every depth: a mapping's other keys, a model's other fields that differ
  from their default (see :class:`Exact`);
- a model instance matches on the fields it was built with (``model_fields_set``);
  ``Like(Message, role="user")`` does the same with patterns as field values;
- a list or tuple matches a sequence item by item; ``...`` in it stands for any number of
  items, and ``Unordered(a, b)`` / ``Contains(a)`` ignore the order;
- ``ANY`` (or ``...`` outside a list) matches anything;
- a compiled regular expression or ``Regex("...")`` searches a string;
- a class matches its instances; a function or ``Predicate(fn)`` is a predicate;
- any other object is compared with ``==``, so dirty-equals types work as leaves.

Patterns compose with ``&``, ``|`` and ``~``; ``Each(p)`` and ``Nowhere(p)`` state rules
over every item or every value ("no iteration calls ``delete_user``").

The comparison walks the whole structure and collects every mismatch with its path
(``iterations[1].messages[2].content: 'a' != 'b'``); it never stops at the first one.
``matches()`` returns ``True`` or raises :class:`MismatchError` (an ``AssertionError``)
listing them; ``mismatches()`` returns them without raising. Matching is linear in the size
of the value: unordered lists are matched through an index of the patterns' literal fields.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields, is_dataclass
from datetime import date, datetime, time
from functools import partial
from itertools import islice, repeat
from operator import is_
from types import BuiltinFunctionType, BuiltinMethodType, EllipsisType, FunctionType, MethodType
from typing import Any, Final, Literal, NamedTuple

from pydantic import BaseModel

from pytest_agentctx.context._paths import join
from pytest_agentctx.context._seq import Seq
from pytest_agentctx.context.model import AgentContext, Iteration, Message, ToolCall, ToolResult
from pytest_agentctx.exceptions import MismatchError, PatternError

__all__ = [
    "ANY",
    "AllOf",
    "AnyOf",
    "Contains",
    "Each",
    "Exact",
    "Like",
    "Mismatch",
    "Not",
    "Nowhere",
    "Pattern",
    "Predicate",
    "Regex",
    "Unordered",
    "assertrepr_compare",
    "differences",
    "matches",
    "mismatches",
    "render_mismatches",
]

#: A path in the making: ``(parent, key)`` cells, formatted only when a mismatch is kept.
PathCell = tuple[Any, Any] | None
#: Where mismatches go: a list that collects them all, or ``None`` to stop at the first.
Out = list["Mismatch"] | None

_MISSING: Any = object()
_SCALARS = (str, bytes, int, float, bool, type(None))
_MODELS = (AgentContext, Iteration, Message, ToolCall, ToolResult)
#: How many candidates are compared in full to find the closest one in a failure report.
_CLOSEST_LIMIT = 100


@dataclass(frozen=True)
class Mismatch:
    """One difference between a value and a pattern: where it is and what differs."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class Named(NamedTuple):
    """What the patterns joined by ``&`` under ``Exact`` name at one place: the keys, and
    the model class whose defaults count as unset in a mapping (``None`` if none)."""

    keys: frozenset[Any]
    cls: type | None


def format_path(path: PathCell) -> str:
    """The printable form of a path cell chain (``(root)`` for the root itself)."""
    keys: list[Any] = []
    while path is not None:
        path, key = path
        keys.append(key)
    keys.reverse()
    return join(keys) or "(root)"


def _miss(out: list[Mismatch], path: PathCell, message: str) -> None:
    out.append(Mismatch(format_path(path), message))


class _ShortRepr(reprlib.Repr):
    """``reprlib`` limits, with dict keys in their own order (``reprlib`` sorts them)."""

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        items = [
            f"{self.repr1(key, level - 1)}: {self.repr1(x[key], level - 1)}"
            for key in islice(x, self.maxdict)
        ]
        if len(x) > self.maxdict:
            items.append("...")
        return "{" + ", ".join(items) + "}"


_REPR = _ShortRepr()
_REPR.maxstring = 60
_REPR.maxother = 70
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 4
_REPR.maxlevel = 3


def short(value: Any) -> str:
    """A short, one-line description of ``value`` for failure messages."""
    if isinstance(value, AgentContext):
        return f"AgentContext({len(value.iterations)} iterations)"
    if isinstance(value, Iteration):
        return (
            f"Iteration(number={value.number}, {len(value.messages)} messages, "
            f"{len(value.tool_calls)} tool calls)"
        )
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Seq):
        value = list(value)
    if isinstance(value, BaseModel):
        text = repr(value)
        return text if len(text) <= 100 else text[:99] + "…"
    return _REPR.repr(value).replace("\n", "\\n")


# -- the pattern objects ---------------------------------------------------------------


class Pattern:
    """Base class of pattern objects.

    A pattern compares equal to the values it matches (``value == pattern``), and composes
    with ``&`` (all), ``|`` (any) and ``~`` (not). Subclasses implement :meth:`_match`.
    """

    __slots__ = ()

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        """Whether ``value`` matches; add every mismatch to ``out`` unless it is ``None``."""
        raise NotImplementedError

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        """Whether ``value`` matches inside ``Exact``, where nothing unnamed may be set.

        ``also`` holds the keys that patterns combined with this one by ``&`` name at the
        same place (they count as named). A pattern that names no keys, as a leaf or a
        negation, judges the whole value as :meth:`_match` does: this default.
        """
        return self._match(value, path, out)

    def __eq__(self, other: object) -> bool:
        return _match(other, self, None, None)

    def __ne__(self, other: object) -> bool:
        return not _match(other, self, None, None)

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
            _miss(out, path, f"{short(value)} does not match {self!r}")
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
        try:
            if self.fn(value):
                return True
            problem = f"{short(value)} is rejected by {self!r}"
        except Exception as exc:
            problem = f"{short(value)} made {self!r} raise {type(exc).__name__}: {exc}"
        if out is not None:
            _miss(out, path, problem)
        return False

    def __repr__(self) -> str:
        return f"Predicate({self.description})"


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


def _shaped_like(value: Mapping[Any, Any], cls: type) -> bool:
    """Whether a mapping has the shape of model ``cls`` (as a model_dump of one)."""
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        return False
    model_fields = cls.model_fields
    if not all(isinstance(key, str) and key in model_fields for key in value):
        return False
    return all(name in value for name, info in model_fields.items() if info.is_required())


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
            isinstance(value, Mapping) and _shaped_like(value, self.cls)
        ):
            return True
        if out is not None:
            _miss(out, path, f"expected {self.cls.__name__}, got {short(value)}")
        return False

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        return self._accepts(value, path, out) and _match_mapping(value, self.fields, path, out)

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        return self._accepts(value, path, out) and _exact_record(
            value, self.fields, self.cls, path, out, also
        )

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
        return _exact(value, self.expected, path, out)

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        return _exact(value, self.expected, path, out)

    def __repr__(self) -> str:
        return f"Exact({short(self.expected)})"


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


class Unordered(Pattern):
    """Matches a sequence whose items match the patterns one to one, in any order.

    Add ``...`` to allow other items as well: ``Unordered(a, b, ...)``.
    """

    __slots__ = ("allow_extra", "patterns")

    def __init__(self, *patterns: Any) -> None:
        self.patterns = [p for p in patterns if p is not ...]
        self.allow_extra = len(self.patterns) != len(patterns)

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        return self._assign(value, path, out, _match)

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        return self._assign(value, path, out, _exact)

    def _assign(self, value: Any, path: PathCell, out: Out, compare: Handler) -> bool:
        if not _is_sequence(value):
            if out is not None:
                _miss(out, path, f"expected a sequence, got {short(value)}")
            return False
        items = list(value)
        if out is None and (
            len(items) < len(self.patterns)
            or (not self.allow_extra and len(items) != len(self.patterns))
        ):
            return False
        test = _probe if compare is _match else partial(_probe_with, compare)
        pattern_of, item_of = assign(items, self.patterns, test, keyer=_literal_keyer)
        ok = all(i is not None for i in item_of) and (
            self.allow_extra or all(j is not None for j in pattern_of)
        )
        if ok or out is None:
            return ok
        free_items = [i for i, j in enumerate(pattern_of) if j is None]
        for j, item in enumerate(item_of):
            if item is None:
                report_unmatched(
                    items, free_items, self.patterns[j], path, out, "item", compare=compare
                )
        if not self.allow_extra:
            for i in free_items:
                _miss(out, (path, i), f"unexpected item {short(items[i])}")
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
        return self._each(value, path, out, _match)

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        return self._each(value, path, out, _exact)

    def _each(self, value: Any, path: PathCell, out: Out, compare: Handler) -> bool:
        if not _is_sequence(value):
            if out is not None:
                _miss(out, path, f"expected a sequence, got {short(value)}")
            return False
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
    if _is_sequence(node):
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
            leaf = isinstance(node, _SCALARS)
            if not leaf:
                if id(node) in seen:
                    continue
                seen.add(id(node))
            if _match(node, pattern, node_path, None):
                ok = False
                if out is None:
                    return False
                _miss(
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
            if not _match(value, pattern, path, out):
                ok = False
                if out is None:
                    return False
        return ok

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        # Each part is compared exactly, with what the other parts name counted as named.
        named = [_named(pattern) for pattern in self.patterns]
        start = len(out) if out is not None else 0
        ok = True
        for index, pattern in enumerate(self.patterns):
            others = _merge_named([also, *named[:index], *named[index + 1 :]])
            if not _exact(value, pattern, path, out, others):
                ok = False
                if out is None:
                    return False
        if out is not None:  # each part reports a key none of them names: keep it once
            out[start:] = dict.fromkeys(out[start:])
        return ok

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
            if _match(value, pattern, path, None):
                return True
        if out is not None:
            _miss(out, path, f"{short(value)} matches none of {self!r}")
        return False

    def _match_exact(self, value: Any, path: PathCell, out: Out, also: Named | None) -> bool:
        for pattern in self.patterns:
            if _exact(value, pattern, path, None, also) and (
                # An alternative that names no keys leaves every key to the other parts
                # of the ``&`` this one is in: a key set that none of them names is extra.
                also is None or _named(pattern) is not None or not _extra_keys(value, also)
            ):
                return True
        if out is not None:
            _miss(out, path, f"{short(value)} matches none of {self!r} exactly")
        return False

    def __repr__(self) -> str:
        return " | ".join(_grouped(p) for p in self.patterns)


class Not(Pattern):
    """Matches values that do not match ``pattern`` (``~pattern``)."""

    __slots__ = ("pattern",)

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern

    def _match(self, value: Any, path: PathCell, out: Out) -> bool:
        if not _match(value, self.pattern, path, None):
            return True
        if out is not None:
            _miss(out, path, f"{short(value)} matches {short(self.pattern)}, which it must not")
        return False

    def __invert__(self) -> Any:
        return self.pattern

    def __repr__(self) -> str:
        return f"~{_grouped(self.pattern)}"


# -- the matcher -------------------------------------------------------------------------

Handler = Callable[[Any, Any, PathCell, Out], bool]


def _match(value: Any, pattern: Any, path: PathCell, out: Out) -> bool:
    handler = _HANDLERS.get(type(pattern))
    if handler is None:
        handler = _resolve(type(pattern))
    return handler(value, pattern, path, out)


def _probe(value: Any, pattern: Any) -> bool:
    return _match(value, pattern, None, None)


def _m_plain(value: Any, pattern: Any, path: PathCell, out: Out) -> bool:
    if value == pattern:
        return True
    if out is not None:
        _miss(out, path, f"{short(value)} != {short(pattern)}")
    return False


def _m_none(value: Any, pattern: Any, path: PathCell, out: Out) -> bool:
    if value is None:
        return True
    if out is not None:
        _miss(out, path, f"{short(value)} != None")
    return False


def _m_any(value: Any, pattern: Any, path: PathCell, out: Out) -> bool:
    return True


def _m_pattern(value: Any, pattern: Pattern, path: PathCell, out: Out) -> bool:
    return pattern._match(value, path, out)


def _m_regex(value: Any, pattern: re.Pattern[str], path: PathCell, out: Out) -> bool:
    if isinstance(value, str) and pattern.search(value) is not None:
        return True
    if out is not None:
        _miss(out, path, f"{short(value)} does not match re.compile({pattern.pattern!r})")
    return False


def _m_type(value: Any, pattern: type, path: PathCell, out: Out) -> bool:
    if isinstance(value, pattern):
        return True
    if out is not None:
        _miss(out, path, f"expected an instance of {pattern.__name__}, got {short(value)}")
    return False


def _m_predicate(value: Any, pattern: Callable[[Any], object], path: PathCell, out: Out) -> bool:
    return Predicate(pattern)._match(value, path, out)


def _m_eq(value: Any, pattern: Any, path: PathCell, out: Out) -> bool:
    other = list(value) if isinstance(value, Seq) else value
    try:
        if pattern == other:
            return True
        problem = f"{short(value)} != {short(pattern)}"
    except Exception as exc:
        problem = (
            f"comparing {short(value)} with {short(pattern)} raised {type(exc).__name__}: {exc}"
        )
    if out is not None:
        _miss(out, path, problem)
    return False


#: ``...`` without end: ``map(is_, pattern, _ELLIPSES)`` finds a gap marker at C speed.
_ELLIPSES = repeat(...)

_DICT, _MODEL, _MAPPING, _OBJECT, _NOT_A_RECORD = range(5)
_ACCESS: dict[type, int] = {dict: _DICT}


def _access(cls: type) -> int:
    """How the fields of a ``cls`` value are read (cached per class)."""
    kind = _ACCESS.get(cls)
    if kind is None:
        if issubclass(cls, dict):
            kind = _DICT
        elif issubclass(cls, BaseModel):
            kind = _MODEL
        elif issubclass(cls, Mapping):
            kind = _MAPPING
        elif issubclass(cls, _SCALARS) or (
            issubclass(cls, Sequence) and not issubclass(cls, (str, bytes, bytearray))
        ):
            kind = _NOT_A_RECORD
        else:
            kind = _OBJECT
        _ACCESS[cls] = kind
    return kind


def _m_mapping(value: Any, pattern: Mapping[Any, Any], path: PathCell, out: Out) -> bool:
    """Each key of ``pattern`` against the same key, field or attribute of ``value``."""
    access = _ACCESS.get(type(value))
    if access is None:
        access = _access(type(value))
    if access == _DICT:
        get = value.get
    elif access == _MODEL:
        # A model's fields are in its instance dict; properties (final_output) need getattr.
        get = value.__dict__.get
    elif access == _MAPPING:
        get = _mapping_getter(value)
    elif access == _OBJECT:
        get = _attribute_getter(value)
    else:
        return _not_a_mapping(value, path, out)
    if out is not None:
        return _collect_mapping(value, pattern, path, out, get, access)
    # A probe: the first mismatch decides, no paths to build. This loop is the hot path of
    # partial matching: the str and int leaves are compared inline, without a handler call.
    handlers = _HANDLERS
    for key, sub in pattern.items():
        item = get(key, _MISSING)
        if item is _MISSING:
            if access != _MODEL or not isinstance(key, str):
                return False
            item = getattr(value, key, _MISSING)
            if item is _MISSING:
                return False
        kind = type(sub)
        if kind is str or kind is int:
            if not item == sub:  # noqa: SIM201 (the value's __eq__, as in ==)
                return False
        elif not (handlers.get(kind) or _resolve(kind))(item, sub, None, None):
            return False
    return True


def _not_a_mapping(value: Any, path: PathCell, out: Out) -> bool:
    """``_m_mapping`` of a value that has no keys or fields: always a mismatch."""
    if out is not None:
        _miss(out, path, f"expected a mapping or an object with fields, got {short(value)}")
    return False


def _collect_mapping(
    value: Any,
    pattern: Mapping[Any, Any],
    path: PathCell,
    out: list[Mismatch],
    get: Callable[[Any, Any], Any],
    access: int,
) -> bool:
    """``_m_mapping`` collecting every mismatch, each with its path (after a failed probe)."""
    handlers = _HANDLERS
    ok = True
    for key, sub in pattern.items():
        item = get(key, _MISSING)
        if item is _MISSING and access == _MODEL and isinstance(key, str):
            item = getattr(value, key, _MISSING)
        if item is _MISSING:
            ok = False
            _miss(out, (path, key), f"missing, expected {short(sub)}")
            continue
        kind = type(sub)
        if kind is str or kind is int:
            if not item == sub:  # noqa: SIM201 (the value's __eq__, as in ==)
                ok = False
                _miss(out, (path, key), f"{short(item)} != {short(sub)}")
            continue
        if not (handlers.get(kind) or _resolve(kind))(item, sub, (path, key), out):
            ok = False
    return ok


_match_mapping = _m_mapping


def _attribute_getter(obj: Any) -> Callable[[Any, Any], Any]:
    def get(key: Any, default: Any) -> Any:
        return getattr(obj, key, default) if isinstance(key, str) else default

    return get


def _mapping_getter(mapping: Mapping[Any, Any]) -> Callable[[Any, Any], Any]:
    def get(key: Any, default: Any) -> Any:
        try:
            return mapping[key]
        except KeyError:
            return default

    return get


def _model_pattern_fields(pattern: BaseModel) -> dict[str, Any]:
    cls = type(pattern)
    given = pattern.model_fields_set
    return {name: getattr(pattern, name) for name in cls.model_fields if name in given}


def _m_model(value: Any, pattern: BaseModel, path: PathCell, out: Out) -> bool:
    cls = type(pattern)
    if not isinstance(value, cls) and not (isinstance(value, Mapping) and _shaped_like(value, cls)):
        if out is not None:
            _miss(out, path, f"expected {cls.__name__}, got {short(value)}")
        return False
    return _match_mapping(value, _model_pattern_fields(pattern), path, out)


def _m_sequence(value: Any, pattern: Sequence[Any], path: PathCell, out: Out) -> bool:
    kind = type(value)
    if kind is list or kind is tuple:
        items = value
    elif kind is Seq:
        items = value.to_list()  # one C-level copy; its len and iteration are then C too
    elif _is_sequence(value):
        items = list(value)
    else:
        if out is not None:
            _miss(out, path, f"expected a sequence, got {short(value)}")
        return False
    if any(map(is_, pattern, _ELLIPSES)):  # identity, not ==: patterns may define __eq__
        return _match_gapped(list(items), pattern, path, out)
    if len(items) != len(pattern):
        if out is None:
            return False
        return _match_items(list(items), pattern, path, out, _match)
    if out is None:  # a probe: the first mismatch decides, no paths to build
        return all(map(_probe, items, pattern))
    handlers = _HANDLERS
    ok = True  # collecting: every mismatch, each with its path
    for index, (item, sub) in enumerate(zip(items, pattern)):  # noqa: B905 (same lengths)
        kind = type(sub)
        if kind is str or kind is int:
            if not item == sub:  # noqa: SIM201 (the value's __eq__, as in ==)
                ok = False
                _miss(out, (path, index), f"{short(item)} != {short(sub)}")
            continue
        if not (handlers.get(kind) or _resolve(kind))(item, sub, (path, index), out):
            ok = False
    return ok


def _match_items(
    items: Sequence[Any],
    pattern: Sequence[Any],
    path: PathCell,
    out: Out,
    compare: Handler,
) -> bool:
    """Item by item, then every item too many or too few."""
    n, m = len(items), len(pattern)
    if out is None and n != m:
        return False
    ok = True
    for index in range(min(n, m)):
        if not compare(items[index], pattern[index], (path, index), out):
            ok = False
            if out is None:
                return False
    if n != m and out is not None:
        ok = False
        for index in range(m, n):
            _miss(out, (path, index), f"unexpected item {short(items[index])}")
        for index in range(n, m):
            _miss(out, (path, index), f"missing item, expected {short(pattern[index])}")
    return ok


def _run_at(items: Sequence[Any], start: int, run: Sequence[Any], compare: Handler) -> bool:
    for offset, pattern in enumerate(run):
        if not compare(items[start + offset], pattern, None, None):
            return False
    return True


def _find_run(
    items: Sequence[Any], lo: int, hi: int, run: Sequence[Any], compare: Handler
) -> int | None:
    first = run[0]
    for start in range(lo, hi - len(run) + 1):
        if compare(items[start], first, None, None) and _run_at(items, start, run, compare):
            return start
    return None


def _report_run(
    items: Sequence[Any],
    start: int,
    run: Sequence[Any],
    path: PathCell,
    out: list[Mismatch],
    compare: Handler,
) -> None:
    for offset, pattern in enumerate(run):
        index = start + offset
        if 0 <= index < len(items):
            compare(items[index], pattern, (path, index), out)
        else:
            _miss(out, (path, index), f"missing item, expected {short(pattern)}")


def _match_gapped(
    items: Sequence[Any],
    pattern: Sequence[Any],
    path: PathCell,
    out: Out,
    compare: Handler = _match,
) -> bool:
    """A list pattern with ``...`` gaps: the runs between them appear in order.

    ``compare`` is ``_match``, or ``_exact`` inside ``Exact``.
    """
    runs: list[list[Any]] = [[]]
    for p in pattern:
        if p is ...:
            runs.append([])
        else:
            runs[-1].append(p)
    head, middle, tail = runs[0], runs[1:-1], runs[-1]
    n = len(items)
    ok = True
    lo, hi = 0, n
    if head:
        if n < len(head) or not _run_at(items, 0, head, compare):
            ok = False
            if out is None:
                return False
            _report_run(items, 0, head, path, out, compare)
        lo = min(len(head), n)
    if tail:
        start = n - len(tail)
        if start < lo or not _run_at(items, start, tail, compare):
            ok = False
            if out is None:
                return False
            if start < lo:
                _miss(
                    out,
                    path,
                    f"{n} items, expected at least {len(head) + len(tail)} "
                    f"({len(head)} first, {len(tail)} last)",
                )
            else:
                _report_run(items, start, tail, path, out, compare)
        hi = max(start, lo)
    for run in middle:
        if not run:
            continue
        found = _find_run(items, lo, hi, run, compare)
        if found is not None:
            lo = found + len(run)
            continue
        ok = False
        if out is None:
            return False
        _report_missing_run(items, lo, hi, run, path, out, compare)
    return ok


def _report_missing_run(
    items: Sequence[Any],
    lo: int,
    hi: int,
    run: Sequence[Any],
    path: PathCell,
    out: list[Mismatch],
    compare: Handler,
) -> None:
    what = (
        f"no item matches {short(run[0])}"
        if len(run) == 1
        else (f"no run of {len(run)} items matches {short(list(run))}")
    )
    where = f" from index {lo} on" if lo else ""
    best: list[Mismatch] | None = None
    best_start = 0
    for start in range(lo, min(hi - len(run) + 1, lo + _CLOSEST_LIMIT)):
        found: list[Mismatch] = []
        _report_run(items, start, run, path, found, compare)
        if best is None or len(found) < len(best):
            best, best_start = found, start
    if best is None:
        _miss(out, path, f"{what}{where}: there are no items left to match")
        return
    closest = format_path((path, best_start))
    _miss(out, path, f"{what}{where}; the closest is {closest}, with {_count(best)}:")
    out.extend(best)


def _count(found: Sequence[Mismatch]) -> str:
    return f"{len(found)} mismatch" + ("" if len(found) == 1 else "es")


def _resolve(cls: type) -> Handler:
    handler: Handler
    if issubclass(cls, Pattern):
        handler = _m_pattern
    elif issubclass(cls, BaseModel):
        handler = _m_model
    elif issubclass(cls, type):
        # A class matches its instances, unless its metaclass defines ``==`` itself (as
        # dirty-equals' classes do: ``IsPositiveInt == 3``).
        handler = _m_type if cls.__eq__ is type.__eq__ else _m_eq
    elif issubclass(cls, Mapping):
        handler = _m_mapping
    elif cls is type(None):
        handler = _m_none
    elif issubclass(cls, _SCALARS):
        handler = _m_plain
    elif issubclass(cls, re.Pattern):
        handler = _m_regex
    elif issubclass(cls, Sequence):
        handler = _m_sequence
    elif issubclass(
        cls, (FunctionType, BuiltinFunctionType, BuiltinMethodType, MethodType, partial)
    ):
        handler = _m_predicate
    else:
        handler = _m_eq
    _HANDLERS[cls] = handler
    return handler


_HANDLERS: dict[type, Handler] = {
    str: _m_plain,
    int: _m_plain,
    float: _m_plain,
    bool: _m_plain,
    type(None): _m_none,
    EllipsisType: _m_any,
    dict: _m_mapping,
    list: _m_sequence,
    tuple: _m_sequence,
    Seq: _m_sequence,
}


# -- exact comparison --------------------------------------------------------------------


def _exact(value: Any, expected: Any, path: PathCell, out: Out, also: Named | None = None) -> bool:
    """``value`` against ``expected`` inside ``Exact``: nothing unnamed may be set.

    ``also`` holds what the other parts of an ``&`` name at this place (see ``AllOf``).
    """
    kind = _EXACT_KINDS.get(type(expected))
    if kind is None:
        kind = _exact_kind(type(expected))
    if value is expected and _X_SCALAR <= kind <= _X_SEQUENCE:
        return True  # data matches itself (a class, a function or a pattern may not)
    if kind <= _X_SCALAR:
        return _match(value, expected, path, out)
    if kind == _X_PATTERN:
        return expected._match_exact(value, path, out, also)  # type: ignore[no-any-return]
    if kind == _X_MODEL:
        return _exact_model(value, expected, path, out)
    if kind == _X_MAPPING:
        if also is None and _ACCESS.get(type(value)) == _DICT:
            return _exact_dict(value, expected, path, out)
        return _exact_record(value, expected, None, path, out, also)
    if not _is_sequence(value):
        if out is not None:
            _miss(out, path, f"expected a sequence, got {short(value)}")
        return False
    items = value.to_list() if type(value) is Seq else list(value)
    pattern = list(expected)
    if any(map(is_, pattern, _ELLIPSES)):
        return _match_gapped(items, pattern, path, out, _exact)
    return _match_items(items, pattern, path, out, _exact)


#: How ``_exact`` compares with an expected value of each type; from ``_X_SCALAR`` to
#: ``_X_SEQUENCE``, the values are data, which match themselves.
_X_LEAF, _X_SCALAR, _X_MODEL, _X_MAPPING, _X_SEQUENCE, _X_PATTERN = range(6)
_EXACT_KINDS: dict[type, int] = {str: _X_SCALAR, int: _X_SCALAR, type(None): _X_SCALAR}


def _exact_kind(cls: type) -> int:
    """The kind of ``cls`` for ``_exact`` (cached per type)."""
    if issubclass(cls, Pattern):
        kind = _X_PATTERN
    elif issubclass(cls, (*_SCALARS, datetime, date, time)):
        kind = _X_SCALAR
    elif issubclass(cls, BaseModel):
        kind = _X_MODEL
    elif issubclass(cls, Mapping):
        kind = _X_MAPPING
    elif issubclass(cls, Sequence) and not issubclass(cls, (str, bytes, bytearray)):
        kind = _X_SEQUENCE
    else:
        kind = _X_LEAF
    _EXACT_KINDS[cls] = kind
    return kind


def _exact_model(value: Any, expected: BaseModel, path: PathCell, out: Out) -> bool:
    """A model instance under ``Exact``: the same type, every field compared exactly."""
    if type(value) is not type(expected):
        if out is not None:
            _miss(out, path, f"expected {type(expected).__name__}, got {short(value)}")
        return False
    ok = True
    for name in type(expected).model_fields:
        if not _exact(getattr(value, name), getattr(expected, name), (path, name), out):
            ok = False
            if out is None:
                return False
    return ok


def _exact_dict(value: Any, expected: Mapping[Any, Any], path: PathCell, out: Out) -> bool:
    """``_exact_record`` of a dict against a dict pattern: the common case, made short."""
    ok = True
    for key, sub in expected.items():
        if key not in value:
            ok = False
            if out is None:
                return False
            _miss(out, (path, key), f"missing, expected {short(sub)}")
        elif not _exact(value[key], sub, (path, key), out):
            ok = False
            if out is None:
                return False
    for key in value:
        if key not in expected:
            ok = False
            if out is None:
                return False
            _miss(out, (path, key), f"unexpected key, with value {short(value[key])}")
    return ok


def _exact_record(
    value: Any,
    expected: Mapping[Any, Any],
    cls: type | None,
    path: PathCell,
    out: Out,
    also: Named | None,
) -> bool:
    """The keys ``expected`` names, compared exactly, then every other key that is set.

    ``value`` may be a mapping, a model or a dataclass; ``cls`` is the class a ``Like``
    names, whose field defaults count as unset in a mapping shaped like it.
    """
    access = _ACCESS.get(type(value))
    if access is None:
        access = _access(type(value))
    get = _record_getter(value, access)
    if get is None:
        if out is not None:
            _miss(out, path, _not_a_record(value))
        return False
    ok = True
    for key, sub in expected.items():
        item = get(key, _MISSING)
        if item is _MISSING:
            ok = False
            if out is None:
                return False
            _miss(out, (path, key), f"missing, expected {short(sub)}")
        elif not _exact(item, sub, (path, key), out):
            ok = False
            if out is None:
                return False
    no_others = _no_other_keys_set(value, expected, cls, access, path, out, also)
    return ok and no_others


def _no_other_keys_set(
    value: Any,
    expected: Mapping[Any, Any],
    cls: type | None,
    access: int,
    path: PathCell,
    out: Out,
    also: Named | None,
) -> bool:
    """Whether ``value`` sets no key that neither ``expected`` nor ``also`` names.

    The second half of ``_exact_record``: each such key is a mismatch.
    """
    also_keys = also.keys if also is not None else frozenset()
    if cls is None and also is not None:
        cls = also.cls
    if cls is None and access in (_DICT, _MAPPING):  # every key is set
        extra = [key for key in value if key not in expected and key not in also_keys]
        if extra and out is not None:
            for key in extra:
                _miss(out, (path, key), f"unexpected key, with value {short(value[key])}")
        return not extra
    ok = True
    for key, item, default in _set_entries(value, cls):
        if key in expected or key in also_keys:
            continue
        ok = False
        if out is None:
            return False
        _miss(out, (path, key), _unexpected(value, item, default))
    return ok


def _record_getter(value: Any, access: int) -> Callable[[Any, Any], Any] | None:
    """How ``Exact`` reads a named key of ``value`` (``None``: it cannot list its keys)."""
    if access == _DICT:
        return value.get  # type: ignore[no-any-return]
    if access == _MAPPING:
        return _mapping_getter(value)
    if access == _MODEL:
        return _model_getter(value)
    if access == _OBJECT and is_dataclass(value) and not isinstance(value, type):
        return _attribute_getter(value)
    return None


def _model_getter(model: BaseModel) -> Callable[[Any, Any], Any]:
    """A model's fields, then its properties (``final_output``) for the keys that are not."""
    own = model.__dict__

    def get(key: Any, default: Any) -> Any:
        item = own.get(key, _MISSING)
        if item is _MISSING and isinstance(key, str):
            item = getattr(model, key, _MISSING)
        return default if item is _MISSING else item

    return get


def _not_a_record(value: Any) -> str:
    if isinstance(value, _SCALARS) or _is_sequence(value):
        return f"expected a mapping, a model or a dataclass, got {short(value)}"
    return (
        f"expected a mapping, a model or a dataclass, got {short(value)}: Exact cannot list "
        f"which fields of a {type(value).__name__} are set. Drop Exact to match the named "
        "fields only, or compare a mapping of them (vars(value))."
    )


def _unexpected(value: Any, item: Any, default: Any) -> str:
    if isinstance(value, Mapping):
        return f"unexpected key, with value {short(item)}"
    if default is _REQUIRED:
        return (
            f"unexpected field, set to {short(item)}; a required field is always set: "
            "name it (ANY for any value)"
        )
    return f"unexpected field, set to {short(item)} (its default is {short(default)})"


#: The default of a field that has none (it is always set).
_REQUIRED: Any = object()
#: Field name -> default (or ``_REQUIRED``), per model or dataclass class.
_DEFAULTS: dict[type, dict[str, Any]] = {}


def _defaults(cls: type) -> dict[str, Any]:
    """The default of each field of a model or dataclass class (cached per class)."""
    found = _DEFAULTS.get(cls)
    if found is not None:
        return found
    found = {}
    if issubclass(cls, BaseModel):
        for name, info in cls.model_fields.items():
            if info.is_required() or info.default_factory_takes_validated_data:
                found[name] = _REQUIRED  # a default computed from other fields: always set
            else:
                found[name] = info.get_default(call_default_factory=True)
    elif is_dataclass(cls):
        for spec in fields(cls):
            if spec.default is not MISSING:
                found[spec.name] = spec.default
            elif spec.default_factory is not MISSING:
                found[spec.name] = spec.default_factory()
            else:
                found[spec.name] = _REQUIRED
    _DEFAULTS[cls] = found
    return found


def _at_default(item: Any, default: Any) -> bool:
    if default is _REQUIRED:
        return False
    if item is default:
        return True
    try:
        return bool(item == default)
    except Exception:  # a value that cannot be compared with the default counts as set
        return False


def _set_entries(value: Any, cls: type | None) -> Iterator[tuple[Any, Any, Any]]:
    """``(key, item, default)`` of every key of ``value`` that counts as set under Exact.

    A mapping's keys are set, except those at the default of ``cls``'s field of that name;
    a model's or dataclass's fields are set when they differ from their default.
    """
    if isinstance(value, Mapping):
        known = _defaults(cls) if isinstance(cls, type) else {}
        for key, item in value.items():
            default = known.get(key, _REQUIRED) if isinstance(key, str) else _REQUIRED
            if not _at_default(item, default):
                yield key, item, default
        return
    if isinstance(value, BaseModel):
        own = value.__dict__
        for name, default in _defaults(type(value)).items():
            item = own.get(name, _MISSING)
            if item is _MISSING:
                item = getattr(value, name, None)
            if not _at_default(item, default):
                yield name, item, default
        yield from ((key, item, _REQUIRED) for key, item in (value.model_extra or {}).items())
        return
    if is_dataclass(value) and not isinstance(value, type):
        for name, default in _defaults(type(value)).items():
            item = getattr(value, name, None)
            if not _at_default(item, default):
                yield name, item, default


def _extra_keys(value: Any, named: Named) -> bool:
    """Whether ``value`` has a key set that ``named`` does not name."""
    return any(key not in named.keys for key, _, _ in _set_entries(value, named.cls))


def _named(pattern: Any) -> Named | None:
    """What ``pattern`` names at its own level (``None``: no keys, as a leaf names none).

    An ``|`` names what any of its alternatives names: the alternative that matches checks
    that no more is set.
    """
    if isinstance(pattern, Pattern):
        if isinstance(pattern, Like):
            return Named(frozenset(pattern.fields), pattern.cls)
        if isinstance(pattern, Exact):
            return _named(pattern.expected)
        if isinstance(pattern, (AllOf, AnyOf)):
            return _merge_named([_named(part) for part in pattern.patterns])
        return None
    if isinstance(pattern, BaseModel):
        return Named(frozenset(type(pattern).model_fields), type(pattern))
    if isinstance(pattern, Mapping):
        return Named(frozenset(pattern), None)
    return None


def _merge_named(parts: Sequence[Named | None]) -> Named | None:
    found = [part for part in parts if part is not None]
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    cls = next((part.cls for part in found if part.cls is not None), None)
    return Named(frozenset().union(*(part.keys for part in found)), cls)


def _probe_with(compare: Handler, value: Any, pattern: Any) -> bool:
    return compare(value, pattern, None, None)


# -- unordered assignment ----------------------------------------------------------------

_WILD: Any = object()
_NO_KEY: Any = object()
_LITERALS = (str, bytes, int, float, bool, type(None))


def _literal_fields(pattern: Any, prefix: tuple[Any, ...], depth: int) -> Iterator[tuple[Any, Any]]:
    """The (path, literal) pairs a value must have to match ``pattern``."""
    if isinstance(pattern, _LITERALS):
        yield prefix, pattern
        return
    if depth >= 3:
        return
    if isinstance(pattern, Like):
        items: Mapping[Any, Any] = pattern.fields
    elif isinstance(pattern, BaseModel):
        items = _model_pattern_fields(pattern)
    elif isinstance(pattern, Mapping):
        items = pattern
    else:
        return
    for key, sub in items.items():
        if isinstance(sub, (*_LITERALS, Mapping, Like, BaseModel)):
            yield from _literal_fields(sub, (*prefix, key), depth + 1)


def _extract(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        if isinstance(value, Mapping):
            value = value.get(key, _MISSING)
        elif isinstance(key, str) and not isinstance(value, _SCALARS):
            value = getattr(value, key, _MISSING)
        else:
            return _NO_KEY
        if value is _MISSING:
            return _NO_KEY
    return value


class Keyer:
    """Keys that narrow down which patterns an item can match (an index, for speed).

    ``pattern_key(pattern)`` is a hashable value every matching item has, or ``WILD``;
    ``item_key(item)`` is that item's value, or ``NO_KEY``.
    """

    WILD: Any = _WILD
    NO_KEY: Any = _NO_KEY

    def pattern_key(self, pattern: Any) -> Any:
        """The key of the items that may match ``pattern`` (``WILD`` for any item)."""
        return _WILD

    def item_key(self, item: Any) -> Any:
        """The key of ``item``."""
        return _NO_KEY


class _LiteralKeyer(Keyer):
    """Indexes patterns on their most selective literal field (``name``, ``role``...)."""

    def __init__(self, path: tuple[Any, ...]) -> None:
        self.path = path

    def pattern_key(self, pattern: Any) -> Any:
        for path, literal in _literal_fields(pattern, (), 0):
            if path == self.path:
                return literal
        return _WILD

    def item_key(self, item: Any) -> Any:
        return _extract(item, self.path)


def _literal_keyer(patterns: Sequence[Any]) -> Keyer | None:
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


def assign(
    items: Sequence[Any],
    patterns: Sequence[Any],
    test: Callable[[Any, Any], bool],
    *,
    keyer: Keyer | Callable[[Sequence[Any]], Keyer | None] | None = None,
) -> tuple[list[int | None], list[int | None]]:
    """Pair items with patterns one to one so that as many patterns as possible match.

    Returns ``(pattern_of_item, item_of_pattern)``. Items first try the patterns indexed
    under their key (then the unindexed ones) and take the first free one that matches;
    only when that leaves patterns unmatched are augmenting paths searched, so the usual
    cost is linear and the result is a maximum matching.
    """
    if keyer is not None and not isinstance(keyer, Keyer):
        keyer = keyer(patterns)
    n, m = len(items), len(patterns)
    pattern_of: list[int | None] = [None] * n
    item_of: list[int | None] = [None] * m
    buckets, wild, pattern_keys = _index_patterns(patterns, keyer)
    item_keys: list[Any] = [_NO_KEY] * n
    heads: dict[Any, int] = {}
    wild_head = 0

    def first_free(candidates: list[int], start: int, i: int) -> tuple[int | None, int]:
        while start < len(candidates) and item_of[candidates[start]] is not None:
            start += 1
        for position in range(start, len(candidates)):
            j = candidates[position]
            if item_of[j] is None and test(items[i], patterns[j]):
                return j, start
        return None, start

    for i, item in enumerate(items):
        found: int | None = None
        if buckets and keyer is not None:
            key = keyer.item_key(item)
            item_keys[i] = key
            try:
                bucket = buckets.get(key) if key is not _NO_KEY else None
            except TypeError:
                bucket = None
            if bucket:
                found, heads[key] = first_free(bucket, heads.get(key, 0), i)
        if found is None and wild:
            found, wild_head = first_free(wild, wild_head, i)
        if found is not None:
            pattern_of[i] = found
            item_of[found] = i
    if all(i is not None for i in item_of) or all(j is not None for j in pattern_of):
        return pattern_of, item_of
    _augment(items, patterns, test, pattern_of, item_of, pattern_keys, item_keys)
    return pattern_of, item_of


def _index_patterns(
    patterns: Sequence[Any], keyer: Keyer | None
) -> tuple[dict[Any, list[int]], list[int], list[Any]]:
    """``(buckets, wild, pattern_keys)``: the patterns' indexes by key, then unkeyed.

    ``buckets`` maps a key to the indexes of the patterns under it, in order; ``wild``
    lists the patterns any item may match (no key, or an unhashable one); ``pattern_keys``
    is each pattern's key, ``WILD`` for those in ``wild``.
    """
    buckets: dict[Any, list[int]] = {}
    wild: list[int] = []
    pattern_keys: list[Any] = [_WILD] * len(patterns)
    for j, pattern in enumerate(patterns):
        key = keyer.pattern_key(pattern) if keyer is not None else _WILD
        if key is not _WILD:
            try:
                buckets.setdefault(key, []).append(j)
            except TypeError:
                key = _WILD
        pattern_keys[j] = key
        if key is _WILD:
            wild.append(j)
    return buckets, wild, pattern_keys


def _items_by_key(item_keys: Sequence[Any]) -> dict[Any, list[int]]:
    """The indexes of the items under each hashable key (items without a key left out)."""
    by_key: dict[Any, list[int]] = {}
    for i, key in enumerate(item_keys):
        if key is not _NO_KEY:
            try:
                by_key.setdefault(key, []).append(i)
            except TypeError:
                continue
    return by_key


def _flip_path(
    reached: Mapping[int, int],
    i: int,
    start: int,
    pattern_of: list[int | None],
    item_of: list[int | None],
) -> None:
    """Pair the free item ``i`` along the augmenting path back to the pattern ``start``."""
    while True:
        owner = reached[i]
        previous = item_of[owner]
        item_of[owner] = i
        pattern_of[i] = owner
        if owner == start or previous is None:
            break
        i = previous


def _augment(
    items: Sequence[Any],
    patterns: Sequence[Any],
    test: Callable[[Any, Any], bool],
    pattern_of: list[int | None],
    item_of: list[int | None],
    pattern_keys: list[Any],
    item_keys: list[Any],
) -> None:
    """Improve a greedy assignment along augmenting paths until it is maximum."""
    by_key = _items_by_key(item_keys)
    everyone = list(range(len(items)))
    cache: dict[tuple[int, int], bool] = {}

    def ok(i: int, j: int) -> bool:
        result = cache.get((i, j))
        if result is None:
            result = cache[(i, j)] = test(items[i], patterns[j])
        return result

    def candidates(j: int) -> list[int]:
        key = pattern_keys[j]
        if key is _WILD:
            return everyone
        return by_key.get(key, [])

    for start in range(len(patterns)):
        if item_of[start] is not None:
            continue
        reached: dict[int, int] = {}
        queue = [start]
        augmented = False
        while queue and not augmented:
            j = queue.pop(0)
            for i in candidates(j):
                if i in reached or not ok(i, j):
                    continue
                reached[i] = j
                if pattern_of[i] is None:
                    _flip_path(reached, i, start, pattern_of, item_of)
                    augmented = True
                    break
                queue.append(pattern_of[i])  # type: ignore[arg-type]


def report_unmatched(
    items: Sequence[Any],
    free_items: Sequence[int],
    pattern: Any,
    path: PathCell,
    out: list[Mismatch],
    noun: str,
    describe: Callable[[Any], str] = short,
    compare: Callable[[Any, Any, PathCell, list[Mismatch]], object] | None = None,
) -> None:
    """Report a pattern no item matched, with the closest free item's mismatches."""
    compare = compare or _match
    pool = list(free_items) or list(range(len(items)))
    best: list[Mismatch] | None = None
    best_index = 0
    for i in pool[:_CLOSEST_LIMIT]:
        found: list[Mismatch] = []
        compare(items[i], pattern, (path, i), found)
        if best is None or len(found) < len(best):
            best, best_index = found, i
    message = f"no {noun} matches {describe(pattern)}"
    if best is None:
        _miss(out, path, message)
        return
    closest = format_path((path, best_index))
    _miss(out, path, f"{message}; the closest is {closest}, with {_count(best)}:")
    out.extend(best)


# -- the public functions ----------------------------------------------------------------


def mismatches(value: Any, pattern: Any) -> list[Mismatch]:
    """Every mismatch between ``value`` and ``pattern``, with its path; ``[]`` if it matches."""
    if _match(value, pattern, None, None):
        return []
    found: list[Mismatch] = []
    _match(value, pattern, None, found)
    if not found:
        found.append(Mismatch("(root)", f"{short(value)} does not match {short(pattern)}"))
    return found


def differences(actual: Any, expected: Any) -> list[Mismatch]:
    """Every difference between two values compared in full (``ctx == other_ctx``)."""
    if _exact(actual, expected, None, None):
        return []
    found: list[Mismatch] = []
    _exact(actual, expected, None, found)
    return found


#: The matcher's entry points for the package's other pattern modules (not public API).
match_at = _match
exact_at = _exact
fields_at = _match_mapping


def render_mismatches(found: Sequence[Mismatch]) -> list[str]:
    """The count first, then every mismatch with its path, one per line."""
    return [f"{_count(found)}:", *(f"  {mismatch}" for mismatch in found)]


def matches(value: Any, pattern: Any) -> Literal[True]:
    """Check ``value`` against ``pattern``: return ``True`` or raise :class:`MismatchError`.

    Write ``assert matches(result.context, {...})``. On failure the error lists the count
    of mismatches, then every mismatch with its path. To test without raising, use
    :func:`mismatches` or ``value == pattern`` with a pattern object.
    """
    __tracebackhide__ = True
    if _match(value, pattern, None, None):
        return True
    found = mismatches(value, pattern)
    raise MismatchError("\n".join(render_mismatches(found)), mismatches=found)


def assertrepr_compare(op: str, left: Any, right: Any) -> list[str] | None:
    """The failure explanation of ``left == right`` for patterns and the context's models.

    ``None`` for every other comparison, which pytest then explains as usual.
    """
    if op != "==":
        return None
    if isinstance(right, Pattern):
        found = mismatches(left, right)
    elif isinstance(left, Pattern):
        found = mismatches(right, left)
    elif isinstance(left, _MODELS) and isinstance(right, _MODELS):
        found = differences(left, right)
    else:
        return None
    if not found:
        return None
    return [f"{short(left)} == {short(right)}", *render_mismatches(found)]
