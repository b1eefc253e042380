"""Gemini streams, encoded from a :class:`Completion` and decoded back into one.

``:streamGenerateContent?alt=sse`` sends data-only server-sent events, each a whole
``GenerateContentResponse`` with the next parts. Without ``alt=sse`` the same chunks come
as one JSON array, written out as they are made (``[{...}`` then ``,\r\n{...}`` for each
next chunk, then ``]``; :func:`is_array_stream` tells which a URL asks for,
:func:`array_chunks` writes the array, :func:`decode_stream` reads both).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import parse_qsl, urlsplit

from pytest_agentctx.traffic.codecs.base import Completion, concat_text, first
from pytest_agentctx.traffic.codecs.gemini.parts import get, turn_parts
from pytest_agentctx.traffic.codecs.gemini.request import is_stream_path
from pytest_agentctx.traffic.codecs.gemini.response import (
    decode_response,
    reply_parts,
    response_body,
)
from pytest_agentctx.traffic.codecs.sse import SSEEvent, event_chunk, parse_sse, split_text
from pytest_agentctx.traffic.errors import CodecError

#: What a stream can be given as: its events, its chunks (a JSON array's items), or the
#: raw body (server-sent events or a JSON array).
StreamInput = Iterable[SSEEvent | Mapping[str, object]] | bytes | str


def is_array_stream(url: str) -> bool:
    """Whether ``url`` (or a path with its query) asks for a stream as one JSON array:
    ``:streamGenerateContent`` without ``alt=sse``."""
    parts = urlsplit(url)
    if not is_stream_path(parts.path):
        return False
    return not any(k == "alt" and v == "sse" for k, v in parse_qsl(parts.query))


def array_chunks(events: Sequence[SSEEvent]) -> list[bytes]:
    """The stream ``events`` (:func:`encode_stream`'s) as the JSON array the API sends
    without ``alt=sse``, one piece per chunk, laid out as the API lays it out."""
    pieces = []
    for number, item in enumerate(events):
        chunk = json.dumps(json.loads(item.data), ensure_ascii=False, indent=2)
        pieces.append(("[" if number == 0 else "\n,\r\n") + chunk)
    if not pieces:
        return [b"[]"]
    pieces[-1] += "\n]"
    return [piece.encode() for piece in pieces]


def _array_items(text: str, where: str) -> list[object]:
    """The items of a JSON array stream, read one by one: a stream cut short keeps the
    items that arrived whole."""
    decoder = json.JSONDecoder()
    items: list[object] = []
    at = text.index("[") + 1
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text) or text[at] == "]":
            return items
        try:
            item, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            end = text.rstrip()
            if not end.endswith("]") or exc.pos >= len(end) - 1:
                return items  # cut short inside the last chunk: the array never closed
            raise CodecError(
                f"{where}: item #{len(items)} of the JSON array is not JSON ({exc}). Is this "
                "a Gemini stream (streamGenerateContent without alt=sse)?"
            ) from None
        items.append(item)


def _stream_items(events: StreamInput) -> Iterable[SSEEvent | Mapping[str, object] | object]:
    """What :func:`decode_stream` reads, one event or chunk at a time."""
    if isinstance(events, bytes):
        try:
            events = events.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(f"gemini.decode_stream: the body is not UTF-8 ({exc}).") from None
    if isinstance(events, str):
        if events.lstrip().startswith("["):
            return _array_items(events, "gemini.decode_stream")
        return parse_sse(events)
    return events


def _chunk_of(item: object, where: str) -> Mapping[str, object] | None:
    """The chunk an event or an array item holds (``None`` for an event without data)."""
    if isinstance(item, SSEEvent):
        if not item.data:
            return None
        return event_chunk(item.data, where, "Gemini stream (alt=sse)")
    if not isinstance(item, Mapping):
        raise CodecError(
            f"{where}: expected a JSON object (a GenerateContentResponse), got "
            f"{type(item).__name__}."
        )
    if item.get("error"):
        raise CodecError(f"{where}: the stream reports an error: {item['error']!r}.")
    return item


def _event(data: Mapping[str, object]) -> SSEEvent:
    return SSEEvent(None, json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def encode_stream(completion: Completion, *, response_id: str, created: int = 0) -> list[SSEEvent]:
    """The events Gemini streams for ``completion`` (``alt=sse``): data-only events, each
    a whole ``GenerateContentResponse`` holding the next parts.

    In order: thought parts, the text in token-like pieces, then one chunk with every
    function call (Gemini sends a call whole). The last chunk carries ``finishReason`` and
    the full usage; the ones before it the prompt's token count only. There is no end
    marker.
    """
    parts = reply_parts(completion)
    chunks: list[list[dict[str, object]]] = []
    calls = [part for part in parts if "functionCall" in part]
    for part in parts:
        if "functionCall" in part:
            continue
        if part.get("thought"):
            chunks.append([part])
            continue
        whole = part["text"]
        if not isinstance(whole, str):  # a text part of a reply holds its text
            raise TypeError(f"expected string or bytes-like object, got {type(whole).__name__!r}")
        pieces = split_text(whole) or [""]
        signature = part.get("thoughtSignature")
        for number, piece in enumerate(pieces):
            text: dict[str, object] = {"text": piece}
            if signature and number == len(pieces) - 1:
                text["thoughtSignature"] = signature
            chunks.append([text])
    if calls:
        chunks.append(calls)
    if not chunks:
        chunks.append([])
    return [
        _event(response_body(chunk, completion, response_id, final=number == len(chunks) - 1))
        for number, chunk in enumerate(chunks)
    ]


def _merge(parts: list[dict[str, object]], new: Iterable[Mapping[str, object]]) -> None:
    """Join streamed parts as the SDK's ``response.text`` does: consecutive text parts of
    the same kind (thought or not) into one; any other part as it comes."""
    for part in new:
        last = parts[-1] if parts else None
        if (
            last is not None
            and "text" in part
            and "text" in last
            and bool(part.get("thought")) == bool(last.get("thought"))
            and not get(last, "thoughtSignature")
        ):
            last["text"] = concat_text(last["text"], str(part["text"]))
            signature = get(part, "thoughtSignature")
            if signature:
                last["thoughtSignature"] = signature
        else:
            parts.append(dict(part))


def decode_stream(events: StreamInput, *, turn: int = 0) -> Completion:
    """A streamed response as a :class:`Completion`, however it arrives: its server-sent
    events, the chunks of its JSON array (parsed), or the raw body of either kind.

    Each event or chunk is a whole response with the next parts: their texts are joined,
    function calls taken as they come; the finish reason, usage, model and response id are
    the last ones sent. A chunk with an ``error`` raises :class:`CodecError`. ``turn``: as
    for :func:`~.response.decode_response`.
    """
    parts: list[dict[str, object]] = []
    merged: dict[str, object] = {}
    stop_reason: object = None
    for position, item in enumerate(_stream_items(events)):
        where = f"gemini.decode_stream event #{position}"
        chunk = _chunk_of(item, where)
        if chunk is None:
            continue
        for key in ("usageMetadata", "modelVersion", "responseId", "promptFeedback"):
            value = get(chunk, key)
            if value:
                merged[key] = value
        candidates = chunk.get("candidates") or []
        candidate = first(candidates) if candidates else None
        if not isinstance(candidate, Mapping):
            continue
        stop_reason = get(candidate, "finishReason") or stop_reason
        _merge(parts, turn_parts(candidate.get("content") or {}, where))
    if parts or stop_reason or "promptFeedback" not in merged:
        candidate_out: dict[str, object] = {"content": {"parts": parts, "role": "model"}}
        if stop_reason:
            candidate_out["finishReason"] = stop_reason
        merged["candidates"] = [candidate_out]
    return decode_response(merged, turn=turn)
