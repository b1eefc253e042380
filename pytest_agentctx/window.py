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

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
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
    total = _MESSAGE_OVERHEAD + math.ceil(len(message.content or "") / 4)
    for call in message.tool_calls:
        total += math.ceil((len(call.name) + len(call.arguments_json)) / 4)
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

    ``indices`` are positions in the pruned list; ``turn`` counts user messages seen so
    far (0 before the first); ``pinned`` units are never dropped.
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


@dataclass
class _Layout:
    """Units as parallel lists (cheap to build for long conversations)."""

    members: list[list[int]]
    kinds: list[str]
    turns: list[int]
    tokens: list[int]

    def unit(self, unit: int, keep_system: bool) -> Unit:
        kind: Any = self.kinds[unit]
        return Unit(
            unit,
            tuple(self.members[unit]),
            self.turns[unit],
            self.tokens[unit],
            keep_system and kind == "system",
            kind,
        )


def _layout(messages: Sequence[Message], counts: Sequence[int]) -> _Layout:
    """Group messages into units; a tool result joins the unit of the call it answers."""
    members: list[list[int]] = []
    kinds: list[str] = []
    turns: list[int] = []
    tokens: list[int] = []
    owner: dict[str | None, int] = {}  # tool call id -> unit
    turn = 0
    for index, message in enumerate(messages):
        role: str = message.role
        if role == "tool":
            unit_of_call = owner.get(message.tool_call_id)
            if unit_of_call is not None:
                members[unit_of_call].append(index)
                tokens[unit_of_call] += counts[index]
                continue
            role = "other"
        elif role == "user":
            turn += 1
        elif role == "assistant" and message.tool_calls:
            role = "tool_exchange"
            unit = len(members)
            for call in message.tool_calls:
                owner[call.id] = unit
        members.append([index])
        kinds.append(role)
        turns.append(turn)
        tokens.append(counts[index])
    return _Layout(members, kinds, turns, tokens)


@dataclass(frozen=True)
class ContextWindow:
    """Limits on what is sent to the model, and how to stay within them."""

    max_tokens: int | None = None
    max_messages: int | None = None
    keep_system: bool = True
    min_recent_turns: int = 1
    strategy: Strategy | StrategyFunction = "oldest_first"
    counter: TokenCounter = field(default=estimate_tokens, compare=False)
    # Token counts by message identity (the message is kept alive beside its count), so a
    # run that prunes before every call counts each message once.
    _counts: dict[int, tuple[Message, int]] = field(
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

    @property
    def strategy_name(self) -> str:
        if callable(self.strategy):
            return getattr(self.strategy, "__name__", "custom")
        return self.strategy

    def _count(self, messages: Sequence[Message]) -> list[int]:
        cache = self._counts
        counts: list[int] = []
        append = counts.append
        for message in messages:
            cached = cache.get(id(message))
            if cached is None or cached[0] is not message:
                cached = (message, self.counter(message))
                cache[id(message)] = cached
            append(cached[1])
        return counts

    def _fits(self, tokens: int, count: int) -> bool:
        return (self.max_tokens is None or tokens <= self.max_tokens) and (
            self.max_messages is None or count <= self.max_messages
        )

    def prune(self, messages: Sequence[Message]) -> Pruned:
        """The messages to send, within the limits where the invariants allow it."""
        counts = self._count(messages)
        tokens = sum(counts)
        count = len(messages)
        if self._fits(tokens, count):
            return Pruned(list(messages), [], tokens, tokens, True, self.strategy_name)
        layout = _layout(messages, counts)
        last_turn = layout.turns[-1] if layout.turns else 0
        protected_from = max(1, last_turn - self.min_recent_turns + 1)
        keep_system = self.keep_system
        droppable = [
            unit
            for unit, (kind, turn) in enumerate(zip(layout.kinds, layout.turns, strict=True))
            if turn < protected_from and not (keep_system and kind == "system")
        ]
        dropped_units: list[int] = []
        for group in self._groups(droppable, layout):
            if self._fits(tokens, count) and not callable(self.strategy):
                break
            for unit in group:
                dropped_units.append(unit)
                tokens -= layout.tokens[unit]
                count -= len(layout.members[unit])
        dropped = sorted(i for unit in dropped_units for i in layout.members[unit])
        if dropped:
            dropped_set = set(dropped)
            kept = [m for i, m in enumerate(messages) if i not in dropped_set]
        else:
            kept = list(messages)
        return Pruned(
            kept, dropped, sum(counts), tokens, self._fits(tokens, count), self.strategy_name
        )

    def _groups(self, droppable: list[int], layout: _Layout) -> list[list[int]]:
        """The droppable units (ids) in the order the strategy drops them, grouped."""
        if self.strategy == "oldest_first":
            return [[unit] for unit in droppable]
        turns = layout.turns
        if self.strategy == "recent_turns":
            by_turn: dict[int, list[int]] = {}
            for unit in droppable:
                by_turn.setdefault(turns[unit], []).append(unit)
            return [by_turn[t] for t in sorted(by_turn)]
        if self.strategy == "middle_out":
            first_turn = min((turns[u] for u in droppable if turns[u] > 0), default=0)
            head = [u for u in droppable if turns[u] <= first_turn]
            middle = [u for u in droppable if turns[u] > first_turn]
            ordered: list[int] = []
            left, right = len(middle) // 2 - 1, len(middle) // 2
            while left >= 0 or right < len(middle):
                if right < len(middle):
                    ordered.append(middle[right])
                    right += 1
                if left >= 0:
                    ordered.append(middle[left])
                    left -= 1
            return [[u] for u in (*ordered, *reversed(head))]
        assert callable(self.strategy)
        units = tuple(layout.unit(u, self.keep_system) for u in range(len(layout.members)))
        chosen = list(dict.fromkeys(self.strategy(units, self)))
        allowed = set(droppable)
        refused = [i for i in chosen if i not in allowed]
        if refused:
            raise ContextWindowError(
                f"The window strategy {self.strategy_name!r} asked to drop units {refused}, "
                "which are pinned (system), unknown, or within the last "
                f"{self.min_recent_turns} turn(s). Return ids of Unit objects whose "
                "pinned is False and whose turn is older."
            )
        return [chosen]
