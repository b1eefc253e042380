"""Unit tests of pytest_agentctx.traffic.cassettes.matcher: request keys and field-level diffs."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_agentctx.traffic.cassettes.matcher import (
    DEFAULT_IGNORED_FIELDS,
    NO_JSON,
    RequestKey,
    json_diff,
    make_key,
    parse_json,
    strip_fields,
)

URL = "https://api.openai.com/v1/chat/completions"
DEFAULT = [field.split(".") for field in DEFAULT_IGNORED_FIELDS]


def _key(body: object, url: str = URL, *, ignored: tuple[str, ...] = (), hook=None) -> RequestKey:
    return make_key(
        "post", url, body, None, ignored=[*DEFAULT, *(f.split(".") for f in ignored)], hook=hook
    )


# -- keys ----------------------------------------------------------------------------


def test_key_holds_method_host_path_query_and_canonical_body():
    key = make_key(
        "post", "https://API.openai.com/v1/x?b=2&a=1", {"z": 1, "a": [2]}, None, ignored=[]
    )

    assert key == RequestKey(
        "POST", "api.openai.com", "/v1/x", (("a", "1"), ("b", "2")), '{"a":[2],"z":1}'
    )


def test_key_ignores_the_order_of_body_keys():
    first = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
    second = {"messages": [{"content": "Hi", "role": "user"}], "model": "gpt-4o-mini"}

    assert _key(first) == _key(second)


def test_key_keeps_the_order_of_list_items():
    assert _key({"tools": ["a", "b"]}) != _key({"tools": ["b", "a"]})


def test_key_ignores_the_order_of_query_parameters():
    assert _key(None, f"{URL}?a=1&b=2") == _key(None, f"{URL}?b=2&a=1")


def test_key_keeps_repeated_query_parameters():
    assert _key(None, f"{URL}?a=1&a=2") != _key(None, f"{URL}?a=1")


def test_key_ignores_an_explicit_default_port():
    assert _key({}, "https://api.openai.com:443/v1/chat/completions") == _key({})


def test_key_keeps_a_port_that_is_not_the_default():
    assert _key({}, "http://api.example.test:8080/v1").host == "api.example.test:8080"


def test_key_ignores_anthropics_legacy_beta_query():
    url = "https://api.anthropic.com/v1/messages"

    assert _key({}, f"{url}?beta=true") == _key({}, url)


@pytest.mark.parametrize(
    ("recorded", "now"),
    [
        ({"model": "m", "user": "run-1"}, {"model": "m", "user": "run-2"}),
        (
            {"model": "m", "metadata": {"user_id": "a"}},
            {"model": "m", "metadata": {"user_id": "b"}},
        ),
        ({"model": "m", "prompt_cache_key": "k1"}, {"model": "m"}),
        ({"model": "m", "safety_identifier": "s1"}, {"model": "m", "safety_identifier": "s2"}),
    ],
)
def test_key_ignores_the_default_volatile_fields(recorded, now):
    assert _key(recorded) == _key(now)


def test_key_ignores_a_users_dotted_field():
    recorded = {"model": "m", "extra": {"trace": "1", "keep": 1}}
    now = {"model": "m", "extra": {"trace": "2", "keep": 1}}

    assert _key(recorded, ignored=("extra.trace",)) == _key(now, ignored=("extra.trace",))


def test_key_ignores_a_field_in_every_list_item_with_a_star():
    recorded = {"messages": [{"id": "a", "content": "x"}, {"id": "b", "content": "y"}]}
    now = {"messages": [{"id": "c", "content": "x"}, {"id": "d", "content": "y"}]}

    assert _key(recorded, ignored=("messages.*.id",)) == _key(now, ignored=("messages.*.id",))


def test_key_with_a_star_still_compares_the_other_fields():
    recorded = {"messages": [{"id": "a", "content": "x"}]}
    now = {"messages": [{"id": "a", "content": "changed"}]}

    assert _key(recorded, ignored=("messages.*.id",)) != _key(now, ignored=("messages.*.id",))


def test_key_ignores_every_key_of_a_mapping_with_a_trailing_star():
    assert _key({"m": 1, "meta": {"a": 1}}, ignored=("meta.*",)) == _key(
        {"m": 1, "meta": {"b": 2}}, ignored=("meta.*",)
    )


def test_key_applies_the_body_hook_after_ignoring_fields():
    def drop_seed(body):
        return {k: v for k, v in body.items() if k != "seed"}

    assert _key({"m": 1, "seed": 1}, hook=drop_seed) == _key({"m": 1, "seed": 2}, hook=drop_seed)


def test_key_of_a_body_that_is_not_json_is_a_digest_of_its_bytes():
    raw = b"--boundary\r\nfile\r\n"
    key = make_key("post", URL, parse_json(raw), raw, ignored=[])

    assert key.body.startswith("sha256:")
    assert key != make_key("post", URL, parse_json(b"other"), b"other", ignored=[])


def test_key_of_an_empty_body_is_empty():
    assert make_key("get", URL, parse_json(b""), b"", ignored=[]).body == ""


def test_parse_json_marks_bytes_that_are_not_json():
    assert (parse_json(b"\xff"), parse_json(b"text"), parse_json(b"")) == (NO_JSON,) * 3


def test_describe_shows_the_request_line():
    assert _key({}, f"{URL}?b=2&a=1").describe() == (
        "POST api.openai.com/v1/chat/completions?a=1&b=2"
    )


def test_a_request_key_is_its_fields_with_the_agent_role_by_default():
    key = RequestKey("POST", "h", "/p", (("a", "1"),), "{}")

    assert key == RequestKey("POST", "h", "/p", (("a", "1"),), "{}", "agent")
    assert hash(key) == hash(RequestKey("POST", "h", "/p", (("a", "1"),), "{}", "agent"))


def test_a_request_key_is_frozen():
    key = RequestKey("POST", "h", "/p", (), "{}")

    with pytest.raises(dataclasses.FrozenInstanceError):
        key.body = "[]"  # type: ignore[misc]


def test_a_request_key_is_replaced_field_by_field():
    key = RequestKey("POST", "h", "/p", (), "{}")

    assert dataclasses.replace(key, role="judge") == RequestKey(
        "POST", "h", "/p", (), "{}", "judge"
    )


# -- strip_fields --------------------------------------------------------------------


def test_strip_fields_removes_a_list_item_by_index():
    assert strip_fields({"a": [1, 2, 3]}, [["a", "1"]]) == {"a": [1, 3]}


def test_strip_fields_leaves_the_input_unchanged():
    value = {"a": {"b": 1, "c": 2}}

    strip_fields(value, [["a", "b"]])

    assert value == {"a": {"b": 1, "c": 2}}


def test_strip_fields_ignores_a_path_that_is_not_there():
    assert strip_fields({"a": 1}, [["x", "y"], ["a", "b"], ["a", "9"]]) == {"a": 1}


def test_strip_fields_gives_the_value_itself_when_no_field_is_there():
    value = {"a": 1}

    assert strip_fields(value, [["x"], ["y", "z"]]) is value


def test_strip_fields_removes_every_key_of_a_wildcard():
    assert strip_fields({"a": 1, "b": {"c": 2}}, [["b", "*"]]) == {"a": 1, "b": {}}


# -- json_diff -----------------------------------------------------------------------


def test_json_diff_of_equal_values_is_empty():
    assert json_diff({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == []


def test_json_diff_names_the_path_of_a_changed_leaf():
    recorded = {"messages": [{"role": "user", "content": "Paris?"}]}
    now = {"messages": [{"role": "user", "content": "Rome?"}]}

    assert json_diff(recorded, now) == ['messages[0].content: recorded "Paris?" != now "Rome?"']


def test_json_diff_reports_missing_and_added_keys():
    assert json_diff({"a": 1, "b": 2}, {"b": 2, "c": 3}) == [
        "a: recorded 1, now missing",
        "c: not recorded, now 3",
    ]


def test_json_diff_reports_missing_and_added_list_items():
    assert json_diff({"t": [1]}, {"t": [1, 2]}) == ["t[1]: not recorded, now 2"]
    assert json_diff({"t": [1, 2]}, {"t": [1]}) == ["t[1]: recorded 2, now missing"]


def test_json_diff_reports_a_change_of_type():
    assert json_diff({"n": 1}, {"n": 1.0}) == ["n: recorded 1 != now 1.0"]


def test_json_diff_of_whole_bodies_says_body():
    assert json_diff([1], {"a": 1}) == ['(body): recorded [1] != now {"a": 1}']


def test_json_diff_keeps_comparing_after_the_first_difference():
    assert len(json_diff({"a": 1, "b": 1, "c": 1}, {"a": 2, "b": 2, "c": 2})) == 3


def test_json_diff_stops_at_the_limit():
    recorded = {f"k{i}": i for i in range(50)}

    assert len(json_diff(recorded, {}, limit=5)) == 5


def test_json_diff_shortens_long_values():
    (line,) = json_diff({"a": "x" * 500}, {"a": "y"})

    assert line == 'a: recorded "' + "x" * 116 + '... != now "y"'


def test_key_ignores_the_port_of_a_loopback_host():
    assert _key({}, "http://127.0.0.1:8080/v1") == _key({}, "http://127.0.0.1:9999/v1")
