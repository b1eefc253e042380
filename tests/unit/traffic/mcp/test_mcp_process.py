"""The process the SDK gets while a session is replayed: nothing runs, and it shuts down at
once as the SDK shuts a server down."""

from __future__ import annotations

import anyio
import anyio.abc
import pytest

from pytest_agentctx.traffic.mcp.process import McpProcess
from pytest_agentctx.traffic.mcp.stdio import StdioSession


async def _never_spawned() -> anyio.abc.Process:
    raise AssertionError("a replayed session starts no process")


def _process() -> McpProcess:
    return McpProcess(StdioSession("orders", "python orders.py", spawn=_never_spawned))


def test_a_replayed_process_has_no_pid() -> None:
    assert _process().pid == 0  # the SDK's termination leaves a process without one alone


async def test_it_exits_as_soon_as_its_input_is_closed() -> None:
    process = _process()
    assert process.returncode is None
    await process.stdin.aclose()
    with anyio.fail_after(1):
        assert await process.wait() == 0


async def test_its_output_ends_once_its_input_is_closed() -> None:
    process = _process()
    await process.stdin.aclose()
    with pytest.raises(anyio.EndOfStream):
        await process.stdout.receive()


async def test_terminating_it_ends_its_output_and_wait() -> None:
    process = _process()
    process.terminate()
    with anyio.fail_after(1):
        assert await process.wait() == -15
    with pytest.raises(anyio.EndOfStream):
        await process.stdout.receive()


async def test_it_closes_as_an_async_context_manager() -> None:
    async with _process() as process:
        pass
    assert process.returncode == 0
    with pytest.raises(anyio.ClosedResourceError):
        await process.stdin.send(b"{}\n")
