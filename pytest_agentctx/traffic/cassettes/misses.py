"""What a test is told when its cassette cannot answer it.

A request with no unused recording is a :class:`Miss`: its message gives the reason, the
closest recording the test may replay and a field-level diff against it, and the command
that re-records the test. A partial recording the agent reads past, and recordings no
request used (a stale cassette), have their own messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentctx.traffic.cassettes.matcher import NO_JSON, RequestKey, json_diff, strip_fields
from pytest_agentctx.traffic.cassettes.replay import Replays
from pytest_agentctx.traffic.cassettes.saving import file_on_the_way

__all__ = ["Miss", "miss_message", "miss_reason", "partial_message", "stale_message"]


@dataclass(frozen=True)
class Miss:
    """A request the cassette could not answer."""

    key: RequestKey
    body: Any
    reason: str


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
            else "there is no cassette"
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


def _closest(
    replays: Replays, miss: Miss, ignored: Sequence[Sequence[str]]
) -> tuple[int, list[str]] | None:
    best: tuple[int, list[str]] | None = None
    keys = replays.keys
    # Only what this test may replay: another test's recording of the same request in
    # a shared cassette would show no difference, and explain nothing.
    candidates = [
        i
        for i in replays.order
        if (keys[i].method, keys[i].host, keys[i].path)
        == (miss.key.method, miss.key.host, miss.key.path)
    ] or replays.order
    now = strip_fields(miss.body, ignored) if miss.body is not NO_JSON else None
    for position in candidates[:200]:
        recorded = replays.loaded[position].request_body
        recorded_json = recorded.get("json") if recorded else None
        diff = json_diff(strip_fields(recorded_json, ignored), now)
        line = keys[position].describe()
        if line != miss.key.describe():
            diff.insert(0, f"(request line): recorded {line} != now {miss.key.describe()}")
        if best is None or len(diff) < len(best[1]):
            best = (position, diff)
    return best


def miss_message(
    replays: Replays,
    miss: Miss,
    *,
    path: Path,
    ignored: Sequence[Sequence[str]],
    played: Sequence[int],
    command: str,
) -> str:
    """The message of ``miss``: the request, the reason, the closest recording the test
    may replay (``played``: the positions used so far) and how they differ, and the
    ``command`` that re-records the test."""
    lines = [
        f"Cassette {path} cannot answer {miss.key.describe()}: {miss.reason}.",
    ]
    closest = _closest(replays, miss, ignored) if replays.loaded else None
    if closest is not None:
        position, diff = closest
        used = " (already used)" if position in played else ""
        lines.append(
            f"Closest recorded request: interaction #{position}{used}, "
            f"{replays.keys[position].describe()}; differences:"
        )
        if not diff:
            diff = [
                "(the same request: every recording of it was used already)"
                if replays.keys[position] == miss.key
                else "(the bodies differ outside their JSON fields: compare them by hand)"
            ]
        lines.extend(f"  {line}" for line in diff)
    lines.append(
        "If the agent's requests changed on purpose, re-record this test: "
        f"{command}"
        + (
            " (the other tests' interactions in the shared cassette are kept)"
            if replays.shared
            else ""
        )
    )
    return "\n".join(lines)


def partial_message(replays: Replays, position: int, *, path: Path, command: str) -> str:
    """The message of a partial recording, at ``position``, that the agent read past."""
    interaction = replays.loaded[position]
    events = len((interaction.response_body or {}).get("sse") or [])
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


def stale_message(replays: Replays, unused: Sequence[int], *, path: Path, command: str) -> str:
    """The message of a stale cassette: the recordings at ``unused`` were never used."""
    listed = "\n".join(f"  #{i}: {replays.keys[i].describe()}" for i in unused[:10])
    return (
        f"Cassette {path}: {len(unused)} of {len(replays.loaded)} recorded "
        f"interactions were never used; the agent no longer sends them:\n{listed}\n"
        "The cassette is stale. Re-record this test: "
        f"{command}\nor, if the test should not use them all, mark it "
        "@pytest.mark.agent(allow_unused=True)."
    )
