"""Where a replayed simulated conversation left its recording: the turn the agent diverged.

On replay, the simulated user's model calls are answered from the cassette only while the
conversation is the recorded one. When the agent's reply at turn k differs from the
recording, the simulator's next request (which carries the agent's replies so far) has no
recording: that miss is the agent's doing, not the simulator's. :func:`divergence_message`
reads the missed request and the recorded simulator requests of the same endpoint, finds the
recorded conversation closest to it (the longest run of equal agent replies), and says at
which turn the agent's reply changed, with a diff of the recorded and the new reply.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from pytest_agentctx.traffic.cassettes.explained import EXPLAINERS
from pytest_agentctx.traffic.codecs.base import Codec, NeutralMessage, codec_for_path
from pytest_agentctx.traffic.errors import CodecError

#: The role of a simulated user's model calls.
ROLE = "user_sim"

#: The first user message of every request a simulated user sends: it starts the
#: conversation, and tells its requests from others'.
OPENING = "The conversation starts now. Write the user's first message."


@dataclass(frozen=True)
class Divergence:
    """The first turn at which the agent's reply differs from the recorded conversation."""

    turn: int
    recorded: str
    now: str

    def message(self) -> str:
        diff = difflib.unified_diff(
            self.recorded.splitlines(),
            self.now.splitlines(),
            f"the agent's reply at turn {self.turn}, recorded",
            f"the agent's reply at turn {self.turn}, now",
            lineterm="",
        )
        return (
            f"The agent diverged at turn {self.turn} of the simulated user's conversation: "
            f"its reply at turn {self.turn} differs from the recording, so the simulated "
            "user's next message has no recording (the simulated user made no new call).\n"
            + "\n".join(diff)
        )


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return "" if content is None else str(content)


def agent_replies(messages: Sequence[NeutralMessage]) -> list[str] | None:
    """The agent's replies a simulator's request carries (its user messages after the
    opening line), or ``None`` when the request is not a simulated user's."""
    texts = [(m.get("role"), _text(m.get("content"))) for m in messages]
    for index, (role, text) in enumerate(texts):
        if role == "user" and text == OPENING:
            return [text for role, text in texts[index + 1 :] if role == "user"]
    return None


def _replies_of(codec: Codec, body: object) -> list[str] | None:
    if not isinstance(body, dict):
        return None
    try:
        return agent_replies(codec.decode_request(body).messages)
    except CodecError:
        return None


def find_divergence(now: Sequence[str], recorded: Iterable[Sequence[str]]) -> Divergence | None:
    """The turn where ``now`` (the agent's replies a missed request carries) leaves the
    recorded conversation that follows it longest; ``None`` when no recording has a reply
    where ``now`` differs (the miss is not the agent's doing)."""
    best: Divergence | None = None
    for replies in recorded:
        same = 0
        while same < min(len(now), len(replies)) and now[same] == replies[same]:
            same += 1
        if same < len(now) and same < len(replies) and (best is None or same + 1 > best.turn):
            best = Divergence(same + 1, replies[same], now[same])
    return best


def divergence_message(
    url: str, body: object, recorded: Iterable[tuple[str, object]]
) -> str | None:
    """What to say of a missed request (``url`` or its path, JSON ``body``) that a simulated
    user sent, given the recorded simulator requests (``(url or path, JSON body)`` each): the
    turn the agent diverged and the diff, or ``None`` when the request is not a simulated
    user's or the agent's replies do not explain the miss."""
    path = urlsplit(url).path
    codec = codec_for_path(path)
    if codec is None:
        return None
    now = _replies_of(codec, body)
    if not now:
        return None
    candidates = [
        replies
        for other_url, other_body in recorded
        if urlsplit(other_url).path == path
        and (replies := _replies_of(codec, other_body)) is not None
    ]
    found = find_divergence(now, candidates)
    return None if found is None else found.message()


EXPLAINERS[ROLE] = divergence_message
