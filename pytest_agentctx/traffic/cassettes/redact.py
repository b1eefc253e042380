"""Secrets never reach a cassette: headers, URLs and bodies scrubbed of every known secret.

Everything is redacted *before* it is written, and live requests get the same treatment
before they are matched, so a redacted cassette still matches.

Where a secret is looked for:

* header values (secret headers whole, other values for the known secret values) and
  header names; URLs: credentials, key-like query parameters, and the known values
  anywhere (path included), as they are or percent-encoded;
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
* binary bodies (images, audio): the secret's bytes, and its base64 forms, overwritten in
  place by as many bytes of ``REDACTED`` (lengths and offsets of the format stay valid).

Re-recording an unchanged agent should change nothing: :meth:`Redactor.response_header_items`
drops the response headers that change on every call (:data:`VOLATILE_RESPONSE_HEADERS`,
rate-limit counters) and gives the request-id headers that the SDKs read a fixed value.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

from pytest_agentctx.exceptions import CassetteError
from pytest_agentctx.traffic.cassettes.body import Body, UndecodableBody

__all__ = [
    "DEFAULT_SECRET_ENV",
    "DEFAULT_SECRET_HEADERS",
    "NORMALISED_REQUEST_ID",
    "REDACTED",
    "REQUEST_ID_HEADERS",
    "VOLATILE_RESPONSE_HEADERS",
    "Redactor",
    "unscrubbable",
]

REDACTED = "REDACTED"

#: Header names whose values are always replaced (compared case-insensitively).
DEFAULT_SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "cookie",
        "set-cookie",
        "x-goog-api-key",
    }
)

#: Environment variables whose values are scrubbed wherever they appear.
DEFAULT_SECRET_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "TOGETHER_API_KEY",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
)

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

_KEYLIKE_PARAM = re.compile(
    r"(^|[_-])(key|api[_-]?key|apikey|token|access[_-]?token|secret|sig|signature|password)$",
    re.IGNORECASE,
)
#: Rate-limit counters (``x-ratelimit-remaining-tokens``, ``anthropic-ratelimit-requests-reset``,
#: ``ratelimit``...): the limits themselves are stable and kept.
_VOLATILE_RATELIMIT = re.compile(r"^(?:x-|anthropic-)?ratelimit(?:$|-.*(?:remaining|reset))")

#: Values shorter than this are never treated as secrets (they would redact plain words).
_MIN_SECRET = 8
#: Characters no JSON encoder escapes: a secret made of them shows in JSON text as it is.
_PLAIN = re.compile(r"[A-Za-z0-9._~-]+")

#: The compact JSON text of a value, as :meth:`Redactor.json` probes it.
_dumps = functools.partial(json.dumps, ensure_ascii=False, separators=(",", ":"))


@functools.lru_cache(maxsize=1024)  # the values learned grow one by one: each computed once
def _forms(value: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """How ``value`` may show in text (as it is, percent-encoded) and in JSON text."""
    needles = tuple(dict.fromkeys((value, quote(value, safe=""), quote_plus(value))))
    return needles, tuple(dict.fromkeys(_dumps(needle)[1:-1] for needle in needles))


@functools.lru_cache(maxsize=256)  # a test's URLs repeat: parse each once
def _url_parts(url: str) -> tuple[SplitResult, tuple[tuple[str, str], ...]]:
    """``url`` split, with user:password replaced, and its query's pairs."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        parts = parts._replace(netloc=f"{REDACTED}@{host}")
    pairs = tuple(parse_qsl(parts.query, keep_blank_values=True)) if parts.query else ()
    return parts, pairs


@dataclass
class Redactor:
    """Replaces secrets with ``REDACTED`` in headers, URLs and bodies (JSON, text, streams,
    binary).

    The secret values are those of the environment variables in ``env`` (read again by
    :meth:`refresh`, so a key set after the cassette started is still scrubbed), the
    ``extra_values``, and the values :meth:`learn` saw in requests' secret headers,
    cookies and key-like query parameters: a server that echoes a key back in its
    response cannot put it into a cassette.
    """

    headers: frozenset[str] = DEFAULT_SECRET_HEADERS
    env: Iterable[str] = DEFAULT_SECRET_ENV
    extra_values: Iterable[str] = ()
    _values: tuple[str, ...] = field(init=False, default=())
    #: The values and their percent-encoded forms, as they may appear in text.
    _needles: tuple[str, ...] = field(init=False, default=())
    #: The needles as they appear in JSON text (escaped), for :meth:`json`'s probe.
    _probes: tuple[str, ...] = field(init=False, default=())
    #: The needles as UTF-8, for a look at the raw text a body was read from.
    _raw_needles: tuple[bytes, ...] = field(init=False, default=())
    #: Whether every needle is plain (see :meth:`_clean`).
    _plain: bool = field(init=False, default=True)
    #: Whether a needle holds a bracket, and so could straddle two events of a stream.
    _straddles: bool = field(init=False, default=False)
    _learned: set[str] = field(init=False, default_factory=set)
    _env_values: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        self.headers = frozenset(h.lower() for h in self.headers)
        self.env = tuple(self.env)
        self.extra_values = tuple(self.extra_values)
        self._env_values = tuple(os.environ.get(name, "") for name in self.env)
        self._rebuild()

    def refresh(self) -> None:
        """Read the secret environment variables again."""
        env_values = tuple(os.environ.get(name, "") for name in self.env)
        if env_values != self._env_values:
            self._env_values = env_values
            self._rebuild()

    def learn(self, headers: Iterable[tuple[str, str]], url: str = "") -> None:
        """Remember the secret values a request carries (secret headers, cookies, key-like
        query parameters, URL credentials), to scrub them wherever they appear."""
        found: set[str] = set()
        for name, value in headers:
            lowered = name.lower()
            if lowered in ("cookie", "set-cookie"):
                found.update(part.partition("=")[2].strip() for part in value.split(";"))
            if lowered in self.headers:
                found.add(value.strip())
                scheme, _, token = value.strip().partition(" ")
                if token and scheme.isalpha():
                    found.add(token.strip())
        if url:
            parts = urlsplit(url)
            pairs = parse_qsl(parts.query, keep_blank_values=True)
            found.update(value for name, value in pairs if _KEYLIKE_PARAM.search(name))
            if parts.password:
                found.add(parts.password)
        found = {value for value in found if len(value) >= _MIN_SECRET and value != REDACTED}
        if not found <= self._learned:
            self._learned |= found
            self._rebuild()

    def _rebuild(self) -> None:
        values = [*self._env_values, *self.extra_values, *self._learned]
        # Longest first, so a key that contains another is replaced whole; short values
        # (under 8 characters) would redact ordinary words, so they are left alone.
        self._values = tuple(
            sorted(
                {v for v in values if len(v) >= _MIN_SECRET and v != REDACTED},
                key=lambda v: (-len(v), v),
            )
        )
        forms = [_forms(value) for value in self._values]
        self._needles = tuple(
            sorted({n for needles, _ in forms for n in needles}, key=lambda v: (-len(v), v))
        )
        self._probes = tuple({p: None for _, probes in forms for p in probes})
        # To tell whether a text holds a secret, the needles that hold no other suffice
        # ("Bearer sk-..." holds "sk-..."): they are the ones that must be plain.
        least = [n for n in self._needles if not any(o != n and o in n for o in self._needles)]
        self._raw_needles = tuple(n.encode() for n in least)
        self._plain = all(_PLAIN.fullmatch(n) for n in least)
        self._straddles = any(c in n for n in self._needles for c in "{}[]")

    @property
    def secret_values(self) -> tuple[str, ...]:
        """The literal secret values scrubbed everywhere."""
        return self._values

    # -- text, headers, URLs ---------------------------------------------------------

    def text(self, value: str) -> str:
        """``value`` with every known secret value (or its percent-encoded form) replaced."""
        for secret in self._needles:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def _found_in(self, text: str) -> bool:
        return any(secret in text for secret in self._needles)

    def header_items(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Header pairs with secret headers and secret values (in names too) redacted."""
        return [
            (self.text(name), REDACTED if name.lower() in self.headers else self.text(value))
            for name, value in items
        ]

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

    def url(self, url: str) -> str:
        """``url`` with credentials, key-like query parameters and secret values (in the
        path too, as they are or percent-encoded) redacted."""
        parts, pairs = _url_parts(url)
        if parts.query:
            redacted = [
                (k, REDACTED if _KEYLIKE_PARAM.search(k) else self.text(v)) for k, v in pairs
            ]
            parts = parts._replace(query=urlencode(redacted, safe=":/,"))
        return self.text(urlunsplit(parts))

    # -- bodies ----------------------------------------------------------------------

    def json(self, value: Any, *, raw: bytes | None = None) -> Any:
        """A JSON value with every string, object keys included, scrubbed of secret values;
        ``value`` itself when it holds none.

        ``raw``, the JSON text ``value`` was read from when it is at hand, lets a value with
        no secret go without a look at its parts (see :meth:`_clean`).
        """
        if not self._values or self._clean(raw):
            return value
        try:
            probe = _dumps(value)
        except (TypeError, ValueError):  # not plain JSON: look at every part
            return self._json(value)
        return self._json(value) if self._probed(probe) else value

    def _clean(self, raw: bytes | None) -> bool:
        """Whether ``raw``, the text a value was read from, shows it holds no secret whole.

        Only when every secret is plain (letters, digits, ``-_.~``, which no JSON encoder
        escapes): then a secret in any string of the value is in ``raw`` as it is.
        """
        return raw is not None and self._plain and not any(n in raw for n in self._raw_needles)

    def _json(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list | tuple):
            return [self._json(item) for item in value]
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                name = self.text(key) if isinstance(key, str) else key
                while name in out:  # two keys that redact alike: both kept
                    name = f"{name}~"
                out[name] = self._json(item)
            return out
        return value

    def body(self, body: Body, *, raw: bytes | None = None) -> Body:
        """A stored body with secret values scrubbed (see the module docstring for where
        they are looked for); raises :class:`~.body.UndecodableBody` for a stream in which
        a secret shows across events in a way it cannot cut.

        ``raw``, the decoded bytes the body was stored from when they are at hand, spares
        the look at every part of a body that holds no secret whole (see :meth:`json`).
        """
        if body is None or not self._values:
            return body
        if "json" in body:
            return {"json": self.json(body["json"], raw=raw)}
        if "sse" in body:
            return {"sse": self._stream(body["sse"], whole=not self._clean(raw))}
        if "text" in body:
            return {"text": self.text(body["text"])}
        if "base64" in body:
            return {"base64": self._base64(body["base64"])}
        return body

    def _stream(self, events: list[Any], *, whole: bool = True) -> list[Any]:
        """Stored server-sent events scrubbed one by one (unless ``whole`` is false: none
        holds a secret whole) and as the texts they reassemble."""
        scrubbed = events
        if whole:
            scrubbed = [self._json(e) if self._event_holds(e) else e for e in events]
        groups = _stream_pieces(scrubbed)
        if any(self._found_in("".join(_text(slot) for slot in slots)) for slots in groups):
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

    def _event_holds(self, event: Any) -> bool:
        """Whether a secret shows whole in one stored event."""
        return self._probed(_dumps(event))

    def _probed(self, json_text: str) -> bool:
        """Whether a secret shows in the JSON text of a value."""
        return any(secret in json_text for secret in self._probes)

    def _cut(self, slots: list[tuple[Any, Any]]) -> None:
        """Cut every occurrence of a secret out of the text the ``slots`` join to."""
        pieces = [_text(slot) for slot in slots]
        for _ in range(len("".join(pieces))):  # each round shortens the text or ends
            spans = self._spans("".join(pieces))
            if not spans:
                break
            pieces = _cut_pieces(pieces, spans)
        for (container, key), piece in zip(slots, pieces, strict=True):
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

    def binary(self, raw: bytes) -> bytes:
        """``raw`` with each secret's bytes, and its base64 forms, overwritten in place by
        as many bytes of ``REDACTED``: lengths and offsets in a binary format stay valid."""
        for needle in self._byte_needles():
            start = raw.find(needle)
            while start != -1:
                mask = (REDACTED.encode() * (len(needle) // len(REDACTED) + 1))[: len(needle)]
                raw = raw[:start] + mask + raw[start + len(needle) :]
                start = raw.find(needle, start + len(needle))
        return raw

    def _byte_needles(self) -> list[bytes]:
        needles = {needle.encode() for needle in self._needles}
        for value in self._values:
            needles |= _base64_cores(value.encode())
        return sorted(needles, key=lambda n: (-len(n), n))

    def _base64(self, text: str) -> str:
        raw = base64.b64decode(text)
        scrubbed = self.binary(raw)
        return text if scrubbed == raw else base64.b64encode(scrubbed).decode("ascii")


def unscrubbable(
    problem: UndecodableBody, *, cassette: object, request: str, command: str
) -> CassetteError:
    """The error of a recording whose response body cannot be scrubbed of secrets (bytes it
    cannot decode, a stream it cannot cut): that response is never written."""
    return CassetteError(
        f"Cassette {cassette}: the response to {request} was not recorded, because its body "
        f"cannot be scrubbed of secrets: {problem.header} {problem.encoding!r}: "
        f"{problem.problem}. Fix: {problem.fix}; then record again: {command}"
    )


# -- streams ---------------------------------------------------------------------------

_Slot = tuple[Any, Any]
_Groups = dict[tuple[Any, ...], list[_Slot]]

#: Event types whose data carries no piece of a streamed text (whole values only).
_WHOLE_EVENTS = frozenset(
    {"message_start", "message_delta", "message_stop", "content_block_stop", "ping", "error"}
)


def _text(slot: _Slot) -> str:
    container, key = slot
    value = container[key]
    return value if isinstance(value, str) else ""


def _event_data(event: Any) -> str:
    data = event.get("data") if isinstance(event, Mapping) else None
    if data is None:
        return ""
    return data if isinstance(data, str) else _dumps(data)


def _stream_pieces(events: list[Any]) -> list[list[_Slot]]:
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


def _known_pieces(data: Mapping[str, Any], groups: _Groups) -> bool:
    """Add the pieces of an event of a known wire format; whether it was one."""
    if isinstance(data.get("choices"), list):  # OpenAI chat completions (and look-alikes)
        _chat_pieces(data["choices"], groups)
        return True
    if isinstance(data.get("candidates"), list):  # Gemini
        _gemini_pieces(data["candidates"], groups)
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


def _chat_pieces(choices: list[Any], groups: _Groups) -> None:
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


def _gemini_pieces(candidates: list[Any], groups: _Groups) -> None:
    for position, candidate in enumerate(candidates):
        content = candidate.get("content") if isinstance(candidate, Mapping) else None
        parts = content.get("parts") if isinstance(content, Mapping) else None
        if not isinstance(parts, list):
            continue
        index = candidate.get("index", position)
        for part in parts:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                kind = "thought" if part.get("thought") else "text"
                groups.setdefault(("gemini", index, kind), []).append((part, "text"))


def _anthropic_pieces(data: Mapping[str, Any], groups: _Groups) -> None:
    # A block may start with some text, joined before its deltas (as the SDK does).
    name = "content_block" if data["type"] == "content_block_start" else "delta"
    holder = data.get(name)
    if isinstance(holder, Mapping):
        where = ("anthropic", data.get("index"))
        _string_fields(holder, where, groups, skip=("type", "id", "name"))


def _string_fields(
    holder: Mapping[str, Any],
    where: tuple[Any, ...],
    groups: _Groups,
    skip: tuple[str, ...] = (),
) -> None:
    for name, value in holder.items():
        if isinstance(value, str) and name not in skip:
            groups.setdefault((*where, name), []).append((holder, name))


def _leaf_pieces(value: Any, path: tuple[Any, ...], groups: _Groups) -> None:
    """Every string in ``value``, grouped by its path: the pieces of an unknown stream."""
    keys: Iterable[Any] = value.keys() if isinstance(value, Mapping) else range(len(value))
    for key in keys:
        item = value[key]
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


def _base64_cores(secret: bytes) -> set[bytes]:
    """The base64 characters that only ``secret``'s bits decide, at each of the three
    alignments it can have in a longer encoded text (standard and URL-safe alphabets)."""
    cores: set[bytes] = set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + secret)
        core = encoded[-(-pad * 8 // 6) : (pad + len(secret)) * 8 // 6]
        if len(core) >= _MIN_SECRET:
            cores |= {core, core.translate(bytes.maketrans(b"+/", b"-_"))}
    return cores
