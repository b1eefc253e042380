"""Context-window management: which messages to send when the conversation is too long.

A :class:`ContextWindow` sets limits (tokens, messages), what is never dropped (the system
message, the last ``min_recent_turns`` turns) and a strategy for the rest:

* ``"oldest_first"``: drop the oldest droppable messages first;
* ``"middle_out"``: keep the start (the task as first stated) and the end, drop the middle;
* ``"recent_turns"``: drop whole turns, oldest first;
* a function ``(units, window) -> ids of units to drop``, checked like the others.

Pruning works on *units*, never on single messages: an assistant message that calls tools
and the tool results that answer it form one unit, so a call is never separated from its
result and no result is left without its call (providers reject both). The newest user
message is always kept. What was dropped is recorded in the iteration's metadata.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, compress, filterfalse, repeat
from operator import itemgetter
from typing import Any, Literal

from .context import Message
from .exceptions import AgentCtxError

__all__ = [
    "ContextWindow",
    "ContextWindowError",
    "Pruned",
    "TiktokenCounter",
    "TokenCounter",
    "Unit",
    "estimate_tokens",
]

TokenCounter = Callable[[Message], int]
Strategy = Literal["oldest_first", "middle_out", "recent_turns"]
StrategyFunction = Callable[[Sequence["Unit"], "ContextWindow"], Iterable[int]]

_STRATEGIES = ("oldest_first", "middle_out", "recent_turns")
#: Per-message overhead of the chat formats (role, separators), as OpenAI documents it.
_MESSAGE_OVERHEAD = 4


class ContextWindowError(AgentCtxError):
    """A window that cannot work as configured, or a strategy that broke an invariant."""


def estimate_tokens(message: Message) -> int:
    """A fast, deterministic estimate: a quarter token per character, plus overhead."""
    total = _MESSAGE_OVERHEAD + (len(message.content or "") + 3) // 4  # ceil(chars / 4)
    for call in message.tool_calls:
        total += (len(call.name) + len(call.arguments_json) + 3) // 4
    return total


class TiktokenCounter:
    """Exact token counts with ``tiktoken`` (``pip install tiktoken``).

    Give an encoding name (``"o200k_base"`` for current OpenAI models) or an
    ``tiktoken.Encoding``. Counts are cached by text.
    """

    def __init__(self, encoding: Any = "o200k_base") -> None:
        try:
            import tiktoken
        except ImportError:
            raise ContextWindowError(
                "TiktokenCounter needs tiktoken, which is not installed. Run: "
                "pip install tiktoken (or use the default estimate_tokens)."
            ) from None
        self.encoding = tiktoken.get_encoding(encoding) if isinstance(encoding, str) else encoding
        self._cache: dict[str, int] = {}

    def _count(self, text: str) -> int:
        cached = self._cache.get(text)
        if cached is None:
            cached = len(self.encoding.encode(text, disallowed_special=()))
            self._cache[text] = cached
        return cached

    def __call__(self, message: Message) -> int:
        total = _MESSAGE_OVERHEAD + self._count(message.content or "")
        for call in message.tool_calls:
            total += self._count(call.name) + self._count(call.arguments_json)
        return total


@dataclass(frozen=True)
class Unit:
    """Messages that are kept or dropped together.

    ``id`` numbers the units in order; ``indices`` are positions in the pruned list;
    ``turn`` is the turn of the unit's last message (the user messages up to it, 0 before
    the first), so a unit that reaches into a protected turn is protected; ``pinned``
    units are never dropped.
    """

    id: int
    indices: tuple[int, ...]
    turn: int
    tokens: int
    pinned: bool
    kind: Literal["system", "user", "assistant", "tool_exchange", "other"]


@dataclass(frozen=True)
class Pruned:
    """The outcome of pruning: the messages to send and what was dropped."""

    messages: list[Message]
    dropped: list[int]
    tokens_before: int
    tokens_after: int
    within_limits: bool
    strategy: str

    def metadata(self) -> dict[str, Any]:
        """What the runtime records in the iteration's metadata under ``"window"``."""
        return {
            "strategy": self.strategy,
            "dropped": list(self.dropped),
            "messages_before": len(self.messages) + len(self.dropped),
            "messages_after": len(self.messages),
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "within_limits": self.within_limits,
        }


# Message kinds, as small ints so that the scans below run in C (map, compress, accumulate).
_SYSTEM, _USER, _ASSISTANT, _CALLS, _TOOL = range(5)
_KIND_NAMES: tuple[Any, ...] = ("system", "user", "assistant", "tool_exchange", "other")
_ROLE_KINDS = {"system": _SYSTEM, "user": _USER, "assistant": _ASSISTANT, "tool": _TOOL}
#: Cached messages per window before the cache starts again (bounds its memory).
_CACHE_LIMIT = 250_000
_count_of = itemgetter(1)
_kind_of = itemgetter(2)

# What a window caches per message: the message itself (which keeps its id from being
# reused while the entry exists), its token count, its kind and its tool-call key (the call
# ids of an assistant message that calls tools, the tool_call_id of a tool message).
_Entry = tuple[Message, int, int, Any]


@dataclass
class _Layout:
    """How the messages group into units, and which units may be dropped.

    A unit is named by the index of its first message. ``members`` lists, for a unit that
    calls tools, the indices of the results that joined it (in order); those results are
    not units of their own.
    """

    count: int
    tokens: list[int]  # per unit (by first index); results counted into their call's unit
    turns: list[int]  # the turn of each unit: that of its last message
    members: dict[int, list[int]]
    joined: set[int]
    droppable: list[int]
    kinds: list[int]

    def size(self, unit: int) -> int:
        extra = self.members.get(unit)
        return 1 if extra is None else 1 + len(extra)


@dataclass(frozen=True)
class ContextWindow:
    """Limits on what is sent to the model, and how to stay within them."""

    max_tokens: int | None = None
    max_messages: int | None = None
    keep_system: bool = True
    min_recent_turns: int = 1
    strategy: Strategy | StrategyFunction = "oldest_first"
    counter: TokenCounter = field(default=estimate_tokens, compare=False)
    # What each message counts and is, by message identity (see _Entry), so that a run
    # that prunes before every call counts each message once.
    _cache: dict[int, _Entry] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_tokens is None and self.max_messages is None:
            raise ContextWindowError(
                "ContextWindow() needs a limit: give max_tokens=..., max_messages=... or both."
            )
        for name in ("max_tokens", "max_messages"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ContextWindowError(
                    f"ContextWindow({name}={value!r}): expected a whole number of at least 1."
                )
        if (
            isinstance(self.min_recent_turns, bool)
            or not isinstance(self.min_recent_turns, int)
            or (self.min_recent_turns < 1)
        ):
            raise ContextWindowError(
                f"ContextWindow(min_recent_turns={self.min_recent_turns!r}): expected at least "
                "1; the newest user message and what follows it are never dropped."
            )
        if not callable(self.strategy) and self.strategy not in _STRATEGIES:
            raise ContextWindowError(
                f"ContextWindow(strategy={self.strategy!r}): expected one of "
                f"{', '.join(_STRATEGIES)} or a function (units, window) -> unit ids to drop."
            )
        if not callable(self.counter):
            raise ContextWindowError(
                f"ContextWindow(counter={self.counter!r}): expected a function "
                "(message) -> tokens, such as estimate_tokens or TiktokenCounter()."
            )

    @property
    def strategy_name(self) -> str:
        if callable(self.strategy):
            return getattr(self.strategy, "__name__", "custom")
        return self.strategy

    # -- counting ------------------------------------------------------------------------

    def _entries(self, messages: list[Message]) -> list[_Entry]:
        cache = self._cache
        entries: list[Any] = list(map(cache.get, map(id, messages)))
        if None in entries:
            if len(cache) + len(messages) > _CACHE_LIMIT:
                cache.clear()
            for index, entry in enumerate(entries):
                if entry is None:
                    message = messages[index]
                    entry = entries[index] = cache[id(message)] = self._describe(message)
        return entries

    def _describe(self, message: Message) -> _Entry:
        tokens = self.counter(message)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ContextWindowError(
                f"The window's counter {getattr(self.counter, '__name__', self.counter)!r} "
                f"returned {tokens!r} for a {message.role} message; a token count must be a "
                "whole number of at least 0."
            )
        kind = _ROLE_KINDS[message.role]
        key: Any = None
        if kind == _TOOL:
            key = message.tool_call_id
        elif kind == _ASSISTANT:
            calls = tuple(call.id for call in message.tool_calls)
            if calls:
                kind, key = _CALLS, calls
        return (message, tokens, kind, key)

    def _fits(self, tokens: int, count: int) -> bool:
        return (self.max_tokens is None or tokens <= self.max_tokens) and (
            self.max_messages is None or count <= self.max_messages
        )

    # -- pruning -------------------------------------------------------------------------

    def prune(self, messages: Sequence[Message]) -> Pruned:
        """The messages to send, within the limits where the invariants allow it."""
        messages = list(messages)
        entries = self._entries(messages)
        counts = list(map(_count_of, entries))
        total = sum(counts)
        count = len(messages)
        if self._fits(total, count):
            return Pruned(messages, [], total, total, True, self.strategy_name)
        layout = self._layout(entries, counts)
        if callable(self.strategy):
            dropped_units = self._custom(layout)
        else:
            order, grouped = self._order(layout)
            dropped_units = order[: self._cut(order, grouped, layout, total, count)]
        tokens = total - sum(map(layout.tokens.__getitem__, dropped_units))
        dropped = list(dropped_units)
        members = layout.members
        if members:
            for unit in dropped_units:
                extra = members.get(unit)
                if extra is not None:
                    dropped.extend(extra)
        dropped.sort()
        if dropped:
            gone = set(dropped)
            kept = list(map(messages.__getitem__, filterfalse(gone.__contains__, range(count))))
        else:
            kept = messages
        count -= len(dropped)
        return Pruned(kept, dropped, total, tokens, self._fits(tokens, count), self.strategy_name)

    def _layout(self, entries: list[_Entry], counts: list[int]) -> _Layout:
        """Group messages into units; a tool result joins the unit of the call it answers."""
        count = len(entries)
        kinds = list(map(_kind_of, entries))
        indices = range(count)
        # turn_at[i + 1]: user messages up to and including message i (0 before the first)
        turn_at = list(accumulate(map(_USER.__eq__, kinds), initial=0))
        users = list(compress(indices, map(_USER.__eq__, kinds)))
        # everything from the first user message of the last min_recent_turns turns is kept
        protected = users[max(0, len(users) - self.min_recent_turns)] if users else count
        tokens = list(counts)
        turns = turn_at[1:]
        members: dict[int, list[int]] = {}
        owner: dict[Any, int] = {}  # tool call id -> unit of the call (the latest one)
        for index in compress(indices, map(_CALLS.__le__, kinds)):
            entry = entries[index]
            if entry[2] == _CALLS:
                for call_id in entry[3]:
                    owner[call_id] = index
                continue
            unit = owner.get(entry[3])
            if unit is None:  # a result whose call is not before it: a unit of its own
                continue
            extra = members.get(unit)
            if extra is None:
                members[unit] = [index]
            else:
                extra.append(index)
            tokens[unit] += counts[index]
            turns[unit] = turns[index]
        joined = {index for extra in members.values() for index in extra}
        excluded = set(joined)
        excluded.update(unit for unit, extra in members.items() if extra[-1] >= protected)
        if self.keep_system:
            excluded.update(compress(range(protected), map(_SYSTEM.__eq__, kinds)))
        droppable = (
            list(filterfalse(excluded.__contains__, range(protected)))
            if excluded
            else list(range(protected))
        )
        return _Layout(count, tokens, turns, members, joined, droppable, kinds)

    def _order(self, layout: _Layout) -> tuple[list[int], bool]:
        """The droppable units in the order the strategy drops them; whether by whole turns."""
        droppable = layout.droppable
        if self.strategy == "oldest_first":
            return droppable, False
        turns = layout.turns
        if self.strategy == "recent_turns":
            return sorted(droppable, key=turns.__getitem__), True
        # middle_out: keep the first turn (the task as first stated) and the recent turns;
        # drop from the middle outwards, then the first turn, newest first
        unit_turns = list(map(turns.__getitem__, droppable))
        first_turn = min(filter(None, unit_turns), default=0)
        head = list(compress(droppable, map(first_turn.__ge__, unit_turns)))
        middle = list(compress(droppable, map(first_turn.__lt__, unit_turns)))
        half = len(middle) // 2
        right, left = middle[half:], middle[:half][::-1]
        ordered = list(chain.from_iterable(zip(right, left, strict=False)))
        ordered += right[len(left) :]
        ordered += head[::-1]
        return ordered, False

    def _cut(self, order: list[int], grouped: bool, layout: _Layout, total: int, count: int) -> int:
        """How many units of ``order`` to drop: the fewest that bring the rest within limits
        (all of them if nothing does); with ``grouped``, only whole turns."""
        if not order:
            return 0
        cut = 0
        if self.max_tokens is not None and total > self.max_tokens:
            dropped = list(accumulate(map(layout.tokens.__getitem__, order)))
            cut = bisect_left(dropped, total - self.max_tokens) + 1
        if self.max_messages is not None and count > self.max_messages:
            sizes = map(layout.size, order) if layout.members else repeat(1, len(order))
            dropped = list(accumulate(sizes))
            cut = max(cut, bisect_left(dropped, count - self.max_messages) + 1)
        cut = min(cut, len(order))
        if grouped and 0 < cut < len(order):
            turns = list(map(layout.turns.__getitem__, order))
            cut = bisect_right(turns, turns[cut - 1])
        return cut

    def _custom(self, layout: _Layout) -> list[int]:
        """The units a strategy function chose, checked against the invariants."""
        assert callable(self.strategy)
        starts = list(filterfalse(layout.joined.__contains__, range(layout.count)))
        units = tuple(
            Unit(
                number,
                (start, *layout.members.get(start, ())),
                layout.turns[start],
                layout.tokens[start],
                self.keep_system and layout.kinds[start] == _SYSTEM,
                _KIND_NAMES[layout.kinds[start]],
            )
            for number, start in enumerate(starts)
        )
        chosen = list(dict.fromkeys(self.strategy(units, self)))
        number_of = {start: number for number, start in enumerate(starts)}
        allowed = {number_of[start] for start in layout.droppable}
        refused = [i for i in chosen if i not in allowed]
        if refused:
            raise ContextWindowError(
                f"The window strategy {self.strategy_name!r} asked to drop units {refused}, "
                "which are pinned (system), unknown, or within the last "
                f"{self.min_recent_turns} turn(s). Return ids of Unit objects whose "
                "pinned is False and whose turn is older."
            )
        return [starts[i] for i in chosen]
