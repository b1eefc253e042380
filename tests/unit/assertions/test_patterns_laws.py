"""Laws of the pattern matcher, checked on generated values and patterns (hypothesis).

Values are nested dicts, lists and scalars, the context's models (``ToolCall``,
``Message``, ``Iteration``, ``AgentContext``, built by hand or by the context's own update
methods) and mixes of both. Patterns are derived from the value they are tried on, so that
many of them match: the value itself, some of its keys or fields (``dict``, ``Like``), a
key it does not have, its items (with ``...`` gaps, ``Unordered``, ``Contains``,
``Each``), other values, classes, regular expressions, predicates, dirty-equals types,
``ANY``, and ``&``, ``|``, ``~`` and ``Exact`` of all of these.

The laws:

- ``Exact(p)`` matching implies ``p`` matching;
- ``p & q`` matches iff both do, ``p | q`` iff either does, ``~p`` iff ``p`` does not;
  inside ``Exact``: ``Exact(p | q)`` iff ``Exact(p)`` or ``Exact(q)``, ``Exact(~p)`` iff
  ``~p``, and ``Exact(a & b)`` of two dicts with no key in common iff
  ``Exact({**a, **b})``;
- a failing match names at least one path, and the comparison that collects mismatches
  agrees with the quick one; every path it names *exists* in the value: reading its keys
  one by one from the value succeeds (a mapping's key, a model's field, a sequence's
  index; ``(root)`` is the value itself). The only other paths allowed are those of a
  missing key or item: their parent exists and the message starts with ``missing``;
- ``Exact`` of a dict matches a mapping or model only if the dict names every key set in
  it, and ``Exact`` of a dict of exactly those keys and their values matches (the test
  says again what is set: a mapping's keys, a model's fields that differ from their
  default, required ones always);
- a value matches itself used as a pattern (a copy of it), and ``Exact`` of it; a model
  also matches ``Exact`` of its ``model_dump()``.

The tests are ``async def`` like every unit test here: pytest-asyncio runs a hypothesis
test whose body is a coroutine, one example after the other on the test's event loop.
The runs are derandomized (the same examples every run) and keep no example database.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from dirty_equals import IsPositiveInt, IsStr
from hypothesis import HealthCheck, given, settings, strategies as st
from pydantic import BaseModel

from pytest_agentctx import (
    ANY,
    AgentContext,
    AllOf,
    AnyOf,
    Contains,
    Each,
    Exact,
    Iteration,
    Like,
    Message,
    Mismatch,
    Not,
    Nowhere,
    Predicate,
    Regex,
    ToolCall,
    ToolResult,
    Unordered,
    mismatches,
)
from pytest_agentctx.assertions.patterns.engine import match_at

LAWS = settings(
    max_examples=100,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: The law on paths checks the most code (every mismatch message): more examples.
PATH_LAWS = settings(LAWS, max_examples=200)
T0 = datetime(2025, 1, 1, tzinfo=UTC)

# -- values --------------------------------------------------------------------------------

#: Keys that are identifiers (``a``, ``_1``), that are not (``1a``, ``a-b``) and ``""``.
KEYS = st.text(alphabet="abxy_-1", max_size=3)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.floats(-2, 2, allow_nan=False, width=16),
    st.text(alphabet="ab A", max_size=3),
)


def _nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3)


JSON = st.recursive(SCALARS, _nest, max_leaves=6)
IDS = st.sampled_from(["call_1", "call_2", "call_3"])
NAMES = st.sampled_from(["get_weather", "search"])


@st.composite
def tool_calls(draw: st.DrawFn) -> ToolCall:
    fields: dict[str, Any] = {"id": draw(IDS), "name": draw(NAMES)}
    if draw(st.booleans()):  # given or left at its default
        fields["arguments"] = draw(st.dictionaries(KEYS, SCALARS, max_size=2))
    return ToolCall(**fields)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    fields: dict[str, Any] = {"role": draw(st.sampled_from(["user", "assistant", "tool"]))}
    optional = {
        "content": st.none() | st.text(alphabet="ab ", max_size=4),
        "tool_calls": st.lists(tool_calls(), max_size=2),
        "name": st.none() | NAMES,
        "tool_call_id": st.none() | IDS,
        "is_error": st.booleans(),
    }
    for name in draw(st.lists(st.sampled_from(sorted(optional)), unique=True)):
        fields[name] = draw(optional[name])
    return Message(**fields)


@st.composite
def iterations(draw: st.DrawFn, number: int = 1) -> Iteration:
    fields: dict[str, Any] = {"number": number, "started_at": T0}
    optional = {
        "messages": st.lists(messages(), max_size=2),
        "tool_calls": st.lists(tool_calls(), max_size=2),
        "completed_at": st.none() | st.just(T0 + timedelta(seconds=1)),
        "metadata": st.dictionaries(KEYS, JSON, max_size=2),
    }
    for name in draw(st.lists(st.sampled_from(sorted(optional)), unique=True)):
        fields[name] = draw(optional[name])
    return Iteration(**fields)


@st.composite
def contexts(draw: st.DrawFn) -> AgentContext:
    if draw(st.booleans()):  # built by hand, validated
        count = draw(st.integers(1, 2))
        found = [draw(iterations(number)) for number in range(1, count + 1)]
        return AgentContext(iterations=found, current_iteration=count, created_at=T0, updated_at=T0)
    # built by the context's update methods, as the runtime builds one
    system = draw(st.none() | st.just("Be brief."))
    ctx = AgentContext.new("Weather?", system_prompt=system, at=T0)
    if draw(st.booleans()):
        calls = [ToolCall(id="call_1", name=draw(NAMES), arguments={"city": "Paris"})]
        ctx = ctx.add_assistant_message(None, calls, at=T0 + timedelta(seconds=1))
        results = [ToolResult(tool_call_id="call_1", name=calls[0].name, content="18C")]
        ctx = ctx.add_tool_results(results, at=T0 + timedelta(seconds=2))
    if draw(st.booleans()):
        ctx = ctx.add_assistant_message("Sunny.", at=T0 + timedelta(seconds=3))
    return ctx


#: Lists long enough for ``Unordered`` to index its patterns on a literal field.
RECORDS = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["f", "g", "h"]), "n": st.integers(0, 2)}),
    min_size=7,
    max_size=10,
)
MODELS = st.one_of(tool_calls(), messages(), iterations(), contexts())
VALUES = st.one_of(
    JSON,
    MODELS,
    st.recursive(st.one_of(SCALARS, tool_calls(), messages()), _nest, max_leaves=5),
    RECORDS,
)

# -- patterns derived from a value -----------------------------------------------------------

LEAVES = [
    ANY,
    IsPositiveInt,
    IsStr(),
    Regex("a"),
    re.compile("^b"),
    Predicate(lambda v: v > 0, "positive"),  # raises on what it cannot compare
    Predicate(bool, "truthy"),
    str,
    Message,
    type(None),
]


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _record(value: Any) -> dict[str, Any] | None:
    """The keys of a mapping or the fields of a model, with their values."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, BaseModel):
        return {name: getattr(value, name) for name in type(value).model_fields}
    return None


def _pattern_kinds(value: Any, depth: int) -> list[str]:
    """The ways to derive a pattern from ``value``, the likelier ones more than once."""
    kinds: list[str] = []
    if depth < 3:
        if _record(value) is not None:
            kinds += ["keys", "keys", "keys"]
        if isinstance(value, BaseModel):
            kinds += ["like", "like"]
        if _is_sequence(value):
            kinds += ["items", "items", "gaps", "gaps", "unordered", "contains", "each"]
        kinds += ["and", "or", "not", "exact"]
    if isinstance(value, _NEAR_MISSES):
        kinds += ["near", "near"]
    return [*kinds, "same", "same", "leaf", "other", "class"]


def _near(draw: st.DrawFn, value: Any, depth: int) -> Any:
    """A scalar of the same type that is the value, or close to it."""
    if draw(st.booleans()):
        return value
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, bool):
        return not value
    return value + 1


def derive(draw: st.DrawFn, value: Any, depth: int = 0) -> Any:
    """A pattern built from ``value``: it may match it or not."""
    kind = draw(st.sampled_from(_pattern_kinds(value, depth)))
    build = _BUILDERS[kind]
    return build(draw, value, depth + 1)


def _keys(draw: st.DrawFn, value: Any, depth: int, *, unknown: bool = True) -> dict[Any, Any]:
    record = _record(value) or {}
    chosen = (
        draw(st.lists(st.sampled_from(sorted(record, key=repr)), unique=True)) if record else []
    )
    pattern = {key: derive(draw, record[key], depth) for key in chosen}
    if unknown and draw(st.integers(0, 4)) == 0:
        pattern["zz"] = draw(SCALARS)  # a key no generated value has
    return pattern


def _like(draw: st.DrawFn, value: Any, depth: int) -> Any:
    return Like(type(value), **_keys(draw, value, depth, unknown=False))


def _items(draw: st.DrawFn, value: Any, depth: int) -> list[Any]:
    items = [derive(draw, item, depth) for item in value]
    change = draw(st.sampled_from(["none", "none", "drop", "add"]))
    if change == "drop" and items:
        items.pop(draw(st.integers(0, len(items) - 1)))
    elif change == "add":
        items.append(draw(SCALARS))
    return items


def _gaps(draw: st.DrawFn, value: Any, depth: int) -> list[Any]:
    start = draw(st.integers(0, len(value)))
    stop = draw(st.integers(start, len(value)))
    middle = [derive(draw, item, depth) for item in list(value)[start:stop]]
    if draw(st.booleans()) and middle:  # a second gap inside the run
        middle.insert(draw(st.integers(0, len(middle))), ...)
    head = [...] if start > 0 or draw(st.booleans()) else []
    tail = [...] if stop < len(value) or draw(st.booleans()) else []
    return [*head, *middle, *tail]


def _unordered(draw: st.DrawFn, value: Any, depth: int) -> Any:
    items = draw(st.permutations(_items(draw, value, depth)))
    if draw(st.booleans()):
        items.append(...)
    return Unordered(*items)


def _contains(draw: st.DrawFn, value: Any, depth: int) -> Any:
    if not value:
        return Contains(draw(SCALARS))
    return Contains(derive(draw, value[draw(st.integers(0, len(value) - 1))], depth))


def _each(draw: st.DrawFn, value: Any, depth: int) -> Any:
    return Each(derive(draw, value[0], depth) if value else draw(SCALARS))


_NEAR_MISSES = (str, int, float)
_BUILDERS: dict[str, Callable[[st.DrawFn, Any, int], Any]] = {
    "near": _near,
    "same": lambda draw, value, depth: copy.deepcopy(value),
    "leaf": lambda draw, value, depth: draw(st.sampled_from(LEAVES)),
    "other": lambda draw, value, depth: draw(JSON),
    "class": lambda draw, value, depth: type(value),
    "and": lambda draw, value, depth: AllOf(derive(draw, value, depth), derive(draw, value, depth)),
    "or": lambda draw, value, depth: AnyOf(derive(draw, value, depth), derive(draw, value, depth)),
    "not": lambda draw, value, depth: Not(derive(draw, value, depth)),
    "exact": lambda draw, value, depth: Exact(derive(draw, value, depth)),
    "keys": _keys,
    "like": _like,
    "items": _items,
    "gaps": _gaps,
    "unordered": _unordered,
    "contains": _contains,
    "each": _each,
}


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, Any]:
    """A value and a pattern derived from it (now and then a ``Nowhere`` rule)."""
    value = draw(VALUES)
    if draw(st.sampled_from(["derived"] * 9 + ["nowhere"])) == "nowhere":
        return value, Nowhere(draw(SCALARS | st.sampled_from(LEAVES)))
    return value, derive(draw, value)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[Any, Any, Any]:
    """A value and two patterns derived from it."""
    value = draw(VALUES)
    return value, derive(draw, value), derive(draw, value)


def matched(value: Any, pattern: Any) -> bool:
    return match_at(value, pattern, None, None)


# -- paths ----------------------------------------------------------------------------------

_SEGMENT = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[([^\]]*)\]")


def path_keys(path: str) -> list[Any]:
    """The keys of a printed path, from the root (``(root)`` has none)."""
    if path == "(root)":
        return []
    keys: list[Any] = []
    position = 0
    while position < len(path):
        segment = _SEGMENT.match(path, position)
        assert segment is not None, f"not a path: {path!r}"
        name, bracket = segment.groups()
        keys.append(name if name is not None else ast.literal_eval(bracket))
        position = segment.end()
    return keys


def read(value: Any, keys: list[Any]) -> Any:
    """The value at ``keys``; ``LookupError`` if a key does not exist."""
    for key in keys:
        if isinstance(value, Mapping):
            value = value[key]
        elif isinstance(value, BaseModel):
            if key not in type(value).model_fields:
                raise LookupError(key)
            value = getattr(value, key)
        elif _is_sequence(value) and isinstance(key, int) and 0 <= key < len(value):
            value = value[key]
        else:
            raise LookupError(key)
    return value


def assert_names_existing_paths(value: Any, found: list[Mismatch]) -> None:
    assert found, "a failing match named no path"
    for mismatch in found:
        keys = path_keys(mismatch.path)
        try:
            read(value, keys)
        except LookupError:
            assert mismatch.message.startswith("missing"), f"no such path: {mismatch}"
            read(value, keys[:-1])  # the parent of a missing key or item exists


# -- the laws -------------------------------------------------------------------------------


@LAWS
@given(cases())
def test_exact_matching_implies_matching(case: tuple[Any, Any]) -> None:
    value, pattern = case

    assert not matched(value, Exact(pattern)) or matched(value, pattern)


@LAWS
@given(pairs())
def test_and_matches_iff_both_parts_match(case: tuple[Any, Any, Any]) -> None:
    value, p, q = case

    assert matched(value, AllOf(p, q)) == (matched(value, p) and matched(value, q))


@LAWS
@given(pairs())
def test_or_matches_iff_either_part_matches(case: tuple[Any, Any, Any]) -> None:
    value, p, q = case

    assert matched(value, AnyOf(p, q)) == (matched(value, p) or matched(value, q))


@LAWS
@given(cases())
def test_not_matches_iff_the_pattern_does_not(case: tuple[Any, Any]) -> None:
    value, pattern = case

    assert matched(value, Not(pattern)) == (not matched(value, pattern))


@LAWS
@given(pairs())
def test_exact_or_matches_iff_an_alternative_matches_exactly(
    case: tuple[Any, Any, Any],
) -> None:
    value, p, q = case

    assert matched(value, Exact(AnyOf(p, q))) == (
        matched(value, Exact(p)) or matched(value, Exact(q))
    )


@LAWS
@given(cases())
def test_exact_not_matches_iff_the_pattern_does_not(case: tuple[Any, Any]) -> None:
    value, pattern = case

    assert matched(value, Exact(Not(pattern))) == (not matched(value, pattern))


@st.composite
def split_records(draw: st.DrawFn) -> tuple[Any, dict[Any, Any], dict[Any, Any]]:
    """A mapping or model and two dict patterns of it with no key in common."""
    value = draw(st.one_of(st.dictionaries(KEYS, JSON, max_size=4), MODELS))
    pattern = _keys(draw, value, 1)
    keys = list(pattern)
    first = set(draw(st.lists(st.sampled_from(keys), unique=True))) if keys else set()
    return (
        value,
        {k: v for k, v in pattern.items() if k in first},
        {k: v for k, v in pattern.items() if k not in first},
    )


@LAWS
@given(split_records())
def test_exact_and_of_dicts_is_exact_of_the_merged_dict(
    case: tuple[Any, dict[Any, Any], dict[Any, Any]],
) -> None:
    value, a, b = case

    assert matched(value, Exact(AllOf(a, b))) == matched(value, Exact({**a, **b}))


def set_keys(value: Any) -> dict[Any, Any]:
    """The keys set in a mapping or model, with their values: the definition ``Exact`` uses,
    written out again here (a model's field is set when it differs from its default)."""
    if isinstance(value, Mapping):
        return dict(value)
    found = {}
    for name, info in type(value).model_fields.items():
        item = getattr(value, name)
        if info.is_required() or item != info.get_default(call_default_factory=True):
            found[name] = item
    return found


RECORD_VALUES = st.one_of(st.dictionaries(KEYS, JSON, max_size=4), MODELS)


@LAWS
@given(RECORD_VALUES)
def test_exact_of_the_keys_set_matches(value: Any) -> None:
    assert matched(value, Exact(copy.deepcopy(set_keys(value))))


@LAWS
@given(RECORD_VALUES, st.data())
def test_exact_of_a_dict_that_leaves_out_a_key_set_does_not_match(
    value: Any, data: st.DataObject
) -> None:
    # DataObject.draw draws as a DrawFn does; the DrawFn protocol also names __signature__
    pattern = _keys(cast(st.DrawFn, data.draw), value, 1)
    left_out = [key for key in set_keys(value) if key not in pattern]

    assert not left_out or not matched(value, Exact(pattern))


@PATH_LAWS
@given(cases())
def test_a_failing_match_names_paths_that_exist(case: tuple[Any, Any]) -> None:
    value, pattern = case
    for checked in (pattern, Exact(pattern)):
        collected: list[Mismatch] = []
        ok = match_at(value, checked, None, collected)

        assert ok == matched(value, checked)
        assert ok == (collected == [])
        if not ok:
            assert_names_existing_paths(value, collected)
            assert_names_existing_paths(value, mismatches(value, checked))


@LAWS
@given(VALUES)
def test_a_value_matches_itself_and_exact_of_itself(value: Any) -> None:
    pattern = copy.deepcopy(value)

    assert mismatches(value, pattern) == []
    assert mismatches(value, Exact(pattern)) == []


@LAWS
@given(MODELS)
def test_a_model_matches_exact_of_its_dump(model: BaseModel) -> None:
    assert mismatches(model, Exact(model.model_dump())) == []
