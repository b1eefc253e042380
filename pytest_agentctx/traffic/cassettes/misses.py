"""What a test is told when its cassette cannot answer it.

A request with no unused recording is a :class:`Miss`: its message gives the reason, the
one recording closest to it that the test may replay (:func:`closest`) and how they differ
(the differing fields, a long one as a window around its change, see :mod:`.diffs`; with
``pytest -vv`` the complete diff of the bodies), and the command that re-records the
test. A partial recording the agent reads past, and recordings no
request used (a stale cassette), have their own messages.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pytest_agentctx.traffic.cassettes.body import body_bytes
from pytest_agentctx.traffic.cassettes.diffs import (
    FieldDiff,
    body_diffs,
    field_lines,
    one_line,
    unified_diff,
)
from pytest_agentctx.traffic.cassettes.explained import explain
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.matcher import (
    NO_JSON,
    Compared,
    RequestKey,
    compared,
    parse_json,
    strip_fields,
)
from pytest_agentctx.traffic.cassettes.mediatypes import header_of
from pytest_agentctx.traffic.cassettes.replay import Replays
from pytest_agentctx.traffic.cassettes.saving import file_on_the_way
from pytest_agentctx.traffic.mcp.jsonrpc import describe, is_jsonrpc_value, normalised
from pytest_agentctx.traffic.roles import DEFAULT_ROLE, rubric_in

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes.vcr_matchers import Matcher, VcrRequest


@dataclass(frozen=True)
class Miss:
    """A request the cassette could not answer."""

    key: RequestKey
    body: object
    reason: str
    #: The client library that sent it, when not the SDKs' httpx2 (``requests``).
    client: str = ""
    #: Its body's bytes (redacted) when it is not JSON, and its content type.
    raw: bytes = b""
    content_type: str = ""
    #: The request as vcrpy's matchers saw it, when the test matches on ``match_on``.
    request: VcrRequest | None = None


#: What of a recorded request's body (an :class:`Interaction`) or a missed one's (a
#: :class:`Miss`) is matched.
Compare = Callable[[Interaction | Miss], Compared]


def plain_compare(comparable: Callable[[object], object]) -> Compare:
    """A :data:`Compare` that passes JSON bodies through ``comparable`` and reads the
    others as they are (no body hook)."""

    def compare(item: Interaction | Miss) -> Compared:
        if isinstance(item, Miss):
            body_json, raw, kind = item.body, item.raw, item.content_type
        else:
            stored = item.request_body
            kind = header_of(item.request_headers, "content-type")
            if stored is not None and "json" in stored:
                body_json, raw = stored["json"], b""
            else:
                raw = body_bytes(stored)
                body_json = parse_json(raw)
        if body_json is not NO_JSON:
            return Compared("json", comparable(body_json), b"", kind)
        return compared(NO_JSON, raw, kind, (), None)

    return compare


def miss_reason(replays: Replays, key: RequestKey, *, path: Path, existed: bool) -> str:
    """Why no recording of ``replays`` answers a request of ``key`` (the cassette at
    ``path``; ``existed``: whether there was one when the test started)."""
    if not replays.loaded:
        if existed:
            return "the cassette is empty"
        blocking = file_on_the_way(path)
        return (
            f"there is no cassette ({blocking} is a file, where a folder of the cassette "
            "should be: move it away before recording)"
            if blocking is not None
            else f"there is no cassette{_renamed_hint(path)}"
        )
    if key in replays.ambiguous:
        return (
            "this test has no recording of its own in the shared cassette, and the tests "
            f"that recorded this request ({', '.join(replays.ambiguous[key])}) got different "
            "answers, so none of them can stand in for this test's"
        )
    if key in replays.index:
        total = sum(1 for p in replays.order if replays.keys[p] == key)
        where = "the recordings this test replays have" if replays.shared else "the cassette has"
        return f"{where} this request {total} time(s) and all were used already"
    others = sorted(
        {i.test_id for i, k in zip(replays.loaded, replays.keys, strict=True) if k == key}
    )
    if replays.shared and others:
        return (
            f"only other tests recorded this request in the shared cassette "
            f"({', '.join(others)}), and a test replays its own recordings"
        )
    return "the cassette has no such request"


def _renamed_hint(path: Path) -> str:
    """For a cassette whose name ends with a digest (its test's name held characters a file
    name cannot hold, or a secret): where the name an earlier version gave it is a file, how
    to rename it; else nothing."""
    import re

    legacy = re.sub(r"~[0-9a-f]{8}(?=(?:-repeat-[0-9]+)?$)", "", path.stem)
    if legacy == path.stem or not (old := path.with_name(legacy + path.suffix)).is_file():
        return ""
    return (
        f" ({old.name} beside it is where earlier versions kept this test's recordings; "
        "if no other test's name differs from this one's only in characters a file name "
        f"cannot hold, rename it: git mv '{old}' '{path}')"
    )


#: Recordings compared with a missed request, at most (the first in the replay order).
CANDIDATES = 200
#: Differing fields shown, by default (with ``-vv``: :data:`FIELDS_VERBOSE`).
FIELDS_SHOWN = 3
FIELDS_VERBOSE = 50
#: Differing fields named in the heading of the closest recording.
FIELDS_NAMED = 5


@dataclass(frozen=True)
class Closest:
    """The recording closest to a missed request: its position in the cassette, whether
    the test used it already, and how the two differ (the request line, when it differs,
    first, as the field ``(request line)``)."""

    position: int
    used: bool
    diffs: list[FieldDiff]

    @property
    def score(self) -> tuple[int, bool]:
        """What makes a recording closer: fewer differing fields, then not used yet."""
        return len(self.diffs), self.used


def closest(
    replays: Replays,
    miss: Miss,
    *,
    played: Sequence[int] = (),
    comparable: Callable[[object], object] = lambda body: body,
    compare: Compare | None = None,
) -> Closest | None:
    """The one recording the test may replay that is closest to ``miss``: the fewest
    differing fields (:attr:`Closest.score`), of equal ones the first not used yet
    (``played``), then the first in the order the test replays them. Recordings of the
    same method, host and path are compared when there are any, the others otherwise.
    ``compare`` gives what of a body is compared (secrets redacted, ignored fields
    removed, through the body hook), for the recorded bodies and the request's; by
    default JSON bodies through ``comparable`` and the others as they are."""
    keys = replays.keys
    if compare is None:
        compare = plain_compare(comparable)
    # Only what this test may replay: another test's recording of the same request in
    # a shared cassette would show no difference, and explain nothing.
    # Only recordings of the request's role: a judge's request is never answered by, nor
    # compared with, the agent's recordings.
    own_role = [i for i in replays.order if keys[i].role == miss.key.role] or replays.order
    candidates = [
        i
        for i in own_role
        if (keys[i].method, keys[i].host, keys[i].path)
        == (miss.key.method, miss.key.host, miss.key.path)
    ] or own_role
    now = compare(miss)
    used = set(played)
    best: Closest | None = None
    for position in candidates[:CANDIDATES]:
        diffs = body_diffs(compare(replays.loaded[position]), now)
        line = keys[position].describe()
        if line != miss.key.describe():
            diffs.insert(0, FieldDiff("(request line)", line, miss.key.describe(), plain=True))
        found = Closest(position, position in used, diffs)
        if best is None or found.score < best.score:
            best = found
    return best


def miss_message(
    replays: Replays,
    miss: Miss,
    *,
    path: Path,
    ignored: Sequence[Sequence[str]],
    played: Sequence[int],
    test_id: str | None,
    verbosity: int = 0,
    comparable: Callable[[object], object] | None = None,
    compare: Compare | None = None,
) -> str:
    """The message of ``miss``: the request, the reason, the one recording closest to it
    that the test may replay (:func:`closest`; ``played``: the positions used so far) and
    how they differ, and the command that re-records the test ``test_id``.

    By default a few lines: which fields differ, and each (the first
    :data:`FIELDS_SHOWN`) whole when short, as a window around its first difference when
    long. With ``verbosity`` 2 (``pytest -vv``) or more, every differing field and the
    complete diff of the two bodies. ``compare`` gives what of a body is compared (by
    default: JSON bodies through ``comparable``, by default without the ``ignored``
    fields); the caller redacts the message. A miss that the explainer of its role
    explains (:mod:`.explained`: a simulated user's request after the agent diverged) is
    told that explanation instead.
    """
    if comparable is None:
        comparable = functools.partial(_without_volatile, ignored=ignored)
    if compare is None:
        compare = plain_compare(comparable)
    explained = explain(miss.key.role, miss.key.path, miss.body, replays.loaded)
    if explained is not None:  # a layer above knows why (a simulated user's turn)
        return f"{explained}\n{_advice(replays, test_id)}"
    lines = [first_line(miss, path=path)]
    found = closest(replays, miss, played=played, compare=compare) if replays.loaded else None
    if found is not None:
        lines.extend(rubric_lines(replays, miss, found.position))
        lines.extend(_closest_lines(replays, miss, found, verbosity, compare, path))
    lines.append(_advice(replays, test_id, miss.key.role))
    return "\n".join(lines)


def rubric_lines(replays: Replays, miss: Miss, position: int) -> list[str]:
    """When ``miss`` is a judge's request whose rubric differs from the one of the
    recording at ``position`` (a judge's too): that the judge's rubric changed, and the
    diff of the two rubrics (recorded ``-``, now ``+``)."""
    if miss.key.role == DEFAULT_ROLE or replays.keys[position].role != miss.key.role:
        return []
    request_body = replays.loaded[position].request_body
    recorded = rubric_in(request_body.get("json") if request_body else None)
    now = rubric_in(miss.body)
    if recorded is None or now is None or recorded == now:
        return []
    diff = difflib.unified_diff(
        recorded.splitlines(), now.splitlines(), "recorded rubric", "rubric now", lineterm=""
    )
    return [
        f"The judge's rubric changed since interaction #{position} was recorded "
        "(re-record the judge alone: pytest --agent-record=judge):",
        *(f"  {line}" for line in diff),
    ]


def _without_volatile(body: object, ignored: Sequence[Sequence[str]]) -> object:
    """A JSON body as matched by default: without the ``ignored`` fields, and a JSON-RPC
    message (MCP) without its volatile ones."""
    return strip_fields(normalised(body), ignored)


def requested(key: RequestKey, body: object) -> str:
    """A request in a few words: ``POST api.openai.com/v1/chat/completions``; an MCP
    request by what it asks, then its request line: ``MCP request tools/call get_order to
    server orders (POST orders/)`` (see :func:`~pytest_agentctx.traffic.mcp.jsonrpc.describe`)."""
    line = key.describe()
    if not is_jsonrpc_value(body):
        return line
    server = key.host if key.path == "/" else f"{key.host}{key.path}"
    return f"MCP request {describe(body)} to server {server} ({line})"


def recorded_request(replays: Replays, position: int) -> str:
    """The recording at ``position`` in a few words (:func:`requested`)."""
    body = replays.loaded[position].request_body
    return requested(replays.keys[position], body.get("json") if body else None)


def first_line(miss: Miss, *, path: Path) -> str:
    """The first line of the message of ``miss``: the cassette, the request, the reason."""
    sent = f" (sent through {miss.client})" if miss.client else ""
    return f"Cassette {path} cannot answer {requested(miss.key, miss.body)}{sent}: {miss.reason}."


def response_message(miss: Miss, *, path: Path) -> str:
    """What the agent's SDK is told of ``miss`` (the body of the error response): the
    first line only, as the test's failure shows the rest."""
    return (
        f"{first_line(miss, path=path)} The test fails with CassetteMiss, which compares "
        "the request with the closest recorded one."
    )


def record_command(test_id: str | None, mode: str | None = None) -> str:
    """The command that re-records the test ``test_id``: all its calls, or with ``mode``
    (``judge``) only the calls that mode records again."""
    option = "--agent-record" if mode is None else f"--agent-record={mode}"
    return f'pytest {option} "{test_id or "<test id>"}"'


def _advice(replays: Replays, test_id: str | None, role: str = DEFAULT_ROLE) -> str:
    """How to re-record the test ``test_id``: all of it, or, for a judge's request, the
    judges' calls alone (``--agent-record=judge``, which keeps the agent's recordings as
    they are)."""
    kept = (
        " (the other tests' interactions in the shared cassette are kept)" if replays.shared else ""
    )
    if role == "judge":
        return (
            "If the judge's requests changed on purpose, re-record the judges' calls alone "
            f"(the agent's are replayed and kept): {record_command(test_id, 'judge')}{kept}"
        )
    whose = "the simulated user's" if role == "user_sim" else "the agent's"
    return (
        f"If {whose} requests changed on purpose, re-record this test: "
        f"{record_command(test_id)}{kept}"
    )


def _closest_lines(
    replays: Replays,
    miss: Miss,
    found: Closest,
    verbosity: int,
    compare: Compare,
    path: Path,
) -> list[str]:
    """The closest recording, how it differs from ``miss``, and, with ``verbosity`` 2,
    the complete diff of their bodies."""
    position, diffs = found.position, found.diffs
    heading = (
        f"Closest recorded request: interaction #{position}"
        f"{' (already used)' if found.used else ''}, {recorded_request(replays, position)}"
    )
    if not diffs:
        same = (
            "(the same request: every recording of it was used already)"
            if replays.keys[position] == miss.key
            else "(they differ in what no field shows: pytest -vv shows the full diff of the "
            f"bodies; pytest-agentctx cassettes show {path} prints the recording)"
        )
        lines = [f"{heading}; no field differs:", f"  {same}"]
        if verbosity >= 2 and replays.keys[position] != miss.key:
            lines.extend(_full_diff(compare(replays.loaded[position]), compare(miss)))
        return lines
    named = ", ".join(diff.path for diff in diffs[:FIELDS_NAMED])
    if len(diffs) > FIELDS_NAMED:
        named += f" and {len(diffs) - FIELDS_NAMED} more"
    count = "1 field differs" if len(diffs) == 1 else f"{len(diffs)} fields differ"
    lines = [f"{heading}; {count}: {named}"]
    verbose = verbosity >= 2
    shown = diffs[: FIELDS_VERBOSE if verbose else FIELDS_SHOWN]
    cut = len(shown) < len(diffs)
    for diff in shown:
        field, left_out = field_lines(diff)
        cut = cut or left_out
        lines.extend(f"  {line}" for line in field)
    if len(shown) < len(diffs):
        lines.append(f"  (and {len(diffs) - len(shown)} more differing field(s))")
    if any(diff.path.startswith(("tools", "toolConfig")) for diff in diffs):
        lines.extend(_tools_lines(replays, position, miss))
    if verbose:
        lines.extend(_full_diff(compare(replays.loaded[position]), compare(miss)))
    elif cut:
        lines.append("(pytest -vv shows every differing field and the full diff of the bodies)")
    return lines


def _tools_lines(replays: Replays, position: int, miss: Miss) -> list[str]:
    """What changed in a model call's tools, by tool and schema field, naming the MCP
    server whose recorded ``tools/list`` gave each (the tools an agent offers its model
    usually come from its MCP servers: a server that changed its tools makes the model call
    miss)."""
    from pytest_agentctx.traffic.capture.mcp import tools_miss_lines

    body = replays.loaded[position].request_body
    recorded = body.get("json") if isinstance(body, dict) else None
    return tools_miss_lines(recorded, miss.body, replays.loaded)


def _full_diff(recorded: Compared, now: Compared) -> list[str]:
    """The complete diff of two request bodies as they are matched, under its heading."""
    full = unified_diff(
        recorded.value if recorded.kind != "bytes" else f"{len(recorded.raw):,} bytes",
        now.value if now.kind != "bytes" else f"{len(now.raw):,} bytes",
    )
    return [
        "Full diff of the request bodies (- recorded, + now):",
        *(f"  {line}" for line in full),
    ]


def partial_message(replays: Replays, position: int, *, path: Path, command: str) -> str:
    """The message of a partial recording, at ``position``, that the agent read past."""
    interaction = replays.loaded[position]
    body = interaction.response_body or {}
    events = len(body.get("sse") or body.get("eventstream") or [])
    return (
        f"Cassette {path}: interaction #{position} "
        f"({replays.keys[position].describe()}) is a partial recording of a stream "
        f"({events} event(s)): while recording, the agent stopped reading it without "
        "closing it, and the rest could not be read when the test ended (an async "
        "stream, a stream whose client was closed first, or one that did not end in "
        "time). Now the agent reads past its end. "
        f"Re-record this test: {command}; if the agent stops reading a "
        "stream, close it (`with stream:` or `stream.close()`), which records what it read."
    )


def unreadable_message(
    replays: Replays, position: int, *, path: Path, command: Callable[[], str]
) -> str | None:
    """The message of the recorded response at ``position`` when its client cannot read it
    (a successful response that is not the JSON it says it is, see :func:`.body.not_json`),
    else ``None``. Whether it can is found once per response (see
    :meth:`.Interaction.unreadable`); ``command`` makes the command to record it again."""
    problem = replays.loaded[position].unreadable()
    if problem is None:
        return None
    return (
        f"Cassette {path}: interaction #{position} ({replays.keys[position].describe()}) "
        f"was replayed as recorded, but {problem}: the client cannot read it. The "
        "cassette was edited or damaged, or the server sent "
        f"this: re-record this test ({command()}), or fix interaction #{position} in the file "
        f"(pytest-agentctx cassettes show {path} prints it)."
    )


def step_of(interaction: Interaction) -> str | None:
    """Which step of its run a recorded model call was, in short: the message it answered
    (``after user: Weather in Paris?``), and how many model calls of its conversation came
    before it; ``None`` for a request that is not a model call this package reads."""
    from pytest_agentctx.traffic.codecs.base import codec_for_path
    from pytest_agentctx.traffic.errors import CodecError

    body = interaction.request_body or {}
    codec = codec_for_path(urlsplit(interaction.url).path)
    if codec is None or not isinstance(body.get("json"), Mapping):
        return None
    try:
        messages = codec.decode_request(body["json"]).messages
    except (CodecError, KeyError, TypeError, ValueError):
        return None
    if not messages:
        return None
    last = messages[-1]
    said = last.get("content") or "; ".join(
        f"calls {call.get('name', '?')}" for call in last.get("tool_calls") or ()
    )
    calls = 1 + sum(message.get("role") == "assistant" for message in messages)
    role = last.get("role", "?")
    return f"model call {calls} of its conversation, after {role}: {one_line(said, 60)}"


def stale_message(replays: Replays, unused: Sequence[int], *, path: Path, command: str) -> str:
    """The message of a stale cassette: the recordings at ``unused`` were never used, each
    named with the step of its run it was (:func:`step_of`) when it is a model call."""

    def line(position: int) -> str:
        step = step_of(replays.loaded[position])
        described = recorded_request(replays, position)
        return f"  #{position}: {described}" + (f" ({step})" if step else "")

    listed = "\n".join(line(i) for i in unused[:10])
    return (
        f"Cassette {path}: {len(unused)} of {len(replays.loaded)} recorded "
        f"interactions were never used; the agent no longer sends them:\n{listed}\n"
        "The cassette is stale. Re-record this test: "
        f"{command}\nor, if the test should not use them all, mark it "
        "@pytest.mark.agent(allow_unused=True)."
    )


# -- vcrpy's matching (match_on) ---------------------------------------------------------


def match_on_reason(
    replays: Replays,
    key: RequestKey,
    names: Sequence[str],
    *,
    used_match: bool,
    path: Path,
    existed: bool,
) -> str:
    """Why no recording answers a request of ``key`` when the test matches on
    ``match_on`` (the matchers ``names``; ``used_match``: a recording it used already
    accepts it)."""
    if not replays.loaded:
        return miss_reason(replays, key, path=path, existed=existed)
    listed = ", ".join(names)
    if used_match:
        return f"the recordings that match it on match_on ({listed}) were all used already"
    return f"no recording the test may replay matches it on match_on ({listed})"


def match_on_message(
    replays: Replays,
    miss: Miss,
    *,
    path: Path,
    matchers: Sequence[tuple[str, Matcher]],
    recorded: Callable[[int], VcrRequest],
    played: Sequence[int],
    command: str,
) -> str:
    """The message of ``miss`` when the test matches on ``match_on``: the request, the
    reason, the recording the fewest matchers refuse (of those the test may replay; of as
    close ones, one not used yet, then the first), each matcher that refuses it and why
    (for the built-in ones the values that differ), and the ``command`` that re-records
    the test. ``recorded`` gives a recording as the matchers see it."""
    from pytest_agentctx.traffic.cassettes.vcr_matchers import refusals

    lines = [first_line(miss, path=path)]
    now = miss.request
    if now is not None and replays.order:
        used = set(played)
        best: tuple[tuple[int, bool], int, list[tuple[str, str]]] | None = None
        for position in replays.order[:CANDIDATES]:
            refused = refusals(matchers, now, recorded(position))
            score = (len(refused), position in used)
            if best is None or score < best[0]:
                best = (score, position, refused)
        if best is not None:
            lines.extend(_refusal_lines(replays, best[1], best[2], best[0][1], len(matchers)))
    kept = " (the other tests' interactions in the shared cassette are kept)"
    lines.append(
        "If the agent's requests changed on purpose, re-record this test: "
        f"{command}{kept if replays.shared else ''}; if the matchers should accept this "
        "request, change match_on in agent_cassette_config"
    )
    return "\n".join(lines)


def _refusal_lines(
    replays: Replays, position: int, refused: list[tuple[str, str]], used: bool, total: int
) -> list[str]:
    heading = (
        f"Closest recorded request: interaction #{position}"
        f"{' (already used)' if used else ''}, {replays.keys[position].describe()}"
    )
    if not refused:
        return [f"{heading}; every matcher accepts it, but the test used it already"]
    names = ", ".join(name for name, _ in refused)
    count = (
        f"{len(refused)} of {total} matchers refuse it"
        if len(refused) > 1
        else (f"matcher {names} refuses it")
    )
    lines = [f"{heading}; {count}" + (f": {names}" if len(refused) > 1 else "")]
    for name, why in refused:
        first, *rest = why.splitlines() or [""]
        lines.append(f"  {name}: {first}" if not first.startswith(f"{name}:") else f"  {first}")
        lines.extend(f"    {line}" for line in rest)
    return lines
