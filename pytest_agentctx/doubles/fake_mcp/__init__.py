"""The fake MCP server: :class:`FakeMcp` (``fake_mcp``), a scripted MCP server for tests,
answering the mcp SDK's clients over its in-memory streams, streamable HTTP in-process and
stdio without a process.

Its modules: :mod:`.script` (what a tool, resource or prompt is scripted with, and the MCP
results they give), :mod:`.protocol` (the answer to each MCP method), :mod:`.server`
(:class:`FakeMcp`: the script, what it received, its transports), :mod:`.memory` (the
SDK's in-memory streams) and :mod:`.http` (its URL answered at the transport).
"""

from __future__ import annotations

from pytest_agentctx.doubles.fake_mcp.protocol import McpToolCall as McpToolCall
from pytest_agentctx.doubles.fake_mcp.script import JsonRpcError as JsonRpcError
from pytest_agentctx.doubles.fake_mcp.server import FakeMcp as FakeMcp
