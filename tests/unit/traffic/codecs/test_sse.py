"""Unit tests of pytest_agentctx.traffic.codecs.sse: server-sent events written and read back.

The recorded bodies in ``streams/`` are real provider streams (see ``streams/README.md``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentctx.traffic.codecs.sse import DONE, SSEEvent, format_sse, parse_sse, split_text
from pytest_agentctx.traffic.errors import CodecError

STREAMS = Path(__file__).parent / "streams"


# -- format_sse ----------------------------------------------------------------------


def test_format_sse_writes_a_data_only_event_and_a_blank_line():
    assert format_sse([SSEEvent(None, '{"a":1}')]) == b'data: {"a":1}\n\n'


def test_format_sse_writes_the_event_name_before_the_data():
    assert format_sse([SSEEvent("message_stop", '{"type":"message_stop"}')]) == (
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )


def test_format_sse_writes_each_line_of_the_data_as_a_data_field():
    assert format_sse([SSEEvent(None, "one\ntwo")]) == b"data: one\ndata: two\n\n"


def test_format_sse_writes_events_one_after_the_other():
    events = [SSEEvent(None, "1"), SSEEvent(None, DONE)]

    assert format_sse(events) == b"data: 1\n\ndata: [DONE]\n\n"


def test_format_sse_encodes_text_as_utf8():
    assert format_sse([SSEEvent(None, "21 °C")]) == "data: 21 °C\n\n".encode()


def test_format_sse_of_no_events_is_empty():
    assert format_sse([]) == b""


def test_format_sse_rejects_an_event_name_with_a_line_break():
    with pytest.raises(CodecError, match=r"event name 'a\\nb' holds a line break"):
        format_sse([SSEEvent("a\nb", "{}")])


# -- parse_sse -----------------------------------------------------------------------


def test_parse_sse_reads_data_only_events():
    assert parse_sse(b'data: {"a":1}\n\ndata: [DONE]\n\n') == [
        SSEEvent(None, '{"a":1}'),
        SSEEvent(None, "[DONE]"),
    ]


def test_parse_sse_reads_the_event_name():
    assert parse_sse("event: ping\ndata: {}\n\n") == [SSEEvent("ping", "{}")]


def test_parse_sse_joins_several_data_lines_with_a_newline():
    assert parse_sse("data: one\ndata: two\n\n") == [SSEEvent(None, "one\ntwo")]


def test_parse_sse_reads_crlf_and_cr_line_endings():
    assert parse_sse(b"data: a\r\n\r\ndata: b\r\rdata: c\n\n") == [
        SSEEvent(None, "a"),
        SSEEvent(None, "b"),
        SSEEvent(None, "c"),
    ]


def test_parse_sse_skips_comments_and_the_id_and_retry_fields():
    body = ": keep-alive\nid: 7\nretry: 100\ndata: x\n\n: another comment\n\n"

    assert parse_sse(body) == [SSEEvent(None, "x")]


@pytest.mark.parametrize(
    ("line", "data"),
    [("data:x", "x"), ("data: x", "x"), ("data:  x", " x"), ("data", "")],
    ids=["no-space", "one-space", "two-spaces", "no-colon"],
)
def test_parse_sse_drops_exactly_one_space_after_the_colon(line, data):
    assert parse_sse(f"{line}\n\n") == [SSEEvent(None, data)]


def test_parse_sse_keeps_an_event_that_has_a_name_and_no_data():
    assert parse_sse("event: ping\n\n") == [SSEEvent("ping", "")]


def test_parse_sse_ignores_blank_lines_between_events():
    assert parse_sse("\n\n\ndata: x\n\n\n\n") == [SSEEvent(None, "x")]


def test_parse_sse_keeps_a_last_event_without_its_blank_line():
    assert parse_sse("data: 1\n\ndata: 2") == [SSEEvent(None, "1"), SSEEvent(None, "2")]


def test_parse_sse_skips_a_byte_order_mark():
    assert parse_sse("\ufeffdata: x\n\n".encode()) == [SSEEvent(None, "x")]


def test_parse_sse_of_bytes_that_are_not_utf8_is_a_codec_error_with_a_hint():
    with pytest.raises(CodecError, match=r"not UTF-8 .* Was it compressed\?"):
        parse_sse(b"\x1f\x8b\x08\x00\xff")


@pytest.mark.parametrize(
    "events",
    [
        [SSEEvent(None, '{"id":"chatcmpl_1"}'), SSEEvent(None, DONE)],
        [SSEEvent("message_start", '{"type":"message_start"}'), SSEEvent("ping", "")],
        [SSEEvent("x", "multi\nline\n\ndata")],
        [SSEEvent(None, "21 °C ☀")],
    ],
    ids=["openai", "anthropic", "multi-line", "unicode"],
)
def test_parse_sse_reads_back_what_format_sse_writes(events):
    assert parse_sse(format_sse(events)) == events


def test_parse_sse_reads_a_recorded_openai_stream():
    events = parse_sse((STREAMS / "openai_tool_call_chunks.sse").read_bytes())

    match events:
        case [SSEEvent(None, first), *_, SSEEvent(None, "[DONE]")]:
            assert first.startswith('{"id":"chatcmpl-DELDWLVTmeIzXWg5Ql3jKTXwWoo6O"')
        case _:
            pytest.fail(f"unexpected events: {events}")
    assert len(events) == 8


def test_parse_sse_reads_the_event_names_of_a_recorded_anthropic_stream():
    events = parse_sse((STREAMS / "anthropic_two_tool_uses_without_input.sse").read_bytes())

    assert [event.event for event in events] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_parse_sse_keeps_the_padding_anthropic_puts_after_the_json():
    events = parse_sse((STREAMS / "anthropic_text_and_tool_use.sse").read_bytes())

    assert events[-1] == SSEEvent("message_stop", '{"type":"message_stop"      }')
    assert events[-1].json() == {"type": "message_stop"}


# -- SSEEvent ------------------------------------------------------------------------


def test_sse_event_json_parses_the_data():
    assert SSEEvent(None, '{"choices":[]}').json() == {"choices": []}


# -- split_text ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        (
            "The capital of the UK is London.",
            ["The", " capital", " of", " the", " UK", " is", " London", "."],
        ),
        ('{"city":"Paris"}', ['{"', "city", '":"', "Paris", '"}']),
        ("Sunny, 21 °C.", ["Sunny", ",", " 21", " °", "C", "."]),
        ("two\n\nlines ", ["two", "\n\nlines", " "]),
        ("", []),
    ],
    ids=["sentence", "json", "unicode", "whitespace", "empty"],
)
def test_split_text_cuts_words_and_punctuation_with_the_space_before_them(text, pieces):
    assert split_text(text) == pieces


@pytest.mark.parametrize(
    "text",
    ["Hello, world!", "  leading and trailing  ", "Größe: 3 + 4 = 7 ☀\n", "\t", "{}", "a" * 500],
)
def test_split_text_pieces_join_back_to_the_text(text):
    assert "".join(split_text(text)) == text
