"""An inventory assistant on strands-agents and Amazon Bedrock, with two tools.

This is an ordinary strands-agents agent: ``build_agent()`` makes a ``strands.Agent`` on a
``BedrockModel`` (Claude 3.5 Haiku through a cross-region inference profile), with a tool
that reads the stock and one that reorders. Nothing in it knows about tests: they pass
their own ``BedrockModel``, pointed at the model server.
"""

from __future__ import annotations

from strands import Agent, tool
from strands.models import BedrockModel

MODEL_ID = "us.anthropic.claude-3-5-haiku-20241022-v1:0"

SYSTEM_PROMPT = (
    "You are the inventory assistant of a small shop. Check the stock with check_stock "
    "before you reorder anything with reorder. Be brief."
)

#: Units in stock, by product.
STOCK = {"SKU-1": 12, "SKU-2": 0, "SKU-3": 2}

#: Orders placed with the supplier, in order.
ORDERS: list[tuple[str, int]] = []


@tool
def check_stock(sku: str) -> str:
    """How many units of a product are in stock.

    Args:
        sku: The product's stock-keeping unit, e.g. SKU-1.
    """
    units = STOCK.get(sku.strip().upper())
    return f"no product {sku}" if units is None else f"{sku}: {units} in stock"


@tool
def reorder(sku: str, quantity: int) -> str:
    """Order more units of a product from the supplier.

    Args:
        sku: The product's stock-keeping unit.
        quantity: How many units to order.
    """
    ORDERS.append((sku, quantity))
    return f"ordered {quantity} x {sku}, arriving in 3 days"


def build_agent(model: BedrockModel | None = None) -> Agent:
    """The assistant, on ``model`` (by default Bedrock in the session's AWS region)."""
    return Agent(
        model=model or BedrockModel(model_id=MODEL_ID),
        tools=[check_stock, reorder],
        system_prompt=SYSTEM_PROMPT,
        callback_handler=None,  # strands prints the reply as it streams by default
    )
