"""Server-sent events (``text/event-stream``), the framing of every provider's streams.

A stream is a sequence of events, each an optional ``event:`` name and ``data:`` lines,
ended by a blank line. OpenAI chat completions sends data-only events and ends with
``data: [DONE]``; Anthropic Messages names every event (``event: message_start``...).

:func:`format_sse` writes events as the providers do, :func:`parse_sse` reads them back
(from a recorded body or a live one), and :func:`split_text` cuts text into the token-like
pieces that the streaming encoders send as deltas.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentctx.traffic.errors import CodecError

#: The data of the event that ends an OpenAI stream.
DONE = "[DONE]"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# A token-like piece: a word or a run of punctuation with the whitespace before it, or
# trailing whitespace. Every character of a text falls in exactly one piece.
_PIECE = re.compile(r"\s*\w+|\s*[^\w\s]+|\s+")


@dataclass(frozen=True)
class SSEEvent:
    """One server-sent event: its ``event:`` name (``None`` for data-only) and its data."""

    event: str | None
    data: str

    def json(self) -> Any:
        """The data parsed as JSON."""
        return json.loads(self.data)


def format_sse(events: Iterable[SSEEvent]) -> bytes:
    """The wire bytes of ``events``: ``event:`` and ``data:`` lines, a blank line after each.

    >>> format_sse([SSEEvent(None, '{"a":1}'), SSEEvent(None, "[DONE]")])
    b'data: {"a":1}\\n\\ndata: [DONE]\\n\\n'
    """
    parts: list[str] = []
    for item in events:
        if item.event is not None:
            if _LINE_BREAK.search(item.event):
                raise CodecError(
                    f"format_sse: the event name {item.event!r} holds a line break, which "
                    "would end the field early; give a name on one line."
                )
            parts.append(f"event: {item.event}\n")
        parts.extend(f"data: {line}\n" for line in _LINE_BREAK.split(item.data))
        parts.append("\n")
    return "".join(parts).encode()


def parse_sse(body: bytes | str) -> list[SSEEvent]:
    """The events of a ``text/event-stream`` body, as the SDKs read them.

    Follows the SSE specification: lines end with CRLF, LF or CR; ``:`` starts a comment;
    one space after the colon is dropped; several ``data:`` lines join with newlines; ``id``
    and ``retry`` are ignored. An event is dispatched at a blank line when it has a name or
    data (as the SDKs do); a last event without its blank line is kept rather than dropped,
    so a recording cut short still reads.
    """
    if isinstance(body, bytes):
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(
                f"parse_sse: the body is not UTF-8 ({exc}); an event stream is UTF-8 text. "
                "Was it compressed? Decode its content-encoding (gzip) first."
            ) from None
    else:
        text = body
    text = text.removeprefix("\ufeff")
    events: list[SSEEvent] = []
    name: str | None = None
    data: list[str] = []
    for line in _LINE_BREAK.split(text):
        if not line:
            if name is not None or data:
                events.append(SSEEvent(name, "\n".join(data)))
            name, data = None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if name is not None or data:
        events.append(SSEEvent(name, "\n".join(data)))
    return events


def split_text(text: str) -> list[str]:
    """Cut ``text`` into token-like pieces that join back to it exactly.

    >>> split_text('Sunny, 21 °C.')
    ['Sunny', ',', ' 21', ' °', 'C', '.']
    >>> split_text('{"city":"Paris"}')
    ['{"', 'city', '":"', 'Paris', '"}']
    """
    return _PIECE.findall(text)


def event_chunk(data: str, where: str, stream: str) -> Mapping[str, object]:
    """The JSON object a streamed event carries (chat completions, Gemini).

    Raises :class:`CodecError` naming ``where`` when the data is not JSON (asking whether
    this is a ``stream``), not an object, or an error the stream reports.
    """
    try:
        chunk: object = json.loads(data)
    except json.JSONDecodeError as exc:
        raise CodecError(
            f"{where}: the data is not JSON ({exc}): {data[:80]!r}. Is this a {stream}?"
        ) from None
    if not isinstance(chunk, Mapping):
        raise CodecError(f"{where}: expected a JSON object, got {type(chunk).__name__}.")
    if chunk.get("error"):
        raise CodecError(f"{where}: the stream reports an error: {chunk['error']!r}.")
    return chunk
