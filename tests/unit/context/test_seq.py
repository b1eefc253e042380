"""Unit tests for pytest_agentctx.context._seq: the immutable, storage-sharing sequence."""

import copy
import pickle
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel, ValidationError

from pytest_agentctx.context._seq import Seq, seq


class Point(BaseModel):
    x: int
    y: int


class Holder(BaseModel):
    numbers: Seq[int]


class PointHolder(BaseModel):
    points: Seq[Point]


class AnyHolder(BaseModel):
    items: Seq  # type: ignore[type-arg]


T = TypeVar("T")


def grown(*items: T) -> Seq[T]:
    """A sequence built only by appends, so its last item lives in the tail."""
    result: Seq[T] = Seq()
    for item in items:
        result = result.append(item)
    return result


# -- construction ------------------------------------------------------------------------


def test_seq_holds_the_items_of_any_iterable_in_order() -> None:
    assert list(Seq(iter([1, 2, 3]))) == [1, 2, 3]


def test_seq_function_builds_a_seq() -> None:
    built = seq((1, 2))

    assert isinstance(built, Seq)
    assert built == [1, 2]


def test_empty_seq_has_no_item() -> None:
    assert len(Seq()) == 0


def test_seq_copies_the_list_it_is_built_from() -> None:
    source = [1, 2]
    built = Seq(source)

    source.append(3)

    assert built == [1, 2]


def test_seq_is_a_collections_abc_sequence() -> None:
    assert isinstance(Seq(), Sequence)


# -- append ------------------------------------------------------------------------------


def test_append_returns_a_new_seq_with_the_item_at_the_end() -> None:
    assert Seq([1, 2]).append(3) == [1, 2, 3]


def test_append_leaves_the_original_seq_unchanged() -> None:
    original = Seq([1, 2])

    original.append(3)

    assert original == [1, 2]


def test_a_chain_of_appends_sees_every_item_in_order() -> None:
    assert grown(1, 2, 3, 4, 5) == [1, 2, 3, 4, 5]


def test_each_view_of_an_append_chain_keeps_its_own_length() -> None:
    first = grown(1)
    second = first.append(2)
    third = second.append(3)

    assert [list(first), list(second), list(third)] == [[1], [1, 2], [1, 2, 3]]


def test_append_on_an_older_view_does_not_leak_into_the_newer_view() -> None:
    older = grown(1, 2)
    newer = older.append(3).append(4)

    branch = older.append(99)

    assert (list(newer), list(branch), list(older)) == ([1, 2, 3, 4], [1, 2, 99], [1, 2])


def test_append_on_the_newer_view_does_not_leak_into_a_branch_of_an_older_view() -> None:
    older = grown(1, 2)
    newer = older.append(3)
    branch = older.append(99)

    newest = newer.append(4).append(5)

    assert (list(branch), list(newest)) == ([1, 2, 99], [1, 2, 3, 4, 5])


def test_two_appends_to_the_same_view_give_independent_sequences() -> None:
    base = grown(1, 2)

    left = base.append(10).append(11)
    right = base.append(20).append(21)

    assert (list(left), list(right), list(base)) == ([1, 2, 10, 11], [1, 2, 20, 21], [1, 2])


def test_append_on_a_seq_built_from_a_list_does_not_change_it() -> None:
    base = Seq([1, 2])
    longer = base.append(3).append(4)

    other = base.append(7)

    assert (list(base), list(longer), list(other)) == ([1, 2], [1, 2, 3, 4], [1, 2, 7])


def test_concurrent_appends_to_the_same_view_each_get_their_own_item() -> None:
    base = grown(0, 1)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda item: base.append(item).append(-item), range(2, 202)))

    assert [list(result) for result in results] == [[0, 1, i, -i] for i in range(2, 202)]


# -- with_last ---------------------------------------------------------------------------


def test_with_last_on_the_tip_replaces_the_last_item() -> None:
    assert grown(1, 2, 3).with_last(30) == [1, 2, 30]


def test_with_last_on_a_seq_built_from_a_list_replaces_the_last_item() -> None:
    assert Seq([1, 2, 3]).with_last(30) == [1, 2, 30]


def test_with_last_leaves_the_original_seq_unchanged() -> None:
    original = grown(1, 2, 3)

    original.with_last(30)

    assert original == [1, 2, 3]


def test_with_last_on_a_non_tip_view_does_not_change_the_newer_view() -> None:
    older = grown(1, 2)
    newer = older.append(3)

    replaced = older.with_last(20).append(30)

    assert (list(newer), list(replaced), list(older)) == ([1, 2, 3], [1, 20, 30], [1, 2])


def test_appending_after_with_last_on_the_tip_does_not_change_the_original() -> None:
    original = grown(1, 2)

    continued = original.with_last(20).append(30).append(40)

    assert (list(original), list(continued)) == ([1, 2], [1, 20, 30, 40])


def test_with_last_on_a_list_built_seq_then_append_does_not_change_the_original() -> None:
    original = Seq([1, 2, 3])

    continued = original.with_last(30).append(40)

    assert (list(original), list(continued)) == ([1, 2, 3], [1, 2, 30, 40])


def test_with_last_on_an_empty_seq_raises_index_error() -> None:
    with pytest.raises(IndexError, match="with_last\\(\\) on an empty sequence: there is no last"):
        Seq[int]().with_last(1)


# -- Sequence protocol -------------------------------------------------------------------


def test_getitem_reads_items_from_the_shared_list_and_the_tail() -> None:
    values = grown(10, 20, 30)

    assert (values[0], values[1], values[2]) == (10, 20, 30)


def test_getitem_accepts_negative_indexes() -> None:
    values = grown(10, 20, 30)

    assert (values[-1], values[-3]) == (30, 10)


@pytest.mark.parametrize("index", [3, -4])
def test_getitem_out_of_range_raises_index_error_naming_index_and_length(index: int) -> None:
    with pytest.raises(IndexError, match=f"index {index} out of range for a sequence of 3 items"):
        grown(10, 20, 30)[index]


def test_getitem_with_a_slice_returns_a_list() -> None:
    assert grown(10, 20, 30, 40)[1:3] == [20, 30]


def test_reversed_yields_the_tail_first() -> None:
    assert list(reversed(grown(1, 2, 3))) == [3, 2, 1]


def test_reversed_on_a_seq_without_tail_yields_every_item() -> None:
    assert list(reversed(Seq([1, 2, 3]))) == [3, 2, 1]


def test_reversed_of_a_view_ignores_items_appended_to_newer_views() -> None:
    older = grown(1, 2)
    older.append(3).append(4)

    assert list(reversed(older)) == [2, 1]


def test_sequence_mixin_methods_see_the_tail() -> None:
    values = grown(1, 2, 2)

    assert (2 in values, values.index(2), values.count(2)) == (True, 1, 2)


# -- equality, hash, operators -----------------------------------------------------------


def test_seq_equals_a_list_with_the_same_items() -> None:
    assert grown(1, 2) == [1, 2]


def test_seq_equals_a_tuple_with_the_same_items() -> None:
    assert grown(1, 2) == (1, 2)


def test_seq_equals_another_seq_with_the_same_items() -> None:
    assert grown(1, 2) == Seq([1, 2])


def test_empty_seq_equals_an_empty_list() -> None:
    assert Seq() == []


@pytest.mark.parametrize("other", [[1, 2, 3], [1], [1, 3], (2, 1)])
def test_seq_differs_from_a_sequence_with_other_items(other: Sequence[int]) -> None:
    assert grown(1, 2) != other


@pytest.mark.parametrize("other", ["ab", b"ab", {"a": 1, "b": 2}, {"a", "b"}, None])
def test_seq_never_equals_a_string_bytes_mapping_set_or_none(other: object) -> None:
    assert grown("a", "b") != other


def test_seq_hash_is_the_hash_of_the_tuple_of_its_items() -> None:
    assert hash(grown(1, 2)) == hash((1, 2))


def test_equal_seqs_work_as_the_same_dict_key() -> None:
    table = {Seq([1, 2]): "found"}

    assert table[grown(1, 2)] == "found"


def test_adding_an_iterable_to_a_seq_returns_a_list() -> None:
    result = grown(1, 2) + (3,)  # noqa: RUF005 - the operator is what is tested

    assert (type(result), result) == (list, [1, 2, 3])


def test_adding_a_seq_to_a_list_returns_a_list() -> None:
    result = [0] + grown(1, 2)  # noqa: RUF005 - the operator is what is tested

    assert (type(result), result) == (list, [0, 1, 2])


def test_repr_is_the_repr_of_the_list_of_items() -> None:
    assert repr(grown(1, 2)) == "[1, 2]"


# -- copy, pickle ------------------------------------------------------------------------


def test_copy_returns_the_same_immutable_seq() -> None:
    values = grown(1, 2)

    assert copy.copy(values) is values


def test_deepcopy_copies_the_items() -> None:
    values = grown({"a": 1}, {"b": 2})

    copied = copy.deepcopy(values)
    copied[1]["b"] = 99

    assert (isinstance(copied, Seq), list(values)) == (True, [{"a": 1}, {"b": 2}])


def test_pickle_round_trip_gives_an_equal_seq() -> None:
    values = grown(1, 2).append(3)

    restored = pickle.loads(pickle.dumps(values))

    assert (type(restored), list(restored)) == (Seq, [1, 2, 3])


def test_pickled_view_does_not_carry_items_of_newer_views() -> None:
    older = grown(1, 2)
    older.append(3).append(4)

    assert pickle.loads(pickle.dumps(older)) == [1, 2]


# -- match -------------------------------------------------------------------------------


def test_seq_matches_a_sequence_pattern_with_a_star() -> None:
    match grown(1, 2, 3):
        case [1, *rest]:
            assert rest == [2, 3]
        case _:
            pytest.fail("a Seq should match the sequence pattern [1, *rest]")


def test_seq_does_not_match_a_sequence_pattern_of_another_length() -> None:
    match grown(1, 2, 3):
        case [_, _]:
            pytest.fail("a Seq of 3 items matched a pattern of 2 items")
        case [_, _, last]:
            assert last == 3
        case _:
            pytest.fail("a Seq of 3 items should match [_, _, last]")


# -- pydantic ----------------------------------------------------------------------------


def test_pydantic_field_validates_a_list_into_a_seq() -> None:
    holder = Holder(numbers=[1, 2])

    assert (type(holder.numbers), list(holder.numbers)) == (Seq, [1, 2])


def test_pydantic_field_validates_a_tuple_and_a_seq() -> None:
    assert (Holder(numbers=(1, 2)).numbers, Holder(numbers=grown(1, 2)).numbers) == ([1, 2], [1, 2])


def test_pydantic_field_validates_each_item() -> None:
    with pytest.raises(ValidationError, match=r"numbers\.1"):
        Holder(numbers=[1, "not a number"])


def test_pydantic_field_rejects_a_value_that_is_not_a_sequence() -> None:
    with pytest.raises(ValidationError, match="numbers"):
        Holder(numbers=5)


def test_pydantic_field_serialises_as_a_json_array() -> None:
    assert Holder(numbers=grown(1, 2, 3)).model_dump_json() == '{"numbers":[1,2,3]}'


def test_pydantic_model_dump_turns_model_items_into_dicts() -> None:
    holder = PointHolder(points=[Point(x=1, y=2)])

    assert holder.model_dump() == {"points": [{"x": 1, "y": 2}]}


def test_pydantic_json_round_trip_through_a_model_field() -> None:
    holder = PointHolder(points=Seq[Point]().append(Point(x=1, y=2)).append(Point(x=3, y=4)))

    restored = PointHolder.model_validate_json(holder.model_dump_json())

    assert (restored, type(restored.points)) == (holder, Seq)


def test_pydantic_json_schema_of_a_seq_field_is_an_array_of_its_items() -> None:
    schema: dict[str, Any] = Holder.model_json_schema()

    assert schema["properties"]["numbers"] == {
        "items": {"type": "integer"},
        "title": "Numbers",
        "type": "array",
    }


def test_pydantic_field_of_a_bare_seq_accepts_any_items() -> None:
    assert AnyHolder(items=[1, "two", None]).items == [1, "two", None]


def test_to_list_gives_the_items_as_a_new_list() -> None:
    shared = Seq([1, 2]).append(3)
    items = shared.to_list()
    items.append(4)
    assert (items, list(shared)) == ([1, 2, 3, 4], [1, 2, 3])
