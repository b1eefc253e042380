"""Unit tests of pytest_agentctx.traffic.cassettes.yamlread: the same Python objects as
PyYAML's safe loader for every document (or the same error), faster for cassettes."""

from __future__ import annotations

import datetime
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import given, settings, strategies as st

from pytest_agentctx._untrusted import LimitExceeded, Limits, use_limits
from pytest_agentctx.traffic.cassettes import yamlread
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.store import dump_cassette

ROOT = Path(__file__).resolve().parents[4]
#: The shared corpus of vcrpy cassettes (beside the checkout, as in CI) and this
#: repository's own.
CORPUS = sorted((ROOT.parent / "shared" / "corpus").glob("*.yaml")) + sorted(
    (ROOT / "tests" / "integration" / "corpus").glob("*.yaml")
)


def _same(a: Any, b: Any) -> bool:
    """Whether two loaded documents are the same objects: equal, of the same types (``1``,
    ``1.0`` and ``True`` are not the same), keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            _same(ka, kb) and _same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, datetime.datetime):
        return a == b and repr(a) == repr(b)  # the same instant and the same zone
    return bool(a == b)


def _outcome(load: Any, text: str) -> tuple[str, Any]:
    try:
        return ("value", load(text))
    except Exception as exc:  # a YAML error, or a constructor's (a date out of range)
        return ("error", f"{type(exc).__name__}: {exc}")


def _agrees(text: str) -> bool:
    ours, theirs = _outcome(yamlread.load, text), _outcome(yamlread.safe_load, text)
    if ours[0] == "error" or theirs[0] == "error":
        return ours == theirs
    return _same(ours[1], theirs[1])


# -- documents from values ---------------------------------------------------------------

_ZONES = st.sampled_from(
    [None, datetime.UTC, datetime.timezone(datetime.timedelta(hours=-5, minutes=-30))]
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text()
    | st.binary(max_size=40)
    | st.dates()
    | st.datetimes(timezones=_ZONES)
)
_KEYS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)
_DUMP_OPTIONS = st.fixed_dictionaries(
    {
        "default_flow_style": st.sampled_from([False, True, None]),
        "allow_unicode": st.booleans(),
        "sort_keys": st.booleans(),
        "width": st.sampled_from([20, 80, 10_000]),
        "explicit_start": st.booleans(),
        "canonical": st.booleans(),
    }
)


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, options=_DUMP_OPTIONS)
def test_a_dumped_value_loads_as_the_safe_loader_loads_it(value, options):
    text = yaml.safe_dump(value, **options)

    assert _agrees(text), text


# -- documents from text -------------------------------------------------------------------

#: Plain scalars the YAML 1.1 resolver reads as something other than a string, or
#: almost does, and texts around them.
_TOKENS = [
    *("yes", "No", "ON", "off", "y", "n", "True", "FALSE", "tRue", "~", "null", "Null", ""),
    *("0", "-0", "+12", "0x1F", "0b101", "017", "0o17", "09", "1_000", "1:20", "-1:30:00"),
    *("1.5", ".5", "-.inf", ".NaN", ".nan", "1e3", "1.0e+3", "6.8523015e+5", "1_000.5"),
    *("190:20:30.15", "2002-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-15 2:59:43.1"),
    *("2001-12-14 21:59:43.10 Z", "2002-1-1", "2002-13-45", "<<", "=", "!", "&", "*"),
    *("'quoted yes'", '"double \\t 12"', "!!str 12", "!!int '7'", "!!float '1'", "!!binary aGk="),
    *("!!bool yes", "!!null ''", "!!timestamp 2002-12-14", "! 12", "!!set {a, b}", "!custom x"),
    *("&a 1", "*a", "[]", "{}", "[1, yes]", "{a: 1}", "text with: colon", "- dash", "#c"),
    *("application/json", "http://127.0.0.1:9/v1", "POST", "Wed, 01 Jan 2025 00:00:00 GMT"),
]
_TOKEN = st.sampled_from(_TOKENS) | st.text(alphabet="ab01:-.eE_x+ '\"!&*[]{},#", max_size=8)


def _block(pairs: list[tuple[str, str]], indent: int) -> str:
    pad = " " * indent
    return "".join(f"{pad}{key}: {value}\n" for key, value in pairs)


_DOCUMENTS = st.one_of(
    st.lists(st.tuples(_TOKEN, _TOKEN), max_size=6).map(lambda pairs: _block(pairs, 0)),
    st.lists(_TOKEN, max_size=6).map(lambda items: "".join(f"- {item}\n" for item in items)),
    st.lists(st.tuples(_TOKEN, _TOKEN), max_size=4).map(
        lambda pairs: "outer:\n" + _block(pairs, 2) + "list:\n- " + "\n- ".join(k for k, _ in pairs)
    ),
    st.lists(_TOKEN, max_size=4).map(lambda items: "[" + ", ".join(items) + "]\n"),
    st.lists(_TOKEN, min_size=1, max_size=3).map(lambda items: "\n---\n".join(items)),
)


@settings(max_examples=500, deadline=None)
@given(text=_DOCUMENTS)
def test_a_written_document_loads_or_fails_as_with_the_safe_loader(text):
    assert _agrees(text), text


# -- examples ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("# only a comment\n", id="comment"),
        pytest.param("--- \n...\n", id="empty document"),
        pytest.param("a: 1\nb: 0x10\nc: 017\nd: 1:20\ne: -1_000\nf: 0b11\n", id="ints"),
        pytest.param("a: 1.5\nb: .inf\nc: -.INF\nd: .nan\ne: 1e3\nf: 1:20.5\n", id="floats"),
        pytest.param("[yes, No, on, OFF, y, true, False]", id="bools"),
        pytest.param("[~, null, NULL, '', '~']", id="nulls"),
        pytest.param(
            "- 2002-12-14\n- 2001-12-14t21:59:43.10-05:00\n- 2001-12-15 2:59:43.1\n"
            "- 2001-12-14 21:59:43.10 Z\n- 2001-12-14T21:59:43+01:30\n",
            id="timestamps",
        ),
        pytest.param("base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  y: 3\n", id="merge key"),
        pytest.param("a: {<<: [{x: 1}, {x: 2, z: 3}], w: 0}\n", id="merge list"),
        pytest.param("=: value key\n", id="value key"),
        pytest.param("a: =\n", id="value tag as a value"),
        pytest.param("a: 1\na: 2\nb: 3\n", id="duplicate keys"),
        pytest.param("1: int\n1.0: float\ntrue: bool\n", id="equal keys of other types"),
        pytest.param("? [1, 2]\n: list key\n", id="list key"),
        pytest.param("? {a: 1}\n: map key\n", id="map key"),
        pytest.param("body: !!binary aGVsbG8=\n", id="binary"),
        pytest.param("body: !!binary |\n  aGVs\n  bG8=\n", id="binary block"),
        pytest.param("a: !!str 12\nb: !!int '12'\nc: !!float '1'\nd: !!bool 'yes'\n", id="tags"),
        pytest.param("a: ! 12\nb: !!map {x: 1}\nc: !!seq [1]\n", id="non-specific tags"),
        pytest.param("a: !!set {x, y}\nb: !!omap [{k: 1}]\nc: !!pairs [{k: 1}]\n", id="sets"),
        pytest.param("a: !custom 1\n", id="unknown tag"),
        pytest.param("a: !!python/object:os.system x\n", id="unsafe tag"),
        pytest.param("a: 1\n---\nb: 2\n", id="two documents"),
        pytest.param("a: 2002-13-45\n", id="date out of range"),
        pytest.param("a: !!binary '%%'\n", id="bad base64"),
        pytest.param("a: [1, 2\n", id="unclosed flow"),
        pytest.param("a: b: c\n", id="bad mapping"),
        pytest.param("a: *missing\n", id="unknown alias"),
        pytest.param("a: '\\u00e9 it''s'\nb: \"\\u00e9 \\x41 \\t\"\nc: é\n", id="escapes"),
        pytest.param("a: |\n  line\n   more\nb: >-\n  folded\n  text\n", id="block scalars"),
        pytest.param("%YAML 1.1\n--- {a: 1}\n", id="directive"),
        pytest.param("%TAG !e! tag:yaml.org,2002:\n---\na: !e!int '5'\n", id="tag handle"),
        pytest.param("a: !<tag:yaml.org,2002:str> 5\n", id="verbatim tag"),
    ],
)
def test_an_edge_case_loads_or_fails_as_with_the_safe_loader(text):
    assert _agrees(text)


def test_an_alias_is_the_same_object_as_its_anchor():
    loaded = yamlread.load("a: &shared [1, 2]\nb: *shared\n")

    assert isinstance(loaded, dict)
    assert loaded["a"] is loaded["b"]


@pytest.mark.parametrize("path", CORPUS, ids=[path.name for path in CORPUS])
def test_a_corpus_cassette_loads_as_with_the_safe_loader(path):
    assert _agrees(path.read_text(encoding="utf-8"))


def _cassette(style: str, path: Path) -> str:
    interactions = [
        Interaction(
            method="POST",
            url="https://api.openai.com/v1/chat/completions",
            request_headers={"content-type": "application/json", "x-count": "3"},
            request_body={"json": {"model": "gpt-4o-mini", "temperature": 0.5, "n": 1}},
            status=200,
            response_headers={"content-type": "application/json", "date": "2025-01-01"},
            response_body={"json": {"id": "c1", "created": 1735689600, "refusal": None}},
            test_id="tests/test_a.py::test_b",
        ),
        Interaction(
            method="GET",
            url="https://example.com/img",
            request_headers={},
            request_body=None,
            status=200,
            response_headers={"content-type": "image/png"},
            response_body={"base64": "iVBORw0KGgo="},
            partial=True,
        ),
    ]
    return dump_cassette(interactions, path, style=style)


@pytest.mark.parametrize("style", ["native", "vcr"])
def test_a_cassette_this_package_writes_is_read_without_the_safe_loader(style, monkeypatch):
    text = _cassette(style, Path("c.yaml"))
    expected = yamlread.safe_load(text)

    def refused(text: str) -> Any:
        raise AssertionError("read by the safe loader")

    monkeypatch.setattr(yamlread, "safe_load", refused)

    assert _same(yamlread.load(text), expected)


def test_without_libyaml_the_pure_python_safe_loader_reads(monkeypatch):
    text = _cassette("vcr", Path("c.yaml"))
    expected = yamlread.safe_load(text)
    monkeypatch.delattr(yaml, "CSafeLoader")

    assert _same(yamlread.load(text), expected)


def test_a_resolver_added_to_the_safe_loader_is_honoured(monkeypatch):
    import re

    resolvers = {
        key: list(value) for key, value in yaml.CSafeLoader.yaml_implicit_resolvers.items()
    }
    monkeypatch.setattr(yaml.CSafeLoader, "yaml_implicit_resolvers", resolvers)
    yaml.add_implicit_resolver(
        "tag:yaml.org,2002:null", re.compile(r"^nothing$"), list("n"), Loader=yaml.CSafeLoader
    )

    assert yamlread.load("a: nothing\n") == {"a": None}


def test_a_constructor_put_in_pyyaml_s_own_table_is_honoured(monkeypatch):
    from yaml.constructor import SafeConstructor

    monkeypatch.setitem(
        SafeConstructor.yaml_constructors,
        "tag:yaml.org,2002:str",
        lambda loader, node: node.value.upper(),
    )

    assert yamlread.load("a: b\n") == {"A": "B"}


# -- limits ----------------------------------------------------------------------------


def _laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_billion_laughs_document_is_refused_before_it_is_built():
    with pytest.raises(LimitExceeded) as caught:
        yamlread.load(_laughs(10), "c.yaml")

    assert str(caught.value).startswith("c.yaml: YAML aliases repeating at least ")
    assert "past the limit agent_max_alias_nodes = 100000." in str(caught.value)


def test_aliases_count_every_value_they_repeat_against_the_limit():
    previous = use_limits(Limits(alias_nodes=100))
    try:
        loaded = yamlread.load(_laughs(2), "c.yaml")
        assert isinstance(loaded, dict)
        assert loaded["a1"][0] == ["lol"] * 9  # 81 + 9 values
        with pytest.raises(LimitExceeded, match="agent_max_alias_nodes = 100"):
            yamlread.load(_laughs(3), "c.yaml")  # 9 * 90 values
    finally:
        use_limits(previous)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a: " + "[" * 6 + "]" * 6 + "\n", id="lists"),
        pytest.param("a: " + "{b: " * 6 + "}" * 6 + "\n", id="mappings"),
        pytest.param("a: &x " + "[" * 6 + "]" * 6 + "\nb: *x\n", id="given way (an anchor)"),
    ],
)
def test_nesting_past_the_depth_limit_is_refused(text):
    previous = use_limits(Limits(depth=6))
    try:
        with pytest.raises(LimitExceeded, match=r"c\.yaml: lists or mappings nested 7 deep"):
            yamlread.load(text, "c.yaml")
        use_limits(Limits(depth=7))
        assert yamlread.load(text, "c.yaml") == yamlread.safe_load(text)
    finally:
        use_limits(previous)


def test_without_libyaml_the_limits_hold_too(monkeypatch):
    monkeypatch.delattr(yaml, "CSafeLoader")

    with pytest.raises(LimitExceeded, match="agent_max_alias_nodes"):
        yamlread.load(_laughs(10), "c.yaml")


# -- documents written in JSON ---------------------------------------------------------------

_JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text()
    | st.sampled_from(["\x7f", "\x85", "\u2028", "\ufeff", "\ud800", 'a\\"b', "[{", "]}"])
)
_JSON_VALUES = st.recursive(
    _JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(value=_JSON_VALUES)
def test_any_json_text_loads_or_fails_as_with_the_safe_loader(value):
    try:
        text = orjson.dumps(value).decode() + "\n"
    except TypeError:  # a lone surrogate: no JSON text
        return

    assert _agrees(text), text


@settings(max_examples=300, deadline=None)
@given(value=_VALUES)
def test_a_value_dump_json_writes_loads_as_with_the_safe_loader(value):
    text = yamlread.dump_json(value)
    if text is None:  # bytes, a date, a float YAML reads as a string...
        return

    assert _agrees(text), text
    assert _same(yamlread.json_document(text), yamlread.safe_load(text))


@settings(max_examples=300, deadline=None)
@given(value=_VALUES)
def test_a_value_dump_json_writes_is_read_back_as_that_value(value):
    text = yamlread.dump_json(value)
    if text is None:
        return

    assert _same(yamlread.safe_load(text), value), text


@pytest.mark.parametrize(
    ("value", "written"),
    [
        pytest.param(1e-07, "1.0e-7", id="negative exponent"),
        pytest.param(1e20, "1.0e+20", id="positive exponent"),
        pytest.param(-5e-324, "-5.0e-324", id="negative, smallest"),
        pytest.param(3.921892493963242e-06, "3.921892493963242e-6", id="point already"),
        pytest.param(1e15, "1000000000000000.0", id="no exponent"),
    ],
)
def test_a_float_is_written_as_both_json_and_yaml_1_1_read_it(value, written):
    text = yamlread.dump_json({"a": [value]})

    assert text == f'{{"a":[{written}]}}\n'
    assert _same(yamlread.safe_load(text), {"a": [value]})
    assert _same(yamlread.json_document(text), {"a": [value]})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_float_json_has_no_number_for_is_refused(value):
    assert yamlread.dump_json({"a": value}) is None


def test_a_document_nested_past_the_limit_in_json_is_refused_as_in_yaml():
    text = '{"a":' * 6 + "1" + "}" * 6 + "\n"
    previous = use_limits(Limits(depth=5))
    try:
        with pytest.raises(LimitExceeded):
            yamlread.load(text, "c.yaml")
    finally:
        use_limits(previous)


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        pytest.param('{"a":[[[[]]]]}\n', False, id="empty list at the limit"),
        pytest.param('{"a":[[[[[]]]]]}\n', True, id="empty list past the limit"),
        pytest.param('{"a":[[[{"b":1}]]]}\n', False, id="mapping at the limit"),
        pytest.param('{"a":[[[[{}]]]]}\n', True, id="empty mapping past the limit"),
    ],
)
def test_json_nesting_is_counted_to_its_innermost_container(text, refused):
    previous = use_limits(Limits(depth=5))
    try:
        if refused:
            with pytest.raises(LimitExceeded):
                yamlread.load(text, "c.yaml")
        else:
            assert yamlread.load(text, "c.yaml") == yamlread.json_document(text) is not None
    finally:
        use_limits(previous)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"a":1e-07,"b":[1e20]}\n', id="exponent floats"),
        pytest.param('{"a":1e-7,"b":[1e+20]}\n', id="orjson's exponent floats"),
        pytest.param('{"a":1.0e-7,"b":[1.0e+20]}\n', id="exponent floats with a point"),
        pytest.param('{"a":"x\\u0085y"}\n', id="escaped line break"),
        pytest.param('{"a":"\x85"}\n', id="raw line break"),
        pytest.param('{"a": 1}\n', id="not orjson's spacing"),
        pytest.param('{"a":1,"a":2}\n', id="duplicate keys"),
        pytest.param('{"a":"]]]","b":[[[1]]]}\n', id="brackets in strings"),
        pytest.param('{"a":"\\\\\\"[","b":1.5}\n', id="escaped quotes"),
        pytest.param('{"a":18446744073709551616}\n', id="integer past 64 bits"),
    ],
)
def test_a_json_edge_case_loads_or_fails_as_with_the_safe_loader(text):
    assert _agrees(text)


#: The corpus cassettes (the shared corpus and tests/integration/corpus) that JSON cannot
#: say as the safe loader reads them: gzip bodies stored as ``!!binary`` (bytes; the
#: conversion, ``vcr.vcr_json``, writes them decoded first), and boto3's recordings (its
#: request headers are bytes, and a stream is AWS's binary event stream).
NOT_JSON = {
    "pydantic-ai__bedrock_converse_cache_point_moves.yaml",
    "pydantic-ai__bedrock_converse_stream_error_400.yaml",
    "pydantic-ai__bedrock_converse_stream_server_tool.yaml",
    "pydantic-ai__bedrock_converse_stream_tool_call.yaml",
    "pydantic-ai__bedrock_converse_tool_calls.yaml",
    "langsmith__openai_anthropic_mixed_24_gzip.yaml",
    "llm-anthropic__anthropic_tools_stream_gzip.yaml",
    "llm__openai_chat_tool_chain_gzip.yaml",
    "llm__openai_responses_reasoning_tools_4_gzip.yaml",
    "llm__openai_responses_tool_use_gzip.yaml",
    "openllmetry__anthropic_prompt_caching.yaml",
    "openllmetry__anthropic_tools_history_gzip.yaml",
    "openllmetry__openai_assistants_polling_25_gzip.yaml",
}


@pytest.mark.parametrize("path", CORPUS, ids=[path.name for path in CORPUS])
def test_a_corpus_cassette_is_written_in_json_unless_json_cannot_say_it(path):
    document = yamlread.safe_load(path.read_text(encoding="utf-8"))

    assert (yamlread.dump_json(document) is None) == (path.name in NOT_JSON)


@pytest.mark.parametrize(
    "path",
    [path for path in CORPUS if path.name not in NOT_JSON],
    ids=[path.name for path in CORPUS if path.name not in NOT_JSON],
)
def test_a_corpus_cassette_written_in_json_loads_as_with_the_safe_loader(path):
    text = yamlread.dump_json(yamlread.safe_load(path.read_text(encoding="utf-8")))

    assert text is not None
    assert _agrees(text)
    assert yamlread.json_document(text) is not None
