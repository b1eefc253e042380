"""The comparison inside ``Exact``: what the pattern names must match, and nothing that it
does not name may be set.

What counts as set: a key of a mapping; a field of a model or dataclass whose value differs
from the field's default (a required field is always set); in a mapping shaped like the
model a ``Like`` names, a key whose value differs from that field's default. Dicts, model
instances and lists are compared this way at every depth; a pattern object decides for
itself (``Matcher._match_exact``), and the parts of an ``&`` count what the others name as
named (:class:`~pytest_agentctx.assertions.patterns.engine.Named`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING as NO_DEFAULT, fields, is_dataclass
from datetime import date, datetime, time
from operator import is_
from typing import Any

from pydantic import BaseModel

from pytest_agentctx.assertions.patterns.engine import (
    ACCESS,
    DICT,
    ELLIPSES,
    MAPPING,
    MISSING,
    MODEL,
    OBJECT,
    SCALARS,
    Handler,
    Matcher,
    Named,
    access_kind,
    attribute_getter,
    is_sequence,
    mapping_getter,
    match_at,
    match_gapped,
    match_items,
    not_a_sequence,
)
from pytest_agentctx.assertions.patterns.mismatch import Out, PathCell, miss, short
from pytest_agentctx.context._seq import Seq


def exact_at(
    value: Any, expected: Any, path: PathCell, out: Out, also: Named | None = None
) -> bool:
    """``value`` against ``expected`` inside ``Exact``: nothing unnamed may be set.

    ``also`` holds what the other parts of an ``&`` name at this place (see ``AllOf``).
    """
    kind = _EXACT_KINDS.get(type(expected))
    if kind is None:
        kind = _exact_kind(type(expected))
    if value is expected and _X_SCALAR <= kind <= _X_SEQUENCE:
        return True  # data matches itself (a class, a function or a pattern may not)
    if kind <= _X_SCALAR:
        return match_at(value, expected, path, out)
    if kind == _X_PATTERN:
        return expected._match_exact(value, path, out, also)  # type: ignore[no-any-return]
    if kind == _X_MODEL:
        return _exact_model(value, expected, path, out)
    if kind == _X_MAPPING:
        if also is None and ACCESS.get(type(value)) == DICT:
            return _exact_dict(value, expected, path, out)
        return exact_record(value, expected, None, path, out, also)
    if not is_sequence(value):
        return not_a_sequence(value, path, out)
    items = value.to_list() if type(value) is Seq else list(value)
    pattern = list(expected)
    if any(map(is_, pattern, ELLIPSES)):
        return match_gapped(items, pattern, path, out, exact_at)
    return match_items(items, pattern, path, out, exact_at)


#: How ``exact_at`` compares with an expected value of each type; from ``_X_SCALAR`` to
#: ``_X_SEQUENCE``, the values are data, which match themselves.
_X_LEAF, _X_SCALAR, _X_MODEL, _X_MAPPING, _X_SEQUENCE, _X_PATTERN = range(6)
_EXACT_KINDS: dict[type, int] = {str: _X_SCALAR, int: _X_SCALAR, type(None): _X_SCALAR}


def _exact_kind(cls: type) -> int:
    """The kind of ``cls`` for ``exact_at`` (cached per type)."""
    if issubclass(cls, Matcher):
        kind = _X_PATTERN
    elif issubclass(cls, (*SCALARS, datetime, date, time)):
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
            miss(out, path, f"expected {type(expected).__name__}, got {short(value)}")
        return False
    ok = True
    for name in type(expected).model_fields:
        if not exact_at(getattr(value, name), getattr(expected, name), (path, name), out):
            ok = False
            if out is None:
                return False
    return ok


def _exact_dict(value: Any, expected: Mapping[Any, Any], path: PathCell, out: Out) -> bool:
    """``exact_record`` of a dict against a dict pattern: the common case, made short."""
    ok = True
    for key, sub in expected.items():
        if key not in value:
            ok = False
            if out is None:
                return False
            miss(out, (path, key), f"missing, expected {short(sub)}")
        elif not exact_at(value[key], sub, (path, key), out):
            ok = False
            if out is None:
                return False
    for key in value:
        if key not in expected:
            ok = False
            if out is None:
                return False
            miss(out, (path, key), f"unexpected key, with value {short(value[key])}")
    return ok


def exact_record(
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
    access = ACCESS.get(type(value))
    if access is None:
        access = access_kind(type(value))
    get = _record_getter(value, access)
    if get is None:
        if out is not None:
            miss(out, path, _not_a_record(value))
        return False
    ok = True
    for key, sub in expected.items():
        item = get(key, MISSING)
        if item is MISSING:
            ok = False
            if out is None:
                return False
            miss(out, (path, key), f"missing, expected {short(sub)}")
        elif not exact_at(item, sub, (path, key), out):
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

    The second half of ``exact_record``: each such key is a mismatch.
    """
    also_keys = also.keys if also is not None else frozenset()
    if cls is None and also is not None:
        cls = also.cls
    if cls is None and access in (DICT, MAPPING):  # every key is set
        extra = [key for key in value if key not in expected and key not in also_keys]
        if extra and out is not None:
            for key in extra:
                miss(out, (path, key), f"unexpected key, with value {short(value[key])}")
        return not extra
    ok = True
    for key, item, default in _set_entries(value, cls):
        if key in expected or key in also_keys:
            continue
        ok = False
        if out is None:
            return False
        miss(out, (path, key), _unexpected(value, item, default))
    return ok


def _record_getter(value: Any, access: int) -> Callable[[Any, Any], Any] | None:
    """How ``Exact`` reads a named key of ``value`` (``None``: it cannot list its keys)."""
    if access == DICT:
        return value.get  # type: ignore[no-any-return]
    if access == MAPPING:
        return mapping_getter(value)
    if access == MODEL:
        return _model_getter(value)
    if access == OBJECT and is_dataclass(value) and not isinstance(value, type):
        return attribute_getter(value)
    return None


def _model_getter(model: BaseModel) -> Callable[[Any, Any], Any]:
    """A model's fields, then its properties (``final_output``) for the keys that are not."""
    own = model.__dict__

    def get(key: Any, default: Any) -> Any:
        item = own.get(key, MISSING)
        if item is MISSING and isinstance(key, str):
            item = getattr(model, key, MISSING)
        return default if item is MISSING else item

    return get


def _not_a_record(value: Any) -> str:
    if isinstance(value, SCALARS) or is_sequence(value):
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
            # pydantic before 2.10 has no default factory that takes the validated data
            if info.is_required() or getattr(info, "default_factory_takes_validated_data", False):
                found[name] = _REQUIRED  # a default computed from other fields: always set
            else:
                found[name] = info.get_default(call_default_factory=True)
    elif is_dataclass(cls):
        for spec in fields(cls):
            if spec.default is not NO_DEFAULT:
                found[spec.name] = spec.default
            elif spec.default_factory is not NO_DEFAULT:
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
            item = own.get(name, MISSING)
            if item is MISSING:
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


def extra_keys(value: Any, named: Named) -> bool:
    """Whether ``value`` has a key set that ``named`` does not name."""
    return any(key not in named.keys for key, _, _ in _set_entries(value, named.cls))


def named(pattern: Any) -> Named | None:
    """What ``pattern`` names at its own level (``None``: no keys, as a leaf names none).

    An ``|`` names what any of its alternatives names: the alternative that matches checks
    that no more is set.
    """
    if isinstance(pattern, Matcher):
        return pattern._names()
    if isinstance(pattern, BaseModel):
        return Named(frozenset(type(pattern).model_fields), type(pattern))
    if isinstance(pattern, Mapping):
        return Named(frozenset(pattern), None)
    return None


def merge_named(parts: Sequence[Named | None]) -> Named | None:
    """What the ``parts`` name together (``None`` if none of them names a key)."""
    found = [part for part in parts if part is not None]
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    cls = next((part.cls for part in found if part.cls is not None), None)
    return Named(frozenset().union(*(part.keys for part in found)), cls)


def probe_with(compare: Handler, value: Any, pattern: Any) -> bool:
    """Whether ``value`` matches ``pattern`` by ``compare`` (no paths, no mismatches)."""
    return compare(value, pattern, None, None)
