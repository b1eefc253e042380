"""An order-support agent on pydantic-ai, with two tools that read the shop's orders.

This is an ordinary pydantic-ai agent, defined at import time on ``openai:gpt-4o-mini``;
its tools read the run's dependencies (``deps=Shop(...)``), and nothing in it knows about
tests. The tests swap its model with pydantic-ai's own ``Agent.override(model=...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic_ai import Agent, RunContext

SYSTEM_PROMPT = (
    "You are the support assistant of a small bookshop. Look orders up with lookup_order "
    "and explain delays with shipping_status. Be brief and friendly."
)


@dataclass
class Shop:
    """The shop's data the tools read: orders by id and carrier news by carrier."""

    orders: dict[str, dict[str, str]] = field(
        default_factory=lambda: {
            "A-1042": {"title": "Dune", "status": "shipped", "carrier": "PostNord"},
            "A-1043": {"title": "Emma", "status": "packing", "carrier": "DHL"},
        }
    )
    carriers: dict[str, str] = field(
        default_factory=lambda: {
            "PostNord": "delays of 2 days in Scandinavia",
            "DHL": "on time",
        }
    )


support_agent = Agent(
    "openai:gpt-4o-mini",
    deps_type=Shop,
    output_type=str,
    system_prompt=SYSTEM_PROMPT,
    defer_model_check=True,  # the OpenAI client (and its key) is made at the first run
)


@support_agent.tool
def lookup_order(ctx: RunContext[Shop], order_id: str) -> str:
    """The title, status and carrier of an order.

    Args:
        order_id: The order's id, e.g. A-1042.
    """
    order = ctx.deps.orders.get(order_id.strip().upper())
    if order is None:
        return f"no order {order_id}"
    return f"{order['title']}: {order['status']}, carrier {order['carrier']}"


@support_agent.tool
def shipping_status(ctx: RunContext[Shop], carrier: str) -> str:
    """Current delivery news of a carrier.

    Args:
        carrier: The carrier's name, as lookup_order gives it.
    """
    return ctx.deps.carriers.get(carrier, f"no news from {carrier}")
