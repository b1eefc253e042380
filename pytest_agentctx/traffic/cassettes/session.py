"""A cassette in use by one test: replays recorded interactions, records new ones.

Modes (``--agent-record[=MODE]``):

* ``none`` (the default): replay only. A request with no unused recording is a miss; the
  test fails with the one closest recording and how it differs (:mod:`.misses`).
* ``rewrite`` (``--agent-record``): every request goes to the network and is recorded; the
  new recording replaces the old cassette if the test passes.
* ``missing``: like ``rewrite`` for tests that have no cassette yet, ``none`` otherwise.
* ``new``: replay what matches, record what does not, and append it to the cassette.

A cassette shared by several tests (``@pytest.mark.agent(cassette=...)``) stores with each
interaction the node id of the test that recorded it (``test_id``):

* A test replays its own interactions first, then those of no known test (a cassette
  written before test ids, or by another tool: every test replays those, as before).
* A test with no interaction of its own in the cassette (renamed since it recorded, or
  added to the cassette without recording) replays, when it replays only, the other
  tests' interactions too, except a request that several tests recorded with different
  answers: that one is a miss, as no recording can stand in for this test's.
* Saving replaces only this test's interactions (``rewrite``) or adds to them (``new``),
  in the place they had, and keeps every other test's, under the cassette's lock: tests
  re-recorded one at a time, on several xdist workers, or in a run killed half-way, leave
  the other tests' interactions in the file. Re-recording a test also drops the
  interactions of no known test that its new requests match (one per request), since those
  were its own recording before test ids existed.
* ``missing`` records a test that has no interaction of its own in the cassette (and no
  interaction of no known test to replay); the others replay.

A streamed response the agent stops reading without closing is finished when the test
ends (:meth:`Cassette.finish_streams`; see :mod:`.recording` for what is kept).

Saving never loses the cassette: the new version replaces the old one in one rename, and a
save that fails (a read-only folder, a full disk) raises
:class:`~pytest_agentctx.traffic.errors.CassetteWriteError`, naming the cassette and the reason,
with the old version in place.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pytest_agentctx.traffic.cassettes.body import (
    UndecodableBody,
)
from pytest_agentctx.traffic.cassettes.defaults import (
    RecordMode as RecordMode,
    records_unmatched,
)
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.keys import RequestKeys
from pytest_agentctx.traffic.cassettes.matcher import (
    DEFAULT_IGNORED_FIELDS,
    NO_JSON,
    BodyHook,
    Compared,
    RequestKey,
    compared,
)
from pytest_agentctx.traffic.cassettes.misses import (
    Miss,
    match_on_message,
    match_on_reason,
    miss_message,
    miss_reason,
    partial_message,
    record_command,
    response_message,
    stale_message,
    unreadable_message,
)
from pytest_agentctx.traffic.cassettes.options import period_ended
from pytest_agentctx.traffic.cassettes.recording import Recorder, missed_interaction
from pytest_agentctx.traffic.cassettes.redact import (
    Redactor,
    unscrubbable,
)
from pytest_agentctx.traffic.cassettes.replay import Replays
from pytest_agentctx.traffic.cassettes.runs import sweep_folder
from pytest_agentctx.traffic.cassettes.saving import (
    missing_mode,
    recording_day,
    save_recorded,
    write_error,
)
from pytest_agentctx.traffic.cassettes.store import load_cassette, paused_gc
from pytest_agentctx.traffic.errors import (
    CassetteError,
    CassetteFormatError,
    CassetteMiss,
    PartialRecording,
    StaleCassette,
    UnscopedRequest,
)
from pytest_agentctx.traffic.mcp.http import McpHttp
from pytest_agentctx.traffic.mcp.wire import with_recorded
from pytest_agentctx.traffic.transport import (
    Interceptor,
    answered_by_another_tool,
    make_response,
)
from pytest_agentctx.traffic.transport.responses import recorded_response
from pytest_agentctx.traffic.transport.wire import CLIENT_EXTENSION, Answer, WireRequest

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes.vcr_matchers import Matcher, VcrMatching, VcrRequest


#: What a recording is found by: a request key, or vcrpy's request (``match_on``).
_Found = TypeVar("_Found")


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
        body_hook: BodyHook | Mapping[str, BodyHook] | None = None,
        allow_unused: bool = False,
        shared: bool = False,
        run_id: str = "",
        verbosity: int = 0,
        style: str = "native",
        match_on: Sequence[tuple[str, Matcher]] | None = None,
        migration_until: str = "",
        migrating: bool = False,
        day: str = "",
    ) -> None:
        self.path = path
        #: The UTC day (``YYYY-MM-DD``) this test's recordings are dated (by default, the
        #: day the cassette was made).
        self.day = day or datetime.now(UTC).date().isoformat()
        #: vcrpy's matchers, with their names, when they replace the package's matching
        #: (``match_on``, see :mod:`.vcr_matchers`).
        self.match_on = tuple(match_on) if match_on is not None else None
        #: How the file is written: ``native`` or ``vcr`` (vcrpy's format, see :mod:`.vcr`).
        self.style = style
        #: pytest's verbosity (``-vv``: 2): how much a miss message shows.
        self.verbosity = verbosity
        self.test_id = test_id
        self.redactor = redactor or Redactor()
        self.ignored = [field.split(".") for field in ignored_fields]
        self.body_hook = body_hook
        self._keys = RequestKeys(self.redactor, self.ignored, body_hook)
        self.allow_unused = allow_unused
        self.shared = shared
        #: ``agent_migration_until`` (``""``: not set) and whether its period still runs:
        #: then unused recordings and misses the code caught are counted, not failed on.
        self.migration_until = migration_until
        self.migrating = migrating and bool(migration_until)
        #: What the migration period let pass (see :meth:`check`): misses, unused recordings.
        self.eased_misses = 0
        self.eased_unused = 0
        self.existed = path.exists()
        sweep_folder(path.parent)
        # What a rewrite replays: nothing (a shared cassette is read again when it is saved).
        loaded = [] if mode is RecordMode.REWRITE else load_cassette(path, redactor=self.redactor)
        if mode is RecordMode.MISSING:
            mode = missing_mode(
                self.path,
                loaded,
                existed=self.existed,
                shared=self.shared,
                test_id=test_id,
                run_id=run_id,
            )
        self.mode = mode
        self.misses: list[Miss] = []
        #: Responses not recorded because their body cannot be scrubbed of secrets.
        self.unscrubbable: list[CassetteError] = []
        #: Replayed responses their client cannot read (not the JSON they say they are).
        self.unreadable: list[CassetteFormatError] = []
        #: Positions of partial recordings the agent read past, on replay.
        self.overread: list[int] = []
        self._lock = threading.Lock()
        # A witness: it sees the requests another tool (a respx route) answers, and logs
        # them for capture without ever saving them (see Recorder.witness).
        self._interceptor = Interceptor(self.handle, witness=True)
        #: (position in _log it came before, interaction) of each miss, with the error it
        #: was answered (see seen_log).
        self._missed: list[tuple[int, Interaction | None]] = []
        self.played: list[int] = []
        # Every exchange in the order its request came: (recorded?, index into loaded or
        # the recorder's recordings). Capture reads it (see exchange_log).
        self._log: list[tuple[bool, int]] = []
        #: MCP over HTTP: its streams' events recorded and replayed in order.
        self._mcp = McpHttp()
        self._recorder = Recorder(
            redactor=self.redactor,
            keys=self._keys,
            lock=self._lock,
            log=self._log,
            test_id=test_id if shared else "",
            on_unscrubbable=self._unscrubbable,
            mcp=self._mcp,
        )
        #: What this test recorded, by slot (``None`` until its response was read to the end).
        self.recorded_interactions = self._recorder.recorded
        self.loaded: list[Interaction] = [] if mode is RecordMode.REWRITE else loaded
        with paused_gc():  # thousands of keys at once, all kept: nothing to collect
            keys = [self._keys.of_interaction(i) for i in self.loaded]
        #: The recordings this test may replay, by request (see the module docstring).
        self._replays = Replays(self.loaded, keys, test_id=test_id, shared=shared, mode=mode)
        self._matching: VcrMatching | None = None
        if self.match_on is not None:
            from pytest_agentctx.traffic.cassettes.vcr_matchers import VcrMatching

            self._matching = VcrMatching(self.match_on, self._keys, self.loaded)

    # -- interception ----------------------------------------------------------------

    @property
    def replays(self) -> bool:
        return self.mode in (RecordMode.NONE, RecordMode.NEW, RecordMode.JUDGE)

    @property
    def records(self) -> bool:
        return self.mode in (RecordMode.REWRITE, RecordMode.NEW, RecordMode.JUDGE)

    @property
    def replays_only(self) -> bool:
        """Whether every request is answered from the file or fails as a miss: none goes
        to the network and nothing is written."""
        return self.mode is RecordMode.NONE

    def handle(self, request: WireRequest) -> Answer:
        """Answer ``request`` from the cassette, record it, or report a miss; a request
        whose body cannot be decoded (so neither scrubbed nor matched) fails the test."""
        try:
            return self._handle(request)
        except UndecodableBody as exc:
            url = self.redactor.url(str(request.url))
            raise self._unscrubbable(exc, request, url, sent=True) from None

    def _unscrubbable(
        self, exc: UndecodableBody, request: WireRequest, url: str, sent: bool
    ) -> CassetteError:
        """Keep (for :meth:`check`) and give the error of an interaction whose body (the
        request's when ``sent``) cannot be scrubbed of secrets."""
        where, command = f"{request.method.upper()} {url}", self.record_command()
        error = unscrubbable(exc, cassette=self.path, request=where, command=command, sent=sent)
        with self._lock:
            self.unscrubbable.append(error)
        return error

    def _handle(self, request: WireRequest) -> Answer:
        if answered_by_another_tool():  # a respx route answers it: never replayed nor saved
            return self._recorder.witness(request)
        self._mcp.sent(request)
        if not self.replays:  # rewrite: every request is recorded, none is matched
            return self._recorder.record(request, *self._keys.redacted_request(request))
        replayed = self._replay_known(request)
        if replayed is not None:
            return replayed
        key, url, body_json, raw = self._keys.of_request(request)
        if self.mode is RecordMode.JUDGE and key.role == "judge":  # recorded again, never replayed
            return self._recorder.record(request, url, body_json, raw)
        if self._matching is not None:
            return self._handle_match_on(request, key, url, body_json, raw)
        position = self._taken(self._replays.take, key)
        if position is not None:
            return self._replay(position, request)
        if records_unmatched(self.mode, key.role):
            return self._recorder.record(request, url, body_json, raw)
        reason = miss_reason(self._replays, key, path=self.path, existed=self.existed)
        return self._miss(request, key, url, body_json, raw, reason)

    def _replay_known(self, request: WireRequest) -> Answer:
        """The replay of the request keyed last time, repeated, by that key
        (:meth:`.RequestKeys.known_key`); ``None`` for another request, when its recordings
        are used up (it is then keyed again and handled in full), with vcrpy's matching and
        in ``judge``."""
        if self._matching is not None or self.mode is RecordMode.JUDGE:
            return None
        key = self._keys.known_key(request)
        position = None if key is None else self._taken(self._replays.take, key)
        return None if position is None else self._replay(position, request)

    def _taken(self, take: Callable[[_Found], int | None], found: _Found) -> int | None:
        """The position ``take(found)`` gives, noted as played (under the lock)."""
        with self._lock:
            position = take(found)
            if position is not None:
                self.played.append(position)
                self._log.append((False, position))
        return position

    def _handle_match_on(
        self, request: WireRequest, key: RequestKey, url: str, body_json: object, raw: bytes
    ) -> Answer:
        """:meth:`_handle` with vcrpy's matching (:attr:`match_on`)."""
        matching = self._matching
        assert matching is not None
        now = matching.request_of(request, url, body_json, raw)
        position = self._taken(functools.partial(matching.take, self._replays), now)
        if position is not None:
            return self._replay(position, request)
        if records_unmatched(self.mode, key.role):
            return self._recorder.record(request, url, body_json, raw)
        reason = match_on_reason(
            self._replays,
            key,
            [name for name, _ in matching.matchers],
            used_match=matching.used_match(self._replays, now),
            path=self.path,
            existed=self.existed,
        )
        return self._miss(request, key, url, body_json, raw, reason, now)

    def _miss(
        self,
        request: WireRequest,
        key: RequestKey,
        url: str,
        body_json: object,
        raw: bytes,
        reason: str,
        vcr_request: VcrRequest | None = None,
    ) -> Answer:
        """Keep ``request`` as a miss (see :mod:`.misses`) and answer it with an error."""
        client = str(request.extensions.get(CLIENT_EXTENSION, ""))
        kind = request.headers.get("content-type", "")
        miss = Miss(
            key,
            body_json,
            reason,
            client,
            raw if body_json is NO_JSON else b"",
            kind,
            vcr_request,
        )
        with self._lock:
            self.misses.append(miss)
        # The SDK's error says only what was missed: the test's failure compares it with the
        # closest recording, once (the SDK's error is shown beside it).
        message = self.redactor.text(response_message(miss, path=self.path))
        content = json.dumps(
            {"error": {"type": "cassette_miss", "message": message}, "type": "error"}
        ).encode()
        self._witness_miss(request, url, body_json, raw, content)
        return make_response(
            599,
            headers={"content-type": "application/json", "x-should-retry": "false"},
            content=content,
        )

    def _witness_miss(
        self, request: WireRequest, url: str, body_json: object, raw: bytes, content: bytes
    ) -> None:
        """Keep a missed request, with the error it was answered, for :attr:`seen_log`
        (never saved): the captured run of a test that stopped on a miss then ends with the
        iteration whose request missed, so its reports show how far the agent got."""
        origin = f"missed#{len(self.misses) - 1}"
        interaction = missed_interaction(request, url, body_json, raw, content, origin)
        with self._lock:
            self._missed.append((len(self._log), interaction))

    def _replay(self, position: int, request: WireRequest) -> Answer:
        interaction = self.loaded[position]
        command = self.record_command  # only made for an unreadable response
        unreadable = unreadable_message(self._replays, position, path=self.path, command=command)
        if unreadable is not None:  # replayed all the same: the test fails with this
            self.unreadable.append(CassetteFormatError(self.redactor.text(unreadable)))
        mcp = self._mcp.replay(request, interaction)  # MCP streams: in their recorded order
        if mcp is not None:
            return mcp
        headers = dict(interaction.response_headers)
        chunks = interaction.response_chunks()
        stream = interaction.is_stream
        if not stream and (interaction.method != "HEAD" or "content-length" not in headers):
            headers["content-length"] = str(sum(len(c) for c in chunks))
        if not interaction.partial:  # all of it known: botocore may take it as it is
            handler = self._interceptor.handler
            answer = recorded_response(
                interaction.status, headers=headers, chunks=chunks, streamed=stream, handler=handler
            )
            return with_recorded(answer, interaction)

        def read_past() -> None:
            with self._lock:
                self.overread.append(position)
            raise PartialRecording(self._partial_message(position))

        on_end = read_past if interaction.partial else None
        answer = make_response(interaction.status, headers=headers, chunks=chunks, on_end=on_end)
        return with_recorded(answer, interaction)

    def _partial_message(self, position: int) -> str:
        return partial_message(
            self._replays, position, path=self.path, command=self.record_command()
        )

    # -- reporting -------------------------------------------------------------------

    def recording_day(self) -> str | None:
        """The day of the recordings this test used (see :func:`.saving.recording_day`)."""
        used = [self._replays.loaded[position] for position in self.played]
        recorded = [i for i in self.recorded_interactions if i is not None]
        return recording_day(used, recorded, self.day)

    def record_command(self) -> str:
        """The command that re-records this cassette's test."""
        return record_command(self.test_id)

    def miss_message(self, miss: Miss) -> str:
        """What the test is told of ``miss`` (see :func:`.misses.miss_message`), as much as
        :attr:`verbosity` asks, secrets redacted."""
        if self._matching is not None:
            return self.redactor.text(
                match_on_message(
                    self._replays,
                    miss,
                    path=self.path,
                    matchers=self._matching.matchers,
                    recorded=self._matching.recorded,
                    played=self.played,
                    command=self.record_command(),
                )
            )
        message = miss_message(
            self._replays,
            miss,
            path=self.path,
            ignored=self.ignored,
            played=self.played,
            test_id=self.test_id,
            verbosity=self.verbosity,
            compare=self._compared,
        )
        return self.redactor.text(message)

    def _compared(self, item: Interaction | Miss) -> Compared:
        """What of a body the miss message compares: secrets redacted (a recording made by
        another tool may hold some), as matched (ignored fields removed, through the body
        hook that takes it)."""
        if isinstance(item, Interaction):
            return self._keys.compared_interaction(item)
        body = self.redactor.json(item.body) if item.body is not NO_JSON else NO_JSON
        return compared(body, item.raw, item.content_type, self.ignored, self._keys.body_hook)

    def unused(self) -> list[int]:
        """Positions of loaded interactions that no request used."""
        played = set(self.played)
        return [i for i in range(len(self.loaded)) if i not in played]

    @property
    def refused(self) -> list[UnscopedRequest]:
        """The requests refused while this cassette was active because no concurrent run
        owned them (made in a thread without a run's context): see :class:`UnscopedRequest`."""
        return list(self._interceptor.refused)

    def check(self) -> None:
        """Raise for requests no concurrent run owned (:attr:`refused`), responses not
        recorded (unscrubbable), misses, then unused recordings (unless allowed).

        Called once the test passed: its misses are ones the code caught. While the
        migration period of ``agent_migration_until`` runs (:attr:`migrating`), those
        misses and the unused recordings are counted (:attr:`eased_misses`,
        :attr:`eased_unused`) for the reports instead; once it ended, the error says so."""
        __tracebackhide__ = True  # the messages say it all: pytest shows no frame of this
        for errors in (self._interceptor.refused, self.unscrubbable, self.unreadable):
            if errors:
                raise errors[0]
        if self.overread:
            raise PartialRecording(self._partial_message(self.overread[0]))
        if self.misses and self.migrating:
            self.eased_misses = len(self.misses)
            return  # its unused recordings are not judged: a miss may have wanted them
        if self.misses:
            first = self.miss_message(self.misses[0])
            more = (
                f"\n(and {len(self.misses) - 1} more missed request(s))"
                if len(self.misses) > 1
                else ""
            )
            raise CassetteMiss(
                first
                + more
                + period_ended(self.migration_until, self.migrating, self.record_command())
            )
        if self.mode is not RecordMode.NONE or self.allow_unused or self.shared:
            return
        unused = self.unused()
        if unused and self.migrating:
            self.eased_unused = len(unused)
        elif unused:
            message = stale_message(
                self._replays, unused, path=self.path, command=self.record_command()
            )
            raise StaleCassette(message + period_ended(self.migration_until, self.migrating, None))

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
        response was read to the end). Misses are left out: see :attr:`seen_log`."""
        return self._exchanges(misses=False)

    @property
    def seen_log(self) -> list[Interaction]:
        """:attr:`exchange_log` with the requests the cassette could not answer, each with
        the error it was answered (status 599, never saved), in request order: what the
        agent saw, from which its runs are rebuilt (a run that stopped on a miss ends with
        the iteration whose request missed)."""
        return self._exchanges(misses=True)

    def _exchanges(self, *, misses: bool) -> list[Interaction]:
        with self._lock:
            log = list(self._log)
            recorded = list(self.recorded_interactions)
            extra = list(self._recorder.witnessed) + (list(self._missed) if misses else [])
        used = [recorded[index] if new else self.loaded[index] for new, index in log]
        # from the last position back; those before the same logged exchange keep their
        # order (witnessed ones, then misses)
        for position, interaction in reversed(sorted(extra, key=lambda pair: pair[0])):
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
        """Stop answering requests, and finish the recorded responses the agent never
        closed (:meth:`finish_streams`)."""
        self._interceptor.stop()
        self._mcp.close()
        self.finish_streams()

    def finish_streams(self) -> None:
        """Finish the recorded responses the agent never closed (see the module docstring):
        the test has ended, so the agent reads no more of them. The plugin calls it as soon
        as the test function returns, while the agent's clients are still open."""
        self._recorder.finish_streams()

    def save(self, run_id: str) -> bool:
        """Write what was recorded; returns whether the file was written.

        A shared cassette is read again under its lock and only this test's interactions
        change (see :func:`.saving.merged`). A test's own cassette: ``new`` mode appends to the
        file as it is now; ``rewrite`` replaces it, except when another test of the same run
        (``run_id``) already wrote it (two tests whose cassettes have one path): then it
        appends, so both tests' interactions are kept.

        Raises :class:`CassetteWriteError` when the file cannot be written; the previous
        version is then kept as it was.
        """
        existed = self.path.exists()
        try:
            return save_recorded(
                self.path,
                # scrubbed again with the secrets learned since (a token a response gave)
                self._recorder.scrubs.again(self.recorded_interactions),
                mode=self.mode,
                shared=self.shared,
                test_id=self.test_id,
                redactor=self.redactor,
                key_of=self._keys.of_interaction,
                run_id=run_id,
                style=self.style,
                day=self.day,
            )
        except OSError as exc:
            raise write_error(
                exc, self.path, existed=existed, command=self.record_command()
            ) from None
