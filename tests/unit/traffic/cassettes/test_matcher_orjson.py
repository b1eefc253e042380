"""Bodies read and keyed by orjson match exactly as :mod:`json`'s canonical texts do.

The matcher reads request bodies and writes their canonical text with orjson where it can,
and with :mod:`json` where orjson would differ (integers past 64 bits, ``NaN`` and
infinities, lone surrogates, keys that are not strings, subclasses, a body hook's result).
The laws, on generated values and on texts json writes of them:

- two bodies get the same key text exactly when json's canonical texts of them are equal;
- :func:`read_json` reads any text json writes as json reads it, and says a value holds no
  ``NaN`` or infinity only when it holds none.

The generated values draw from small alphabets, so that equal and nearly equal bodies
(``1`` and ``1.0`` and ``True``, ``NaN`` and ``None``, ``-0.0`` and ``0.0``, keys in
another order) meet often. Runs are derandomized and keep no example database.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from pytest_agentctx.traffic.cassettes.matcher import (
    NO_JSON,
    canonical_json,
    make_key,
    read_json,
)

LAWS = settings(
    max_examples=400,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

URL = "https://api.openai.com/v1/chat/completions"


def json_text(value: Any) -> str:
    """The canonical text the matcher kept before orjson: json's."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_non_finite(item) for item in value)
    return False


#: Numbers that are equal in Python but not in JSON, and near the edges of 64 bits.
NUMBERS = st.sampled_from(
    [
        0,
        1,
        0.0,
        -0.0,
        1.0,
        True,
        False,
        None,
        1e-7,
        1e16,
        2**63 - 1,
        2**63,
        2**64 - 1,
        2**64,
        -(2**63),
        -(2**63) - 1,
        10**30,
        float(10**30),
        math.nan,
        math.inf,
        -math.inf,
    ]
)
TEXTS = st.sampled_from(["", "a", "b", "A", "é", "\U0001f600", "\ud800", "\n", '"', "null"])
SCALARS = NUMBERS | TEXTS | st.integers() | st.floats()
KEYS = st.sampled_from(["a", "b", "é", "\U0001f600", "B", "null", "\ud800"])
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)


@LAWS
@given(VALUES, VALUES)
def test_two_bodies_get_one_key_text_exactly_when_json_gives_them_one(a: Any, b: Any) -> None:
    assert (canonical_json(a) == canonical_json(b)) == (json_text(a) == json_text(b))


@LAWS
@given(VALUES)
def test_a_body_and_its_keys_in_another_order_get_one_key_text(value: Any) -> None:
    reordered = json.loads(json.dumps(value, sort_keys=True))

    assert canonical_json(value) == canonical_json(reordered)


@LAWS
@given(VALUES, st.booleans())
def test_read_json_reads_what_json_reads(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)

    read, finite = read_json(text.encode("utf-8", "surrogatepass"))

    assert json_text(read) == json_text(json.loads(text))
    if finite:
        assert not _has_non_finite(read)


@LAWS
@given(VALUES, VALUES)
def test_bodies_read_from_text_match_exactly_when_json_says_they_are_equal(a: Any, b: Any) -> None:
    """The whole way a live request takes: its text read, then keyed with what
    :func:`read_json` says of it."""
    keys = []
    for value in (a, b):
        read, finite = read_json(json.dumps(value).encode("utf-8", "surrogatepass"))
        keys.append(make_key("POST", URL, read, None, ignored=[], finite=finite))

    assert (keys[0] == keys[1]) == (json_text(a) == json_text(b))


# -- the places where orjson would differ ------------------------------------------------


def test_an_integer_past_64_bits_is_read_as_an_integer() -> None:
    value, _ = read_json(b'{"seed": 123456789012345678901234567890}')

    assert value == {"seed": 123456789012345678901234567890}
    assert isinstance(value["seed"], int)


def test_nan_and_null_do_not_match() -> None:
    nan, nan_finite = read_json(b'{"x": NaN}')
    null, null_finite = read_json(b'{"x": null}')

    assert (nan_finite, null_finite) == (False, True)
    assert make_key("POST", URL, nan, None, ignored=[], finite=nan_finite) != make_key(
        "POST", URL, null, None, ignored=[], finite=null_finite
    )


def test_nan_of_a_stored_body_does_not_match_null() -> None:
    """A stored body read by json (finite not known) that holds NaN."""
    assert canonical_json({"x": math.nan}) != canonical_json({"x": None})


def test_an_integer_and_an_equal_float_do_not_match() -> None:
    assert canonical_json({"temperature": 1}) != canonical_json({"temperature": 1.0})
    assert canonical_json({"stream": True}) != canonical_json({"stream": 1})


def test_a_lone_surrogate_is_read_as_json_reads_it() -> None:
    value, _ = read_json(b'{"text": "\\ud800"}')

    assert value == {"text": "\ud800"}


def test_a_text_that_is_not_json_is_no_json() -> None:
    assert read_json(b"not json") == (NO_JSON, False)
    assert read_json(b"") == (NO_JSON, False)


def test_a_body_hook_result_with_keys_that_are_not_strings_is_keyed_as_json_keys_it() -> None:
    def hook(body: Any) -> Any:
        return {2: 1e-7, 1: body["a"]}

    key = make_key("POST", URL, {"a": 2}, None, ignored=[], hook=hook)

    assert key.body == '{"1":2,"2":1e-07}'
