"""A small real MCP server for the MCP tests: an order desk, on the official ``mcp`` SDK's
``FastMCP``, over any of its transports.

    python tests/support/mcp_orders_server.py stdio
    python tests/support/mcp_orders_server.py streamable-http PORT
    python tests/support/mcp_orders_server.py sse PORT

Tools: ``get_order(order_id)`` (a fixed order), ``cancel_order(order_id)`` (an ``isError``
result for an unknown order), ``summarise_order(order_id)`` (asks the client to sample a
model: a server-initiated ``sampling/createMessage``), ``slow_count(n)`` (reports progress
``n`` times). ``MCP_ORDERS_SCHEMA=v2`` renames ``get_order``'s argument to ``order_ref``, to
test a changed tool contract; ``MCP_ORDERS_STARTED=PATH`` makes the server append a line to
PATH when it starts, to count the servers a test spawned. On HTTP transports it listens on
127.0.0.1 only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import SamplingMessage, TextContent

ORDERS = {42: {"order_id": 42, "item": "blue mug", "status": "shipped"}}


def build(port: int = 0) -> FastMCP:
    server = FastMCP("orders", host="127.0.0.1", port=port, log_level="WARNING")
    v2 = os.environ.get("MCP_ORDERS_SCHEMA") == "v2"

    if v2:

        @server.tool(name="get_order")
        def get_order_v2(order_ref: int) -> dict[str, object]:
            """Look an order up by its reference."""
            return ORDERS.get(order_ref, {"order_id": order_ref, "status": "unknown"})

    else:

        @server.tool()
        def get_order(order_id: int) -> dict[str, object]:
            """Look an order up by its id."""
            return ORDERS.get(order_id, {"order_id": order_id, "status": "unknown"})

    @server.tool()
    def cancel_order(order_id: int) -> str:
        """Cancel an order; fails for an order that does not exist."""
        if order_id not in ORDERS:
            raise ValueError(f"no order {order_id}")
        return f"order {order_id} cancelled"

    @server.tool()
    async def summarise_order(order_id: int, ctx: Context) -> str:  # type: ignore[type-arg]
        """Summarise an order with the client's model (MCP sampling)."""
        order = ORDERS.get(order_id, {"order_id": order_id})
        result = await ctx.session.create_message(
            messages=[
                SamplingMessage(
                    role="user", content=TextContent(type="text", text=f"Summarise {order}")
                )
            ],
            max_tokens=50,
        )
        content = result.content
        return content.text if isinstance(content, TextContent) else str(content)

    @server.tool()
    async def slow_count(n: int, ctx: Context) -> int:  # type: ignore[type-arg]
        """Count to n, reporting progress at each step."""
        for step in range(1, n + 1):
            await ctx.report_progress(step, n)
        return n

    return server


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    started = os.environ.get("MCP_ORDERS_STARTED")
    if started:
        with Path(started).open("a") as out:
            out.write(f"{transport} {os.getpid()}\n")
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    build(port).run(transport=transport)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
