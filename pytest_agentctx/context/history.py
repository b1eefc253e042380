"""A conversation-history view of a context, for code that thinks in alternating messages.

The :class:`AgentContext` nests messages by iteration; many agent loops instead keep one
flat list of entries and check, before each model call, that the last entry is the user's.
:class:`History` is that flat view. It is read-only and derived from the context: it never
holds data of its own beside it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pytest_agentctx.context.errors import EmptyHistory, LastEntryNotUserMessage
from pytest_agentctx.context.model import AgentContext, Message

_USER_SIDE = frozenset({"user", "tool"})


class History(Sequence[Message]):
    """The conversation entries (every non-system message) of a context, in order.

    Tool results count as the user's side of the conversation: the wire formats send
    them in the user turn (Anthropic) or right before the next model call (OpenAI).
    """

    __slots__ = ("_entries", "_system")

    def __init__(self, messages: Sequence[Message]) -> None:
        self._system = tuple(m for m in messages if m.role == "system")
        self._entries = tuple(m for m in messages if m.role != "system")

    @classmethod
    def of(cls, context: AgentContext) -> History:
        """The history view of ``context``."""
        return cls(context.get_all_messages())

    @property
    def entries(self) -> tuple[Message, ...]:
        """The conversation entries, system messages left out."""
        return self._entries

    @property
    def system_messages(self) -> tuple[Message, ...]:
        """The system messages, which are not entries."""
        return self._system

    @property
    def is_empty(self) -> bool:
        """Whether there is no entry at all."""
        return not self._entries

    @property
    def has_staged_message(self) -> bool:
        """Whether the last entry is the user's (a message or tool results) awaiting a reply."""
        return bool(self._entries) and self._entries[-1].role in _USER_SIDE

    def validate_for_llm_call(self) -> None:
        """Raise unless the history can be sent to a model as it is."""
        if not self._entries:
            raise EmptyHistory(
                "The conversation history has no entry (only system messages, or nothing), "
                "so there is nothing to send to the model. Add a user message first, for "
                "example with AgentContext.new(input) or context.add_user_message(text)."
            )
        last = self._entries[-1]
        if last.role not in _USER_SIDE:
            preview = (last.content or "")[:60]
            raise LastEntryNotUserMessage(
                f"The last history entry (#{len(self._entries)}) is an {last.role} message "
                f"({preview!r}); a model call needs a user message or tool results last. "
                "Add the next user message with context.add_user_message(text)."
            )

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index: int) -> Message:  # type: ignore[override]
        return self._entries[index]

    def __iter__(self) -> Iterator[Message]:
        return iter(self._entries)

    def __repr__(self) -> str:
        return f"History({len(self._entries)} entries, staged={self.has_staged_message})"
