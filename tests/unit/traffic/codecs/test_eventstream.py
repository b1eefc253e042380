"""AWS event-stream framing: the laws of encode and decode, the errors that name the
offset and the CRC, and botocore's own parser reading what we write."""

from __future__ import annotations

import struct
import uuid
import zlib
from datetime import UTC, datetime, timedelta

import pytest
from botocore.eventstream import EventStreamBuffer
from hypothesis import given, strategies as st

from pytest_agentctx import CodecError
from pytest_agentctx.traffic.codecs.eventstream import (
    Byte,
    EventMessage,
    HeaderValue,
    Long,
    Short,
    decode_messages,
    encode_message,
    encode_messages,
    event,
    headers_from_json,
    headers_to_json,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

values: st.SearchStrategy[HeaderValue] = st.one_of(
    st.text(max_size=20),
    st.binary(max_size=20),
    st.booleans(),
    st.integers(-(2**31), 2**31 - 1),
    st.builds(Byte, st.integers(-128, 127)),
    st.builds(Short, st.integers(-(2**15), 2**15 - 1)),
    st.builds(Long, st.integers(-(2**63), 2**63 - 1)),
    st.integers(-(2**40), 2**40).map(lambda ms: _EPOCH + timedelta(milliseconds=ms)),
    st.uuids(),
)
names = st.text(min_size=1, max_size=12).filter(lambda name: len(name.encode()) < 256)
messages = st.builds(
    EventMessage,
    headers=st.dictionaries(names, values, max_size=5),
    payload=st.binary(max_size=64),
)


@given(st.lists(messages, max_size=4))
def test_decode_reads_back_what_encode_writes(stream: list[EventMessage]) -> None:
    assert decode_messages(encode_messages(stream)) == stream


@given(messages, st.data())
def test_any_flipped_byte_is_detected(message: EventMessage, data: st.DataObject) -> None:
    wire = bytearray(encode_message(message))
    position = data.draw(st.integers(0, len(wire) - 1))
    wire[position] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CodecError, match="CRC"):
        decode_messages(bytes(wire))


@given(st.lists(messages, min_size=1, max_size=3))
def test_botocore_reads_what_we_write(stream: list[EventMessage]) -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(encode_messages(stream))
    read = list(buffer)
    assert [m.payload for m in read] == [m.payload for m in stream]
    assert [list(m.headers) for m in read] == [list(m.headers) for m in stream]


def test_botocore_reads_header_values_of_every_type() -> None:
    stamp = _EPOCH + timedelta(milliseconds=1_700_000_000_123)
    when = uuid.UUID("12345678-1234-5678-1234-567812345678")
    headers: dict[str, HeaderValue] = {
        "s": "text",
        "b": b"\x00\x01",
        "t": True,
        "f": False,
        "i8": Byte(-3),
        "i16": Short(300),
        "i32": 70000,
        "i64": Long(2**40),
        "ts": stamp,
        "id": when,
    }
    buffer = EventStreamBuffer()
    buffer.add_data(encode_message(EventMessage(headers, b"{}")))
    (read,) = list(buffer)
    assert read.headers == {
        "s": "text",
        "b": b"\x00\x01",
        "t": True,
        "f": False,
        "i8": -3,
        "i16": 300,
        "i32": 70000,
        "i64": 2**40,
        "ts": 1_700_000_000_123,
        "id": when.bytes,
    }


def test_event_has_the_headers_bedrock_sends() -> None:
    message = event("messageStop", {"stopReason": "end_turn"})
    assert message.headers == {
        ":event-type": "messageStop",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert message.json() == {"stopReason": "end_turn"}


def test_a_truncated_message_names_its_offset() -> None:
    first = encode_message(event("a", {}))
    second = encode_message(event("b", {"x": 1}))
    with pytest.raises(CodecError, match=rf"offset {len(first)} is truncated"):
        decode_messages(first + second[:-3])


def test_a_short_prelude_is_truncated() -> None:
    with pytest.raises(CodecError, match="offset 0 is truncated: 5 bytes left"):
        decode_messages(b"\x00" * 5)


def test_a_wrong_message_crc_says_which_crc() -> None:
    wire = bytearray(encode_message(event("a", {"x": 1})))
    wire[-1] ^= 1
    with pytest.raises(CodecError, match="offset 0 fails its message CRC"):
        decode_messages(bytes(wire))


def test_a_wrong_prelude_crc_says_which_crc() -> None:
    wire = bytearray(encode_message(event("a", {"x": 1})))
    wire[3] ^= 1
    with pytest.raises(CodecError, match="offset 0 fails its prelude CRC"):
        decode_messages(bytes(wire))


def test_an_int_too_large_for_32_bits_asks_for_long() -> None:
    with pytest.raises(CodecError, match="use Long"):
        encode_message(EventMessage({"n": 2**40}, b""))


def test_an_unknown_header_type_is_refused() -> None:
    headers = b"\x01n\x0a"
    total = 12 + len(headers) + 4
    prelude = struct.pack("!II", total, len(headers))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    body = prelude + headers
    with pytest.raises(CodecError, match="unknown type 10"):
        decode_messages(body + struct.pack("!I", zlib.crc32(body)))


@given(st.dictionaries(names, values, max_size=6))
def test_headers_read_back_from_json(headers: dict[str, HeaderValue]) -> None:
    assert headers_from_json(headers_to_json(headers)) == headers


def test_a_stored_header_of_unknown_form_is_refused() -> None:
    with pytest.raises(CodecError, match="stored header 'x'"):
        headers_from_json({"x": {"float": 1.5}})
