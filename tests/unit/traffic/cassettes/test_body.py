"""Unit tests of pytest_agentctx.traffic.cassettes.body: bodies stored readable and served back."""

from __future__ import annotations

import base64
import gzip
import json
import zlib

import pytest

from pytest_agentctx._untrusted import Limits, use_limits
from pytest_agentctx.traffic.cassettes import body
from pytest_agentctx.traffic.cassettes.body import (
    BodyTooLarge,
    UndecodableBody,
    body_bytes,
    body_chunks,
    decode_content,
    decode_recorded,
    decompress,
    encode_body,
    format_sse_event,
    not_json,
    parse_sse,
)

OPENAI_STREAM = (
    'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n'
    'data: {"choices":[{"delta":{"content":"lo"}}]}\n\n'
    "data: [DONE]\n\n"
)
ANTHROPIC_STREAM = (
    "event: message_start\n"
    'data: {"type":"message_start"}\n\n'
    "event: ping\n"
    'data: {"type": "ping"}\n\n'
    "event: message_stop\n"
    'data: {"type":"message_stop"}\n\n'
)

# -- decompress ----------------------------------------------------------------------


def test_decompress_undoes_gzip():
    assert decompress(gzip.compress(b'{"a": 1}'), "gzip") == (b'{"a": 1}', True)


def test_decompress_keeps_a_gzip_stream_cut_short_before_its_trailer():
    packer = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    raw = packer.compress(b"data: [DONE]\n\n") + packer.flush(zlib.Z_SYNC_FLUSH)

    assert decompress(raw, "gzip") == (b"data: [DONE]\n\n", True)


def test_decompress_undoes_zlib_wrapped_deflate():
    assert decompress(zlib.compress(b"hello"), "deflate") == (b"hello", True)


def test_decompress_undoes_raw_deflate():
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw = packer.compress(b"hello") + packer.flush()

    assert decompress(raw, "deflate") == (b"hello", True)


@pytest.mark.parametrize("encoding", [None, "", "identity", " Identity "])
def test_decompress_leaves_unencoded_bytes_alone(encoding):
    assert decompress(b"plain", encoding) == (b"plain", True)


def test_decompress_reports_bytes_that_are_not_what_the_header_says():
    assert decompress(b"not gzip at all", "gzip") == (b"not gzip at all", False)


def test_decompress_reports_an_encoding_it_does_not_know():
    assert decompress(b"\x0b\x02\x80", "br") == (b"\x0b\x02\x80", False)


# -- encode_body ---------------------------------------------------------------------


def test_empty_body_is_stored_as_none():
    assert encode_body(b"", "application/json") is None


def test_json_body_is_stored_as_its_value():
    assert encode_body(b'{"model": "gpt-4o-mini"}', "application/json; charset=utf-8") == {
        "json": {"model": "gpt-4o-mini"}
    }


def test_json_body_without_a_content_type_is_recognised():
    assert encode_body(b'[1, {"a": true}]') == {"json": [1, {"a": True}]}


def test_invalid_json_with_a_json_content_type_is_stored_as_text():
    assert encode_body(b'{"cut": ', "application/json") == {"text": '{"cut": '}


def test_plain_text_is_stored_as_text():
    assert encode_body("héllo".encode(), "text/plain") == {"text": "héllo"}


def test_bytes_that_are_not_utf8_are_stored_as_base64():
    raw = b"\x89PNG\r\n\x1a\n\xff\xfe"

    assert encode_body(raw, "image/png") == {"base64": base64.b64encode(raw).decode()}


def test_event_stream_is_stored_as_one_entry_per_event():
    body = encode_body(OPENAI_STREAM.encode(), "text/event-stream; charset=utf-8")

    match body:
        case {
            "sse": [
                {"data": {"choices": [{"delta": {"content": "Hel"}}]}},
                {"data": {"choices": [{"delta": {"content": "lo"}}]}},
                {"data": "[DONE]"},
            ]
        }:
            pass
        case _:
            raise AssertionError(body)


def test_event_stream_without_a_content_type_is_recognised():
    assert encode_body(ANTHROPIC_STREAM.encode(), None) == {
        "sse": [
            {"event": "message_start", "data": {"type": "message_start"}},
            {"event": "ping", "data": {"type": "ping"}},
            {"event": "message_stop", "data": {"type": "message_stop"}},
        ]
    }


def test_event_stream_with_crlf_line_ends_and_no_content_type_is_recognised():
    raw = b'data: {"a":1}\r\n\r\ndata: [DONE]\r\n\r\n'

    assert encode_body(raw, None) == {"sse": [{"data": {"a": 1}}, {"data": "[DONE]"}]}


# -- parse_sse / format_sse_event ----------------------------------------------------


def test_parse_sse_joins_multi_line_data_with_newlines():
    assert parse_sse("data: first\ndata: second\n\n") == [{"data": "first\nsecond"}]


def test_parse_sse_keeps_id_and_retry_fields():
    assert parse_sse("id: 7\nretry: 1000\ndata: x\n\n") == [
        {"id": "7", "retry": "1000", "data": "x"}
    ]


def test_parse_sse_keeps_a_comment_only_event():
    assert parse_sse(": keep-alive\n\ndata: x\n\n") == [{"comment": "keep-alive"}, {"data": "x"}]


def test_parse_sse_reads_a_last_event_without_its_blank_line():
    assert parse_sse("data: a\n\ndata: b") == [{"data": "a"}, {"data": "b"}]


def test_format_sse_event_writes_fields_then_data_and_a_blank_line():
    event = {"event": "message_stop", "data": {"type": "message_stop"}}

    assert format_sse_event(event) == b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def test_format_sse_event_splits_multi_line_text_into_data_lines():
    assert format_sse_event({"data": "first\nsecond"}) == b"data: first\ndata: second\n\n"


def test_format_sse_event_writes_a_comment():
    assert format_sse_event({"comment": "keep-alive"}) == b": keep-alive\n\n"


# -- body_chunks / body_bytes --------------------------------------------------------


def test_stream_is_served_one_chunk_per_event():
    chunks = body_chunks(encode_body(ANTHROPIC_STREAM.encode(), "text/event-stream"))

    assert chunks == [
        b'event: message_start\ndata: {"type":"message_start"}\n\n',
        b'event: ping\ndata: {"type":"ping"}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ]


def test_served_stream_parses_back_to_the_same_events():
    stored = encode_body(OPENAI_STREAM.encode(), "text/event-stream")

    assert encode_body(body_bytes(stored), "text/event-stream") == stored


def test_json_body_is_served_as_the_same_json_value():
    stored = encode_body(b'{\n    "a": [1, 2.5, "\\u00e9"]\n}', "application/json")

    assert json.loads(body_bytes(stored)) == {"a": [1, 2.5, "é"]}


def test_text_body_is_served_as_utf8():
    assert body_chunks({"text": "héllo"}) == ["héllo".encode()]


def test_base64_body_is_served_as_the_original_bytes():
    raw = bytes(range(256))

    assert body_bytes(encode_body(raw, "application/octet-stream")) == raw


def test_empty_body_is_served_as_no_chunks():
    assert (body_chunks(None), body_bytes(None)) == ([], b"")


def test_a_body_of_an_unknown_kind_is_a_clear_error():
    with pytest.raises(ValueError, match=r"keys \['xml'\]; expected one of json, sse, text"):
        body_chunks({"xml": "<a/>"})


# -- not_json -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ({"json": {"id": "chatcmpl-1"}}, "application/json"),
        ({"text": "<html>ok</html>"}, "text/html"),
        ({"text": '{"id": 1}'}, "application/json"),
        ({"sse": [{"data": {"id": 1}}, {"data": "[DONE]"}]}, "text/event-stream"),
        ({"sse": [{"event": "ping", "data": "keep-alive"}]}, "text/event-stream"),
        (None, "application/json"),
        ({"text": '{"done": false}\n\n{"done": true}\n'}, "application/x-ndjson"),
        ({"text": '{"text": "a\u2028b\x85c"}\r\n'}, "application/x-ndjson"),
    ],
    ids=[
        "json",
        "html",
        "text-that-parses",
        "sse",
        "sse-text-data",
        "empty",
        "ndjson",
        "ndjson-line-separators-in-a-string",
    ],
)
def test_a_body_its_client_can_read_has_no_json_problem(body, content_type):
    assert not_json(body, content_type) is None


def test_a_text_body_of_a_json_content_type_is_not_json():
    problem = not_json({"text": "<html>502</html>"}, "application/json; charset=utf-8")

    assert problem is not None
    assert problem.startswith(
        "its body is not JSON, though its content-type (application/json; charset=utf-8) says "
        "it is (Expecting value: line 1 column 1 (char 0)): '<html>502</html>'"
    )


def test_an_ndjson_line_cut_short_is_named_by_its_number():
    problem = not_json({"text": '{"done": false}\n{"done": tr\n'}, "application/x-ndjson")

    assert problem is not None
    assert problem.startswith(
        "line #1 of its body is not JSON, though its content-type (application/x-ndjson) says "
        "each line is ("
    )


def test_a_stream_event_cut_short_is_named_by_its_index():
    body = {"sse": [{"data": {"id": 1}}, {"data": '{"id": 2, "choices": ['}, {"data": "[DONE]"}]}

    problem = not_json(body, "text/event-stream")

    assert problem is not None
    assert problem.startswith("the data of its event #1 is not JSON, though it starts as JSON (")


def test_a_long_unreadable_body_is_shown_in_part():
    problem = not_json({"text": "<html>" + "x" * 500}, "application/json")

    assert problem is not None
    assert problem.endswith("...'")
    assert len(problem) < 250


# -- bodies past the size limit ---------------------------------------------------------

_ZEROS = bytes(1 << 20)  # 1 MiB


def _encoded(encoding: str, data: bytes) -> bytes:
    if encoding == "gzip":
        return gzip.compress(data, mtime=0)
    if encoding == "deflate":
        return zlib.compress(data)
    if encoding == "br":
        return bytes(pytest.importorskip("brotli").compress(data, quality=1))
    return bytes(pytest.importorskip("zstandard").ZstdCompressor().compress(data))


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_a_body_that_decodes_past_the_limit_is_refused(encoding):
    raw = _encoded(encoding, _ZEROS)

    with pytest.raises(BodyTooLarge) as caught:
        decode_content(raw, encoding, limit=len(_ZEROS) - 1)

    assert str(caught.value) == (
        f"content-encoding {encoding!r} decoding to more than {len(_ZEROS) - 1} bytes"
    )
    assert decode_content(raw, encoding, limit=len(_ZEROS)) == _ZEROS


@pytest.mark.parametrize("encoding", ["gzip", "zstd"])
def test_a_body_of_many_members_counts_them_all_against_the_limit(encoding):
    raw = _encoded(encoding, _ZEROS) * 4

    with pytest.raises(BodyTooLarge):
        decode_content(raw, encoding, limit=3 * len(_ZEROS))

    assert decode_content(raw, encoding, limit=4 * len(_ZEROS)) == _ZEROS * 4


def test_decompress_never_keeps_a_body_past_the_limit_as_its_raw_bytes():
    previous = use_limits(Limits(body_bytes=10))
    try:
        with pytest.raises(BodyTooLarge):  # not (raw, False): a client would inflate it
            decompress(_encoded("gzip", _ZEROS), "gzip")
    finally:
        use_limits(previous)


def test_the_size_limit_in_force_is_the_default():
    previous = use_limits(Limits(body_bytes=1000))
    try:
        with pytest.raises(BodyTooLarge, match="more than 1000 bytes"):
            decode_content(_encoded("gzip", _ZEROS), "gzip")
    finally:
        use_limits(previous)


def test_running_out_of_memory_while_decoding_is_not_swallowed(monkeypatch):
    def exhausted(raw: bytes, limit: int) -> bytes:
        raise MemoryError

    monkeypatch.setitem(body._DECODERS, "gzip", exhausted)

    with pytest.raises(MemoryError):
        decompress(b"\x1f\x8b...", "gzip")


def test_a_recorded_body_past_the_limit_cannot_be_scrubbed_and_says_how_to_raise_it():
    previous = use_limits(Limits(body_bytes=10))
    try:
        with pytest.raises(UndecodableBody) as caught:
            decode_recorded(_encoded("gzip", _ZEROS), "gzip")
    finally:
        use_limits(previous)

    assert str(caught.value) == (
        "content-encoding 'gzip': it decodes to more than 10 bytes (the limit "
        "agent_max_body_bytes); if the server really sends bodies that large, raise "
        "agent_max_body_bytes in the pytest ini file"
    )
