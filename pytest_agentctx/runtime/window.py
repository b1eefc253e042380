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
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, compress, filterfalse
from operator import itemgetter
from typing import Any, Literal, Protocol

from pytest_agentctx.context.model import Message
from pytest_agentctx.runtime.errors import (
    ContextWindowError as ContextWindowError,
)

TokenCounter = Callable[[Message], int]
Strategy = Literal["oldest_first", "middle_out", "recent_turns"]
#: What a :class:`Unit` holds: the system message, a user message, an assistant answer, an
#: assistant message that calls tools with the results that answer it, or anything else.
UnitKind = Literal["system", "user", "assistant", "tool_exchange", "other"]
StrategyFunction = Callable[[Sequence["Unit"], "ContextWindow"], Iterable[int]]

_STRATEGIES = ("oldest_first", "middle_out", "recent_turns")
#: Per-message overhead of the chat formats (role, separators), as OpenAI documents it.
_MESSAGE_OVERHEAD = 4


def estimate_tokens(message: Message) -> int:
    """A fast, deterministic estimate: a quarter token per character, plus overhead."""
    total = _MESSAGE_OVERHEAD + (len(message.content or "") + 3) // 4  # ceil(chars / 4)
    calls = message.tool_calls
    if calls:  # (cheaper than iterating over no calls)
        for call in calls:
            total += (len(call.name) + len(call.arguments_json) + 3) // 4
    return total


class _Encoding(Protocol):
    """What :class:`TiktokenCounter` asks of a ``tiktoken.Encoding``."""

    def encode(self, text: str, *, disallowed_special: Collection[str]) -> list[int]: ...


class TiktokenCounter:
    """Exact token counts with ``tiktoken`` (``pip install tiktoken``).

    Give an encoding name (``"o200k_base"`` for current OpenAI models) or an
    ``tiktoken.Encoding``. Counts are cached by text.
    """

    def __init__(self, encoding: str | _Encoding = "o200k_base") -> None:
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
    kind: UnitKind


@dataclass(frozen=True)
class Pruned:
    """The outcome of pruning: the messages to send and what was dropped."""

    messages: list[Message]
    dropped: list[int]
    tokens_before: int
    tokens_after: int
    within_limits: bool
    strategy: str

    def metadata(self) -> dict[str, object]:
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
_KIND_NAMES: tuple[UnitKind, ...] = ("system", "user", "assistant", "tool_exchange", "other")
#: Cached messages per window before the cache starts again (bounds its memory).
_CACHE_LIMIT = 250_000
#: Conversations whose layout a window keeps (the least recently pruned goes first).
_LAYOUT_LIMIT = 16
_count_of = itemgetter(1)
_kind_of = itemgetter(2)
# bytes.translate tables: kinds (a bytes object) to 0/1 flags, which compress() and
# accumulate() read without a Python call per message
_IS_USER = bytes(kind == _USER for kind in range(256))
_IS_SYSTEM = bytes(kind == _SYSTEM for kind in range(256))
_IS_CALL_OR_RESULT = bytes(kind in (_CALLS, _TOOL) for kind in range(256))

# What a window caches per message: the message itself (which keeps its id from being
# reused while the entry exists), its token count, its kind and its tool-call key (the call
# ids of an assistant message that calls tools, the tool_call_id of a tool message).
_Entry = tuple[Message, int, int, Any]


@dataclass
class _Layout:
    """How a list of messages groups into units (never changed once built).

    A unit is named by the index of its first message. A tool result joins the unit of the
    call it answers (``unit_of``) and is no unit of its own; that unit's ``tokens``,
    ``sizes`` and ``turns`` (the turn of its last message) include its results. A layout
    is extended for messages appended to its list, so that a run that prunes before every
    call does work for the new messages only.
    """

    messages: list[Message]
    kinds: bytes  # the kind of each message
    users: list[int]  # indices of the user messages
    systems: list[int]  # indices of the system messages
    total: int  # tokens of all messages
    tokens: list[int]  # by unit
    sizes: list[int]  # messages in each unit
    turns: list[int]  # by unit
    members: dict[int, list[int]]  # unit -> the results that joined it, in order
    owner: dict[str, int]  # tool call id -> unit of the (latest) call
    unit_of: dict[int, int]  # index of a joined result -> its unit
    droppable: list[int] | None = None  # filled by ContextWindow._droppable


def _no_leading_reply(layout: _Layout, droppable: list[int], dropped: list[int]) -> list[int]:
    """Also drop the droppable units left between the pinned system message and the first
    kept user message: a request must not open with the assistant's reply to a question
    that was dropped (Anthropic rejects a first turn that is not the user's)."""
    gone = set(dropped)
    allowed = set(droppable)
    kinds, unit_of = layout.kinds, layout.unit_of
    extra: list[int] = []
    for index in range(len(layout.messages)):
        if index in gone or index in unit_of or kinds[index] == _SYSTEM:
            continue
        if kinds[index] == _USER or index not in allowed:
            break
        extra.append(index)
    return [*dropped, *extra] if extra else dropped


@dataclass(frozen=True)
class ContextWindow:
    """Limits on what is sent to the model, and how to stay within them."""

    max_tokens: int | None = None
    max_messages: int | None = None
    keep_system: bool = True
    min_recent_turns: int = 1
    strategy: Strategy | StrategyFunction = "oldest_first"
    counter: TokenCounter = field(default=estimate_tokens, compare=False)
    # What each message counts and is, by message identity (see _Entry), so that each
    # message is counted once; and the layout of the last list pruned of each conversation
    # (by the identity of its first message, which the layout keeps alive), which the
    # next prune extends when its list starts with the same messages (the runtime's case).
    _cache: dict[int, _Entry] = field(default_factory=dict, init=False, repr=False, compare=False)
    _layouts: dict[int, _Layout] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

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

    def _fits(self, tokens: int, count: int) -> bool:
        return (self.max_tokens is None or tokens <= self.max_tokens) and (
            self.max_messages is None or count <= self.max_messages
        )

    # -- pruning -------------------------------------------------------------------------

    def prune(self, messages: Sequence[Message]) -> Pruned:
        """The messages to send, within the limits where the invariants allow it."""
        messages = list(messages)
        layout = self._layout(messages)
        total = layout.total
        count = len(messages)
        if self._fits(total, count):
            return Pruned(messages, [], total, total, True, self.strategy_name)
        droppable = self._droppable(layout)
        if callable(self.strategy):
            dropped_units = self._custom(layout, droppable)
        else:
            order, grouped = self._order(layout, droppable)
            dropped_units = order[: self._cut(order, grouped, layout)]
        if dropped_units:
            dropped_units = _no_leading_reply(layout, droppable, dropped_units)
        tokens = total - sum(map(layout.tokens.__getitem__, dropped_units))
        dropped = list(dropped_units)
        if layout.members:
            dropped.extend(chain.from_iterable(filter(None, map(layout.members.get, dropped))))
        dropped.sort()
        if dropped:
            gone = set(dropped)
            kept = list(map(messages.__getitem__, filterfalse(gone.__contains__, range(count))))
        else:
            kept = messages
        count -= len(dropped)
        return Pruned(kept, dropped, total, tokens, self._fits(tokens, count), self.strategy_name)

    # -- counting and grouping -----------------------------------------------------------

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
        # the fast check first: this runs once per message
        if (tokens.__class__ is not int or tokens < 0) and (
            isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0
        ):
            raise ContextWindowError(
                f"The window's counter {getattr(self.counter, '__name__', self.counter)!r} "
                f"returned {tokens!r} for a {message.role} message; a token count must be "
                "a whole number of at least 0."
            )
        role = message.role
        if role == "tool":
            return (message, tokens, _TOOL, message.tool_call_id)
        if role == "assistant":
            calls = message.tool_calls
            if calls:
                return (message, tokens, _CALLS, tuple(call.id for call in calls))
            return (message, tokens, _ASSISTANT, None)
        return (message, tokens, _USER if role == "user" else _SYSTEM, None)

    def _layout(self, messages: list[Message]) -> _Layout:
        """The layout of ``messages``: the conversation's last one, or it extended, or new."""
        layouts = self._layouts
        slot = id(messages[0]) if messages else 0
        base = layouts.pop(slot, None)
        start = 0
        if base is not None:
            size = len(base.messages)
            if size == len(messages) and messages == base.messages:
                layouts[slot] = base
                return base
            if size < len(messages) and messages[:size] == base.messages:
                start = size
            else:
                base = None
        entries = self._entries(messages[start:] if start else messages)
        counts = list(map(_count_of, entries))
        kinds = bytes(map(_kind_of, entries))
        indices = range(start, len(messages))
        is_user = kinds.translate(_IS_USER)
        users = list(compress(indices, is_user))
        systems = list(compress(indices, kinds.translate(_IS_SYSTEM)))
        turns = list(accumulate(is_user, initial=len(base.users) if base else 0))
        del turns[0]
        if base is None:
            layout = _Layout(
                messages,
                kinds,
                users,
                systems,
                sum(counts),
                list(counts),
                [1] * len(counts),
                turns,
                {},
                {},
                {},
            )
            shared: dict[int, list[int]] = {}
        else:
            layout = _Layout(
                messages,
                base.kinds + kinds,
                base.users + users,
                base.systems + systems,
                base.total + sum(counts),
                base.tokens + counts,
                base.sizes + [1] * len(counts),
                base.turns + turns,
                dict(base.members),
                dict(base.owner),
                dict(base.unit_of),
            )
            shared = base.members  # member lists of the base: copied before they change
        members, owner, unit_of = layout.members, layout.owner, layout.unit_of
        tokens, sizes, turns = layout.tokens, layout.sizes, layout.turns
        for index in compress(indices, kinds.translate(_IS_CALL_OR_RESULT)):
            _, result_tokens, kind, key = entries[index - start]
            if kind == _CALLS:
                for call_id in key:
                    owner[call_id] = index
                continue
            unit = owner.get(key)
            if unit is None:  # a result whose call is not before it: a unit of its own
                continue
            extra = members.get(unit)
            if extra is None:
                members[unit] = [index]
            elif extra is shared.get(unit):
                members[unit] = [*extra, index]
            else:
                extra.append(index)
            unit_of[index] = unit
            tokens[unit] += result_tokens
            sizes[unit] += 1
            turns[unit] = turns[index]
        if messages:
            layouts[slot] = layout  # the most recent last
            if len(layouts) > _LAYOUT_LIMIT:
                del layouts[next(iter(layouts))]
        return layout

    def _droppable(self, layout: _Layout) -> list[int]:
        """The units that may be dropped, in order: not pinned, not in a protected turn."""
        if layout.droppable is not None:
            return layout.droppable
        users, count = layout.users, len(layout.messages)
        # everything from the first user message of the last min_recent_turns turns is kept,
        # and so is every unit that reaches into it (a call whose result comes after it)
        protected = users[max(0, len(users) - self.min_recent_turns)] if users else count
        unit_of = layout.unit_of
        excluded = set(unit_of)
        excluded.update(
            unit for unit in map(unit_of.get, range(protected, count)) if unit is not None
        )
        if self.keep_system:
            excluded.update(layout.systems)
        layout.droppable = list(filterfalse(excluded.__contains__, range(protected)))
        return layout.droppable

    # -- the strategies ------------------------------------------------------------------

    def _order(self, layout: _Layout, droppable: list[int]) -> tuple[list[int], bool]:
        """The droppable units in the order the strategy drops them; whether by whole turns."""
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

    def _cut(self, order: list[int], grouped: bool, layout: _Layout) -> int:
        """How many units of ``order`` to drop: the fewest that bring the rest within limits
        (all of them if nothing does); with ``grouped``, only whole turns."""
        if not order:
            return 0
        cut = 0
        total, count = layout.total, len(layout.messages)
        if self.max_tokens is not None and total > self.max_tokens:
            dropped = list(accumulate(map(layout.tokens.__getitem__, order)))
            cut = bisect_left(dropped, total - self.max_tokens) + 1
        if self.max_messages is not None and count > self.max_messages:
            dropped = list(accumulate(map(layout.sizes.__getitem__, order)))
            cut = max(cut, bisect_left(dropped, count - self.max_messages) + 1)
        cut = min(cut, len(order))
        if grouped and 0 < cut < len(order):
            turns = list(map(layout.turns.__getitem__, order))
            cut = bisect_right(turns, turns[cut - 1])
        return cut

    def _custom(self, layout: _Layout, droppable: list[int]) -> list[int]:
        """The units a strategy function chose, checked against the invariants."""
        assert callable(self.strategy)
        starts = list(filterfalse(layout.unit_of.__contains__, range(len(layout.messages))))
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
        allowed = {number_of[start] for start in droppable}
        refused = [i for i in chosen if i not in allowed]
        if refused:
            raise ContextWindowError(
                f"The window strategy {self.strategy_name!r} asked to drop units {refused}, "
                "which are pinned (system), unknown, or within the last "
                f"{self.min_recent_turns} turn(s). Return ids of Unit objects whose "
                "pinned is False and whose turn is older."
            )
        return [starts[i] for i in chosen]
