"""Bodies read by orjson are stored exactly as :mod:`json` reads them.

:func:`~pytest_agentctx.traffic.cassettes.body.encode_body` reads a JSON body, and each
JSON event of a stream, with orjson, and with :mod:`json` where orjson would read otherwise
(an integer past 64 bits, which orjson reads as a float) or refuses (``NaN``, infinities,
lone surrogates). The law, on texts :mod:`json` writes of generated values (and on
objects with a key written twice): the stored value is the one ``json.loads`` gives, to
the type of every number. Runs are derandomized and keep no example database.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from pytest_agentctx.traffic.cassettes import body
from pytest_agentctx.traffic.cassettes.body import encode_body

LAWS = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
)

_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63 - 2, max_value=2**64 + 2)
    | st.floats()
    | st.lists(st.sampled_from(["a", "é", "\ud800", "\n", '"', "1" * 19]), max_size=4).map("".join)
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=12,
)


def _exact(value: object) -> str:
    """A text that tells apart what ``==`` does not: 1 from 1.0 and True, NaN, -0.0."""
    return json.dumps(value, ensure_ascii=True)


def _text(value: object, indent: int | None) -> str:
    return json.dumps(value, indent=indent)


@LAWS
@given(value=st.dictionaries(st.sampled_from(["a", "b"]), _VALUES) | st.lists(_VALUES))
def test_a_json_body_is_stored_as_json_reads_it(value):
    text = _text(value, None)

    stored = encode_body(text.encode("utf-8"), "application/json")

    assert stored is not None
    assert _exact(stored["json"]) == _exact(json.loads(text))


@LAWS
@given(first=_VALUES, second=_VALUES)
def test_a_key_written_twice_is_stored_as_json_reads_it(first, second):
    text = f'{{"k": {_text(first, None)}, "x": 1, "k": {_text(second, None)}}}'

    stored = encode_body(text.encode("utf-8"), None)

    assert stored is not None
    assert _exact(stored["json"]) == _exact(json.loads(text))


@LAWS
@given(values=st.lists(st.dictionaries(st.sampled_from(["a", "b"]), _VALUES), max_size=4))
def test_the_events_of_a_stream_are_stored_as_json_reads_them(values):
    raw = "".join(f"data: {_text(value, None)}\n\n" for value in values) + "data: [DONE]\n\n"

    stored = encode_body(raw.encode("utf-8"), "text/event-stream")

    assert stored is not None
    assert [_exact(event.get("data")) for event in stored["sse"]] == [
        *(_exact(json.loads(_text(value, None))) for value in values),
        _exact("[DONE]"),
    ]


def test_an_integer_past_64_bits_stays_an_integer():
    text = '{"id": 123456789012345678901234567890, "n": -9223372036854775809}'

    stored = encode_body(text.encode(), "application/json")

    assert stored == {"json": {"id": 123456789012345678901234567890, "n": -9223372036854775809}}


_LINES = st.sampled_from(
    [
        "event: delta",
        "event:delta",
        "event: ",
        'data: {"a": 1}',
        "data:[1, 2]",
        "data:  [DONE]",
        "data: text",
        "data:",
        "id: 7",
        ": keep-alive",
        "retry: 10",
    ]
)


@LAWS
@given(blocks=st.lists(st.lists(_LINES, min_size=1, max_size=3), max_size=5))
def test_the_short_way_through_common_events_gives_what_the_long_way_gives(blocks):
    text = "".join("\n".join(lines) + "\n\n" for lines in blocks)
    short = body.parse_sse(text)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(body, "_simple_event", lambda block, fast: None)
        long = body.parse_sse(text)

    assert _exact(short) == _exact(long)
