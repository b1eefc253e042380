"""The mcp SDK's stdio servers, while an interceptor is active: the SDK's process seam
replaced (:mod:`pytest_agentctx.traffic.mcp.stdio`), so that each message to a stdio MCP
server is offered to the handlers like a request.

Installed as an interceptor starts, when the SDK's stdio client is imported by then (never
importing it: a session that does not use MCP pays nothing); a stdio client imported later
starts its servers itself until the next start.
"""

from __future__ import annotations

import sys

#: Whether :func:`install` replaced the seam (and :func:`uninstall` must put it back).
_installed = False


def install() -> None:
    """Replace the SDK's seam, when the SDK's stdio client is imported."""
    global _installed
    if not _installed and "mcp.client.stdio" in sys.modules:
        from pytest_agentctx.traffic.mcp import stdio

        stdio.acquire()
        _installed = True


def uninstall() -> None:
    """Put the SDK's seam back (unless a local server still needs it)."""
    global _installed
    if _installed:
        from pytest_agentctx.traffic.mcp import stdio

        stdio.release()
        _installed = False
