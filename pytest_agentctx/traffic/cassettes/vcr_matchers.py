"""vcrpy's request matching (``match_on``): its built-in matchers, and the custom ones a
suite registered with ``vcr.register_matcher``, run on requests shaped like vcrpy's.

A test whose ``agent_cassette_config`` gives ``match_on`` is matched as vcrpy matches: a
request is answered by the first recording, in the order the test replays them, that it
has not used yet and that every matcher accepts. A matcher is called as vcrpy calls it,
``matcher(r1, r2)`` with ``r1`` the request being made and ``r2`` the recorded one, and
refuses by returning ``False`` (any false value but ``None``) or by raising
``AssertionError``. Both are :class:`VcrRequest` objects, shaped like vcrpy's ``Request``
(``method``, ``uri``, ``scheme``, ``host``, ``port``, ``path``, ``query``, ``body`` as bytes,
``headers``), each as the cassette stores it: secrets redacted, a JSON body as the cassette
writes it, without the headers a recording never stores (``user-agent``,
``content-length``, ...), as vcrpy hands its matchers the request after its
``before_record_request``.

The built-in matchers (:data:`BUILTIN`) behave as vcrpy's (``tests/unit/traffic`` compares
them with vcrpy's own on the same requests) and say which values differ.
"""

from __future__ import annotations

import difflib
import json
import urllib.parse
import xmlrpc.client
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from string import hexdigits
from typing import TYPE_CHECKING, Any
from urllib.parse import ParseResult, parse_qsl, urlparse
from xml.parsers.expat import ExpatError

from pytest_agentctx.traffic.cassettes.matcher import matched_bytes
from pytest_agentctx.traffic.cassettes.mediatypes import header_of
from pytest_agentctx.traffic.errors import CassetteConfigError
from pytest_agentctx.traffic.roles import current_role

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes.fileformat import Interaction
    from pytest_agentctx.traffic.cassettes.keys import RequestKeys
    from pytest_agentctx.traffic.cassettes.replay import Replays
    from pytest_agentctx.traffic.transport.wire import WireRequest

#: A matcher as vcrpy calls it.
Matcher = Callable[[Any, Any], object]


class Headers(MutableMapping[str, str]):
    """Request headers whose names are looked up whatever their case, as vcrpy's
    ``HeadersDict``; equal to any mapping with the same names (in any case) and values."""

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._store: dict[str, tuple[str, str]] = {}
        for name, value in (items or {}).items():
            self[name] = value

    def __setitem__(self, key: str, value: str) -> None:
        if isinstance(value, list | tuple):
            value = value[0]
        old = self._store.get(key.lower())
        self._store[key.lower()] = (old[0] if old else key, value)

    def __getitem__(self, key: str) -> str:
        return self._store[key.lower()][1]

    def __delitem__(self, key: str) -> None:
        del self._store[key.lower()]

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._store.values())

    def __len__(self) -> int:
        return len(self._store)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return {k: v for k, (_, v) in self._store.items()} == {
            str(k).lower(): v for k, v in other.items()
        }

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return str(dict(self.items()))


class VcrRequest:
    """A request as vcrpy's matchers see it (vcrpy's ``Request``): ``method``, ``uri``
    (also ``url``), ``parsed_uri``, ``scheme`` (also ``protocol``), ``host``, ``port`` (the
    scheme's default when the URI has none), ``path``, ``query`` (its pairs, sorted,
    without blank values), ``body`` (bytes, or ``None`` when empty) and ``headers``."""

    def __init__(
        self, method: str, uri: str, body: bytes | None, headers: Mapping[str, str]
    ) -> None:
        self.method = method
        self.uri = uri
        self.parsed_uri: ParseResult = urlparse(uri)
        self.body = body
        self.headers = Headers(headers)

    @property
    def url(self) -> str:
        return self.uri

    @property
    def scheme(self) -> str:
        return self.parsed_uri.scheme

    @property
    def protocol(self) -> str:
        return self.scheme

    @property
    def host(self) -> str | None:
        return self.parsed_uri.hostname

    @property
    def port(self) -> int | None:
        port = self.parsed_uri.port
        if port is None:
            port = {"https": 443, "http": 80}.get(self.parsed_uri.scheme)
        return port

    @property
    def path(self) -> str:
        return self.parsed_uri.path

    @property
    def query(self) -> list[tuple[str, str]]:
        return sorted(parse_qsl(self.parsed_uri.query))

    def __str__(self) -> str:
        return f"<Request ({self.method}) {self.uri}>"

    __repr__ = __str__


# -- the built-in matchers, as vcrpy's ---------------------------------------------


def _differ(name: str, recorded: object, now: object) -> AssertionError:
    return AssertionError(f"{name}: recorded {recorded!r} != now {now!r}")


def method(r1: VcrRequest, r2: VcrRequest) -> None:
    if r1.method != r2.method:
        raise _differ("method", r2.method, r1.method)


def _normalized_uri(r: VcrRequest) -> str:
    if r.parsed_uri.path:
        return r.uri
    authority = f"{r.parsed_uri.scheme}://{r.parsed_uri.netloc}"
    if not r.uri.startswith(authority):
        return r.uri
    return authority + "/" + r.uri[len(authority) :]


def uri(r1: VcrRequest, r2: VcrRequest) -> None:
    if _normalized_uri(r1) != _normalized_uri(r2):
        raise _differ("uri", r2.uri, r1.uri)


def host(r1: VcrRequest, r2: VcrRequest) -> None:
    if r1.host != r2.host:
        raise _differ("host", r2.host, r1.host)


def scheme(r1: VcrRequest, r2: VcrRequest) -> None:
    if r1.scheme != r2.scheme:
        raise _differ("scheme", r2.scheme, r1.scheme)


def port(r1: VcrRequest, r2: VcrRequest) -> None:
    if r1.port != r2.port:
        raise _differ("port", r2.port, r1.port)


def path(r1: VcrRequest, r2: VcrRequest) -> None:
    if (r1.path or "/") != (r2.path or "/"):
        raise _differ("path", r2.path, r1.path)


def query(r1: VcrRequest, r2: VcrRequest) -> None:
    if r1.query != r2.query:
        raise _differ("query", r2.query, r1.query)


def headers(r1: VcrRequest, r2: VcrRequest) -> None:
    if r1.headers != r2.headers:
        before = {k.lower(): v for k, v in r2.headers.items()}
        after = {k.lower(): v for k, v in r1.headers.items()}
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        shown = "; ".join(
            f"{k}: recorded {before.get(k, '(none)')!r} != now {after.get(k, '(none)')!r}"
            for k in changed
        )
        raise AssertionError(f"headers differ: {shown}")


#: Lines of a body diff shown, at most, and characters of each line.
MAX_DIFF_LINES = 20
MAX_DIFF_LINE_LENGTH = 200


def _body_text(body: object) -> str | None:
    if body is None:
        return ""
    if isinstance(body, bytes | bytearray):
        try:
            return bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(body, str):
        return body
    return json.dumps(body, indent=2, sort_keys=True, default=str)


def _size(body: object) -> str:
    if body is None:
        return "no body"
    if isinstance(body, bytes | bytearray | str):
        return f"{len(body):,} bytes"
    return type(body).__name__


def body_diff(now: object, recorded: object) -> str:
    """A short diff of two bodies (as read or as transformed): the recorded one's lines
    ``-``, this request's ``+``; sizes when they are not text."""
    new_text, recorded_text = _body_text(now), _body_text(recorded)
    if new_text is None or recorded_text is None or new_text == recorded_text:
        return f"the bodies differ ({_size(recorded)} recorded, {_size(now)} now)"
    diff = list(
        difflib.unified_diff(
            recorded_text.splitlines(), new_text.splitlines(), "recorded", "now", n=1, lineterm=""
        )
    )
    lines = [
        line if len(line) <= MAX_DIFF_LINE_LENGTH else line[:MAX_DIFF_LINE_LENGTH] + "..."
        for line in diff[:MAX_DIFF_LINES]
    ]
    if len(diff) > MAX_DIFF_LINES:
        lines.append(f"... ({len(diff) - MAX_DIFF_LINES} more lines)")
    return "the bodies differ:\n" + "\n".join(lines)


def raw_body(r1: VcrRequest, r2: VcrRequest) -> None:
    if r1.body != r2.body:
        raise AssertionError(body_diff(r1.body, r2.body))


_HEX = frozenset(hexdigits.encode("ascii"))


def _dechunk(body: bytes | None) -> bytes | None:
    """A body in the chunked transfer coding, decoded (other bodies as they are), as
    vcrpy reads it."""
    if not body:
        return body
    chunks: list[bytes] = []
    at = 0
    while True:
        end = at
        while end < len(body) and body[end] in _HEX:
            end += 1
        if end == 0 or body[end : end + 2] != b"\r\n":
            if at == 0:
                return body  # not chunked
            raise ValueError("Malformed chunked data")
        size = int(body[at:end], 16)
        if size == 0:
            return b"".join(chunks)
        first = end + 2
        if body[first + size : first + size + 2] != b"\r\n":
            raise ValueError("Malformed chunked data")
        chunks.append(body[first : first + size])
        at = first + size + 2


def _has(headers: Headers, name: str, value: str) -> bool:
    return value in str(headers.get(name, "")).lower()


def _transformers(request: VcrRequest) -> list[Callable[[Any], Any]]:
    """What vcrpy's ``body`` matcher does to a request's body before comparing it, by
    its headers: undo a chunked coding, read a form, read JSON, read XML-RPC."""
    found: list[Callable[[Any], Any]] = []
    h = request.headers
    if _has(h, "Transfer-Encoding", "chunked"):
        found.append(_dechunk)
    if _has(h, "Content-Type", "application/x-www-form-urlencoded"):
        found.append(lambda b: None if b is None else urllib.parse.parse_qs(b.decode("ascii")))
    if _has(h, "Content-Type", "application/json"):
        found.append(lambda b: json.loads(b) if b else None)
    if _has(h, "Content-Type", "text/xml") and _has(h, "User-Agent", "xmlrpc"):
        found.append(lambda b: None if b is None else xmlrpc.client.loads(b))
    return found


def body(r1: VcrRequest, r2: VcrRequest) -> None:
    steps = _transformers(r1)
    names = [getattr(step, "__code__", step) for step in steps]
    if names != [getattr(step, "__code__", step) for step in _transformers(r2)]:
        steps = []
    t1: Any = r1.body
    t2: Any = r2.body
    try:
        for step in steps:
            t1, t2 = step(t1), step(t2)
    except (ValueError, ExpatError):
        t1, t2 = r1.body, r2.body
    if t1 != t2:
        raise AssertionError(body_diff(t1, t2))


#: vcrpy's built-in matchers by name (``url`` is vcrpy's other name of ``uri``).
BUILTIN: dict[str, Matcher] = {
    "method": method,
    "uri": uri,
    "url": uri,
    "scheme": scheme,
    "host": host,
    "port": port,
    "path": path,
    "query": query,
    "headers": headers,
    "raw_body": raw_body,
    "body": body,
}

#: vcrpy's default ``match_on``.
DEFAULT_MATCH_ON = ("method", "scheme", "host", "port", "path", "query")


def resolve(
    match_on: Sequence[object],
    registered: Mapping[str, Matcher] | None = None,
    *,
    where: str = "",
) -> tuple[tuple[str, Matcher], ...]:
    """The matchers of ``match_on`` with their names: a built-in name, a name in
    ``registered`` (``vcr.register_matcher``'s), or a callable; a name that is none of
    these is a :class:`CassetteConfigError` listing the built-in names."""
    out: list[tuple[str, Matcher]] = []
    for item in match_on:
        if isinstance(item, str):
            found = BUILTIN.get(item) or (registered or {}).get(item)
            if found is None:
                raise CassetteConfigError(unknown_name(item, registered, where=where))
            out.append((item, found))
        else:
            out.append((matcher_name(item), item))  # type: ignore[arg-type]
    return tuple(out)


def unknown_name(name: str, registered: Mapping[str, Matcher] | None, *, where: str) -> str:
    """The message of a ``match_on`` name that names no matcher."""
    close = difflib.get_close_matches(name, [*BUILTIN, *(registered or {})], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    own = f"; registered with vcr.register_matcher: {', '.join(registered)}" if registered else ""
    return (
        f"{where + ': ' if where else ''}agent_cassette_config match_on names {name!r}, which "
        f"is no matcher{hint}; vcrpy's built-in matchers are {', '.join(BUILTIN)}{own}. "
        "Put the matcher function itself in match_on (e.g. {'match_on': ['method', 'path', "
        "my_matcher]}), or fix the name."
    )


def matcher_name(matcher: object) -> str:
    """The name a matcher is shown by: its function's name."""
    name = getattr(matcher, "__name__", None) or getattr(matcher, "__qualname__", None)
    return str(name or matcher)


def refusal(matcher: Matcher, r1: VcrRequest, r2: VcrRequest) -> str | None:
    """Why ``matcher`` refuses ``r1`` for ``r2`` (its ``AssertionError``'s message, or
    ``returned False``), or ``None`` when it accepts them, as vcrpy evaluates it."""
    try:
        result = matcher(r1, r2)
    except AssertionError as exc:
        return str(exc) or "it raised AssertionError"
    if result is None or result:
        return None
    return f"it returned {result!r}"


def refusals(
    matchers: Sequence[tuple[str, Matcher]], r1: VcrRequest, r2: VcrRequest
) -> list[tuple[str, str]]:
    """Every matcher that refuses ``r1`` for ``r2``, with why."""
    out = []
    for name, matcher in matchers:
        why = refusal(matcher, r1, r2)
        if why is not None:
            out.append((name, why))
    return out


def accepts(matchers: Sequence[tuple[str, Matcher]], r1: VcrRequest, r2: VcrRequest) -> bool:
    """Whether every matcher accepts ``r1`` for ``r2`` (stops at the first refusal)."""
    return all(refusal(matcher, r1, r2) is None for _, matcher in matchers)


class VcrMatching:
    """A cassette's matching on ``match_on``: the ``matchers`` (with their names), the
    requests as they see them (the recordings of ``loaded`` made once each, with
    ``keys``' redaction, ignored fields and body hook), and which recording answers."""

    def __init__(
        self,
        matchers: Sequence[tuple[str, Matcher]],
        keys: RequestKeys,
        loaded: Sequence[Interaction],
    ) -> None:
        self.matchers = tuple(matchers)
        self._keys = keys
        self._loaded = loaded
        self._recorded: dict[int, VcrRequest] = {}

    def request_of(
        self, request: WireRequest, url: str, body_json: object, raw: bytes
    ) -> VcrRequest:
        """A live request (its redacted ``url``, JSON body or raw body) as the matchers
        see it."""
        kind = request.headers.get("content-type", "")
        keys = self._keys
        body = matched_bytes(body_json, raw, kind, keys.ignored, keys.body_hook)
        headers = keys.stored_headers(request.headers.items())
        return VcrRequest(request.method.upper(), url, body or None, headers)

    def recorded(self, position: int) -> VcrRequest:
        """The recording at ``position`` as the matchers see it (made once)."""
        found = self._recorded.get(position)
        if found is None:
            interaction = self._loaded[position]
            keys = self._keys
            body_json, raw = keys.stored_body(interaction)
            kind = header_of(interaction.request_headers, "content-type")
            body = matched_bytes(body_json, raw, kind, keys.ignored, keys.body_hook)
            found = VcrRequest(
                interaction.method.upper(),
                keys.redactor.url(interaction.url),
                body or None,
                keys.stored_headers(interaction.request_headers.items()),
            )
            self._recorded[position] = found
        return found

    def take(self, replays: Replays, now: VcrRequest) -> int | None:
        """The first recording not used yet that every matcher accepts for ``now``, now
        used (the caller holds the cassette's lock); only recordings made under the role
        of the calls made now are candidates."""
        role = current_role()
        return replays.take_first(
            lambda p: self._loaded[p].role == role and accepts(self.matchers, now, self.recorded(p))
        )

    def used_match(self, replays: Replays, now: VcrRequest) -> bool:
        """Whether a recording the test used already is one every matcher accepts."""
        return any(accepts(self.matchers, now, self.recorded(p)) for p in sorted(replays.taken))
