"""A multi-turn support agent whose context window prunes long conversations.

The agent looks orders up and opens refunds at an order desk passed in at run time
(``deps``), so the agent holds no state and the tests hand it a canned desk. Customers
talk to it for many turns; its :class:`ContextWindow` keeps what it sends to the model
small: the system prompt and the last two turns are always sent, older turns are dropped
oldest first (a tool call always together with its result) once the conversation passes
200 estimated tokens. The context itself keeps every message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_agentctx import Agent, ContextWindow, RunContext, tool


@dataclass
class OrderDesk:
    """A stand-in for the shop's order system: statuses by order id, refunds opened."""

    statuses: dict[str, str] = field(
        default_factory=lambda: {
            "A100": "shipped on 2 January with ACME, arriving 4 January",
            "B200": "delayed: the warehouse is waiting for stock",
            "C300": "delivered on 30 December",
        }
    )
    refunds: list[str] = field(default_factory=list)


@tool
def lookup_order(ctx: RunContext, order_id: str) -> str:
    """The status of an order.

    Args:
        order_id: The order's id, e.g. "A100".
    """
    desk: OrderDesk = ctx.deps["desk"]
    status = desk.statuses.get(order_id.strip().upper())
    if status is None:
        raise LookupError(f"no order {order_id!r}")
    return f"{order_id}: {status}"


@tool
def open_refund(ctx: RunContext, order_id: str, reason: str) -> str:
    """Open a refund for a delivered or delayed order.

    Args:
        order_id: The order's id.
        reason: Why the customer wants a refund, in a few words.
    """
    desk: OrderDesk = ctx.deps["desk"]
    if order_id not in desk.statuses:
        raise LookupError(f"no order {order_id!r}")
    desk.refunds.append(order_id)
    return f"refund R-{len(desk.refunds)} opened for {order_id} ({reason})"


SYSTEM_PROMPT = (
    "You are the support agent of a small online shop. Look orders up with lookup_order "
    "before you say anything about them, open refunds with open_refund when the customer "
    "asks for one, and answer in one or two sentences."
)

#: Send at most ~200 estimated tokens: the system prompt and the last two turns always,
#: older turns while they fit, dropping the oldest first.
WINDOW = ContextWindow(max_tokens=200, min_recent_turns=2, strategy="oldest_first")


def support_agent(
    model: str = "openai:gpt-4o-mini",
    *,
    stream: bool = False,
    window: ContextWindow | None = WINDOW,
) -> Agent:
    """The support agent on ``model`` (``openai:``, ``openai-responses:`` or ``anthropic:``)."""
    return Agent(
        name="support",
        model=model,
        system_prompt=SYSTEM_PROMPT,
        tools=[lookup_order, open_refund],
        max_iterations=4,
        window=window,
        stream=stream,
    )
