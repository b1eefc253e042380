"""The match keys of a cassette: of a live request, and of a recorded interaction.

Both are redacted the same way before their key is made (see :mod:`.matcher` for what a
key holds), so that a live request, whose secrets are redacted before it is stored, matches
its recording, and a cassette written by another tool (whose URLs or bodies may still hold
what this package redacts) matches too.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

from pytest_agentctx.traffic.cassettes.body import body_bytes, decode_content
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.matcher import (
    NO_JSON,
    BodyHook,
    Compared,
    RequestKey,
    as_hooks,
    compared,
    make_key,
    parse_json,
    read_json,
)
from pytest_agentctx.traffic.cassettes.mediatypes import header_of
from pytest_agentctx.traffic.cassettes.multipart import may_be_multipart, redact_parts
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.cassettes.unstored import unstored_request_header
from pytest_agentctx.traffic.roles import DEFAULT_ROLE, current_role
from pytest_agentctx.traffic.transport.wire import WireHeaders, WireRequest


class RequestKeys:
    """Makes the keys of requests and interactions, secrets redacted by ``redactor``,
    without the ``ignored`` fields (dotted paths split), through ``body_hook`` (a function
    for JSON bodies, or a mapping of hooks, see :class:`~.matcher.BodyHooks`)."""

    def __init__(
        self,
        redactor: Redactor,
        ignored: Sequence[Sequence[str]],
        body_hook: BodyHook | Mapping[str, BodyHook] | None,
    ) -> None:
        self.redactor = redactor
        self.ignored = ignored
        self.body_hook = as_hooks(body_hook)
        #: The URL of the last request and its text: the clients that parse each URL once
        #: give requests to it the same (immutable) URL, whose text is made anew each time.
        self._url_text: tuple[object, str] = (None, "")
        #: What the key of the last live request was made of, and that key (see
        #: :meth:`known_key`): the redactor's generation, the method, URL text, body,
        #: ``content-encoding`` and ``content-type``.
        self._last: tuple[tuple[int, str, str, str | None, str], bytes, RequestKey] | None = None
        #: The request :meth:`known_key` last found unknown, and what :meth:`_learn` gave:
        #: :meth:`of_request` keys it next, without reading its headers again.
        self._unknown: tuple[object, tuple[str, str | None, str]] | None = None

    def of_interaction(self, interaction: Interaction) -> RequestKey:
        """The key of a recorded interaction, redacted like a live request."""
        url = self.redactor.url(interaction.url)
        body_json, raw = self.stored_body(interaction)
        kind = header_of(interaction.request_headers, "content-type") if raw else ""
        key = make_key(
            interaction.method,
            url,
            body_json,
            None if body_json is not NO_JSON else raw,
            ignored=self.ignored,
            hook=self.body_hook,
            content_type=kind,
        )
        return key if interaction.role == DEFAULT_ROLE else replace(key, role=interaction.role)

    def stored_body(self, interaction: Interaction) -> tuple[object, bytes]:
        """A recorded request's JSON body (or :data:`NO_JSON`) and raw body, redacted."""
        body = interaction.request_body
        if body is not None and "json" in body:
            body_json = body["json"]
            raw = b""
        else:
            raw = body_bytes(body)
            body_json = parse_json(raw)
        body_json, raw = self.redactor.filter_post(interaction.method, body_json, raw)
        if body_json is not NO_JSON:
            return self.redactor.json(body_json), b""
        kind = header_of(interaction.request_headers, "content-type")
        return NO_JSON, self.redacted_raw(raw, kind)

    def compared_interaction(self, interaction: Interaction) -> Compared:
        """What of a recorded request's body is matched (see :func:`~.matcher.compared`)."""
        body_json, raw = self.stored_body(interaction)
        kind = header_of(interaction.request_headers, "content-type")
        return compared(body_json, raw, kind, self.ignored, self.body_hook)

    def stored_headers(self, items: Iterable[tuple[str, str]]) -> dict[str, str]:
        """Request headers as a recording stores them: lower-case names, without those it
        never stores, secrets redacted."""
        return dict(
            self.redactor.header_items(
                (name.lower(), value)
                for name, value in items
                if not unstored_request_header(name, value)
            )
        )

    def redacted_request(self, request: WireRequest) -> tuple[str, object, bytes]:
        """The request's URL, JSON body (or :data:`NO_JSON`) and raw body, secrets redacted."""
        return self._redacted(request)[:3]

    def _redacted(self, request: WireRequest) -> tuple[str, object, bytes, bool, str]:
        """:meth:`redacted_request`, whether the body is known to hold no ``NaN``, and the
        request's ``content-type``.

        A body with a ``content-encoding`` is decoded first; raises
        :class:`~.body.UndecodableBody` when it cannot be."""
        return self._redact(request, *self._learn(request))

    def _redact(
        self, request: WireRequest, url_text: str, encoding: str | None, kind: str
    ) -> tuple[str, object, bytes, bool, str]:
        """:meth:`_redacted` of a request whose secrets were learned (:meth:`_learn`)."""
        url = self.redactor.url(url_text)
        raw = bytes(request.content or b"")
        if encoding and raw:  # stored, scrubbed and matched decoded, like a response body
            raw = decode_content(raw, encoding)
        body_json, finite = read_json(raw)
        body_json, raw = self.redactor.filter_post(request.method, body_json, raw)
        if body_json is not NO_JSON:
            body_json = self.redactor.json(body_json, raw=raw)  # strings scrubbed only
        else:
            raw = self.redacted_raw(raw, kind)
        return url, body_json, raw, finite, kind

    def _learn(self, request: WireRequest) -> tuple[str, str | None, str]:
        """What every key of a live request starts with: the secret variables read again,
        the request's secrets learned (see :func:`_scan`); its URL's text and its
        ``content-encoding`` and ``content-type``."""
        self.redactor.refresh()
        url_text = self._text_of(request.url)
        headers = request.headers
        scan = _scan(headers, self.redactor.headers)
        if scan is None:
            signature = None
            encoding, kind = headers.get("content-encoding"), headers.get("content-type", "")
        else:
            signature = (scan[0], url_text)
            encoding, kind = scan[1], scan[2]
        self.redactor.learn(_items(headers), url_text, signature=signature)
        return url_text, encoding, kind

    def known_key(self, request: WireRequest) -> RequestKey | None:
        """The key of a live request that is the last one :meth:`of_request` keyed again
        (the same method, URL, body and body headers, its other headers free to differ, as
        SigV4's differ on every call) while the redactor's secrets have not changed since:
        the key made then, without redacting and reading the body again. ``None`` for any
        other request, and with a body hook (user code, called for every request). The
        request's secrets are learned as :meth:`of_request` learns them."""
        last = self._last
        if last is None or self.body_hook is not None:
            return None
        learned = self._learn(request)
        made_of, content, key = last
        now = (self.redactor.generation, request.method, *learned)
        if now != made_of or (request.content or b"") != content:
            self._unknown = request, learned
            return None
        return _with_role(key)

    def _text_of(self, url: object) -> str:
        seen, text = self._url_text
        if url is not seen:
            text = str(url)
            self._url_text = url, text
        return text

    def redacted_raw(self, raw: bytes, content_type: str = "") -> bytes:
        """A body that is not JSON, secrets redacted: as text, or in its bytes (binary); a
        multipart body part by part (a text field among binary files is redacted as
        text)."""
        if may_be_multipart(raw, content_type):
            parts = redact_parts(raw, content_type, self.redactor.text, self.redactor.binary)
            if parts is not None:
                return parts
        try:
            return self.redactor.text(raw.decode("utf-8")).encode()
        except UnicodeDecodeError:  # secrets overwritten in place: offsets stay valid
            return self.redactor.binary(raw)

    def of_request(self, request: WireRequest) -> tuple[RequestKey, str, object, bytes]:
        """The key of a live request, with its redacted URL, JSON body and raw body."""
        unknown, self._unknown = self._unknown, None
        learned = unknown[1] if unknown is not None and unknown[0] is request else None
        url_text, encoding, kind = learned or self._learn(request)
        generation = self.redactor.generation
        url, body_json, raw, finite, _ = self._redact(request, url_text, encoding, kind)
        key = make_key(
            request.method,
            url,
            body_json,
            None if body_json is not NO_JSON else raw,
            ignored=self.ignored,
            hook=self.body_hook,
            finite=finite,
            content_type=kind if raw else "",
        )
        # Kept for known_key() unless the secrets changed while it was made (a body's
        # filtered parameters learned, another thread's request): then made again next time.
        if self.redactor.generation == generation:
            made_of = (generation, request.method, url_text, encoding, kind)
            self._last = made_of, bytes(request.content or b""), key
        return _with_role(key), url, body_json, raw


#: SigV4's headers made anew for every call that say nothing the redactor learns (unless it
#: is told they are secret): a request that differs from the one before only in them is
#: not read again.
_SIGNED_ANEW = frozenset(
    {b"x-amz-date", b"amz-sdk-invocation-id", b"amz-sdk-request", b"x-amz-content-sha256"}
)


def _scan(
    headers: WireHeaders, secret_headers: Collection[str]
) -> tuple[tuple[tuple[bytes, bytes, bytes], ...], str | None, str] | None:
    """In one pass over the byte pairs of ``headers``: what the redactor learns of them
    depends on (their (name, lower-case name, value) triples without those signed anew for
    each call, and a SigV4 ``Authorization`` without its signature: only its credential's
    key id is learned), and their ``content-encoding`` (``None`` without one) and
    ``content-type`` (``""``), read as ``headers.get`` reads them. ``None`` for headers
    without byte pairs or a known encoding."""
    # httpx's (name, lower-case name, value) triples, kept as they are: cheap to compare
    kept = getattr(headers, "_list", None)
    if kept is None:
        raw = getattr(headers, "raw", None)
        kept = None if raw is None else [(name, name.lower(), value) for name, value in raw]
    encoding = getattr(headers, "encoding", None)
    if kept is None or not isinstance(encoding, str):
        return None
    anew = _signed_anew(frozenset(secret_headers))  # a redactor's own, as it is
    triples = []
    found: dict[bytes, list[bytes]] = {}
    for triple in kept:
        lowered = triple[1]
        if lowered not in _SEEN:  # most headers: kept as they are
            triples.append(triple)
            continue
        if lowered in _READ:
            found.setdefault(lowered, []).append(triple[2])
        if lowered in anew:
            continue
        name, _, value = triple
        if lowered == b"authorization" and value.startswith(b"AWS4-"):
            triple = (name, lowered, value.partition(b"Signature=")[0])
        triples.append(triple)
    read = {name: b", ".join(values).decode(encoding) for name, values in found.items()}
    return tuple(triples), read.get(b"content-encoding"), read.get(b"content-type", "")


@functools.lru_cache(maxsize=16)
def _signed_anew(secret_headers: frozenset[str]) -> frozenset[bytes]:
    """The headers of :data:`_SIGNED_ANEW` not among ``secret_headers`` (a redactor's:
    one of a few frozensets, found once each)."""
    return frozenset(name for name in _SIGNED_ANEW if name.decode("latin-1") not in secret_headers)


def _with_role(key: RequestKey) -> RequestKey:
    """``key`` under the role the request is made in: matched only against recordings made
    under it."""
    role = current_role()
    return key if role == DEFAULT_ROLE else replace(key, role=role)


#: The headers :meth:`RequestKeys.of_request` reads of a request.
_READ = frozenset({b"content-encoding", b"content-type"})
#: The headers :func:`_scan` looks at more closely.
_SEEN = _READ | _SIGNED_ANEW | {b"authorization"}


def _items(headers: WireHeaders) -> Iterator[tuple[str, str]]:
    """``headers``' pairs, read only if the redactor asks for them."""
    yield from headers.items()
