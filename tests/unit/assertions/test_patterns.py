"""Unit tests for pytest_agentctx.assertions.patterns: patterns, mismatch paths and
the hook's text."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from dirty_equals import IsList, IsPartialDict, IsPositiveInt, IsStr

from pytest_agentctx import (
    ANY,
    AgentContext,
    AgentCtxError,
    AllOf,
    AnyOf,
    Contains,
    Each,
    Exact,
    Iteration,
    Like,
    Message,
    Mismatch,
    MismatchError,
    Not,
    Nowhere,
    PatternError,
    Predicate,
    Regex,
    ToolCall,
    ToolResult,
    Unordered,
    matches,
    mismatches,
)
from pytest_agentctx.assertions.patterns.report import assertrepr_compare, differences

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def weather_run(answer: str = "It is 18C and sunny in Paris.") -> AgentContext:
    """Two iterations: a get_weather call and its result, then the final answer."""
    ctx = AgentContext.new("Weather in Paris?", system_prompt="Be brief.", at=at(0))
    ctx = ctx.with_iteration_metadata({"model": "gpt-4o-mini", "usage": {"input_tokens": 12}})
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
    ctx = ctx.add_assistant_message(None, [call], at=at(1))
    result = ToolResult(tool_call_id="call_1", name="get_weather", content="18C, sunny")
    ctx = ctx.add_tool_results([result], at=at(2))
    return ctx.add_assistant_message(answer, at=at(3))


def paths(found: list[Mismatch]) -> list[str]:
    return [mismatch.path for mismatch in found]


@dataclass
class Point:
    x: int
    y: int
    label: str = ""


class Opaque:
    x = 1


# -- dicts, models and objects -----------------------------------------------------------


def test_dict_pattern_matches_on_the_given_keys_only() -> None:
    pattern = {"current_iteration": 2, "iterations": [{"number": 1}, {"number": 2}]}

    assert matches(weather_run(), pattern)


def test_dict_pattern_reports_a_missing_key_with_its_path() -> None:
    match mismatches({"a": {"b": 1}}, {"a": {"c": 1}}):
        case [Mismatch("a.c", message)]:
            assert message == "missing, expected 1"
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


def test_dict_pattern_reads_model_properties() -> None:
    assert matches(weather_run(), {"final_output": "It is 18C and sunny in Paris."})


def test_dict_pattern_against_a_string_is_a_mismatch() -> None:
    match mismatches("text", {"role": "user"}):
        case [Mismatch("(root)", message)]:
            assert message == "expected a mapping or an object with fields, got 'text'"
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


def test_model_instance_pattern_matches_on_the_fields_it_was_given() -> None:
    message = Message(role="tool", content="18C, sunny", tool_call_id="call_1", name="x")

    assert matches(message, Message(role="tool", content="18C, sunny"))


def test_model_instance_pattern_of_another_type_is_a_mismatch() -> None:
    match mismatches(ToolCall(id="c", name="n"), Message(role="user")):
        case [Mismatch("(root)", message)]:
            assert message.startswith("expected Message, got ToolCall(")
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


def test_like_matches_the_given_fields_with_patterns() -> None:
    call = ToolCall(id="call_9", name="get_weather", arguments={"city": "Paris", "unit": "c"})

    assert matches(call, Like(ToolCall, name=Regex("weather"), arguments={"city": "Paris"}))


def test_like_takes_positional_fields_in_match_args_order() -> None:
    call = ToolCall(id="call_9", name="get_weather", arguments={"city": "Paris"})

    assert matches(call, Like(ToolCall, "get_weather", {"city": "Paris"}))


def test_like_rejects_a_field_the_model_does_not_have() -> None:
    with pytest.raises(PatternError, match=r"ToolCall has no field 'nme'\. Its fields are id"):
        Like(ToolCall, nme="x")


def test_like_matches_a_mapping_shaped_like_the_model() -> None:
    dumped = ToolCall(id="c", name="get_weather").model_dump(mode="json")

    assert matches(dumped, Like(ToolCall, name="get_weather"))


def test_like_does_not_match_a_mapping_of_another_shape() -> None:
    tool_message = {"role": "tool", "name": "get_weather", "content": "18C"}

    assert mismatches(tool_message, Like(ToolCall, name="get_weather")) != []


# -- leaves ------------------------------------------------------------------------------


def test_any_matches_every_value() -> None:
    assert matches([None, weather_run(), "x"], [ANY, ANY, ANY])


def test_ellipsis_outside_a_list_matches_any_value() -> None:
    assert matches({"content": None}, {"content": ...})


def test_regex_searches_the_string() -> None:
    assert matches(weather_run(), {"final_output": Regex(r"\d+C and (sunny|clear)")})


def test_regex_mismatch_names_the_pattern() -> None:
    match mismatches({"content": "cloudy"}, {"content": Regex("sun", re.IGNORECASE)}):
        case [Mismatch("content", message)]:
            assert message == "'cloudy' does not match Regex('sun', flags=re.IGNORECASE)"
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


def test_regex_does_not_match_a_non_string() -> None:
    assert mismatches(42, Regex("42")) == [Mismatch("(root)", "42 does not match Regex('42')")]


def test_invalid_regex_is_a_pattern_error() -> None:
    with pytest.raises(PatternError, match=r"Regex\('\('\) is not a valid regular expression"):
        Regex("(")


def test_compiled_regex_is_a_leaf() -> None:
    assert matches({"content": "18C"}, {"content": re.compile(r"^\d+C$")})


def test_function_is_a_predicate() -> None:
    assert matches({"tokens": 12}, {"tokens": lambda n: 0 < n < 100})


def test_raising_predicate_is_a_mismatch_that_names_the_error() -> None:
    match mismatches({"tokens": None}, {"tokens": Predicate(lambda n: n > 0, "positive")}):
        case [Mismatch("tokens", message)]:
            assert message.startswith("None made Predicate(positive) raise TypeError")
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


def test_class_matches_its_instances() -> None:
    assert matches(weather_run(), {"iterations": [Iteration, Iteration], "created_at": datetime})


def test_dirty_equals_types_are_leaves() -> None:
    pattern = {"iterations": [{"metadata": {"usage": {"input_tokens": IsPositiveInt}}}, ANY]}

    assert matches(weather_run(), pattern)


def test_dirty_equals_sees_a_context_list_as_a_list() -> None:
    assert matches(weather_run(), {"iterations": IsList(length=2)})


def test_failing_dirty_equals_leaf_is_reported_with_its_repr() -> None:
    match mismatches({"name": "get_weather"}, {"name": IsStr(regex="send_.*")}):
        case [Mismatch("name", message)]:
            assert message.startswith("'get_weather' != IsStr(")
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


# -- lists -------------------------------------------------------------------------------


def test_list_pattern_reports_an_unexpected_item() -> None:
    match mismatches([1, 2, 3], [1, 2]):
        case [Mismatch("[2]", "unexpected item 3")]:
            pass
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


def test_list_pattern_reports_missing_items() -> None:
    assert paths(mismatches([1], [1, 2, 3])) == ["[1]", "[2]"]


def test_ellipsis_in_a_list_stands_for_any_number_of_items() -> None:
    pattern = {"iterations": [..., {"tool_calls": [{"name": "get_weather"}]}, ...]}

    assert matches(weather_run(), pattern)


def test_list_without_leading_ellipsis_is_anchored_at_the_start() -> None:
    assert paths(mismatches([1, 2, 3], [2, ...])) == ["[0]"]


def test_list_without_trailing_ellipsis_is_anchored_at_the_end() -> None:
    assert matches([1, 2, 3], [..., 3])


def test_runs_between_ellipses_must_appear_in_order() -> None:
    assert mismatches(["a", "b", "c"], [..., "c", ..., "a", ...]) != []


def test_missing_run_reports_the_closest_item_and_its_mismatches() -> None:
    calls = [{"name": "search", "city": "Rome"}, {"name": "get_weather", "city": "Oslo"}]

    found = mismatches(calls, [..., {"name": "get_weather", "city": "Paris"}, ...])

    match [str(mismatch) for mismatch in found]:
        case [first, "[1].city: 'Oslo' != 'Paris'"]:
            assert first.endswith("the closest is [1], with 1 mismatch:")
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


def test_unordered_matches_the_items_in_any_order() -> None:
    assert matches(["b", "c", "a"], Unordered("a", "b", "c"))


def test_unordered_reports_the_unmatched_pattern_and_the_unexpected_item() -> None:
    found = mismatches(["a", "x"], Unordered("a", "b"))

    assert [str(m) for m in found][-1] == "[1]: unexpected item 'x'"
    assert found[0].message.startswith("no item matches 'b'")


def test_unordered_with_ellipsis_allows_other_items() -> None:
    assert matches(["x", "b", "y", "a"], Unordered("a", "b", ...))


def test_unordered_finds_an_assignment_a_greedy_pass_misses() -> None:
    # "x" takes ANY first; only an augmenting path gives ANY "y" and "x" to the literal.
    assert matches(["x", "y"], Unordered(ANY, "x"))


def test_unordered_matches_a_long_shuffled_list_through_its_index() -> None:
    items = [{"name": f"tool_{i}", "arguments": {"n": i}} for i in range(2000)]
    patterns = [{"name": f"tool_{i}", "arguments": {"n": i}} for i in range(2000)]
    random.Random(4).shuffle(items)

    assert matches(items, Unordered(*patterns))


def test_unordered_index_still_reports_what_is_missing() -> None:
    items = [{"name": f"tool_{i}"} for i in range(20)]
    patterns = [{"name": f"tool_{i}"} for i in range(19)] + [{"name": "tool_99"}]

    found = mismatches(items, Unordered(*patterns))

    assert found[0].message == (
        "no item matches {'name': 'tool_99'}; the closest is [19], with 1 mismatch:"
    )


def test_contains_needs_an_item_for_each_pattern() -> None:
    assert matches(weather_run().get_all_messages(), Contains({"role": "tool"}, {"role": "user"}))


def test_each_reports_every_failing_item() -> None:
    assert paths(mismatches([1, -2, 3, -4], Each(Predicate(lambda n: n > 0)))) == ["[1]", "[3]"]


def test_each_not_is_a_negative_rule_over_the_items() -> None:
    found = mismatches(weather_run().all_tool_calls, Each(~Like(ToolCall, name="get_weather")))

    assert [m.message for m in found] == [
        "ToolCall(id='call_1', name='get_weather', arguments={'city': 'Paris'}) matches "
        "Like(ToolCall, name='get_weather'), which it must not"
    ]


# -- negative rules and composition --------------------------------------------------------


def test_nowhere_reports_each_match_once_with_its_path() -> None:
    found = mismatches(weather_run(), Nowhere(Like(ToolCall, name="get_weather")))

    assert paths(found) == ["iterations[0].tool_calls[0]"]


def test_nowhere_passes_when_nothing_matches() -> None:
    assert matches(weather_run(), Nowhere(Like(ToolCall, name="delete_user")))


def test_nowhere_looks_inside_sub_agent_runs_in_metadata() -> None:
    outer = AgentContext.new("Plan", at=at(0)).with_iteration_metadata(
        {"subagents": [weather_run().model_dump(mode="json")]}
    )

    found = mismatches(outer, Nowhere(Like(ToolCall, name="get_weather")))

    assert paths(found) == [
        "iterations[0].metadata.subagents[0].iterations[0].messages[2].tool_calls[0]",
        "iterations[0].metadata.subagents[0].iterations[0].tool_calls[0]",
    ]


def test_and_reports_every_failing_part() -> None:
    found = mismatches("cloudy", Regex("sun") & Regex("^rain"))

    assert [m.message for m in found] == [
        "'cloudy' does not match Regex('sun')",
        "'cloudy' does not match Regex('^rain')",
    ]


def test_or_matches_if_any_alternative_does() -> None:
    assert matches("clear", Regex("sun") | "clear")


def test_or_on_a_plain_value_composes_from_the_right() -> None:
    assert repr("clear" | Regex("sun")) == "'clear' | Regex('sun')"


def test_or_failure_lists_the_alternatives() -> None:
    assert mismatches("fog", AnyOf("sun", "rain")) == [
        Mismatch("(root)", "'fog' matches none of 'sun' | 'rain'")
    ]


def test_invert_negates_a_pattern() -> None:
    assert matches({"role": "user"}, {"role": ~Regex("assistant")})


def test_double_invert_gives_the_pattern_back() -> None:
    pattern = Regex("x")

    assert ~Not(pattern) is pattern


def test_and_of_ands_is_flattened() -> None:
    assert len(AllOf(Regex("a") & Regex("b"), Regex("c")).patterns) == 3


# -- exact comparison ------------------------------------------------------------------------


def test_exact_rejects_keys_the_pattern_does_not_name() -> None:
    assert mismatches({"a": 1, "b": 2}, Exact({"a": 1})) == [
        Mismatch("b", "unexpected key, with value 2")
    ]


def test_exact_applies_nested_patterns() -> None:
    assert matches({"a": "sunny", "b": [1]}, Exact({"a": Regex("sun"), "b": [ANY]}))


def test_exact_like_reports_a_field_the_pattern_does_not_name() -> None:
    call = ToolCall(id="call_1", name="f", arguments={"city": "Paris"})

    assert mismatches(call, Exact(Like(ToolCall, name="f", id=ANY))) == [
        Mismatch("arguments", "unexpected field, set to {'city': 'Paris'} (its default is {})")
    ]


def test_exact_like_needs_every_required_field_named() -> None:
    match mismatches(ToolCall(id="call_1", name="f"), Exact(Like(ToolCall, name="f"))):
        case [Mismatch("id", message)]:
            assert message == (
                "unexpected field, set to 'call_1'; a required field is always set: "
                "name it (ANY for any value)"
            )
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


def test_exact_like_still_requires_the_class() -> None:
    message = Message(role="tool", name="f")

    match mismatches(message, Exact(Like(ToolCall, name="f"))):
        case [Mismatch("(root)", text)]:
            assert text.startswith("expected ToolCall, got Message(")
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


def test_exact_dict_compares_a_models_fields_like_a_mapping() -> None:
    message = Message(role="assistant", content="It is sunny.")

    assert matches(message, Exact({"role": "assistant", "content": "It is sunny."}))


def test_exact_dict_reports_a_model_field_set_beyond_its_default() -> None:
    message = Message(role="tool", content="18C", name="get_weather")

    assert mismatches(message, Exact({"role": "tool", "content": "18C"})) == [
        Mismatch("name", "unexpected field, set to 'get_weather' (its default is None)")
    ]


@pytest.mark.parametrize(
    "message",
    [
        Message(role="user", content="Hi"),
        Message(role="user", content="Hi", tool_calls=[], name=None, is_error=False),
        AgentContext.new("Hi").iterations[0].messages[0],
    ],
    ids=["defaults-omitted", "defaults-given", "built-by-the-context"],
)
def test_exact_counts_a_field_at_its_default_as_unset_however_it_was_built(
    message: Message,
) -> None:
    assert matches(message, Exact({"role": "user", "content": "Hi"}))


def test_exact_like_on_a_dumped_model_ignores_keys_at_their_default() -> None:
    dumped = ToolCall(id="call_1", name="f").model_dump(mode="json")

    assert matches(dumped, Exact(Like(ToolCall, name="f", id="call_1")))


def test_exact_dict_on_a_dumped_model_counts_every_key() -> None:
    dumped = ToolCall(id="call_1", name="f").model_dump(mode="json")

    assert mismatches(dumped, Exact({"id": "call_1", "name": "f"})) == [
        Mismatch("arguments", "unexpected key, with value {}")
    ]


def test_exact_model_instance_names_every_field() -> None:
    assert mismatches(Message(role="user", content="Hi"), Exact(Message(role="user"))) == [
        Mismatch("content", "'Hi' != None")
    ]


def test_exact_reaches_into_nested_models() -> None:
    message = Message(
        role="assistant", tool_calls=[ToolCall(id="c1", name="f", arguments={"x": 1})]
    )

    found = mismatches(
        message, Exact({"role": "assistant", "tool_calls": [{"id": "c1", "name": "f"}]})
    )

    assert paths(found) == ["tool_calls[0].arguments"]


def test_exact_unordered_compares_its_items_exactly() -> None:
    found = mismatches([{"a": 1, "x": 2}, {"b": 1}], Exact(Unordered({"b": 1}, {"a": 1})))

    assert "[0].x: unexpected key, with value 2" in [str(m) for m in found]


def test_exact_contains_allows_other_items_and_compares_its_own_exactly() -> None:
    items = [{"a": 1}, {"b": 1, "x": 2}, "other"]

    assert matches(items, Exact(Contains({"a": 1})))
    assert paths(mismatches(items, Exact(Contains({"b": 1}))))[-1] == "[1].x"


def test_exact_each_compares_every_item_exactly() -> None:
    assert paths(mismatches([{"a": 1}, {"a": 1, "b": 2}], Exact(Each({"a": 1})))) == ["[1].b"]


def test_exact_list_gap_stands_for_any_number_of_items() -> None:
    assert matches([1, {"a": 1}, 2, 3], Exact([..., {"a": 1}, ...]))


def test_exact_list_items_around_a_gap_are_compared_exactly() -> None:
    assert paths(mismatches([{"a": 1, "b": 2}, 3, 4], Exact([{"a": 1}, ...]))) == ["[0].b"]


def test_exact_and_names_what_either_part_names() -> None:
    call = ToolCall(id="call_1", name="f")

    assert matches(call, Exact(Like(ToolCall, name="f") & {"id": Regex("^call_")}))


def test_exact_and_reports_a_key_no_part_names_once() -> None:
    found = mismatches({"a": 1, "b": 2, "c": 3}, Exact(AllOf({"a": 1}, {"b": 2})))

    assert found == [Mismatch("c", "unexpected key, with value 3")]


def test_exact_and_counts_only_the_alternative_that_matched() -> None:
    pattern = Exact(AllOf({"a": 1}, AnyOf({"b": 1}, {"c": 1})))

    assert matches({"a": 1, "b": 1}, pattern)
    assert mismatches({"a": 1, "b": 1, "c": 2}, pattern) != []


def test_exact_or_needs_one_alternative_to_match_exactly() -> None:
    assert mismatches({"a": 1, "b": 2}, Exact(AnyOf({"a": 1}, {"b": 2}))) == [
        Mismatch("(root)", "{'a': 1, 'b': 2} matches none of {'a': 1} | {'b': 2} exactly")
    ]


def test_exact_not_is_judged_as_without_exact() -> None:
    # {"b": 1, "c": 3} matches {"b": 1} (c is not named there), so ~{"b": 1} rejects it.
    found = mismatches({"a": {"b": 1, "c": 3}}, Exact({"a": Not({"b": 1})}))

    assert [m.message for m in found] == ["{'b': 1, 'c': 3} matches {'b': 1}, which it must not"]


def test_exact_any_accepts_the_whole_value() -> None:
    assert matches({"a": {"deep": [1, 2]}, "b": 2}, Exact(ANY))
    assert matches({"a": {"deep": [1, 2]}}, Exact({"a": ANY}))


def test_nested_exact_is_the_same_as_one() -> None:
    value = {"a": 1, "b": {"c": 2, "d": 3}}
    pattern = {"a": 1, "b": {"c": 2}}

    assert mismatches(value, Exact(Exact(pattern))) == mismatches(value, Exact(pattern))


def test_dirty_equals_leaf_inside_exact_judges_its_value_itself() -> None:
    value = {"usage": {"input_tokens": 12, "output_tokens": 3}}

    assert matches(value, Exact({"usage": IsPartialDict(input_tokens=IsPositiveInt)}))


def test_exact_dataclass_counts_fields_that_differ_from_their_default() -> None:
    assert mismatches(Point(1, 2, label="p"), Exact({"x": 1, "y": 2})) == [
        Mismatch("label", "unexpected field, set to 'p' (its default is '')")
    ]


def test_exact_on_an_object_whose_fields_it_cannot_list_fails_and_says_why() -> None:
    match mismatches(Opaque(), Exact({"x": 1})):
        case [Mismatch("(root)", message)]:
            assert "Exact cannot list which fields of a Opaque are set. Drop Exact" in message
        case other:
            pytest.fail(f"unexpected mismatches: {other}")


def test_a_class_inside_exact_still_matches_its_instances_not_itself() -> None:
    assert matches("text", Exact(str))
    assert mismatches(str, Exact(str)) != []


def test_differences_lists_every_differing_path_of_two_contexts() -> None:
    found = differences(weather_run("Sunny."), weather_run("Rainy."))

    assert [str(m) for m in found] == ["iterations[1].messages[0].content: 'Sunny.' != 'Rainy.'"]


# -- the public functions ----------------------------------------------------------------------


def test_every_mismatch_is_collected_not_just_the_first() -> None:
    pattern = {
        "current_iteration": 3,
        "iterations": [{"number": 1}, {"messages": [{"content": "Rainy."}]}],
    }

    assert paths(mismatches(weather_run(), pattern)) == [
        "current_iteration",
        "iterations[1].messages[0].content",
    ]


def test_matches_returns_true() -> None:
    assert matches(weather_run(), {"current_iteration": 2}) is True


def test_matches_raises_an_assertion_error_with_the_count_first() -> None:
    with pytest.raises(MismatchError) as excinfo:
        matches(weather_run(), {"current_iteration": 3, "iterations": [ANY]})

    error = excinfo.value
    assert isinstance(error, AssertionError)
    assert isinstance(error, AgentCtxError)
    assert str(error).splitlines() == [
        "2 mismatches:",
        "  current_iteration: 2 != 3",
        "  iterations[1]: unexpected item Iteration(number=2, 1 messages, 0 tool calls)",
    ]


def test_mismatches_is_empty_for_a_match() -> None:
    assert mismatches(weather_run(), {"iterations": [..., {"number": 2}]}) == []


def test_a_pattern_compares_equal_to_the_values_it_matches() -> None:
    assert weather_run() == Like(AgentContext, current_iteration=2)
    assert weather_run() != Like(AgentContext, current_iteration=3)


def test_paths_quote_keys_that_are_not_identifiers() -> None:
    assert paths(mismatches({"x-y": {0: 1}}, {"x-y": {0: 2}})) == ["['x-y'][0]"]


def test_hook_text_has_the_comparison_then_the_count_then_the_paths() -> None:
    lines = assertrepr_compare("==", weather_run("Sunny."), weather_run("Rainy."))

    assert lines == [
        "AgentContext(2 iterations) == AgentContext(2 iterations)",
        "1 mismatch:",
        "  iterations[1].messages[0].content: 'Sunny.' != 'Rainy.'",
    ]


def test_hook_explains_a_comparison_with_a_pattern_on_either_side() -> None:
    match assertrepr_compare("==", Regex("sun"), "fog"):
        case [_, "1 mismatch:", "  (root): 'fog' does not match Regex('sun')"]:
            pass
        case other:
            pytest.fail(f"unexpected explanation: {other}")


@pytest.mark.parametrize(
    ("op", "left", "right"),
    [("==", {"a": 1}, {"a": 2}), ("!=", Regex("a"), "a"), ("==", weather_run(), "text")],
)
def test_hook_leaves_other_comparisons_to_pytest(op: str, left: object, right: object) -> None:
    assert assertrepr_compare(op, left, right) is None
