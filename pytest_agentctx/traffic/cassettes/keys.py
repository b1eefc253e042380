"""The match keys of a cassette: of a live request, and of a recorded interaction.

Both are redacted the same way before their key is made (see :mod:`.matcher` for what a
key holds), so that a live request, whose secrets are redacted before it is stored, matches
its recording, and a cassette written by another tool (whose URLs or bodies may still hold
what this package redacts) matches too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pytest_agentctx.traffic.cassettes.body import body_bytes, decode_content
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.matcher import (
    NO_JSON,
    BodyHook,
    RequestKey,
    make_key,
    parse_json,
    read_json,
)
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.transport.wire import WireHeaders, WireRequest


class RequestKeys:
    """Makes the keys of requests and interactions, secrets redacted by ``redactor``,
    without the ``ignored`` fields (dotted paths split), through ``body_hook``."""

    def __init__(
        self,
        redactor: Redactor,
        ignored: Sequence[Sequence[str]],
        body_hook: BodyHook | None,
    ) -> None:
        self.redactor = redactor
        self.ignored = ignored
        self.body_hook = body_hook

    def of_interaction(self, interaction: Interaction) -> RequestKey:
        """The key of a recorded interaction, redacted like a live request."""
        url = self.redactor.url(interaction.url)
        body = interaction.request_body
        if body is not None and "json" in body:
            body_json = body["json"]
            raw = b""
        else:
            raw = body_bytes(body)
            body_json = parse_json(raw)
        body_json, raw = self.redactor.filter_post(interaction.method, body_json, raw)
        if body_json is not NO_JSON:
            return make_key(
                interaction.method,
                url,
                self.redactor.json(body_json),
                None,
                ignored=self.ignored,
                hook=self.body_hook,
            )
        raw = self.redacted_raw(raw)
        return make_key(
            interaction.method, url, NO_JSON, raw, ignored=self.ignored, hook=self.body_hook
        )

    def redacted_request(self, request: WireRequest) -> tuple[str, object, bytes]:
        """The request's URL, JSON body (or :data:`NO_JSON`) and raw body, secrets redacted."""
        return self._redacted(request)[:3]

    def _redacted(self, request: WireRequest) -> tuple[str, object, bytes, bool]:
        """:meth:`redacted_request`, and whether the body is known to hold no ``NaN``.

        A body with a ``content-encoding`` is decoded first; raises
        :class:`~.body.UndecodableBody` when it cannot be."""
        self.redactor.refresh()
        url_text = str(request.url)
        headers = request.headers
        raw_headers = getattr(headers, "raw", None)  # httpx's byte pairs: cheap to compare
        signature = None if raw_headers is None else (raw_headers, url_text)
        self.redactor.learn(_items(headers), url_text, signature=signature)
        url = self.redactor.url(url_text)
        raw = bytes(request.content or b"")
        encoding = headers.get("content-encoding")
        if encoding and raw:  # stored, scrubbed and matched decoded, like a response body
            raw = decode_content(raw, encoding)
        body_json, finite = read_json(raw)
        body_json, raw = self.redactor.filter_post(request.method, body_json, raw)
        if body_json is not NO_JSON:
            body_json = self.redactor.json(body_json, raw=raw)  # strings scrubbed only
        else:
            raw = self.redacted_raw(raw)
        return url, body_json, raw, finite

    def redacted_raw(self, raw: bytes) -> bytes:
        """A body that is not JSON, secrets redacted: as text, or in its bytes (binary)."""
        try:
            return self.redactor.text(raw.decode("utf-8")).encode()
        except UnicodeDecodeError:  # secrets overwritten in place: offsets stay valid
            return self.redactor.binary(raw)

    def of_request(self, request: WireRequest) -> tuple[RequestKey, str, object, bytes]:
        """The key of a live request, with its redacted URL, JSON body and raw body."""
        url, body_json, raw, finite = self._redacted(request)
        key = make_key(
            request.method,
            url,
            body_json,
            None if body_json is not NO_JSON else raw,
            ignored=self.ignored,
            hook=self.body_hook,
            finite=finite,
        )
        return key, url, body_json, raw


def _items(headers: WireHeaders) -> Iterator[tuple[str, str]]:
    """``headers``' pairs, read only if the redactor asks for them."""
    yield from headers.items()
