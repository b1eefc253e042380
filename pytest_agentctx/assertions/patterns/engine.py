"""The matching engine: a value walked against a pattern, every mismatch with its path.

``match_at(value, pattern, path, out)`` dispatches on the pattern's type, once per type
(the handler is cached): a dict matches a mapping, a model or any object on the keys it
names; a model instance on the fields it was built with; a list or tuple item by item,
with ``...`` for any run of items; a compiled regular expression searches a string; a
class matches its instances; a function is a predicate; any other object is compared with
``==``; ``...`` outside a list matches anything. A pattern object (a :class:`Matcher`,
the base of ``Pattern``) decides for itself, through its ``_match``.

With ``out`` a list, every mismatch is collected there, each with its path; with ``out``
``None`` the walk is a probe that stops at the first one and builds no paths, which is the
hot path: ``mismatches()`` probes first and walks again only when the value does not match.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from itertools import repeat
from operator import is_
from types import BuiltinFunctionType, BuiltinMethodType, EllipsisType, FunctionType, MethodType
from typing import Any, NamedTuple

from pydantic import BaseModel

from pytest_agentctx.assertions.patterns.mismatch import (
    Mismatch,
    Out,
    PathCell,
    format_path,
    miss,
    report_closest,
    short,
)
from pytest_agentctx.context._seq import Seq

#: A value no field holds: the marker of a key that is missing.
MISSING: Any = object()
#: The values that have no parts to walk into.
SCALARS = (str, bytes, int, float, bool, type(None))

#: Compares a value with a pattern at a path: ``match_at``, or ``exact_at`` inside ``Exact``.
Handler = Callable[[Any, Any, PathCell, Out], bool]


class Named(NamedTuple):
    """What the patterns joined by ``&`` under ``Exact`` name at one place: the keys, and
    the model class whose defaults count as unset in a mapping (``None`` if none)."""

    keys: frozenset[Any]
    cls: type | None


class Matcher:
    """What the engine knows of a pattern object: how it matches a value, with and without
    ``Exact``, and which keys it names. ``Pattern`` is the one subclass; the engine and the
    exact comparison dispatch to the pattern objects through these methods."""

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

    def _names(self) -> Named | None:
        """What this pattern names at its own level under ``Exact`` (``None``: no keys, as
        a leaf names none)."""
        return None


def is_sequence(value: Any) -> bool:
    """Whether ``value`` is a sequence of items (a string is not)."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def not_a_sequence(value: Any, path: PathCell, out: Out) -> bool:
    """A pattern for sequences against ``value``, which is not one: always a mismatch."""
    if out is not None:
        miss(out, path, f"expected a sequence, got {short(value)}")
    return False


def shaped_like(value: Mapping[Any, Any], cls: type) -> bool:
    """Whether a mapping has the shape of model ``cls`` (as a model_dump of one)."""
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        return False
    model_fields = cls.model_fields
    if not all(isinstance(key, str) and key in model_fields for key in value):
        return False
    return all(name in value for name, info in model_fields.items() if info.is_required())


def model_pattern_fields(pattern: BaseModel) -> dict[str, Any]:
    """The fields a model instance used as a pattern was built with, and their values."""
    cls = type(pattern)
    given = pattern.model_fields_set
    return {name: getattr(pattern, name) for name in cls.model_fields if name in given}


def predicate_at(
    fn: Callable[[Any], object], description: str, value: Any, path: PathCell, out: Out
) -> bool:
    """Whether ``fn(value)`` is truthy, as ``Predicate(description)``; an exception counts
    as no match."""
    try:
        if fn(value):
            return True
        problem = f"{short(value)} is rejected by Predicate({description})"
    except Exception as exc:
        problem = f"{short(value)} made Predicate({description}) raise {type(exc).__name__}: {exc}"
    if out is not None:
        miss(out, path, problem)
    return False


# -- the walk ---------------------------------------------------------------------------


def match_at(value: Any, pattern: Any, path: PathCell, out: Out) -> bool:
    """Whether ``value`` matches ``pattern`` at ``path``; every mismatch goes to ``out``."""
    handler = _HANDLERS.get(type(pattern))
    if handler is None:
        handler = _resolve(type(pattern))
    return handler(value, pattern, path, out)


def probe(value: Any, pattern: Any) -> bool:
    """Whether ``value`` matches ``pattern`` (no paths, no mismatches)."""
    return match_at(value, pattern, None, None)


def _m_plain(value: Any, pattern: Any, path: PathCell, out: Out) -> bool:
    if value == pattern:
        return True
    if out is not None:
        miss(out, path, f"{short(value)} != {short(pattern)}")
    return False


def _m_none(value: Any, pattern: Any, path: PathCell, out: Out) -> bool:
    if value is None:
        return True
    if out is not None:
        miss(out, path, f"{short(value)} != None")
    return False


def _m_any(value: Any, pattern: Any, path: PathCell, out: Out) -> bool:
    return True


def _m_pattern(value: Any, pattern: Matcher, path: PathCell, out: Out) -> bool:
    return pattern._match(value, path, out)


def _m_regex(value: Any, pattern: re.Pattern[str], path: PathCell, out: Out) -> bool:
    if isinstance(value, str) and pattern.search(value) is not None:
        return True
    if out is not None:
        miss(out, path, f"{short(value)} does not match re.compile({pattern.pattern!r})")
    return False


def _m_type(value: Any, pattern: type, path: PathCell, out: Out) -> bool:
    if isinstance(value, pattern):
        return True
    if out is not None:
        miss(out, path, f"expected an instance of {pattern.__name__}, got {short(value)}")
    return False


def _m_predicate(value: Any, pattern: Callable[[Any], object], path: PathCell, out: Out) -> bool:
    description = getattr(pattern, "__qualname__", None) or repr(pattern)
    return predicate_at(pattern, description, value, path, out)


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
        miss(out, path, problem)
    return False


#: ``...`` without end: ``map(is_, pattern, ELLIPSES)`` finds a gap marker at C speed.
ELLIPSES = repeat(...)

DICT, MODEL, MAPPING, OBJECT, NOT_A_RECORD = range(5)
ACCESS: dict[type, int] = {dict: DICT}


def access_kind(cls: type) -> int:
    """How the fields of a ``cls`` value are read (cached per class)."""
    kind = ACCESS.get(cls)
    if kind is None:
        if issubclass(cls, dict):
            kind = DICT
        elif issubclass(cls, BaseModel):
            kind = MODEL
        elif issubclass(cls, Mapping):
            kind = MAPPING
        elif issubclass(cls, SCALARS) or (
            issubclass(cls, Sequence) and not issubclass(cls, (str, bytes, bytearray))
        ):
            kind = NOT_A_RECORD
        else:
            kind = OBJECT
        ACCESS[cls] = kind
    return kind


def fields_at(value: Any, pattern: Mapping[Any, Any], path: PathCell, out: Out) -> bool:
    """Each key of ``pattern`` against the same key, field or attribute of ``value``."""
    access = ACCESS.get(type(value))
    if access is None:
        access = access_kind(type(value))
    if access == DICT:
        get = value.get
    elif access == MODEL:
        # A model's fields are in its instance dict; properties (final_output) need getattr.
        get = value.__dict__.get
    elif access == MAPPING:
        get = mapping_getter(value)
    elif access == OBJECT:
        get = attribute_getter(value)
    else:
        return _not_a_mapping(value, path, out)
    if out is not None:
        return _collect_mapping(value, pattern, path, out, get, access)
    # A probe: the first mismatch decides, no paths to build. This loop is the hot path of
    # partial matching: the str and int leaves are compared inline, without a handler call.
    handlers = _HANDLERS
    for key, sub in pattern.items():
        item = get(key, MISSING)
        if item is MISSING:
            if access != MODEL or not isinstance(key, str):
                return False
            item = getattr(value, key, MISSING)
            if item is MISSING:
                return False
        kind = type(sub)
        if kind is str or kind is int:
            if not item == sub:  # noqa: SIM201 (the value's __eq__, as in ==)
                return False
        elif not (handlers.get(kind) or _resolve(kind))(item, sub, None, None):
            return False
    return True


def _not_a_mapping(value: Any, path: PathCell, out: Out) -> bool:
    """``fields_at`` of a value that has no keys or fields: always a mismatch."""
    if out is not None:
        miss(out, path, f"expected a mapping or an object with fields, got {short(value)}")
    return False


def _collect_mapping(
    value: Any,
    pattern: Mapping[Any, Any],
    path: PathCell,
    out: list[Mismatch],
    get: Callable[[Any, Any], Any],
    access: int,
) -> bool:
    """``fields_at`` collecting every mismatch, each with its path (after a failed probe)."""
    handlers = _HANDLERS
    ok = True
    for key, sub in pattern.items():
        item = get(key, MISSING)
        if item is MISSING and access == MODEL and isinstance(key, str):
            item = getattr(value, key, MISSING)
        if item is MISSING:
            ok = False
            miss(out, (path, key), f"missing, expected {short(sub)}")
            continue
        kind = type(sub)
        if kind is str or kind is int:
            if not item == sub:  # noqa: SIM201 (the value's __eq__, as in ==)
                ok = False
                miss(out, (path, key), f"{short(item)} != {short(sub)}")
            continue
        if not (handlers.get(kind) or _resolve(kind))(item, sub, (path, key), out):
            ok = False
    return ok


fields_at = fields_at


def attribute_getter(obj: Any) -> Callable[[Any, Any], Any]:
    def get(key: Any, default: Any) -> Any:
        return getattr(obj, key, default) if isinstance(key, str) else default

    return get


def mapping_getter(mapping: Mapping[Any, Any]) -> Callable[[Any, Any], Any]:
    def get(key: Any, default: Any) -> Any:
        try:
            return mapping[key]
        except KeyError:
            return default

    return get


def _m_model(value: Any, pattern: BaseModel, path: PathCell, out: Out) -> bool:
    cls = type(pattern)
    if not isinstance(value, cls) and not (isinstance(value, Mapping) and shaped_like(value, cls)):
        if out is not None:
            miss(out, path, f"expected {cls.__name__}, got {short(value)}")
        return False
    return fields_at(value, model_pattern_fields(pattern), path, out)


def _m_sequence(value: Any, pattern: Sequence[Any], path: PathCell, out: Out) -> bool:
    kind = type(value)
    if kind is list or kind is tuple:
        items = value
    elif kind is Seq:
        items = value.to_list()  # one C-level copy; its len and iteration are then C too
    elif is_sequence(value):
        items = list(value)
    else:
        return not_a_sequence(value, path, out)
    if any(map(is_, pattern, ELLIPSES)):  # identity, not ==: patterns may define __eq__
        return match_gapped(list(items), pattern, path, out)
    if len(items) != len(pattern):
        if out is None:
            return False
        return match_items(list(items), pattern, path, out, match_at)
    if out is None:  # a probe: the first mismatch decides, no paths to build
        return all(map(probe, items, pattern))
    handlers = _HANDLERS
    ok = True  # collecting: every mismatch, each with its path
    for index, (item, sub) in enumerate(zip(items, pattern)):  # noqa: B905 (same lengths)
        kind = type(sub)
        if kind is str or kind is int:
            if not item == sub:  # noqa: SIM201 (the value's __eq__, as in ==)
                ok = False
                miss(out, (path, index), f"{short(item)} != {short(sub)}")
            continue
        if not (handlers.get(kind) or _resolve(kind))(item, sub, (path, index), out):
            ok = False
    return ok


def match_items(
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
            miss(out, (path, index), f"unexpected item {short(items[index])}")
        for index in range(n, m):
            miss(out, (path, index), f"missing item, expected {short(pattern[index])}")
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
            miss(out, (path, index), f"missing item, expected {short(pattern)}")


def match_gapped(
    items: Sequence[Any],
    pattern: Sequence[Any],
    path: PathCell,
    out: Out,
    compare: Handler = match_at,
) -> bool:
    """A list pattern with ``...`` gaps: the runs between them appear in order.

    ``compare`` is ``match_at``, or ``exact_at`` inside ``Exact``.
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
                miss(
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

    def mismatches_at(start: int) -> list[Mismatch]:
        found: list[Mismatch] = []
        _report_run(items, start, run, path, found, compare)
        return found

    if not report_closest(
        out,
        format_path(path),
        f"{what}{where}",
        range(lo, hi - len(run) + 1),
        mismatches_at,
        lambda start: format_path((path, start)),
    ):
        miss(out, path, f"{what}{where}: there are no items left to match")


def _resolve(cls: type) -> Handler:
    handler: Handler
    if issubclass(cls, Matcher):
        handler = _m_pattern
    elif issubclass(cls, BaseModel):
        handler = _m_model
    elif issubclass(cls, type):
        # A class matches its instances, unless its metaclass defines ``==`` itself (as
        # dirty-equals' classes do: ``IsPositiveInt == 3``).
        handler = _m_type if cls.__eq__ is type.__eq__ else _m_eq
    elif issubclass(cls, Mapping):
        handler = fields_at
    elif cls is type(None):
        handler = _m_none
    elif issubclass(cls, SCALARS):
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
    dict: fields_at,
    list: _m_sequence,
    tuple: _m_sequence,
    Seq: _m_sequence,
}
