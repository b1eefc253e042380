"""The cassette's :class:`Redactor`: headers, URLs and bodies scrubbed of every known secret,
so that no secret reaches a cassette.

Everything is redacted *before* it is written, and live requests get the same treatment
before they are matched, so a redacted cassette still matches.

A cassette's :class:`Redactor` is the package's redactor
(:class:`pytest_agentctx.redaction.redactor.Redactor`: text, headers, URLs, JSON values and
bytes) with the bodies a cassette stores:

* JSON bodies: every string, object keys included, at any depth;
* streams (server-sent events): every event as a JSON value, and the text each stream
  reassembles to, because a model streams a key it repeats in pieces ("sk-ca", "nary-12",
  ...): the deltas of each choice, tool call, content block, output item or candidate
  are joined, and each occurrence of a secret is cut out of every piece it spans
  (``REDACTED`` takes the place of the first piece's part, the following pieces lose
  theirs), so the stream still parses and reassembles to the text with ``REDACTED`` in
  place of the secret.
  Events of shapes not known here are joined by the path of each string in them; a
  secret that still shows in the concatenated data of the events is refused
  (:class:`~.body.UndecodableBody`), never written;
* AWS event streams (:mod:`.eventbody`) as streams of events, their binary payloads as
  bytes;
* text bodies as text (JSON lines, NDJSON, as a stream of their lines, so a secret
  streamed in pieces over several lines is cut out as in server-sent events), and binary
  bodies (images, audio) as bytes.

Re-recording an unchanged agent should change nothing: :meth:`Redactor.response_header_items`
drops the response headers that change on every call (:data:`VOLATILE_RESPONSE_HEADERS`,
rate-limit counters) and gives the request-id headers that the SDKs read a fixed value.

``REDACTED``, ``DEFAULT_SECRET_ENV`` and ``DEFAULT_SECRET_HEADERS``, defined with the
package's redactor, are names of :mod:`pytest_agentctx.traffic.cassettes` too, loaded from
this module.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pytest_agentctx.redaction import shapes
from pytest_agentctx.redaction.redactor import (
    DEFAULT_SECRET_ENV as DEFAULT_SECRET_ENV,
    DEFAULT_SECRET_HEADERS as DEFAULT_SECRET_HEADERS,
    MIN_SECRET,
    REDACTED as REDACTED,
    Redactor as BaseRedactor,
    json_text,
)
from pytest_agentctx.traffic.cassettes.body import Body, UndecodableBody
from pytest_agentctx.traffic.cassettes.eventbody import event_views, from_views
from pytest_agentctx.traffic.cassettes.multipart import redact_stored
from pytest_agentctx.traffic.errors import CassetteWriteError

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes.vcr_config import RequestFilters

#: Response headers that differ on every call of an unchanged agent: never stored. None of
#: them is read by the ``openai`` or ``anthropic`` SDK (they read ``retry-after``,
#: ``retry-after-ms``, ``x-should-retry``, ``openai-poll-after-ms``, ``link``,
#: ``anthropic-workspace-id`` and the request ids, all kept).
VOLATILE_RESPONSE_HEADERS = frozenset(
    {
        "age",
        "alt-svc",
        "apim-request-id",
        "cf-cache-status",
        "cf-ray",
        "date",
        "expires",
        "fly-request-id",
        "last-modified",
        "mistral-correlation-id",
        "nel",
        "openai-processing-ms",
        "report-to",
        "server-timing",
        "traceparent",
        "tracestate",
        "via",
        "x-amz-apigw-id",
        "x-amz-cf-id",
        "x-amz-cf-pop",
        "x-amz-id-2",
        "x-amz-request-id",
        "x-amzn-bedrock-invocation-latency",
        "x-amzn-requestid",
        "x-amzn-trace-id",
        "x-api-call-end",
        "x-api-call-start",
        "x-api-received",
        "x-cache",
        "x-client-request-id",
        "x-cloud-trace-context",
        "x-correlation-id",
        "x-envoy-upstream-service-time",
        "x-groq-id",
        "x-kong-proxy-latency",
        "x-kong-request-id",
        "x-kong-upstream-latency",
        "x-ms-client-request-id",
        "x-ms-region",
        "x-ms-request-id",
        "x-process-time",
        "x-request-time",
        "x-response-time",
        "x-served-by",
        "x-timer",
        "x-trace-id",
        "x-vercel-id",
    }
)

#: Request-id headers the SDKs read (``response._request_id``, ``APIStatusError.request_id``):
#: kept, with :data:`NORMALISED_REQUEST_ID` for a value, so replays still have one.
REQUEST_ID_HEADERS = frozenset({"x-request-id", "request-id"})
NORMALISED_REQUEST_ID = "req_recorded"

#: Request headers a cassette never stores: volatile (SDK versions, retry counters) or
#: wire-level; ``content-encoding`` too, as a request body is stored decoded, like a
#: response body.
UNSTORED_REQUEST_HEADERS = frozenset(
    {"content-length", "content-encoding", "accept-encoding", "connection", "host", "cookie"}
    | {"user-agent"}
)
#: Response headers a cassette never stores: wire-level (a body is stored decoded) and
#: cookies.
UNSTORED_RESPONSE_HEADERS = frozenset(
    {"content-encoding", "content-length", "transfer-encoding", "connection", "set-cookie"}
)


#: Rate-limit counters (``x-ratelimit-remaining-tokens``, ``anthropic-ratelimit-requests-reset``,
#: ``ratelimit``...): the limits themselves are stable and kept.
_VOLATILE_RATELIMIT = re.compile(r"^(?:x-|anthropic-)?ratelimit(?:$|-.*(?:remaining|reset))")


class Redactor(BaseRedactor):
    """Replaces secrets with ``REDACTED`` in headers, URLs and bodies (JSON, text, streams,
    binary): the package's redactor, with the bodies and response headers a cassette stores.

    The secret values are those of the environment variables in ``env`` (read again by
    :meth:`refresh`, so a key set after the cassette started is still scrubbed), the
    ``extra_values``, and the values :meth:`learn` saw in requests' secret headers,
    cookies and key-like query parameters: a server that echoes a key back in its
    response cannot put it into a cassette.
    """

    #: vcrpy's query and body parameter filters (``vcr_config``): name -> replacement, or
    #: ``None`` to remove the parameter (see :meth:`use_filters`).
    _query_filters: Mapping[str, str | None] = {}
    _post_filters: Mapping[str, str | None] = {}

    def use_filters(self, filters: RequestFilters) -> None:
        """Apply vcrpy's request filters as vcrpy does, to live requests (before they are
        matched and stored) and recordings alike, so a recording vcrpy filtered matches:
        ``filter_headers``' headers are secret headers (their values redacted, wherever they
        show); ``filter_query_parameters``' and ``filter_post_data_parameters``' parameters
        are removed (or replaced), and their values redacted wherever they show."""
        self.headers = self.headers | {name.lower() for name, _ in filters.headers}
        self._query_filters = dict(filters.query)
        self._post_filters = dict(filters.post)
        self._rebuild()

    def learn(
        self, headers: Iterable[tuple[str, str]], url: str = "", *, signature: object = None
    ) -> None:
        super().learn(headers, url, signature=signature)
        if self._query_filters and url:
            pairs = parse_qsl(urlsplit(url).query, keep_blank_values=True)
            self._learn_values(value for name, value in pairs if name in self._query_filters)

    def _clean(self, raw: bytes | None) -> bool:
        """The base redactor's look at the text a JSON value was read from, made first with
        one regular expression for all it looks for in turn (see :func:`_candidate_pattern`)."""
        candidates = _candidate_pattern(self._raw_needles)
        if raw is not None and self._plain and candidates.search(raw) is None:
            return True
        return super()._clean(raw)

    def _learn_values(self, values: Iterable[object]) -> None:
        found = {
            value
            for value in values
            if isinstance(value, str) and len(value) >= MIN_SECRET and value != REDACTED
        }
        if not found <= self._learned:
            self._learned |= found
            self._rebuild()

    def _url(self, url: str) -> str:
        if self._query_filters:
            parts = urlsplit(url)
            if parts.query:
                pairs = parse_qsl(parts.query, keep_blank_values=True)
                pairs = _filtered(pairs, self._query_filters)
                url = urlunsplit(parts._replace(query=urlencode(pairs)))
        return super()._url(url)

    def filter_post(self, method: str, body_json: object, raw: bytes) -> tuple[object, bytes]:
        """A request's JSON body (or raw form body) with ``filter_post_data_parameters``'
        parameters removed or replaced (their values learned as secrets), as vcrpy filters
        a POST: the top-level keys of a JSON object, the fields of a form."""
        if not self._post_filters or method.upper() != "POST":
            return body_json, raw
        if isinstance(body_json, Mapping):
            self._learn_values(body_json.get(name) for name in self._post_filters)
            kept = {
                key: self._post_filters.get(key, value)
                for key, value in body_json.items()
                if not (key in self._post_filters and self._post_filters[key] is None)
            }
            return kept, raw
        if isinstance(body_json, list | int | float | str | bool) or b"=" not in raw:
            return body_json, raw
        try:
            pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
        except (UnicodeDecodeError, ValueError):  # not a form
            return body_json, raw
        self._learn_values(value for name, value in pairs if name in self._post_filters)
        return body_json, urlencode(_filtered(pairs, self._post_filters)).encode()

    def response_header_items(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """A response's header pairs as a cassette stores them: :meth:`header_items` of
        those that stay the same when an unchanged agent is recorded again (volatile
        headers and rate-limit counters dropped, request ids normalised)."""
        kept = []
        for name, value in items:
            lowered = name.lower()
            if lowered in VOLATILE_RESPONSE_HEADERS or _VOLATILE_RATELIMIT.match(lowered):
                continue
            kept.append((name, NORMALISED_REQUEST_ID if lowered in REQUEST_ID_HEADERS else value))
        return self.header_items(kept)

    # -- bodies ----------------------------------------------------------------------

    def body(self, body: Body, *, raw: bytes | None = None, texts: list[str] | None = None) -> Body:
        """A stored body with secret values scrubbed (see the module docstring for where
        they are looked for); raises :class:`~.body.UndecodableBody` for a stream in which
        a secret shows across events in a way it cannot cut.

        ``raw``, the decoded bytes the body was stored from when they are at hand, spares
        the look at every part of a body that holds no secret whole (see :meth:`json`).
        ``texts``, when given, gets the texts a stream reassembles to (for
        :meth:`body_again`).
        """
        if body is None or not (self._values or _shaped(body, raw)):
            return body
        if "json" in body:
            if raw is None and not self._values:  # a shape shows: look at every string
                return {"json": self._json(body["json"])}
            return {"json": self.json(body["json"], raw=raw)}
        if "sse" in body:
            return {"sse": self._stream(body["sse"], whole=not self._clean(raw), texts=texts)}
        if "text" in body:
            return {"text": self._lines(body["text"])}
        if "base64" in body:
            return {"base64": self._base64(body["base64"])}
        if "multipart" in body:
            return {"multipart": redact_stored(body["multipart"], self.text, self.binary)}
        if "eventstream" in body:
            return {"eventstream": self._eventstream(body["eventstream"], texts)}
        return body

    def body_again(self, body: Body, *, raw: bytes | None, texts: list[str] | None) -> Body:
        """``body``, scrubbed by :meth:`body` from ``raw`` before a secret was learned,
        scrubbed again: a stream whose bytes and reassembled ``texts`` (as :meth:`body`
        gave them) hold no secret is kept as it is, without being taken apart again."""
        if (
            body is not None
            and "sse" in body
            and texts is not None
            and not self._straddles
            and self._clean(raw)
            and not any(map(self._found_in, texts))
        ):
            return body
        return self.body(body, raw=raw)

    def _stream(
        self, events: list[object], *, whole: bool = True, texts: list[str] | None = None
    ) -> list[object]:
        """Stored server-sent events scrubbed one by one (unless ``whole`` is false: none
        holds a secret whole) and as the texts they reassemble (added to ``texts``)."""
        scrubbed = events
        if whole:
            scrubbed = [self._json(e) if self._event_holds(e) else e for e in events]
        groups = _stream_pieces(scrubbed)
        reassembled = ["".join(_text(slot) for slot in slots) for slots in groups]
        if texts is not None:
            texts.extend(reassembled)
        if any(map(self._found_in, reassembled)):
            scrubbed = copy.deepcopy(scrubbed)  # the pieces are cut in place
            for slots in _stream_pieces(scrubbed):
                self._cut(slots)
        # A secret with brackets in it could straddle two events' data on the wire.
        joined = "".join(map(_event_data, scrubbed)) if self._straddles else ""
        if self._found_in(joined):
            raise UndecodableBody(
                "text/event-stream",
                "a secret shows in the concatenated data of its events, split in a way the "
                "redactor cannot cut (events of a shape it does not know)",
                "record this call without streaming, or keep the secret out of the model's "
                "input and output",
                header="content-type",
            )
        return scrubbed

    def _eventstream(self, entries: list[object], texts: list[str] | None) -> list[object]:
        """Stored event-stream messages (:mod:`.eventbody`) scrubbed as a stream of events
        (the events a ``chunk`` carries in base64 decoded), their headers as JSON and
        binary payloads as bytes."""
        views = event_views(entries)
        scrubbed = self._stream(views, whole=True, texts=texts)
        return from_views(entries, scrubbed, self._json, self._base64)

    def _lines(self, text: str) -> str:
        """A text body scrubbed; one of JSON lines (NDJSON, a stream of JSON chunks) as the
        stream of its lines, so a secret streamed in pieces over several lines is cut out
        (the lines that change are written again, compact)."""
        if "\n" not in text.strip() or not text.lstrip().startswith(("{", "[")):
            return self.text(text)
        lines = text.split("\n")
        try:
            values = [json.loads(line) if line.strip() else None for line in lines]
        except ValueError:  # not JSON lines: plain text
            return self.text(text)
        events: list[object] = [{"data": value} for value in values]
        scrubbed = self._stream(events)
        return self.text(
            "\n".join(
                json_text(_data(after)) if _data(after) != _data(before) else line
                for line, before, after in zip(lines, events, scrubbed, strict=True)
            )
        )

    def _event_holds(self, event: object) -> bool:
        """Whether a secret shows whole in one stored event."""
        return self._probed(json_text(event))

    def _cut(self, slots: list[_Slot]) -> None:
        """Cut every occurrence of a secret out of the text the ``slots`` join to."""
        pieces = [_text(slot) for slot in slots]
        for _ in range(len("".join(pieces))):  # each round shortens the text or ends
            spans = self._spans("".join(pieces))
            if not spans:
                break
            pieces = _cut_pieces(pieces, spans)
        for (container, key), piece in zip(slots, pieces, strict=True):
            if isinstance(container, list):
                if isinstance(key, int):
                    container[key] = piece
            elif isinstance(container, MutableMapping):
                container[key] = piece

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """The merged ``[start, end)`` spans of every occurrence of a secret in ``text``."""
        found: list[tuple[int, int]] = []
        for secret in self._needles:
            start = text.find(secret)
            while start != -1:
                found.append((start, start + len(secret)))
                start = text.find(secret, start + 1)
        merged: list[tuple[int, int]] = []
        for start, end in sorted(found):
            if merged and start < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged


@functools.lru_cache(maxsize=64)  # the secrets seldom change
def _candidate_pattern(needles: tuple[bytes, ...]) -> re.Pattern[bytes]:
    """What shows in a JSON text whose value may hold a secret: the longest plain run of a
    secret (``needles``), an escaped printable ASCII character (``\\u0073``, ``\\/``,
    ``%73``), a marker of a secret of a known shape."""
    markers = [re.escape(marker.encode()) for marker in shapes.MARKERS]
    escapes = [rb"\\/", rb"\\u00[2-7]", rb"%[2-7][0-9A-Fa-f]"]
    return re.compile(b"|".join([*map(re.escape, needles), *escapes, *markers]))


def _shaped(body: Mapping[str, object], raw: bytes | None) -> bool:
    """Whether a stored body may hold a secret of a known shape (see
    :mod:`pytest_agentctx.redaction.shapes`): a look at ``raw`` when at hand."""
    if raw is not None:
        return shapes.marked_bytes(raw)
    if "base64" in body:
        return True  # looked at in its bytes
    return shapes.marked(json_text(body))


def _filtered(
    pairs: Iterable[tuple[str, str]], filters: Mapping[str, str | None]
) -> list[tuple[str, str]]:
    """``pairs`` with the names in ``filters`` removed (``None``) or their value replaced."""
    kept = []
    for name, value in pairs:
        if name in filters:
            replacement = filters[name]
            if replacement is None:
                continue
            value = replacement
        kept.append((name, value))
    return kept


def unscrubbable(
    problem: UndecodableBody, *, cassette: object, request: str, command: str, sent: bool = False
) -> CassetteWriteError:
    """The error of a recording whose response body (or, ``sent``, the request's own body)
    cannot be scrubbed of secrets (bytes it cannot decode, a stream it cannot cut): that
    interaction is never written (nor, for a request, matched)."""
    what = (
        f"the request {request} was neither sent, matched nor recorded"
        if sent
        else f"the response to {request} was not recorded"
    )
    return CassetteWriteError(
        f"Cassette {cassette}: {what}, because its body cannot be scrubbed of secrets: "
        f"{problem.header} {problem.encoding!r}: {problem.problem}. Fix: {problem.fix}; then "
        f"record again: {command}"
    )


# -- streams ---------------------------------------------------------------------------

#: Where a piece of a streamed text is: the mapping (or list) that holds it, and its key
#: (or index) there.
_Slot = tuple[Mapping[object, object] | list[object], object]
_Groups = dict[tuple[object, ...], list[_Slot]]

#: Event types whose data carries no piece of a streamed text (whole values only).
_WHOLE_EVENTS = frozenset(
    {"message_start", "message_delta", "message_stop", "content_block_stop", "ping", "error"}
)


def _text(slot: _Slot) -> str:
    container, key = slot
    if isinstance(container, list):
        value = container[key] if isinstance(key, int) else None
    else:
        value = container[key]
    return value if isinstance(value, str) else ""


def _data(event: object) -> object:
    """The ``data`` of a stored event (``None`` when it has none)."""
    return event.get("data") if isinstance(event, Mapping) else None


def _event_data(event: object) -> str:
    data = event.get("data") if isinstance(event, Mapping) else None
    if data is None:
        return ""
    return data if isinstance(data, str) else json_text(data)


def _stream_pieces(events: list[object]) -> list[list[_Slot]]:
    """The strings of ``events`` that are pieces of one streamed text, one list per text
    (a choice's content, a tool call's arguments, a content block's text...), in order."""
    groups: _Groups = {}
    for event in events:
        if not isinstance(event, Mapping):
            continue
        data = event.get("data")
        if isinstance(data, str):
            groups.setdefault(("data",), []).append((event, "data"))
        elif isinstance(data, Mapping):
            if not _known_pieces(data, groups):
                _leaf_pieces(data, ("leaf", event.get("event")), groups)
        elif isinstance(data, list):
            _leaf_pieces(data, ("leaf", event.get("event")), groups)
    return list(groups.values())


def _known_pieces(data: Mapping[object, object], groups: _Groups) -> bool:
    """Add the pieces of an event of a known wire format; whether it was one."""
    choices, candidates = data.get("choices"), data.get("candidates")
    if isinstance(choices, list):  # OpenAI chat completions (and look-alikes)
        _chat_pieces(choices, groups)
        return True
    if isinstance(candidates, list):  # Gemini
        _gemini_pieces(candidates, groups)
        return True
    kind = data.get("type")
    if not isinstance(kind, str):
        return False
    if kind.startswith("response."):  # OpenAI Responses: every "*.delta" is a piece
        if kind.endswith(".delta") and isinstance(data.get("delta"), str):
            where = tuple(data.get(k) for k in ("output_index", "content_index", "summary_index"))
            groups.setdefault(("responses", kind, *where), []).append((data, "delta"))
        return True
    if kind in ("content_block_start", "content_block_delta"):  # Anthropic Messages
        _anthropic_pieces(data, groups)
        return True
    return kind in _WHOLE_EVENTS


def _chat_pieces(choices: list[object], groups: _Groups) -> None:
    for position, choice in enumerate(choices):
        if not isinstance(choice, Mapping):
            continue
        index = choice.get("index", position)
        if isinstance(choice.get("text"), str):  # legacy completions
            groups.setdefault(("chat", index, "text"), []).append((choice, "text"))
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            continue
        for name, value in delta.items():
            if isinstance(value, str):
                groups.setdefault(("chat", index, name), []).append((delta, name))
        calls = delta.get("tool_calls")
        for number, call in enumerate(calls if isinstance(calls, list) else ()):
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                where = ("chat", index, "tool", call.get("index", number))
                _string_fields(function, where, groups)
        if isinstance(delta.get("function_call"), Mapping):
            _string_fields(delta["function_call"], ("chat", index, "function_call"), groups)


def _gemini_pieces(candidates: list[object], groups: _Groups) -> None:
    for position, candidate in enumerate(candidates):
        if not isinstance(candidate, Mapping):
            continue
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        if not isinstance(parts, list):
            continue
        index = candidate.get("index", position)
        for part in parts:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                kind = "thought" if part.get("thought") else "text"
                groups.setdefault(("gemini", index, kind), []).append((part, "text"))


def _anthropic_pieces(data: Mapping[object, object], groups: _Groups) -> None:
    # A block may start with some text, joined before its deltas (as the SDK does).
    name = "content_block" if data["type"] == "content_block_start" else "delta"
    holder = data.get(name)
    if isinstance(holder, Mapping):
        where = ("anthropic", data.get("index"))
        _string_fields(holder, where, groups, skip=("type", "id", "name"))


def _string_fields(
    holder: Mapping[object, object],
    where: tuple[object, ...],
    groups: _Groups,
    skip: tuple[str, ...] = (),
) -> None:
    for name, value in holder.items():
        if isinstance(value, str) and name not in skip:
            groups.setdefault((*where, name), []).append((holder, name))


def _leaf_pieces(
    value: Mapping[object, object] | list[object], path: tuple[object, ...], groups: _Groups
) -> None:
    """Every string in ``value``, grouped by its path: the pieces of an unknown stream."""
    items: Iterable[tuple[object, object]] = (
        value.items() if isinstance(value, Mapping) else enumerate(value)
    )
    for key, item in items:
        if isinstance(item, str):
            groups.setdefault((*path, key), []).append((value, key))
        elif isinstance(item, Mapping | list):
            _leaf_pieces(item, (*path, key), groups)


def _cut_pieces(pieces: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """``pieces`` with the characters of each span of their joined text removed, and
    ``REDACTED`` where each span starts: they join to the text with every span replaced."""
    out: list[str] = []
    start = 0
    for piece in pieces:
        end = start + len(piece)
        kept: list[str] = []
        position = start
        for span_start, span_end in spans:
            if span_end <= start or span_start >= end:
                continue
            if span_start > position:
                kept.append(piece[position - start : span_start - start])
            if span_start >= start:
                kept.append(REDACTED)
            position = max(position, min(span_end, end))
        kept.append(piece[position - start :])
        out.append("".join(kept))
        start = end
    return out
