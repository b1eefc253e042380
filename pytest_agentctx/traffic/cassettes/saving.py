"""Saving what a test recorded into its cassette, and the clear error of a save that fails.

A shared cassette is read again under its lock and only the test's interactions change
(:func:`merged`). A test's own cassette: ``new`` mode appends to the file as it is now;
``rewrite`` replaces it, except when another test of the same run already wrote it (two
tests whose cassettes have one path): then it appends, so both tests' interactions are
kept. Everything written is scrubbed of secrets, what was loaded (maybe another tool's
cassette) as much as what was recorded.
"""

from __future__ import annotations

import dataclasses
import errno
import json
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_agentctx.exceptions import UsageError
from pytest_agentctx.traffic.cassettes.body import Body
from pytest_agentctx.traffic.cassettes.defaults import RecordMode
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.matcher import RequestKey
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.cassettes.runs import locked, mark_written, written_in_run
from pytest_agentctx.traffic.cassettes.store import forget, load_cassette, write_cassette
from pytest_agentctx.traffic.errors import CassetteWriteError
from pytest_agentctx.traffic.roles import DEFAULT_ROLE

KeyOf = Callable[[Interaction], RequestKey]


def save_recorded(
    path: Path,
    recorded: list[Interaction],
    *,
    mode: RecordMode,
    shared: bool,
    test_id: str,
    redactor: Redactor,
    key_of: KeyOf,
    run_id: str,
    style: str = "native",
    day: str = "",
) -> bool:
    """Write the interactions the test ``test_id`` ``recorded`` into the cassette at
    ``path``; returns whether the file was written. ``key_of`` gives an interaction's
    request key (to find the ones of no known test that a re-recording replaces). Each
    recorded interaction is dated ``day`` (``YYYY-MM-DD``), or the day of the same
    interaction in the file before (see :func:`dated`)."""

    if (
        not shared
        and not recorded
        and not (
            # A re-recorded test that no longer sends anything: its old cassette would
            # fail as stale on every replay, so it is emptied.
            mode is RecordMode.REWRITE and path.exists()
        )
    ):
        return False
    with locked(path):
        # What was loaded (maybe another tool's cassette) is scrubbed like the rest.
        if shared:
            current = _fresh_load(path)
            recorded = dated(recorded, current, day)
            new = merged(current, recorded, mode=mode, test_id=test_id, key_of=key_of)
            if new is None:
                return False
            written = [_scrubbed(i, redactor) for i in new]
        else:
            same_run = written_in_run(path, run_id)
            kept = mode is RecordMode.NEW or same_run or mode is RecordMode.JUDGE
            current = _fresh_load(path) if kept else _earlier(path)
            base = current if kept else []
            if mode is RecordMode.JUDGE:  # the agent's kept as they are, the judge's anew
                base = [i for i in current if i.role != "judge"]
            written = [_scrubbed(i, redactor) for i in base] + dated(recorded, current, day)
        # Marked first: a marker that cannot be written leaves the cassette as it was.
        mark_written(path, run_id)
        write_cassette(path, written, style=style)
    return True


def missing_mode(
    path: Path,
    loaded: list[Interaction],
    *,
    existed: bool,
    shared: bool,
    test_id: str,
    run_id: str,
) -> RecordMode:
    """What ``missing`` means for the test ``test_id`` of the cassette at ``path`` (which
    ``existed``, holding ``loaded``): record when it has no recording."""
    if not existed:
        return RecordMode.REWRITE
    if shared:
        # Record unless the shared cassette holds this test's interactions, or ones of
        # no known test (an older cassette, which every test replays).
        mine = {"", test_id}
        return RecordMode.NONE if any(i.test_id in mine for i in loaded) else RecordMode.REWRITE
    if run_id and run_wrote(path, run_id):
        # Another test of this run wrote this file (two tests whose cassettes have the
        # same path): keep what it recorded, add what this test needs.
        return RecordMode.NEW
    return RecordMode.NONE


def dated(recorded: list[Interaction], earlier: list[Interaction], day: str) -> list[Interaction]:
    """``recorded`` with each interaction dated: the day of the same interaction (request,
    response and all, but its day) in ``earlier`` (the file before), so that traffic
    recorded again unchanged leaves the file unchanged, else ``day``. One already dated
    keeps its day; with ``day`` ``""`` none is dated anew."""
    days: dict[str, str] = {}
    for interaction in earlier:
        if interaction.recorded_on:
            days.setdefault(_undated_text(interaction), interaction.recorded_on)
    out = []
    for interaction in recorded:
        if not interaction.recorded_on:
            known = days.get(_undated_text(interaction), day) if days else day
            interaction = dataclasses.replace(interaction, recorded_on=known)
        out.append(interaction)
    return out


def recording_day(
    replayed: Sequence[Interaction], recorded: Sequence[Interaction], day: str
) -> str | None:
    """The day of the agent's recordings a test used (the latest, if several; of the
    other roles' when it used none of the agent's): those it ``replayed``, and ``day`` for
    those it ``recorded``; ``None`` when none is dated."""
    used = [(i.role, i.recorded_on) for i in replayed] + [(i.role, day) for i in recorded]
    agent = [on for role, on in used if role == DEFAULT_ROLE and on]
    return max(agent or [on for _, on in used if on], default=None)


def _undated_text(interaction: Interaction) -> str:
    """The stored form of ``interaction`` without its day, as one text."""
    data = dict(interaction.to_dict())
    data.pop("recorded_on", None)
    return json.dumps(data, sort_keys=True, default=str)


def _earlier(path: Path) -> list[Interaction]:
    """The interactions of the cassette at ``path`` before it is re-recorded (for their
    days): none when there is no file, or one that cannot be read (re-recording replaces
    it whole)."""
    try:
        return _fresh_load(path) if path.exists() else []
    except (UsageError, OSError):  # malformed, or past a limit of untrusted files
        return []


def merged(
    current: list[Interaction],
    recorded: list[Interaction],
    *,
    mode: RecordMode,
    test_id: str,
    key_of: KeyOf,
) -> list[Interaction] | None:
    """The shared cassette ``current`` with the ``recorded`` interactions of the test
    ``test_id`` in (``None`` when nothing changes).

    ``rewrite`` drops this test's interactions, and those of no known test that its new
    requests match (one each), and puts the new ones where the first dropped one was;
    ``new`` puts them after this test's last interaction. Both append when the test has
    none; every other interaction keeps its place.
    """
    mine = test_id
    if mode is RecordMode.JUDGE:  # this test's judge recordings replaced, where they were
        dropped = {p for p, i in enumerate(current) if i.test_id == mine and i.role == "judge"}
        own = [p for p, i in enumerate(current) if i.test_id == mine]
        at = min(dropped, default=own[-1] + 1 if own else len(current))
    elif mode is RecordMode.REWRITE:
        dropped = {p for p, i in enumerate(current) if i.test_id == mine}
        if mine:
            dropped |= _matched_anyones(current, recorded, key_of)
        at = min(dropped, default=len(current))
    else:
        dropped = set()
        own = [p for p, i in enumerate(current) if i.test_id == mine]
        at = own[-1] + 1 if own else len(current)
    if not dropped and not recorded:
        return None
    kept = [(p, i) for p, i in enumerate(current) if p not in dropped]
    return [
        *(i for p, i in kept if p < at),
        *recorded,
        *(i for p, i in kept if p >= at),
    ]


def _matched_anyones(
    current: list[Interaction], recorded: list[Interaction], key_of: KeyOf
) -> set[int]:
    """Positions of the interactions of no known test in ``current`` that ``recorded``
    re-records: for each recorded request, the first one with the same request."""
    free: dict[RequestKey, deque[int]] = {}
    for position, interaction in enumerate(current):
        if not interaction.test_id:
            free.setdefault(key_of(interaction), deque()).append(position)
    matched: set[int] = set()
    for interaction in recorded:
        queue = free.get(key_of(interaction))
        if queue:
            matched.add(queue.popleft())
    return matched


def write_error(exc: OSError, path: Path, *, existed: bool, command: str) -> CassetteWriteError:
    """The clear error of a save of the cassette at ``path`` that failed with ``exc``
    (``existed``: whether there was a cassette before; ``command`` records the test)."""
    reason = exc.strerror or str(exc)
    code = errno.errorcode.get(exc.errno or 0)
    if code:
        reason += f", {code}"
    if exc.filename and Path(str(exc.filename)) != path:
        reason += f", on {exc.filename}"
    kept = (
        "The previous version of the cassette is kept unchanged."
        if existed
        else "No cassette was written (there was none before)."
    )
    again = f"then record again: {command}"
    blocking = file_on_the_way(path)
    if blocking is not None:
        todo = (
            f"{blocking} is a file, where a folder of the cassette should be: move it "
            f"away (or set agent_cassette_dir to another folder), {again}"
        )
    elif exc.errno in (errno.ENOSPC, errno.EDQUOT):
        todo = f"Free some disk space, {again}"
    elif exc.errno == errno.EFBIG:
        todo = f"Raise the file size limit of this process (ulimit -f), {again}"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        todo = (
            f"Make {_nearest_folder(path)} writable for the user running pytest (or set "
            f"agent_cassette_dir to a writable folder), {again}"
        )
    else:
        todo = f"Fix the cause above, {again}"
    return CassetteWriteError(f"Cassette {path} could not be saved ({reason}). {kept} {todo}")


def file_on_the_way(path: Path) -> Path | None:
    """The file that stands where a folder of ``path`` should be, if any."""
    for folder in reversed(path.parents):
        if folder.exists() and not folder.is_dir():
            return folder
        if not folder.exists():
            return None
    return None


def _nearest_folder(path: Path) -> Path:
    """The folder of ``path`` that exists: its own, or the closest one above it (where the
    missing ones must be created)."""
    return next((f for f in path.parents if f.is_dir()), path.parent)


def _scrubbed(interaction: Interaction, redactor: Redactor) -> Interaction:
    """``interaction`` with its secrets redacted (headers, URL, bodies)."""
    return dataclasses.replace(
        interaction,
        url=redactor.url(interaction.url),
        request_headers=dict(redactor.header_items(interaction.request_headers.items())),
        request_body=redactor.body(interaction.request_body),
        response_headers=dict(redactor.response_header_items(interaction.response_headers.items())),
        response_body=redactor.body(interaction.response_body),
    )


class Scrubs:
    """Which secrets each interaction a test recorded was scrubbed of, to scrub it again
    before it is written when a secret was learned since: an access token a response gave
    is sent by a later request (``Authorization: Bearer``), a cookie a response set is
    sent back. It keeps the bytes the bodies were read from, and the texts a stream
    reassembles to, so that a body with no secret in them is not taken apart again."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        #: slot: the redactor's generation when its request was scrubbed, the bytes of its
        #: request body, of its response body, and the texts its stream reassembles to
        self._scrubbed: dict[int, tuple[int, bytes, bytes | None, list[str] | None]] = {}
        #: The secret values of each generation an interaction was scrubbed in.
        self._known: dict[int, frozenset[str]] = {}
        #: A redactor of only the values learned since, by those values.
        self._deltas: dict[frozenset[str], Redactor] = {}

    def request(self, slot: int, raw: bytes) -> None:
        """The request of the interaction in ``slot`` was scrubbed, its body read from
        ``raw``."""
        generation = self.redactor.generation
        if generation not in self._known:
            self._known[generation] = frozenset(self.redactor.secret_values)
        self._scrubbed[slot] = (generation, raw, None, None)

    def response(self, slot: int, body: Body, raw: bytes) -> Body:
        """Its response ``body``, read from ``raw``, scrubbed (:meth:`Redactor.body`)."""
        # with no secret known yet, the body is not looked at: nor are its texts gathered
        texts: list[str] | None = [] if self.redactor.secret_values else None
        scrubbed = self.redactor.body(body, raw=raw, texts=texts)
        generation, request, _, _ = self._scrubbed[slot]
        self._scrubbed[slot] = (generation, request, raw, texts)
        return scrubbed

    def again(self, recorded: list[Interaction | None]) -> list[Interaction]:
        """The complete interactions of ``recorded`` (by slot), those scrubbed before the
        secrets last changed scrubbed again, unless a look at their bytes shows that they
        hold none of the secrets learned since."""
        redactor, out = self.redactor, []
        for slot, interaction in enumerate(recorded):
            if interaction is None:
                continue
            generation, request, response, texts = self._scrubbed.get(slot, (-1, b"", None, None))
            if generation == redactor.generation:
                out.append(interaction)
                continue
            delta = self._delta(generation)
            if delta is None or not _holds_none(delta, interaction, request, response, texts):
                # headers and URL again, then the bodies from their bytes
                bare = dataclasses.replace(interaction, request_body=None, response_body=None)
                bare = dataclasses.replace(interaction, request_body=None, response_body=None)
                interaction = dataclasses.replace(
                    _scrubbed(bare, redactor),
                    request_body=redactor.body(interaction.request_body, raw=request or None),
                    response_body=redactor.body_again(
                        interaction.response_body, raw=response, texts=texts
                    ),
                )
            out.append(interaction)
        return out

    def _delta(self, generation: int) -> Redactor | None:
        """A redactor of the secrets learned since ``generation`` (``None``: not known)."""
        known = self._known.get(generation)
        if known is None:
            return None
        new = frozenset(self.redactor.secret_values) - known
        delta = self._deltas.get(new)
        if delta is None:
            delta = self._deltas[new] = Redactor(env=(), extra_values=sorted(new), by_name=False)
        return delta


def _holds_none(
    delta: Redactor,
    interaction: Interaction,
    request: bytes,
    response: bytes | None,
    texts: list[str] | None,
) -> bool:
    """Whether ``interaction`` surely holds none of the secrets ``delta`` knows: not in its
    URL and headers, not in the bytes its bodies were read from (as :meth:`Redactor.json`
    looks at them), nor in the texts its stream reassembles to. A text body (which may be
    JSON lines, a stream) is never taken as holding none."""
    if not delta.secret_values:
        return True
    for body, raw in (
        (interaction.request_body, request or None),
        (interaction.response_body, response),
    ):
        if body is None:
            continue
        if "text" in body or "multipart" in body or delta._straddles or not delta._clean(raw):
            return False
        streamed = "sse" in body or "eventstream" in body
        if streamed and (texts is None or any(map(delta._found_in, texts))):
            return False
    headers = (*interaction.request_headers.items(), *interaction.response_headers.items())
    # one look at all of them: a line each, so that no secret spans two
    return not delta.holds("\n".join([interaction.url, *(f"{n}\n{v}" for n, v in headers)]))


def _fresh_load(path: Path) -> list[Interaction]:
    forget(path)
    return load_cassette(path)


def run_wrote(path: Path, run_id: str) -> bool:
    """Whether the run ``run_id`` wrote the cassette at ``path`` (no when no marker can
    be read: as if none was written)."""
    try:
        return written_in_run(path, run_id)
    except OSError:
        return False
