"""Laws of the Cohere and Ollama streams: whatever the reply (any text, none, tool calls
with any arguments, usage), the stream the codec writes, framed as the wire frames it
(server-sent events, NDJSON lines), reads back as the whole JSON reply does."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from pytest_agentctx import Completion, ToolCall, Usage
from pytest_agentctx.traffic.codecs import cohere_chat, ollama_chat
from pytest_agentctx.traffic.codecs.sse import format_sse

SCALARS = st.none() | st.booleans() | st.integers() | st.text()
ARGUMENTS = st.dictionaries(st.text(min_size=1), SCALARS, max_size=3)
NAMES = st.sampled_from(["get_weather", "search", "book_flight"])


def _nested(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3)


NESTED = st.dictionaries(st.text(min_size=1), st.recursive(SCALARS, _nested, max_leaves=6))


@st.composite
def completions(draw: st.DrawFn, ids: str) -> Completion:
    calls = draw(st.lists(st.tuples(NAMES, ARGUMENTS | NESTED), max_size=3))
    return Completion(
        content=draw(st.none() | st.text()),
        tool_calls=tuple(
            ToolCall(
                id=f"{ids}{index}"
                if ids
                else ollama_chat.synthetic_call_id(name, arguments, index),
                name=name,
                arguments=arguments,
            )
            for index, (name, arguments) in enumerate(calls)
        ),
        usage=draw(st.none() | st.builds(Usage, st.integers(0, 10**6), st.integers(0, 10**6))),
    )


@settings(max_examples=60, deadline=None)
@given(completions("call_"))
def test_a_cohere_stream_reads_as_its_whole_reply(completion):
    raw = format_sse(cohere_chat.encode_stream(completion, response_id="r"))

    assert cohere_chat.decode_stream(raw) == cohere_chat.decode_response(
        cohere_chat.encode_response(completion, response_id="r")
    )


@settings(max_examples=60, deadline=None)
@given(completions(""))
def test_an_ollama_ndjson_stream_reads_as_its_whole_reply(completion):
    raw = ollama_chat.format_ndjson(ollama_chat.encode_stream(completion, response_id="r"))

    assert ollama_chat.decode_stream(raw) == ollama_chat.decode_response(
        ollama_chat.encode_response(completion, response_id="r")
    )


@given(st.text())
def test_an_ndjson_line_keeps_the_line_separators_of_its_strings(text):
    raw = ollama_chat.format_ndjson(
        ollama_chat.encode_stream(Completion(content=f"a{text}\u2028\x85"), response_id="r")
    )

    assert ollama_chat.decode_stream(raw).content == f"a{text}\u2028\x85"
