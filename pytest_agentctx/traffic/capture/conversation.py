"""A conversation being rebuilt from traffic, and the :class:`AgentContext` it makes.

:mod:`.builder` fills a :class:`Conversation` in, one model call (an iteration) at a
time; :meth:`Conversation.context` gives the result, its sub-agents' conversations in
the metadata of the iteration whose tool call started them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pytest_agentctx.context.model import AgentContext, Iteration, Message, ToolCall


@dataclass
class IterationState:
    """One iteration of a conversation being rebuilt (internal state)."""

    number: int
    started_at: datetime
    messages: list[Message] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    completed_at: datetime | None = None
    metadata: dict[str, object] = field(default_factory=dict)
    replied: bool = False
    #: Sub-agent conversations started by this iteration's tool calls: (call id, child).
    children: list[tuple[str, Conversation]] = field(default_factory=list)


@dataclass
class Conversation:
    """One conversation being rebuilt (internal state; :meth:`context` is the result)."""

    number: int
    wire_format: str
    tools_key: int
    iterations: list[IterationState] = field(default_factory=list)
    #: The items of the last request (the prefix the next request must have), its system
    #: fields, and the hash of its last item (the index key, with the count).
    last_items: list[object] = field(default_factory=list)
    last_system: tuple[object, ...] = ()
    last_key: tuple[int, int] = (0, 0)
    last_ok: bool = False
    last_response_id: str | None = None
    #: Tool calls of the last reply that no request answered yet, by id.
    pending: dict[str, ToolCall] = field(default_factory=dict)
    waits_for_tools: bool = False
    last_event: int = 0
    parent: Conversation | None = None
    last_time: datetime | None = None
    #: The number of the conversation's last model call among all the exchanges' (1, 2...).
    last_request: int = 0
    #: The result each tool call got: the number of the model call that brought it, and
    #: its content.
    answers: dict[str, tuple[int, str | None]] = field(default_factory=dict)

    def adopt_client_ids(self, echo: Sequence[Message], made_up: Callable[[object], bool]) -> None:
        """Give the last reply's tool calls whose ids capture made up (``made_up``: a
        Gemini call without an id) the ids the client put on them in ``echo``, its
        request's copy of that reply, where the client assigned ids: the same call (name
        and arguments) at the same place. The tool results that carry those ids then join
        their calls, and the context shows the ids the client used."""
        if not self.iterations:
            return
        iteration = self.iterations[-1]
        echoed = [call for message in echo for call in message.tool_calls]
        ids: dict[str, str] = {}
        for call, copy in zip(iteration.tool_calls, echoed, strict=False):
            if (
                made_up(call.id)
                and not made_up(copy.id)
                and copy.id != call.id
                and (copy.name, copy.arguments) == (call.name, call.arguments)
            ):
                ids[call.id] = copy.id
        if not ids:
            return

        def rename(call: ToolCall) -> ToolCall:
            new = ids.get(call.id)
            return call if new is None else call.model_copy(update={"id": new})

        iteration.tool_calls = [rename(call) for call in iteration.tool_calls]
        iteration.messages = renamed(iteration.messages, ids)
        iteration.children = [(ids.get(key, key), child) for key, child in iteration.children]
        self.pending = {ids.get(key, key): rename(call) for key, call in self.pending.items()}

    @property
    def created_at(self) -> datetime:
        return self.iterations[0].started_at

    def context(self) -> AgentContext:
        """The conversation as an :class:`AgentContext` (sub-agents in metadata)."""
        iterations = []
        for item in self.iterations:
            metadata = dict(item.metadata)
            if item.children:
                subagents: dict[str, dict[str, object]] = {}
                for call_id, child in item.children:
                    key = call_id
                    counter = 2
                    while key in subagents:
                        key = f"{call_id}#{counter}"
                        counter += 1
                    subagents[key] = {
                        "tool_call_id": call_id,
                        "context": child.context().model_dump(mode="json"),
                    }
                metadata["subagents"] = subagents
            iterations.append(
                Iteration(
                    number=item.number,
                    messages=item.messages,
                    tool_calls=item.tool_calls,
                    started_at=item.started_at,
                    completed_at=item.completed_at,
                    metadata=metadata,
                )
            )
        last = self.iterations[-1]
        updated = max(
            t for t in (last.completed_at, last.started_at, self.last_time) if t is not None
        )
        return AgentContext(
            iterations=iterations,
            current_iteration=last.number,
            created_at=self.created_at,
            updated_at=updated,
        )

    def summary(self) -> str:
        """For messages: the wire format, the iterations and the first user message."""
        first_user = next(
            (
                m.content
                for it in self.iterations
                for m in it.messages
                if m.role == "user" and m.content
            ),
            None,
        )
        shown = repr(first_user[:60]) if first_user else "no user message"
        return (
            f"{self.wire_format}, {len(self.iterations)} iteration(s), first user message {shown}"
        )


def renamed(messages: Sequence[Message], ids: Mapping[str, str]) -> list[Message]:
    """``messages`` with each tool call id that ``ids`` maps renamed to the id it maps to,
    in the tool calls and in the tool results that answer them."""
    if not ids:
        return list(messages)
    result = []
    for message in messages:
        update: dict[str, object] = {}
        if message.tool_call_id in ids:
            update["tool_call_id"] = ids[message.tool_call_id or ""]
        if any(call.id in ids for call in message.tool_calls):
            update["tool_calls"] = [
                call.model_copy(update={"id": ids.get(call.id, call.id)})
                for call in message.tool_calls
            ]
        result.append(message.model_copy(update=update) if update else message)
    return result
