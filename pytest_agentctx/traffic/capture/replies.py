"""The model's reply in an exchange: decoded through its codec, or the error it reports.

A reply is a JSON body, a stream of server-sent events (stored parsed, or as text),
Ollama's NDJSON stream (stored as text; one line alone is stored as JSON, a whole reply) or
a stream of AWS event-stream messages (stored parsed, or as bytes);
a failed call (status 400 or above) gives its error's status and message instead. An
OpenAI Responses reply made in the background (``background: true``) is not done until
a retrieval finds it so (:func:`in_background`).

Gemini streams without ``alt=sse`` come as one JSON array of chunks (stored as
``{"json": [...]}`` or as text): read as the stream they are. Gemini's synthetic call ids
count the model turns before the call (:func:`~pytest_agentctx.traffic.codecs.gemini.
synthetic_call_id`): a reply's turn is the number of model turns in its request, and a
request decoded from its new items only (:func:`decode_items`) is told how many came
before them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypedDict

from pytest_agentctx.traffic.capture.exchange import Exchange
from pytest_agentctx.traffic.codecs import Completion
from pytest_agentctx.traffic.codecs.base import Codec, DecodedRequest
from pytest_agentctx.traffic.codecs.sse import SSEEvent
from pytest_agentctx.traffic.errors import CodecError

#: What reading a body of an unexpected shape raises: the codecs check the fields they need
#: (CodecError), but an item of the wrong type deeper down surfaces as Python's own errors.
UNREADABLE = (CodecError, AttributeError, TypeError, KeyError, ValueError)


class CallError(TypedDict):
    """A failed model call, as an iteration's ``metadata["errors"]`` keeps it: the status
    and the error's message (from its JSON body, else the start of its text)."""

    status: int
    message: object


def _events(stored: Sequence[Mapping[str, object]]) -> list[SSEEvent]:
    events = []
    for event in stored:
        if "data" not in event:
            continue
        data = event["data"]
        text = data if isinstance(data, str) else _dumps(data)
        name = event.get("event")
        events.append(SSEEvent(name if isinstance(name, str) else None, text))
    return events


def _dumps(value: object) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _turn_of(codec: Codec, items: object) -> dict[str, int]:
    """The keyword that tells a codec counting model turns (Gemini) how many ``items``
    hold; nothing for the other codecs."""
    count = getattr(codec, "model_turns", None)
    return {} if count is None else {"turn": count(items)}


def _reply_turn(codec: Codec, exchange: Exchange) -> dict[str, int]:
    """:func:`_turn_of` the request of ``exchange`` (its ``contents``, Gemini's turns), the
    request read only for a codec that counts turns."""
    if getattr(codec, "model_turns", None) is None:
        return {}
    request = exchange.request_json()
    return _turn_of(codec, request.get("contents") if isinstance(request, Mapping) else None)


def decode_items(
    codec: Codec, body: Mapping[str, object], before: Sequence[object]
) -> DecodedRequest:
    """``codec.decode_request(body)`` of a request ``body`` that holds only the items
    following ``before`` (the conversation so far)."""
    decode: Callable[..., DecodedRequest] = codec.decode_request
    turn = _turn_of(codec, before)
    return decode(body, first_turn=turn["turn"]) if turn else decode(body)


def decode_reply(codec: Codec, exchange: Exchange, stream: bool) -> Completion:
    """The model's reply in ``exchange`` (JSON or a stream), through the codec."""
    body = exchange.response
    is_stream_path = getattr(codec, "is_stream_path", None)
    stream = stream or (is_stream_path is not None and bool(is_stream_path(exchange.path)))
    turn = _reply_turn(codec, exchange)
    decode_stream = getattr(codec, "decode_stream")  # noqa: B009 (every codec has one)
    decode_response: Callable[..., Completion] = codec.decode_response
    if body is not None and ("eventstream" in body or ("base64" in body and stream)):
        # AWS's binary event stream: its stored messages, or its bytes as they came
        return _event_stream(codec, body)
    if body is not None and "sse" in body:
        completion: Completion = decode_stream(_events(body["sse"]), **turn)
        return completion
    if body is not None and "json" in body:
        data = body["json"]
        if isinstance(data, list) and stream:  # Gemini's JSON array stream
            completion = decode_stream(data, **turn)
            return completion
        if not isinstance(data, Mapping):
            raise CodecError(f"the response is a JSON {type(data).__name__}, not an object")
        completion = decode_response(data, **turn)
        return completion
    if body is not None and "text" in body and stream:
        completion = decode_stream(str(body["text"]), **turn)
        return completion
    data = exchange.response_json()
    if isinstance(data, Mapping):
        completion = decode_response(data, **turn)
        return completion
    raise CodecError(
        f"the response body ({sorted(body) if body else 'empty'}) is neither JSON nor a "
        "stream of events"
    )


def _event_stream(codec: Codec, body: Mapping[str, object]) -> Completion:
    from pytest_agentctx.traffic.cassettes.body import body_chunks
    from pytest_agentctx.traffic.cassettes.eventbody import messages_of

    decode_stream = getattr(codec, "decode_stream")  # noqa: B009 (every codec has one)
    if "eventstream" in body:
        completion: Completion = decode_stream(messages_of(body["eventstream"]))
    else:
        completion = decode_stream(b"".join(body_chunks(dict(body))))
    return completion


def error_of(exchange: Exchange) -> CallError:
    """The status and message of the failed model call ``exchange``."""
    data: object = exchange.response_json()
    if isinstance(data, list) and data and isinstance(data[0], Mapping):
        data = data[0]  # a Gemini stream without alt=sse reports its error in an array
    message: object = None
    if isinstance(data, Mapping):
        error = data.get("error")
        if isinstance(error, Mapping):
            message = error.get("message") or error.get("type")
        elif isinstance(error, str):
            message = error
        message = message or data.get("message")
    if message is None and exchange.response is not None and "text" in exchange.response:
        message = str(exchange.response["text"])[:200]
    return {"status": exchange.status, "message": message}


#: Statuses of an OpenAI Responses reply that is still being made (``background: true``).
_UNFINISHED = frozenset({"queued", "in_progress"})


def in_background(completion: Completion) -> bool:
    """Whether ``completion`` is a background response not done yet (no output so far)."""
    return (
        completion.stop_reason in _UNFINISHED
        and completion.content is None
        and not completion.tool_calls
    )
