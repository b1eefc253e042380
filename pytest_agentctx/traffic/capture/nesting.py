"""Which conversations are sub-agents: those a tool call of their parent started.

While it reads the exchanges, :mod:`.builder` links a conversation that starts while
another one waits for a tool result to that tool call. Two agents run concurrently by the
same test (``asyncio.gather``, threads) look the same from the traffic: one starts while
the other waits. Once every exchange is read, :func:`top_level` keeps a link only where the
traffic shows that the call started the conversation:

* the conversation made its last model call before the parent got the call's result (a
  tool that runs a sub-agent returns after it); and
* its first user message quotes a text argument of the call (the task it was given), or
  the call's result holds its final answer (what it gave back), or the call has no text
  argument to quote (a bare ``delegate()``: the timing is all there is to go by).

A conversation whose link fails is a top-level conversation of its own.
"""

from __future__ import annotations

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.traffic.capture.conversation import Conversation


def quotes_arguments(call: ToolCall, texts: list[str]) -> bool:
    """Whether one of ``texts`` quotes a non-empty text argument of ``call``."""
    values = [v for v in call.arguments.values() if isinstance(v, str) and v]
    return any(value in text for value in values for text in texts)


def first_user_texts(conversation: Conversation) -> list[str]:
    """The user messages of the first iteration of ``conversation``."""
    first = conversation.iterations[0].messages if conversation.iterations else []
    return [m.content for m in first if m.role == "user" and m.content]


def _final_answer(conversation: Conversation) -> str | None:
    for iteration in reversed(conversation.iterations):
        for message in reversed(iteration.messages):
            if message.role == "assistant" and message.content:
                return message.content
    return None


def _started_by(parent: Conversation, call: ToolCall, child: Conversation) -> bool:
    answer = parent.answers.get(call.id)
    if answer is not None and child.last_request > answer[0]:
        return False  # still running after the parent had the call's result
    if not any(isinstance(v, str) and v for v in call.arguments.values()):
        return True
    if quotes_arguments(call, first_user_texts(child)):
        return True
    final, result = _final_answer(child), answer[1] if answer is not None else None
    return bool(final and result and final.strip() in result)


def top_level(conversations: list[Conversation]) -> list[Conversation]:
    """The top-level conversations, in the order they started, after unlinking every
    sub-agent that no tool call of its parent started (see the module docstring)."""
    for child in conversations:
        parent = child.parent
        if parent is None:
            continue
        for iteration in parent.iterations:
            link = next(((i, c) for i, c in iteration.children if c is child), None)
            if link is None:
                continue
            call = next((c for c in iteration.tool_calls if c.id == link[0]), None)
            if call is None or not _started_by(parent, call, child):
                iteration.children.remove(link)
                child.parent = None
            break
    return [c for c in conversations if c.parent is None]
