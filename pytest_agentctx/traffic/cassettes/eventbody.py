"""AWS event-stream bodies (``application/vnd.amazon.eventstream``, Bedrock's streams) as a
cassette stores them: ``{"eventstream": [entry, ...]}``, one entry per message, each
``{"headers": {...}, "json": payload}`` (the payload parsed) or ``{"headers": {...},
"base64": payload}`` (a payload that is not compact JSON).

Nothing is lost: a payload is kept as JSON only when writing it back gives its bytes
(compact, as AWS sends it), and a body whose messages would not encode back to its bytes
stays ``{"base64": ...}`` whole; read from a vcrpy cassette's ``!!binary`` body, the
stored form gives back the same bytes. A cassette file of this package sorts its keys, so
a payload read from one may list its keys in another order. On replay each message is one
chunk, its CRCs computed again (a redacted or reordered payload changes them), so botocore
reads the stream message by message, the same events.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import orjson

from pytest_agentctx.traffic.errors import CodecError

if TYPE_CHECKING:
    from pytest_agentctx.traffic.codecs.eventstream import EventMessage

# The framing is imported where a body of this kind is met: importing it imports the
# codecs package, which cassettes without event streams never need.


#: Compact JSON as AWS sends it (one encoder: ``json.dumps`` with options makes one a call).
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
#: A number that may be a float: orjson writes floats otherwise than :mod:`json` (``1.5e-7``
#: for ``1.5e-07``, ``0.00006103515625`` for ``6.103515625e-05``), so a payload with one
#: (or with text that looks like one) is written by :mod:`json`.
_MAYBE_FLOAT = re.compile(rb"\d[.eE]")


def _compact(value: object) -> bytes:
    """``value`` as compact JSON, exactly as :data:`_COMPACT` writes it: by orjson (a
    fifteenth of the time: a replayed stream frames every message's payload) when it has
    no float (see :data:`_MAYBE_FLOAT`) and no ``null`` (orjson's NaN and infinities),
    else by :mod:`json` (also for what orjson refuses: keys that are not strings,
    integers past 64 bits)."""
    try:
        fast = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _COMPACT.encode(value).encode()
    if b"null" not in fast and _MAYBE_FLOAT.search(fast) is None:
        return fast
    return _COMPACT.encode(value).encode()


def entry_of(message: EventMessage) -> dict[str, object]:
    """The stored entry of one message."""
    from pytest_agentctx.traffic.codecs.eventstream import headers_to_json

    entry: dict[str, object] = {"headers": headers_to_json(message.headers)}
    try:
        value = json.loads(message.payload)
    except (ValueError, UnicodeDecodeError):
        value = None
    else:
        if _compact(value) == message.payload:
            entry["json"] = value
            return entry
    entry["base64"] = base64.b64encode(message.payload).decode("ascii")
    return entry


def message_of(entry: object, index: int = 0) -> EventMessage:
    """The message of a stored entry; :class:`ValueError` naming the entry for a malformed
    one."""
    from pytest_agentctx.traffic.codecs.eventstream import EventMessage, headers_from_json

    where = f"the eventstream body's entry #{index}"
    if not isinstance(entry, Mapping) or not isinstance(entry.get("headers"), Mapping):
        raise ValueError(f"{where} is {entry!r:.80}; expected {{'headers': {{...}}, 'json': ...}}")
    payload_kinds = [kind for kind in ("json", "base64") if kind in entry]
    if len(payload_kinds) != 1 or set(entry) != {"headers", payload_kinds[0]}:
        raise ValueError(
            f"{where} has keys {sorted(entry)}; expected 'headers' and one of 'json', 'base64'"
        )
    try:
        headers = headers_from_json(entry["headers"])
    except CodecError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if "json" in entry:
        return EventMessage(headers, _compact(entry["json"]))
    value = entry["base64"]
    if not isinstance(value, str):
        raise ValueError(f"{where}: 'base64' is a {type(value).__name__}; expected a string")
    return EventMessage(headers, base64.b64decode(value))


def messages_of(entries: object) -> list[EventMessage]:
    """The messages of a stored ``eventstream`` list."""
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise ValueError(
            f"an eventstream body is {type(entries).__name__}; expected a list of messages"
        )
    return [message_of(entry, index) for index, entry in enumerate(entries)]


def encode_eventstream(raw: bytes) -> dict[str, object]:
    """The stored form of an event-stream body: its messages, or ``{"base64": ...}`` for
    bytes that are not a whole, well-formed stream (kept exactly as they came)."""
    from pytest_agentctx.traffic.codecs.eventstream import decode_messages, encode_message

    try:
        messages = decode_messages(raw)
    except CodecError:
        messages = []
    entries = [entry_of(message) for message in messages]
    if not messages or b"".join(map(encode_message, messages_of(entries))) != raw:
        return {"base64": base64.b64encode(raw).decode("ascii")}
    return {"eventstream": entries}


def eventstream_chunks(entries: object) -> list[bytes]:
    """The wire bytes of a stored ``eventstream`` list, one chunk per message.

    An entry of string headers and a JSON payload (every message Bedrock sends) is framed
    straight from its stored form, the bytes of each set of headers encoded once (a
    stream repeats a few: one per event type); any other goes through
    :func:`message_of`, which also says what is wrong with it."""
    from pytest_agentctx.traffic.codecs.eventstream import (
        encode_message,
        encode_string_header,
        frame,
    )

    if not isinstance(entries, Sequence) or isinstance(entries, str):
        return [encode_message(message) for message in messages_of(entries)]  # raises
    chunks: list[bytes] = []
    encoded: dict[tuple[object, ...], bytes | None] = {}
    entry: object
    for index, entry in enumerate(entries):
        if type(entry) is dict and len(entry) == 2 and "json" in entry:
            headers = entry.get("headers")
            if type(headers) is dict:
                key = tuple(headers.items())
                raw = encoded.get(key, b"")
                if raw == b"":
                    raw = encoded[key] = (
                        b"".join([encode_string_header(str(k), v) for k, v in key])
                        if all(type(value) is str for value in headers.values())
                        else None
                    )
                if raw is not None:
                    chunks.append(frame(raw, _compact(entry["json"])))
                    continue
        chunks.append(encode_message(message_of(entry, index)))
    return chunks


# -- the redactor's view ---------------------------------------------------------------


def _chunk_json(entry: Mapping[str, object]) -> object:
    """The JSON event an InvokeModelWithResponseStream ``chunk`` carries in base64, or
    ``None`` when the entry is no such chunk."""
    headers, payload = entry.get("headers"), entry.get("json")
    if not isinstance(headers, Mapping) or headers.get(":event-type") != "chunk":
        return None
    inner = payload.get("bytes") if isinstance(payload, Mapping) else None
    try:
        return (
            json.loads(base64.b64decode(inner, validate=True)) if isinstance(inner, str) else None
        )
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return None


def event_views(entries: Sequence[object]) -> list[object]:
    """The stored messages as server-sent events (``{"event": type, "data": payload}``),
    for the redactor to scrub as a stream: the deltas of a streamed text are joined
    across messages. A ``chunk``'s data is the event its ``bytes`` hold, decoded."""
    views: list[object] = []
    for entry in entries:
        if not isinstance(entry, Mapping) or "json" not in entry:
            views.append({})
            continue
        headers = entry.get("headers")
        name = headers.get(":event-type") if isinstance(headers, Mapping) else None
        inner = _chunk_json(entry)
        views.append({"event": name, "data": entry["json"] if inner is None else inner})
    return views


def from_views(
    entries: Sequence[object],
    views: Sequence[object],
    scrub: Callable[[object], object],
    scrub_base64: Callable[[str], str],
) -> list[object]:
    """The stored messages again, with the data of their scrubbed ``views`` (a changed
    chunk's event in base64 again), their headers scrubbed by ``scrub`` and binary
    payloads by ``scrub_base64``."""
    out: list[object] = []
    for entry, view in zip(entries, views, strict=True):
        if not isinstance(entry, Mapping) or not isinstance(view, Mapping):
            out.append(scrub(entry))
            continue
        headers = scrub(entry.get("headers"))
        if "json" not in entry:
            value = entry.get("base64")
            payload = scrub_base64(value) if isinstance(value, str) else scrub(value)
            out.append({"headers": headers, "base64": payload})
            continue
        data = view.get("data")
        inner = _chunk_json(entry)
        if inner is not None and data != inner:
            encoded = base64.b64encode(_compact(data)).decode("ascii")
            outer = scrub(entry["json"])
            data = {**outer, "bytes": encoded} if isinstance(outer, Mapping) else outer
        elif inner is not None:
            data = entry["json"]
        out.append({"headers": headers, "json": data})
    return out


def whole_messages(data: bytes, content_type: str | None) -> bytes:
    """An AWS event stream cut short, up to the end of its last whole message (by the
    lengths the messages announce; other bodies as they are)."""
    if "vnd.amazon.eventstream" not in (content_type or "").lower():
        return data
    end = 0
    while len(data) - end >= 12:
        total = int.from_bytes(data[end : end + 4], "big")
        if total < 16 or end + total > len(data):
            break
        end += total
    return data[:end]
