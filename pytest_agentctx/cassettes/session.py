"""A cassette in use by one test: replays recorded interactions, records new ones.

Modes (``--agent-record[=MODE]``):

* ``none`` (the default): replay only. A request with no unused recording is a miss; the
  test fails with the closest recording and a field-level diff.
* ``rewrite`` (``--agent-record``): every request goes to the network and is recorded; the
  new recording replaces the old cassette if the test passes.
* ``missing``: like ``rewrite`` for tests that have no cassette yet, ``none`` otherwise.
* ``new``: replay what matches, record what does not, and append it to the cassette.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..exceptions import CassetteMiss, StaleCassette
from ..transport import (
    Interceptor,
    answered_by_another_tool,
    forward_async,
    forward_sync,
    is_async_request,
    make_response,
    tee_response,
)
from .body import Body, body_bytes, body_chunks, decompress, encode_body
from .defaults import RecordMode
from .matcher import (
    DEFAULT_IGNORED_FIELDS,
    NO_JSON,
    BodyHook,
    RequestKey,
    json_diff,
    make_key,
    parse_json,
    strip_fields,
)
from .redact import Redactor
from .store import Interaction, load_cassette, locked, paused_gc, run_marker, write_cassette

__all__ = ["Cassette", "Miss", "RecordMode"]

#: Request headers not worth keeping: volatile (SDK versions, retry counters) or wire-level.
_DROP_REQUEST_HEADERS = frozenset(
    {"content-length", "accept-encoding", "connection", "host", "user-agent", "cookie"}
)
_DROP_RESPONSE_HEADERS = frozenset(
    {"content-encoding", "content-length", "transfer-encoding", "connection", "set-cookie"}
)


@dataclass(frozen=True)
class Miss:
    """A request the cassette could not answer."""

    key: RequestKey
    body: Any
    reason: str


class Cassette:
    """Replays and records the HTTP interactions of one test."""

    def __init__(
        self,
        path: Path,
        *,
        mode: RecordMode = RecordMode.NONE,
        test_id: str = "",
        redactor: Redactor | None = None,
        ignored_fields: Sequence[str] = DEFAULT_IGNORED_FIELDS,
        body_hook: BodyHook | None = None,
        allow_unused: bool = False,
        shared: bool = False,
        run_id: str = "",
    ) -> None:
        self.path = path
        self.test_id = test_id
        self.redactor = redactor or Redactor()
        self.ignored = [field.split(".") for field in ignored_fields]
        self.body_hook = body_hook
        self.allow_unused = allow_unused
        self.shared = shared
        self.existed = path.exists()
        if mode is RecordMode.MISSING:
            if not self.existed:
                mode = RecordMode.REWRITE
            elif run_id and _written_in_run(path, run_id):
                # A cassette shared with a test that recorded it earlier in this run: keep
                # what it recorded, add what this test needs.
                mode = RecordMode.NEW
            else:
                mode = RecordMode.NONE
        self.mode = mode
        self.recorded_interactions: list[Interaction | None] = []
        self.misses: list[Miss] = []
        self._lock = threading.Lock()
        # A witness: it sees the requests another tool (a respx route) answers, and logs
        # them for capture without ever saving them (see _witness).
        self._interceptor = Interceptor(self.handle, witness=True)
        #: (position in _log it came before, interaction) of each request another tool
        #: answered: what the test saw, never written to the cassette.
        self._witnessed: list[tuple[int, Interaction | None]] = []
        self.played: list[int] = []
        # Every exchange in the order its request came: (recorded?, index into loaded or
        # recorded_interactions). Capture reads it (see exchange_log).
        self._log: list[tuple[bool, int]] = []
        if mode is RecordMode.REWRITE:
            self.loaded: list[Interaction] = []
        else:
            self.loaded = load_cassette(path)
        with paused_gc():  # thousands of keys at once, all kept: nothing to collect
            self._keys = [self._key_of(i) for i in self.loaded]
        self._index: dict[RequestKey, deque[int]] = {}
        for position, key in enumerate(self._keys):
            self._index.setdefault(key, deque()).append(position)

    # -- keys ------------------------------------------------------------------------

    def _key_of(self, interaction: Interaction) -> RequestKey:
        # Redacted like a live request, so that a cassette written by another tool (whose
        # URLs or bodies may still hold what this package redacts) matches too.
        url = self.redactor.url(interaction.url)
        body = interaction.request_body
        if body is not None and "json" in body:
            body_json = body["json"]
            raw = b""
        else:
            raw = body_bytes(body)
            body_json = parse_json(raw)
        if body_json is not NO_JSON:
            return make_key(
                interaction.method,
                url,
                self.redactor.json(body_json),
                None,
                ignored=self.ignored,
                hook=self.body_hook,
            )
        with contextlib.suppress(UnicodeDecodeError):
            raw = self.redactor.text(raw.decode("utf-8")).encode()
        return make_key(
            interaction.method, url, NO_JSON, raw, ignored=self.ignored, hook=self.body_hook
        )

    def _redacted_request(self, request: Any) -> tuple[str, Any, bytes]:
        """The request's URL, JSON body (or :data:`NO_JSON`) and raw body, secrets redacted."""
        self.redactor.refresh()
        url_text = str(request.url)
        self.redactor.learn(request.headers.items(), url_text)
        url = self.redactor.url(url_text)
        raw = bytes(request.content or b"")
        body_json = parse_json(raw)
        if body_json is not NO_JSON:
            body_json = self.redactor.json(body_json)
        else:
            with contextlib.suppress(UnicodeDecodeError):  # binary: kept byte for byte
                raw = self.redactor.text(raw.decode("utf-8")).encode()
        return url, body_json, raw

    def _request_key(self, request: Any) -> tuple[RequestKey, str, Any, bytes]:
        url, body_json, raw = self._redacted_request(request)
        key = make_key(
            request.method,
            url,
            body_json,
            None if body_json is not NO_JSON else raw,
            ignored=self.ignored,
            hook=self.body_hook,
        )
        return key, url, body_json, raw

    # -- interception ----------------------------------------------------------------

    @property
    def replays(self) -> bool:
        return self.mode in (RecordMode.NONE, RecordMode.NEW)

    @property
    def records(self) -> bool:
        return self.mode in (RecordMode.REWRITE, RecordMode.NEW)

    def handle(self, request: Any) -> Any:
        """Answer ``request`` from the cassette, record it, or report a miss."""
        if answered_by_another_tool():  # a respx route answers it: never replayed nor saved
            return self._witness(request)
        if not self.replays:  # rewrite: every request is recorded, none is matched
            return self._record(request, *self._redacted_request(request))
        key, url, body_json, raw = self._request_key(request)
        if self.replays:
            with self._lock:
                queue = self._index.get(key)
                position = queue.popleft() if queue else None
                if position is not None:
                    self.played.append(position)
                    self._log.append((False, position))
            if position is not None:
                return self._replay(self.loaded[position])
        if self.records:
            return self._record(request, url, body_json, raw)
        reason = self._miss_reason(key)
        miss = Miss(key, body_json, reason)
        with self._lock:
            self.misses.append(miss)
        message = self.miss_message(miss)
        return make_response(
            599,
            headers={"content-type": "application/json", "x-should-retry": "false"},
            content=json.dumps(
                {"error": {"type": "cassette_miss", "message": message}, "type": "error"}
            ).encode(),
        )

    def _replay(self, interaction: Interaction) -> Any:
        headers = dict(interaction.response_headers)
        chunks = body_chunks(interaction.response_body)
        if not interaction.is_stream:
            headers["content-length"] = str(sum(len(c) for c in chunks))
        return make_response(interaction.status, headers=headers, chunks=chunks)

    def _record(self, request: Any, url: str, body_json: Any, raw: bytes) -> Any:
        with self._lock:
            slot = len(self.recorded_interactions)
            self.recorded_interactions.append(None)
            self._log.append((True, slot))
        request_body: Body
        if body_json is not NO_JSON:
            request_body = {"json": body_json}
        else:
            request_body = encode_body(raw, request.headers.get("content-type"))
        request_headers = dict(
            self.redactor.header_items(
                (name.lower(), value)
                for name, value in request.headers.items()
                if name.lower() not in _DROP_REQUEST_HEADERS
                and not name.lower().startswith("x-stainless-")
            )
        )

        def store(raw_body: bytes, complete: bool, response: Any) -> None:
            headers = {name.lower(): value for name, value in response.headers.items()}
            decoded, ok = decompress(raw_body, headers.get("content-encoding"))
            body = (
                encode_body(decoded, headers.get("content-type"))
                if ok
                else {"base64": base64.b64encode(raw_body).decode("ascii")}
            )
            kept = {
                name: value
                for name, value in headers.items()
                if name not in _DROP_RESPONSE_HEADERS or (not ok and name == "content-encoding")
            }
            interaction = Interaction(
                method=request.method.upper(),
                url=url,
                request_headers=request_headers,
                request_body=request_body,
                status=response.status_code,
                response_headers=dict(self.redactor.header_items(kept.items())),
                response_body=self.redactor.body(body),
                origin=f"recorded#{slot}",
            )
            with self._lock:
                self.recorded_interactions[slot] = interaction

        if is_async_request():

            async def record_async() -> Any:
                response = await forward_async(request)
                return tee_response(response, lambda data, done: store(data, done, response))

            return record_async()
        response = forward_sync(request)
        return tee_response(response, lambda data, done: store(data, done, response))

    def _witness(self, request: Any) -> Any:
        """Pass on a request another tool in the test answers (a respx route), keeping a
        redacted copy of the exchange for :attr:`exchange_log` only."""
        url, body_json, raw = self._redacted_request(request)
        request_body: Body = (
            {"json": body_json}
            if body_json is not NO_JSON
            else encode_body(raw, request.headers.get("content-type"))
        )
        method = request.method.upper()
        with self._lock:
            slot = len(self._witnessed)
            self._witnessed.append((len(self._log), None))

        def store(raw_body: bytes, complete: bool, response: Any) -> None:
            decoded, ok = decompress(raw_body, response.headers.get("content-encoding"))
            body = encode_body(decoded, response.headers.get("content-type")) if ok else None
            interaction = Interaction(
                method=method,
                url=url,
                request_headers={},
                request_body=request_body,
                status=response.status_code,
                response_headers={},
                response_body=self.redactor.body(body),
                origin=f"other-tool#{slot}",
            )
            with self._lock:
                self._witnessed[slot] = (self._witnessed[slot][0], interaction)

        if is_async_request():

            async def witness_async() -> Any:
                response = await forward_async(request)
                return tee_response(response, lambda data, done: store(data, done, response))

            return witness_async()
        response = forward_sync(request)
        return tee_response(response, lambda data, done: store(data, done, response))

    # -- reporting -------------------------------------------------------------------

    def _miss_reason(self, key: RequestKey) -> str:
        if not self.loaded:
            return "there is no cassette" if not self.existed else "the cassette is empty"
        if key in self._index:
            total = self._keys.count(key)
            return f"the cassette has this request {total} time(s) and all were used already"
        return "the cassette has no such request"

    def _closest(self, miss: Miss) -> tuple[int, list[str]] | None:
        best: tuple[int, list[str]] | None = None
        candidates = [
            i
            for i, k in enumerate(self._keys)
            if (k.method, k.host, k.path) == (miss.key.method, miss.key.host, miss.key.path)
        ] or list(range(len(self._keys)))
        now = strip_fields(miss.body, self.ignored) if miss.body is not NO_JSON else None
        for position in candidates[:200]:
            recorded = self.loaded[position].request_body
            recorded_json = recorded.get("json") if recorded else None
            diff = json_diff(strip_fields(recorded_json, self.ignored), now)
            line = self._keys[position].describe()
            if line != miss.key.describe():
                diff.insert(0, f"(request line): recorded {line} != now {miss.key.describe()}")
            if best is None or len(diff) < len(best[1]):
                best = (position, diff)
        return best

    def record_command(self) -> str:
        target = self.test_id or "<test id>"
        return f'pytest --agent-record "{target}"'

    def miss_message(self, miss: Miss) -> str:
        lines = [
            f"Cassette {self.path} cannot answer {miss.key.describe()}: {miss.reason}.",
        ]
        closest = self._closest(miss) if self.loaded else None
        if closest is not None:
            position, diff = closest
            used = " (already used)" if position in self.played else ""
            lines.append(
                f"Closest recorded request: interaction #{position}{used}, "
                f"{self._keys[position].describe()}; differences:"
            )
            if not diff:
                diff = [
                    "(the same request: every recording of it was used already)"
                    if self._keys[position] == miss.key
                    else "(the bodies differ outside their JSON fields: compare them by hand)"
                ]
            lines.extend(f"  {line}" for line in diff)
        lines.append(
            "If the agent's requests changed on purpose, re-record this test: "
            f"{self.record_command()}"
        )
        return "\n".join(lines)

    def unused(self) -> list[int]:
        """Positions of loaded interactions that no request used."""
        played = set(self.played)
        return [i for i in range(len(self.loaded)) if i not in played]

    def check(self) -> None:
        """Raise for misses, then for unused recordings (unless allowed)."""
        if self.misses:
            first = self.miss_message(self.misses[0])
            more = (
                f"\n(and {len(self.misses) - 1} more missed request(s))"
                if len(self.misses) > 1
                else ""
            )
            raise CassetteMiss(first + more)
        if self.mode is not RecordMode.NONE or self.allow_unused or self.shared:
            return
        unused = self.unused()
        if unused:
            listed = "\n".join(f"  #{i}: {self._keys[i].describe()}" for i in unused[:10])
            raise StaleCassette(
                f"Cassette {self.path}: {len(unused)} of {len(self.loaded)} recorded "
                f"interactions were never used; the agent no longer sends them:\n{listed}\n"
                "The cassette is stale. Re-record this test: "
                f"{self.record_command()}\nor, if the test should not use them all, mark it "
                "@pytest.mark.agent(allow_unused=True)."
            )

    # -- lifecycle -------------------------------------------------------------------

    @property
    def interactions(self) -> list[Interaction]:
        """The loaded interactions, then those recorded in this test."""
        return [*self.loaded, *self.new_interactions]

    @property
    def new_interactions(self) -> list[Interaction]:
        """The interactions recorded in this test (complete ones only)."""
        return [i for i in self.recorded_interactions if i is not None]

    @property
    def exchange_log(self) -> list[Interaction]:
        """The interactions this test used, replayed or recorded, and those another tool
        (a respx route) answered, in the order of their requests (a recording joins once its
        response was read to the end)."""
        with self._lock:
            log = list(self._log)
            recorded = list(self.recorded_interactions)
            witnessed = list(self._witnessed)
        used = [recorded[index] if new else self.loaded[index] for new, index in log]
        for position, interaction in reversed(witnessed):
            used.insert(position, interaction)
        return [item for item in used if item is not None]

    @property
    def recorded(self) -> bool:
        """Whether this test recorded anything."""
        return bool(self.new_interactions)

    @property
    def replayed(self) -> int:
        """How many requests were answered from the cassette."""
        return len(self.played)

    def start(self) -> None:
        self._interceptor.start()

    def stop(self) -> None:
        self._interceptor.stop()

    def save(self, run_id: str) -> bool:
        """Write what was recorded; returns whether the file was written.

        ``new`` mode appends to the file as it is now. ``rewrite`` replaces it, except when
        another test of the same run (``run_id``) already wrote this shared cassette: then
        it appends, so every test's interactions are kept.
        """
        recorded = self.new_interactions
        if not recorded and not (
            # A re-recorded test that no longer sends anything: its old cassette would
            # fail as stale on every replay, so it is emptied.
            self.mode is RecordMode.REWRITE and not self.shared and self.path.exists()
        ):
            return False
        with locked(self.path):
            marker = run_marker(self.path)
            same_run = marker.exists() and marker.read_text() == run_id
            base = _fresh_load(self.path) if self.mode is RecordMode.NEW or same_run else []
            # What was loaded (maybe another tool's cassette) is scrubbed like the rest.
            write_cassette(self.path, [_scrubbed(i, self.redactor) for i in base] + recorded)
            marker.write_text(run_id)
        return True


def _scrubbed(interaction: Interaction, redactor: Redactor) -> Interaction:
    """``interaction`` with its secrets redacted (headers, URL, bodies)."""
    return dataclasses.replace(
        interaction,
        url=redactor.url(interaction.url),
        request_headers=dict(redactor.header_items(interaction.request_headers.items())),
        request_body=redactor.body(interaction.request_body),
        response_headers=dict(redactor.header_items(interaction.response_headers.items())),
        response_body=redactor.body(interaction.response_body),
    )


def _written_in_run(path: Path, run_id: str) -> bool:
    with locked(path):
        try:
            return run_marker(path).read_text() == run_id
        except FileNotFoundError:
            return False


def _fresh_load(path: Path) -> list[Interaction]:
    from . import store

    store._cache.pop(path, None)
    return load_cassette(path)
