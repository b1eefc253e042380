"""Laws of the cassette redactor (hypothesis): a secret is found however it hides.

* However a stream splits a text that holds a secret into deltas (OpenAI chat completions,
  Anthropic Messages, OpenAI Responses; text and tool-call arguments), no stored event
  holds the secret, the text the stream reassembles to holds none, and the stream still
  decodes with the package's codecs.
* A secret in any key or value of a JSON body, at any depth, is gone.
* Redaction is idempotent: a redacted body is redacted again unchanged.

Derandomized, with no deadline and a modest number of examples: the same cases every run.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import assume, given, settings, strategies as st

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.traffic.cassettes.body import Body, body_bytes, encode_body
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.codecs import anthropic_messages, openai_chat, openai_responses
from pytest_agentctx.traffic.codecs.base import Completion
from pytest_agentctx.traffic.codecs.sse import SSEEvent, format_sse

LAWS = settings(max_examples=60, deadline=None, derandomize=True, database=None)

#: Secrets as providers issue them: letters, digits, dashes and underscores.
SECRETS = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=8, max_size=24)
#: Text around the secret: anything printable, quotes and backslashes included.
AROUND = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)


@dataclass(frozen=True)
class Pieces:
    """Where one wire format keeps the pieces of a streamed text."""

    is_piece: Callable[[dict[str, Any]], bool]
    get: Callable[[dict[str, Any]], str]
    put: Callable[[dict[str, Any], str], None]


def _chat_delta(data: dict[str, Any]) -> dict[str, Any]:
    return data["choices"][0]["delta"]


def _chat_call(data: dict[str, Any]) -> dict[str, Any]:
    return _chat_delta(data)["tool_calls"][0]


def _put_chat_text(data: dict[str, Any], piece: str) -> None:
    _chat_delta(data)["content"] = piece


def _put_chat_args(data: dict[str, Any], piece: str) -> None:
    _chat_call(data)["function"]["arguments"] = piece


def _put_delta_field(field: str) -> Callable[[dict[str, Any], str], None]:
    def put(data: dict[str, Any], piece: str) -> None:
        data["delta"][field] = piece

    return put


def _put_delta(data: dict[str, Any], piece: str) -> None:
    data["delta"] = piece


def _is_chat_text(data: dict[str, Any]) -> bool:
    delta = data.get("choices", [{}])[0].get("delta", {})
    return "content" in delta and "role" not in delta


def _is_chat_args(data: dict[str, Any]) -> bool:
    calls = data.get("choices", [{}])[0].get("delta", {}).get("tool_calls")
    return bool(calls) and "id" not in calls[0]


def _is_anthropic(kind: str) -> Callable[[dict[str, Any]], bool]:
    def is_piece(data: dict[str, Any]) -> bool:
        delta = data.get("delta")
        return isinstance(delta, dict) and delta.get("type") == kind

    return is_piece


def _is_type(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda data: data.get("type") == kind


@dataclass(frozen=True)
class WireFormat:
    name: str
    codec: Any
    text: Pieces
    arguments: Pieces


FORMATS = [
    WireFormat(
        "openai_chat",
        openai_chat,
        Pieces(_is_chat_text, lambda d: _chat_delta(d)["content"], _put_chat_text),
        Pieces(_is_chat_args, lambda d: _chat_call(d)["function"]["arguments"], _put_chat_args),
    ),
    WireFormat(
        "anthropic_messages",
        anthropic_messages,
        Pieces(_is_anthropic("text_delta"), lambda d: d["delta"]["text"], _put_delta_field("text")),
        Pieces(
            _is_anthropic("input_json_delta"),
            lambda d: d["delta"]["partial_json"],
            _put_delta_field("partial_json"),
        ),
    ),
    WireFormat(
        "openai_responses",
        openai_responses,
        Pieces(_is_type("response.output_text.delta"), lambda d: d["delta"], _put_delta),
        Pieces(
            _is_type("response.function_call_arguments.delta"), lambda d: d["delta"], _put_delta
        ),
    ),
]


def _resplit(events: list[SSEEvent], pieces: Pieces, cuts: list[int]) -> list[SSEEvent]:
    """``events`` with the run of delta events that ``pieces`` finds joined and split again
    at ``cuts`` (positions in the joined text)."""
    datas = [json.loads(e.data) if e.data.startswith("{") else None for e in events]
    positions = [i for i, d in enumerate(datas) if d is not None and pieces.is_piece(d)]
    first, last = positions[0], positions[-1]
    assert positions == list(range(first, last + 1))
    text = "".join(pieces.get(datas[i]) for i in positions)  # type: ignore[arg-type]
    bounds = [0, *sorted({cut % (len(text) + 1) for cut in cuts}), len(text)]
    replacement = []
    for start, end in itertools.pairwise(bounds):
        data = json.loads(events[first].data)
        pieces.put(data, text[start:end])
        replacement.append(SSEEvent(events[first].event, json.dumps(data, ensure_ascii=False)))
    return [*events[:first], *replacement, *events[last + 1 :]]


def _joined(body: Body, pieces: Pieces) -> str:
    """The text the stored stream's pieces reassemble to."""
    assert body is not None
    datas = [event["data"] for event in body["sse"] if isinstance(event.get("data"), dict)]
    return "".join(pieces.get(d) for d in datas if pieces.is_piece(d))


@st.composite
def secret_texts(draw: st.DrawFn) -> tuple[str, str]:
    """A secret and a text that holds it once or more."""
    secret = draw(SECRETS)
    parts = draw(st.lists(AROUND, min_size=2, max_size=4))
    return secret, secret.join(parts)


#: A wire format, a secret, the text that holds it, the stored stream and its bytes (or None).
Case = tuple["WireFormat", str, str, Body, bytes | None]


@st.composite
def split_streams(draw: st.DrawFn) -> Case:
    """A wire format, a secret, the text holding it, a stored stream in which both the
    text and a tool call's arguments holding the text are split at random points, and
    (or not) the bytes it was stored from."""
    wire = draw(st.sampled_from(FORMATS))
    secret, text = draw(secret_texts())
    # A secret that spells the wire format's own words ("text_del" in "text_delta") cannot
    # be told from them: no redactor can cut it without breaking the stream.
    words = Completion(
        content="é", tool_calls=(ToolCall(id="call_1", name="lookup", arguments={"query": "é"}),)
    )
    skeleton = format_sse(wire.codec.encode_stream(words, response_id="resp_1"))
    assume(secret not in skeleton.decode("utf-8"))
    completion = Completion(
        content=text,
        tool_calls=(ToolCall(id="call_1", name="lookup", arguments={"query": text}),),
    )
    events = wire.codec.encode_stream(completion, response_id="resp_1")
    cuts = st.lists(st.integers(min_value=0, max_value=200), max_size=8)
    events = _resplit(events, wire.text, draw(cuts))
    events = _resplit(events, wire.arguments, draw(cuts))
    wire_bytes = format_sse(events)
    # With the bytes it was read from, as a recording passes them, or without.
    raw = wire_bytes if draw(st.booleans()) else None
    return wire, secret, text, encode_body(wire_bytes, "text/event-stream"), raw


def _redactor(secret: str) -> Redactor:
    return Redactor(env=(), extra_values=(secret,))


@LAWS
@given(split_streams())
def test_no_stored_event_holds_a_secret_split_across_deltas(case: Case) -> None:
    _, secret, _, body, raw = case

    redacted = _redactor(secret).body(body, raw=raw)

    assert redacted is not None
    for event in redacted["sse"]:
        assert secret not in json.dumps(event, ensure_ascii=False)


@LAWS
@given(split_streams())
def test_the_text_a_redacted_stream_reassembles_to_holds_no_secret(case: Case) -> None:
    wire, secret, _, body, raw = case

    redacted = _redactor(secret).body(body, raw=raw)

    assert secret not in _joined(redacted, wire.text)
    assert secret not in _joined(redacted, wire.arguments)


@LAWS
@given(split_streams())
def test_a_redacted_stream_still_decodes_without_the_secret(case: Case) -> None:
    wire, secret, _, body, raw = case

    completion = wire.codec.decode_stream(body_bytes(_redactor(secret).body(body, raw=raw)))

    assert completion.content is not None
    assert secret not in completion.content
    assert "REDACTED" in completion.content
    [call] = completion.tool_calls
    assert set(call.arguments) == {"query"}
    assert secret not in call.arguments["query"]


@LAWS
@given(split_streams())
def test_redacting_a_stream_twice_changes_nothing_more(case: Case) -> None:
    _, secret, _, body, raw = case
    redactor = _redactor(secret)

    once = redactor.body(body, raw=raw)

    assert redactor.body(once) == once


# -- JSON ------------------------------------------------------------------------------


@st.composite
def json_with_secret(draw: st.DrawFn) -> tuple[str, Any]:
    """A secret and a JSON value holding it in a key or a value somewhere."""
    secret = draw(SECRETS)
    holding = st.builds(lambda a, b: f"{a}{secret}{b}", AROUND, AROUND)
    strings = st.one_of(AROUND, holding)
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), strings)
    tree = st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(strings, inner, max_size=3)
        ),
        max_leaves=12,
    )
    # At least one place holds it: a key or a value, nested under the generated value.
    where = draw(st.sampled_from(["key", "value"]))
    planted: Any = {draw(holding): draw(tree)} if where == "key" else {"v": draw(holding)}
    depth = draw(st.integers(min_value=0, max_value=4))
    for _ in range(depth):
        planted = draw(st.sampled_from([[planted], {"k": planted}]))
    return secret, [draw(tree), planted]


@LAWS
@given(json_with_secret())
def test_a_secret_in_any_json_key_or_value_is_gone(case: tuple[str, Any]) -> None:
    secret, value = case

    redacted = _redactor(secret).body({"json": value})

    assert redacted is not None
    assert secret not in json.dumps(redacted["json"], ensure_ascii=False)


@LAWS
@given(json_with_secret())
def test_redacting_a_json_body_twice_changes_nothing_more(case: tuple[str, Any]) -> None:
    secret, value = case
    redactor = _redactor(secret)

    once = redactor.body({"json": value})

    assert redactor.body(once) == once


# -- AWS access key ids, known by their shape --------------------------------------------

#: AWS access key ids: a prefix, then 16 upper-case letters or digits.
KEY_IDS = st.builds(
    "".join,
    st.tuples(
        st.sampled_from(["AKIA", "ASIA"]),
        st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16),
    ),
)
#: What may stand right before or after a key id: anything but a letter or digit of its own.
EDGES = st.sampled_from(["", " ", "/", "=", '"', ":", "é", "\n", "&", "-"])


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(inner, max_size=3), st.dictionaries(AROUND, inner, max_size=3))


@st.composite
def json_with_key_id(draw: st.DrawFn) -> tuple[str, Any]:
    """An access key id and a JSON value holding it in a key or a value somewhere."""
    key_id = draw(KEY_IDS)
    before, after = draw(AROUND), draw(AROUND)
    edges = (draw(EDGES), draw(EDGES))
    # the text around ends (and starts) on an edge, never on a letter or digit of the id
    holding = f"{before}{edges[0] or ' '}{key_id}{edges[1] or ' '}{after}"
    tree = st.recursive(st.one_of(st.none(), st.integers(), AROUND), _containers, max_leaves=8)
    planted: Any = {holding: draw(tree)} if draw(st.booleans()) else {"v": holding}
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        planted = draw(st.sampled_from([[planted], {"k": planted}]))
    return key_id, [draw(tree), planted]


def _no_known_secret() -> Redactor:
    return Redactor(env=(), by_name=False)


@LAWS
@given(json_with_key_id(), st.booleans())
def test_an_access_key_id_in_any_json_key_or_value_is_gone(case: tuple[str, Any], raw: bool):
    key_id, value = case
    text = json.dumps(value, ensure_ascii=False).encode()

    redacted = _no_known_secret().body({"json": value}, raw=text if raw else None)

    assert redacted is not None
    assert key_id not in json.dumps(redacted["json"], ensure_ascii=False)


@LAWS
@given(json_with_key_id())
def test_redacting_a_json_body_with_an_access_key_id_twice_changes_nothing_more(
    case: tuple[str, Any],
) -> None:
    _, value = case
    redactor = _no_known_secret()

    once = redactor.body({"json": value})

    assert redactor.body(once) == once


@LAWS
@given(KEY_IDS, st.binary(max_size=16), st.binary(max_size=16))
def test_an_access_key_id_in_bytes_is_overwritten_in_place(
    key_id: str, before: bytes, after: bytes
) -> None:
    raw = before + b"\x00" + key_id.encode() + b"\x00" + after

    scrubbed = _no_known_secret().binary(raw)

    assert key_id.encode() not in scrubbed
    assert len(scrubbed) == len(raw)
