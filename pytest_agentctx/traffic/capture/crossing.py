"""Conversations that change wire format: a retry or a continuation on another provider.

:mod:`.builder` joins a request to a conversation by its items, in the request's own wire
format. An agent may send the same conversation to another provider: a fallback retries a
failed call there (LiteLLM's fallbacks, pydantic-ai's ``FallbackModel``), or a run resumes
elsewhere with its history converted. The items then differ while the messages are the
same, so :class:`Crossings` compares the requests in provider-neutral form (what each
codec's ``decode_request`` gives), keeping only what survives a conversion:

* the roles (``developer`` reads as ``system``), consecutive ``system`` or ``user`` texts
  read as one (formats split and merge them differently), and texts compared without
  their whitespace;
* the tool calls' names and arguments (numbers compared by value: ``1`` is ``1.0``);
* the tool results' contents (a JSON one compared by value), and which call each one
  answers by its position in the request (tool call ids differ between formats:
  ``call_...``, ``toolu_...``, Gemini's own ids).

A request ``new`` of wire format F joins a conversation of another format whose last
request ``old`` it continues, in one of two ways only:

* **a retry**: the conversation's last call failed (an error status, or a body that does
  not decode) and ``new`` sends the same messages as ``old``, no more and no fewer;
* **a continuation**: the conversation's last call was answered, ``new`` starts with the
  messages of ``old``, and the message after them is that answer (its text and tool
  calls): ``new`` carries what the conversation's model replied.

So two conversations that only share a system prompt and a first user message (the same
question asked of two providers) never join, unless the first one's last call failed and
the other sends exactly its messages. Candidates are found by their first user text (an
index), so requests that start conversations are not compared with every other one. The
ids of the continued conversation are kept: the tool calls the new request echoes, and the
results it brings, are renamed to the ids the conversation's reply gave them.

Only a request that continues no conversation of its own wire format comes here. Requests
are read only through the codecs' ``decode_request``, so a new wire format takes part
without a change here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentctx.context.model import Message
from pytest_agentctx.traffic.capture.conversation import Conversation
from pytest_agentctx.traffic.capture.replies import UNREADABLE
from pytest_agentctx.traffic.codecs.base import Codec

#: Roles read as another one when requests are compared across formats.
_ROLES = {"developer": "system"}
#: Roles whose consecutive text messages read as one.
_MERGED = frozenset({"system", "user"})


@dataclass
class _Turn:
    """A message of a request, as a cross-format comparison sees it."""

    role: str
    text: str
    #: The tool calls, each ``(name, arguments as canonical JSON)``.
    calls: tuple[tuple[str, str], ...] = ()
    #: For a tool result: the position ``(turn, call)`` of the call it answers in the same
    #: request, when it is there.
    answers: tuple[int, int] | None = None
    #: The index of the request's last message this turn stands for (plus one).
    end: int = 0

    def same(self, other: _Turn) -> bool:
        return (
            self.role == other.role
            and self.text == other.text
            and self.calls == other.calls
            and (self.answers is None or other.answers is None or self.answers == other.answers)
        )


@dataclass(frozen=True)
class Join:
    """Where a request joins a conversation of another wire format."""

    conversation: Conversation
    #: How many of the request's decoded messages the conversation has already seen.
    offset: int
    #: The request's tool call ids that stand for the conversation's (new id: old id).
    ids: dict[str, str]


@dataclass
class _Last:
    """A conversation's last request: its codec and body, decoded only when needed."""

    codec: Codec
    body: Mapping[str, object]
    turns: list[_Turn] | None


class Crossings:
    """The conversations a request of another wire format may join (see the module)."""

    def __init__(self) -> None:
        self._by_opening: dict[str, list[Conversation]] = {}
        self._last: dict[int, _Last] = {}
        #: The messages :meth:`join` read last and their turns, for :meth:`note` to reuse.
        self._read: tuple[Sequence[Mapping[str, Any]], list[_Turn]] | None = None

    def note(
        self,
        conversation: Conversation,
        codec: Codec,
        body: Mapping[str, object],
        messages: Sequence[Mapping[str, Any]] | None,
    ) -> None:
        """``conversation`` sent ``body`` (``messages``: all of it decoded, when it was)."""
        turns = None if messages is None else self._turns(messages)
        if conversation.number not in self._last and turns is not None:
            opening = _opening(turns)
            if opening is not None:
                self._by_opening.setdefault(opening, []).append(conversation)
        self._last[conversation.number] = _Last(codec, body, turns)

    def join(self, codec: Codec, messages: Sequence[Mapping[str, Any]]) -> Join | None:
        """The conversation of another wire format that ``messages`` (a whole request of
        ``codec``, decoded) retries or continues, if any: the latest one, or the one whose
        tool calls it answers."""
        new = self._turns(messages)
        opening = _opening(new)
        found: list[Join] = []
        for conversation in self._by_opening.get(opening or "", ()):
            if conversation.wire_format == codec.name or not conversation.iterations:
                continue
            old = self._old_turns(conversation)
            join = _continues(conversation, old, new, messages) if old is not None else None
            if join is not None:
                found.append(join)
        if not found:
            return None
        return max(
            found,
            key=lambda j: (
                bool(set(j.ids.values()) & set(j.conversation.pending)),
                j.conversation.last_request,
            ),
        )

    def _turns(self, messages: Sequence[Mapping[str, Any]]) -> list[_Turn]:
        if self._read is not None and self._read[0] is messages:
            return self._read[1]
        turns = _turns(messages)
        self._read = (messages, turns)
        return turns

    def _old_turns(self, conversation: Conversation) -> list[_Turn] | None:
        last = self._last.get(conversation.number)
        if last is None:
            return None
        if last.turns is None:
            try:
                last.turns = _turns(last.codec.decode_request(last.body).messages)
            except UNREADABLE:
                return None
        return last.turns


def _continues(
    conversation: Conversation,
    old: list[_Turn],
    new: list[_Turn],
    messages: Sequence[Mapping[str, Any]],
) -> Join | None:
    """How ``new`` retries or continues ``conversation`` whose last request was ``old``."""
    if len(new) < len(old) or not all(a.same(b) for a, b in zip(old, new, strict=False)):
        return None
    offset = new[len(old) - 1].end if old else 0
    iteration = conversation.iterations[-1]
    if not iteration.replied:
        failed = not conversation.last_ok and "errors" in iteration.metadata
        return Join(conversation, offset, {}) if failed and len(new) == len(old) else None
    reply = next((m for m in reversed(iteration.messages) if m.role == "assistant"), None)
    if reply is None or len(new) == len(old):
        return None
    echo = new[len(old)]
    expected = _turn(reply.model_dump(), 0)
    if echo.role != "assistant" or echo.text != expected.text:
        return None
    if echo.calls != expected.calls[: len(echo.calls)] or (expected.calls and not echo.calls):
        return None
    return Join(conversation, offset, _renamed(reply, messages[offset:]))


def _renamed(reply: Message, messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The ids the assistant messages of ``messages`` give the tool calls of ``reply``
    (each call matched by name and arguments, in order): new id to the reply's id."""
    unused = list(reply.tool_calls)
    ids: dict[str, str] = {}
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            key = (str(call.get("name")), _canonical(call.get("arguments")))
            match = next((c for c in unused if (c.name, _canonical(c.arguments)) == key), None)
            if match is not None:
                unused.remove(match)
                ids[str(call.get("id"))] = match.id
    return ids


# -- the neutral form compared -------------------------------------------------------------


def _turns(messages: Sequence[Mapping[str, Any]]) -> list[_Turn]:
    """The turns of a decoded request: consecutive system or user texts merged, and each
    tool result pointing at the position of the call it answers."""
    turns: list[_Turn] = []
    calls: dict[str, tuple[int, int]] = {}
    for index, message in enumerate(messages):
        turn = _turn(message, index + 1)
        previous = turns[-1] if turns else None
        if (
            previous is not None
            and turn.role in _MERGED
            and previous.role == turn.role
            and not turn.calls
            and not previous.calls
        ):
            previous.text += turn.text
            previous.end = turn.end
            continue
        if turn.role == "tool":
            turn.answers = calls.get(str(message.get("tool_call_id")))
        for position, call in enumerate(message.get("tool_calls") or ()):
            calls[str(call.get("id"))] = (len(turns), position)
        turns.append(turn)
    return turns


def _turn(message: Mapping[str, Any], end: int) -> _Turn:
    role = str(message.get("role"))
    content = message.get("content")
    text = content if isinstance(content, str) else "" if content is None else str(content)
    if role == "tool" and text[:1] in ("{", "["):
        text = _json_text(text)
    calls = tuple(
        (str(call.get("name")), _canonical(call.get("arguments")))
        for call in message.get("tool_calls") or ()
    )
    return _Turn(_ROLES.get(role, role), "".join(text.split()), calls, end=end)


def _opening(turns: Sequence[_Turn]) -> str | None:
    """The index key of a request: its first user text."""
    return next((t.text for t in turns if t.role == "user" and t.text), None)


def _json_text(text: str) -> str:
    """A tool result that is JSON, written canonically (formats that carry a result as an
    object give it back with its keys sorted); any other text as it is."""
    try:
        return _canonical(json.loads(text))
    except ValueError:
        return text


def _canonical(value: object) -> str:
    """``value`` as JSON with sorted keys, integral numbers written as integers."""
    return json.dumps(_numbers(value), sort_keys=True, ensure_ascii=False, default=str)


def _numbers(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers(v) for v in value]
    return value


# -- the errors of an iteration tried on several providers ---------------------------------


def provider_errors(conversation: Conversation, provider: str) -> None:
    """Name ``provider`` in the errors of ``conversation``'s last iteration that name none:
    its calls so far went to ``provider``, and the next one goes to another."""
    errors = conversation.iterations[-1].metadata.get("errors")
    if isinstance(errors, list):
        errors[:] = [
            {**e, "provider": provider} if isinstance(e, Mapping) and "provider" not in e else e
            for e in errors
        ]


def provider_error(
    errors: Sequence[object], error: Mapping[str, object] | None, provider: str
) -> object:
    """``error``, naming ``provider`` when the iteration's earlier errors name theirs (it was
    tried on several providers)."""
    if error is not None and any(isinstance(e, Mapping) and "provider" in e for e in errors):
        return {**error, "provider": provider}
    return error
