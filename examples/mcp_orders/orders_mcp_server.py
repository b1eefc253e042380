"""The order desk's MCP server: an ordinary server on the official ``mcp`` SDK's
``FastMCP``, which the example agents reach as their tools.

    python orders_mcp_server.py                   # over stdio (how the agents start it)
    python orders_mcp_server.py http PORT         # over streamable HTTP on 127.0.0.1:PORT

It knows nothing about tests. While the tests replay their cassettes it is neither started
nor reached: the cassette answers every MCP request the agents send.
"""

from __future__ import annotations

import sys

from mcp.server.fastmcp import FastMCP

ORDERS = {
    "A-1042": {"title": "Dune", "status": "shipped", "carrier": "PostNord"},
    "A-1043": {"title": "Emma", "status": "packing", "carrier": "DHL"},
}
CARRIERS = {"PostNord": "delays of 2 days in Scandinavia", "DHL": "on time"}


def build(port: int = 8000) -> FastMCP:
    server = FastMCP("orders", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool()
    def get_order(order_id: str) -> str:
        """The title, status and carrier of an order, by its id (e.g. A-1042)."""
        order = ORDERS.get(order_id.strip().upper())
        if order is None:
            raise ValueError(f"no order {order_id}")
        return f"{order['title']}: {order['status']}, carrier {order['carrier']}"

    @server.tool()
    def shipping_status(carrier: str) -> str:
        """The carrier's current delivery news."""
        return CARRIERS.get(carrier, f"no news from {carrier}")

    return server


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        build(int(sys.argv[2])).run(transport="streamable-http")
    else:
        build().run(transport="stdio")
