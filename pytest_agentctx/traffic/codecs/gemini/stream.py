"""Gemini streams (``:streamGenerateContent?alt=sse``): data-only server-sent events,
each a whole ``GenerateContentResponse`` with the next parts, encoded from a
:class:`Completion` and decoded back into one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from pytest_agentctx.traffic.codecs.base import Completion, concat_text, first
from pytest_agentctx.traffic.codecs.gemini.parts import get, turn_parts
from pytest_agentctx.traffic.codecs.gemini.response import (
    decode_response,
    reply_parts,
    response_body,
)
from pytest_agentctx.traffic.codecs.sse import SSEEvent, event_chunk, parse_sse, split_text


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


def decode_stream(events: Iterable[SSEEvent] | bytes | str) -> Completion:
    """A streamed response (its events, or the raw body) as a :class:`Completion`.

    Each event is a whole response with the next parts: their texts are joined, function
    calls taken as they come; the finish reason, usage, model and response id are the last
    ones sent. An event with an ``error`` raises :class:`CodecError`.
    """
    if isinstance(events, (bytes, str)):
        events = parse_sse(events)
    parts: list[dict[str, object]] = []
    merged: dict[str, object] = {}
    stop_reason: object = None
    for position, item in enumerate(events):
        if not item.data:
            continue
        where = f"gemini.decode_stream event #{position}"
        chunk = event_chunk(item.data, where, "Gemini stream (alt=sse)")
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
    return decode_response(merged)
