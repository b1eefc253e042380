"""AWS's binary event-stream framing (``application/vnd.amazon.eventstream``), read and
written.

Bedrock's streams (ConverseStream, InvokeModelWithResponseStream) and other AWS streaming
APIs send a sequence of messages, each::

    total length (uint32) | headers length (uint32) | prelude CRC32 (of the 8 bytes before)
    headers | payload | message CRC32 (of every byte before it)

all integers big-endian. A header is its name (uint8 length, UTF-8), a type byte and a
value: true (0) and false (1) have no value; byte (2), short (3), int (4), long (5) are
signed integers of 1, 2, 4 and 8 bytes; bytes (6) and string (7) have a uint16 length;
timestamp (8) is an int64 of milliseconds since the epoch; uuid (9) is 16 bytes.

Header values in Python: ``bool``, ``int`` (an int, type 4), ``bytes``, ``str``,
:class:`Byte`, :class:`Short`, :class:`Long` (the other widths), ``datetime`` (a
timestamp, UTC, millisecond precision) and ``uuid.UUID``. :func:`headers_to_json` and
:func:`headers_from_json` write them as JSON and read them back (the stored form of a
recorded stream).
"""

from __future__ import annotations

import base64
import json
import struct
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from pytest_agentctx.traffic.errors import CodecError

#: The content type of an event-stream body.
CONTENT_TYPE = "application/vnd.amazon.eventstream"

_PRELUDE = struct.Struct("!III")
_LENGTHS = struct.Struct("!II")
_CRC = struct.Struct("!I")
_PRELUDE_LENGTH = 12
_CRC_LENGTH = 4
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Byte:
    """A header value of type byte (a signed 8-bit integer)."""

    value: int


@dataclass(frozen=True)
class Short:
    """A header value of type short (a signed 16-bit integer)."""

    value: int


@dataclass(frozen=True)
class Long:
    """A header value of type long (a signed 64-bit integer)."""

    value: int


HeaderValue = str | bytes | bool | int | Byte | Short | Long | datetime | uuid.UUID

#: Integer header types: (type byte, struct format, wrapper, JSON name).
_INTEGERS: tuple[tuple[int, str, type[Byte] | type[Short] | type[Long] | None, str], ...] = (
    (2, "!b", Byte, "byte"),
    (3, "!h", Short, "short"),
    (4, "!i", None, "int"),
    (5, "!q", Long, "long"),
)


@dataclass(frozen=True)
class EventMessage:
    """One message of an event stream: its headers and its payload."""

    headers: Mapping[str, HeaderValue]
    payload: bytes

    @property
    def event_type(self) -> str | None:
        """The ``:event-type`` header (``contentBlockDelta``, ``chunk``...), if any."""
        value = self.headers.get(":event-type")
        return value if isinstance(value, str) else None

    @property
    def message_type(self) -> str | None:
        """The ``:message-type`` header (``event``, ``exception``, ``error``), if any."""
        value = self.headers.get(":message-type")
        return value if isinstance(value, str) else None

    def json(self) -> object:
        """The payload parsed as JSON (a :class:`CodecError` if it is not JSON)."""
        try:
            value: object = json.loads(self.payload)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CodecError(
                f"eventstream: the payload of the {self.event_type!r} message is not JSON "
                f"({exc}): {self.payload[:80]!r}."
            ) from None
        return value


def event(event_type: str, payload: Mapping[str, object]) -> EventMessage:
    """The message Bedrock sends for an event: ``payload`` as compact JSON with the
    ``:event-type``, ``:content-type`` and ``:message-type`` headers."""
    return EventMessage(
        headers={
            ":event-type": event_type,
            ":content-type": "application/json",
            ":message-type": "event",
        },
        payload=json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(),
    )


def exception(exception_type: str, message: str) -> EventMessage:
    """The message an AWS stream sends for an error in the middle of the stream
    (``:message-type: exception``), with ``{"message": ...}`` as payload."""
    return EventMessage(
        headers={
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        payload=json.dumps({"message": message}, ensure_ascii=False).encode(),
    )


def _encode_value(name: str, value: HeaderValue) -> bytes:
    if isinstance(value, bool):
        return bytes([0 if value else 1])
    if isinstance(value, int):
        value = _checked_int(name, value, 4, "!i")
        return b"\x04" + struct.pack("!i", value)
    for kind, fmt, wrapper, _ in _INTEGERS:
        if wrapper is not None and isinstance(value, wrapper):
            number = _checked_int(name, value.value, kind, fmt)
            return bytes([kind]) + struct.pack(fmt, number)
    if isinstance(value, (bytes, str)):
        raw = value.encode() if isinstance(value, str) else value
        if len(raw) > 0xFFFF:
            raise CodecError(
                f"eventstream.encode_message: header {name!r} is {len(raw)} bytes long; a "
                "header value holds at most 65535."
            )
        return bytes([7 if isinstance(value, str) else 6]) + struct.pack("!H", len(raw)) + raw
    if isinstance(value, datetime):
        millis = (value - _EPOCH) // timedelta(milliseconds=1)
        return b"\x08" + struct.pack("!q", millis)
    if isinstance(value, uuid.UUID):
        return b"\x09" + value.bytes
    raise CodecError(
        f"eventstream.encode_message: header {name!r} has a value of type "
        f"{type(value).__name__}; expected str, bytes, bool, int, Byte, Short, Long, "
        "datetime or uuid.UUID."
    )


def _checked_int(name: str, value: int, kind: int, fmt: str) -> int:
    bits = struct.calcsize(fmt) * 8
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise CodecError(
            f"eventstream.encode_message: header {name!r} holds {value}, which does not fit "
            f"in {bits} bits (header type {kind}); use Long for a 64-bit integer."
        )
    return value


def encode_header(name: str, value: HeaderValue) -> bytes:
    """The wire bytes of one header: its name's length and name, its type and value."""
    raw_name = name.encode()
    if not 0 < len(raw_name) < 256:
        raise CodecError(
            f"eventstream.encode_message: the header name {name!r} is {len(raw_name)} "
            "bytes long; a header name holds 1 to 255 bytes."
        )
    return bytes([len(raw_name)]) + raw_name + _encode_value(name, value)


@lru_cache(maxsize=512)
def encode_string_header(name: str, value: str) -> bytes:
    """:func:`encode_header` of a string header, kept: a stream repeats a few of them
    (``:event-type``, ``:content-type``, ``:message-type``) in every message."""
    return encode_header(name, value)


def frame(headers: bytes, payload: bytes) -> bytes:
    """One message of headers already encoded and ``payload``: the prelude with its CRC,
    both, and the CRC of the whole."""
    total = _PRELUDE_LENGTH + len(headers) + len(payload) + _CRC_LENGTH
    prelude = _LENGTHS.pack(total, len(headers))
    body = b"".join((prelude, _CRC.pack(zlib.crc32(prelude)), headers, payload))
    return body + _CRC.pack(zlib.crc32(body))


def encode_message(message: EventMessage) -> bytes:
    """The wire bytes of ``message``, with both CRCs."""
    headers = b"".join(
        encode_string_header(name, value) if type(value) is str else encode_header(name, value)
        for name, value in message.headers.items()
    )
    return frame(headers, message.payload)


def encode_messages(messages: list[EventMessage]) -> bytes:
    """The wire bytes of a whole stream."""
    return b"".join(encode_message(message) for message in messages)


def _fail(offset: int, problem: str) -> CodecError:
    return CodecError(
        f"eventstream.decode_messages: the message at byte offset {offset} {problem}. Is "
        f"this an {CONTENT_TYPE} body, whole and not re-encoded (a cassette must keep it "
        "as bytes or in its stored 'eventstream' form)?"
    )


class _Reader:
    """Reads the header values of one message, failing at the bytes' end."""

    def __init__(self, data: bytes, start: int, end: int, offset: int) -> None:
        self.data, self.at, self.end, self.offset = data, start, end, offset

    def take(self, size: int) -> bytes:
        if self.at + size > self.end:
            raise _fail(self.offset, f"has a header that runs past its headers ({self.end})")
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def value(self, kind: int, name: str) -> HeaderValue:
        if kind in (0, 1):
            return kind == 0
        for number, fmt, wrapper, _ in _INTEGERS:
            if kind == number:
                (integer,) = struct.unpack(fmt, self.take(struct.calcsize(fmt)))
                return integer if wrapper is None else wrapper(integer)
        if kind in (6, 7):
            (length,) = struct.unpack("!H", self.take(2))
            raw = self.take(length)
            if kind == 6:
                return raw
            try:
                return raw.decode()
            except UnicodeDecodeError:
                raise _fail(
                    self.offset, f"has a string header {name!r} that is not UTF-8"
                ) from None
        if kind == 8:
            (millis,) = struct.unpack("!q", self.take(8))
            return _EPOCH + timedelta(milliseconds=millis)
        if kind == 9:
            return uuid.UUID(bytes=self.take(16))
        raise _fail(self.offset, f"has header {name!r} of unknown type {kind}")


def _decode_one(data: bytes, offset: int) -> tuple[EventMessage, int]:
    if len(data) - offset < _PRELUDE_LENGTH:
        raise _fail(offset, f"is truncated: {len(data) - offset} bytes left, a prelude is 12")
    total, headers_length, prelude_crc = _PRELUDE.unpack_from(data, offset)
    computed = zlib.crc32(data[offset : offset + 8])
    if computed != prelude_crc:
        raise _fail(
            offset,
            f"fails its prelude CRC (stored 0x{prelude_crc:08x}, computed 0x{computed:08x})",
        )
    if total < _PRELUDE_LENGTH + headers_length + _CRC_LENGTH:
        raise _fail(offset, f"says it is {total} bytes long with {headers_length} of headers")
    end = offset + total
    if end > len(data):
        raise _fail(offset, f"is truncated: it says {total} bytes, {len(data) - offset} are left")
    (message_crc,) = struct.unpack_from("!I", data, end - _CRC_LENGTH)
    computed = zlib.crc32(data[offset : end - _CRC_LENGTH])
    if computed != message_crc:
        raise _fail(
            offset,
            f"fails its message CRC (stored 0x{message_crc:08x}, computed 0x{computed:08x})",
        )
    start = offset + _PRELUDE_LENGTH
    reader = _Reader(data, start, start + headers_length, offset)
    headers: dict[str, HeaderValue] = {}
    while reader.at < reader.end:
        raw_name = reader.take(reader.take(1)[0])
        name = raw_name.decode(errors="replace")
        kind = reader.take(1)[0]
        headers[name] = reader.value(kind, name)
    payload = data[start + headers_length : end - _CRC_LENGTH]
    return EventMessage(headers=headers, payload=payload), end


def decode_messages(data: bytes) -> list[EventMessage]:
    """The messages of an event-stream body.

    Raises :class:`CodecError` naming the byte offset of the message that fails: a
    truncated message, a prelude or message CRC that does not match, a malformed header.
    """
    messages: list[EventMessage] = []
    offset = 0
    while offset < len(data):
        message, offset = _decode_one(data, offset)
        messages.append(message)
    return messages


def is_eventstream(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` value is the event-stream one."""
    return bool(content_type) and str(content_type).split(";")[0].strip().lower() == CONTENT_TYPE


def headers_to_json(headers: Mapping[str, HeaderValue]) -> dict[str, object]:
    """``headers`` as JSON: strings, booleans and ints as they are, other types as
    ``{"<type>": value}`` (``{"bytes": base64}``, ``{"long": n}``, ``{"timestamp": ms}``,
    ``{"uuid": "..."}``)."""
    written: dict[str, object] = {}
    for name, value in headers.items():
        if isinstance(value, (str, bool, int)):
            written[name] = value
        elif isinstance(value, bytes):
            written[name] = {"bytes": base64.b64encode(value).decode("ascii")}
        elif isinstance(value, datetime):
            written[name] = {"timestamp": (value - _EPOCH) // timedelta(milliseconds=1)}
        elif isinstance(value, uuid.UUID):
            written[name] = {"uuid": str(value)}
        else:
            kind = next(n for _, _, w, n in _INTEGERS if w is not None and isinstance(value, w))
            written[name] = {kind: value.value}
    return written


def _json_value(name: str, value: object) -> HeaderValue:
    if isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, Mapping) and len(value) == 1:
        ((kind, raw),) = value.items()
        if kind == "bytes" and isinstance(raw, str):
            return base64.b64decode(raw)
        if kind == "timestamp" and isinstance(raw, int) and not isinstance(raw, bool):
            return _EPOCH + timedelta(milliseconds=raw)
        if kind == "uuid" and isinstance(raw, str):
            return uuid.UUID(raw)
        for _, _, wrapper, json_name in _INTEGERS:
            if wrapper is not None and kind == json_name and isinstance(raw, int):
                return wrapper(raw)
    raise CodecError(
        f"eventstream: the stored header {name!r} is {value!r:.80}; expected a string, a "
        'boolean, an integer or one of {"bytes": base64}, {"byte"|"short"|"long": n}, '
        '{"timestamp": milliseconds}, {"uuid": "..."}.'
    )


def headers_from_json(headers: Mapping[str, object]) -> dict[str, HeaderValue]:
    """Headers written by :func:`headers_to_json`, read back."""
    return {str(name): _json_value(str(name), value) for name, value in headers.items()}
