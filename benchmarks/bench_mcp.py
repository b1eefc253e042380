"""An MCP ``tools/call`` answered in memory, replayed by pytest-agentctx over stdio, and
replayed by the MCP-only recorders mcp-cassette and mcp-recorder.

    .venv/bin/python benchmarks/bench_mcp.py           # 7 rounds of 200 calls
    .venv/bin/python benchmarks/bench_mcp.py --quick   # 3 rounds of 50
    .venv/bin/python benchmarks/bench_mcp.py --json
    MCP_BENCH_FOREIGN_PYTHON=/path/to/venv/bin/python .venv/bin/python benchmarks/bench_mcp.py

One call: ``await session.call_tool("get_order", {"order_id": "A-1001"})`` with the mcp
SDK's ``ClientSession``, its result's structured content checked. The session is opened
(spawned where there is a process, and initialized) once per round, outside the timer; the
N calls of the round are timed, and the figure is the time per call. The ways:

* **in-memory (the floor)**: a FastMCP server with the same tool, answered through the
  SDK's in-memory transport (``create_connected_server_and_client_session``): no process,
  no serialisation, the server's own handler run for each call;
* **agentctx replay (stdio)**: ``stdio_client`` of ``python bench_mcp_server.py`` while a
  pytest-agentctx :class:`~pytest_agentctx.traffic.cassettes.Cassette` replays: no process
  is spawned, each client message is matched (JSON-RPC id aside) and answered with the
  server's recorded lines. Needs the package's MCP stdio replay
  (``pytest_agentctx.traffic.mcp.stdio``); without it the way is left out and said so;
* **mcp-cassette replay (stdio)**: ``stdio_client`` of ``python -m mcp_cassette serve
  CASSETTE.json``: its replay server, a child process speaking NDJSON over stdio (spawned
  once per round, outside the timer);
* **mcp-recorder replay (HTTP)**: ``streamable_http_client`` of its replay app
  (``mcp_recorder.replayer.create_replay_app``) served by uvicorn on ``127.0.0.1`` in a
  child process (started once per round, outside the timer; its ``replay`` command binds
  0.0.0.0, so the app is started with the same pieces on the loopback address instead).
  mcp-recorder replays over HTTP only.

The three cassettes hold one session, captured once from the in-memory server by a relay
between the client's and the server's streams (``initialize``, ``notifications/
initialized``, then N ``tools/call``): the package's is built from it as the package
stores stdio (``traffic.mcp.foreign.stream_to_stdio``), the others written in each
recorder's own format. mcp-cassette and mcp-recorder are not dependencies of the package:
they run in a virtual environment of their own, named by ``MCP_BENCH_FOREIGN_PYTHON`` (or
``--foreign-python``): a Python in which ``import mcp_cassette`` and/or ``import
mcp_recorder`` work (mcp-recorder needs starlette, uvicorn, httpx, pydantic, click, pyyaml;
mcp-cassette needs anyio and pydantic). A way whose package is missing there is left out,
and the output says so.

Each round runs every way, their order rotated, the collector paused while timing; the
figures are the best round and the median. Targets: the package's replay within 1.1x of
the in-memory transport, and faster than the other recorders' replay. Nothing leaves
127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

TOOL = "get_order"
ARGUMENTS = {"order_id": "A-1001"}
ORDER = {"order_id": "A-1001", "status": "shipped", "total_cents": 4200, "items": 3}
SERVER_SCRIPT = "bench_mcp_server.py"
LABEL = "bench_mcp_server"
FOREIGN_ENV = "MCP_BENCH_FOREIGN_PYTHON"

#: The server's source: written beside the cassettes so that the stdio command names a
#: real file (the package's replay spawns nothing; the label comes from its name).
SERVER_SOURCE = '''
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("bench", log_level="WARNING")


@mcp.tool()
def get_order(order_id: str) -> dict:
    """An order by its id."""
    return {"order_id": order_id, "status": "shipped", "total_cents": 4200, "items": 3}


if __name__ == "__main__":
    mcp.run()
'''


def server() -> Any:
    from mcp.server.fastmcp import FastMCP

    mcp = FastMCP("bench", log_level="WARNING")  # no log line per request on the floor

    @mcp.tool()
    def get_order(order_id: str) -> dict[str, Any]:
        """An order by its id."""
        return {"order_id": order_id, "status": "shipped", "total_cents": 4200, "items": 3}

    return mcp


async def calls(session: Any, count: int) -> float:
    """Seconds per call of ``count`` calls in ``session``, collector paused."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(count):
            result = await session.call_tool(TOOL, ARGUMENTS)
            assert result.structuredContent == ORDER, result
        return (time.perf_counter() - start) / count
    finally:
        gc.enable()


# -- the session, captured once --------------------------------------------------------


def _wire(message: Any) -> dict[str, Any]:
    data: dict[str, Any] = message.message.model_dump(by_alias=True, mode="json", exclude_none=True)
    return data


async def capture(count: int) -> list[tuple[str, dict[str, Any]]]:
    """The messages of a session of ``count`` calls with the in-memory server, in the order
    each side wrote them: ``(sender, message)``."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.shared.message import SessionMessage

    mcp = server()._mcp_server
    stream: list[tuple[str, dict[str, Any]]] = []
    c_send, c_recv = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    s_in_send, s_in_recv = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    s_out_send, s_out_recv = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    back_send, back_recv = anyio.create_memory_object_stream[SessionMessage | Exception](1)

    async def relay(source: Any, sink: Any, sender: str) -> None:
        async for message in source:
            if isinstance(message, SessionMessage):
                stream.append((sender, _wire(message)))
            await sink.send(message)

    async with anyio.create_task_group() as group:
        group.start_soon(relay, c_recv, s_in_send, "client")
        group.start_soon(relay, s_out_recv, back_send, "server")
        group.start_soon(
            lambda: mcp.run(s_in_recv, s_out_send, mcp.create_initialization_options())
        )
        async with ClientSession(back_recv, c_send) as session:
            await session.initialize()
            for _ in range(count):
                await session.call_tool(TOOL, ARGUMENTS)
        group.cancel_scope.cancel()
    return stream


def write_agentctx(stream: list[tuple[str, dict[str, Any]]], path: Path) -> None:
    from pytest_agentctx.traffic.cassettes.store import write_cassette
    from pytest_agentctx.traffic.mcp.foreign import stream_to_stdio

    write_cassette(path, stream_to_stdio(stream, LABEL, str(path)))


def write_mcp_cassette(stream: list[tuple[str, dict[str, Any]]], path: Path) -> None:
    """The session in mcp-cassette's format (version 2, stdio)."""

    def kind(message: dict[str, Any]) -> str:
        if "method" in message:
            return "request" if "id" in message else "notification"
        return "response"

    init = next(m for s, m in stream if s == "server" and "result" in m)["result"]
    document = {
        "format_version": 2,
        "recorded_at": dt.datetime.now(dt.UTC).isoformat(),
        "transport": "stdio",
        "server_url": None,
        "session_id": None,
        "protocol_version": init.get("protocolVersion"),
        "server_info": {k: init["serverInfo"][k] for k in ("name", "version")},
        "messages": [
            {
                "seq": seq,
                "t_offset_ms": 0,
                "sender": sender,
                "kind": kind(message),
                "method": message.get("method"),
                "msg_id": message.get("id"),
                "payload": message,
                "redacted": False,
                "exchange": None,
                "channel": None,
            }
            for seq, (sender, message) in enumerate(stream)
        ],
    }
    path.write_text(json.dumps(document))


def write_mcp_recorder(stream: list[tuple[str, dict[str, Any]]], path: Path, url: str) -> None:
    """The session in mcp-recorder's format (version 1.0, streamable HTTP answered as
    server-sent events, as FastMCP answers)."""
    answers = {json.dumps(m["id"]): m for s, m in stream if s == "server" and "method" not in m}
    interactions = []
    for sender, message in stream:
        if sender != "client":
            continue
        asked = "id" in message and "method" in message
        interactions.append(
            {
                "type": "jsonrpc_request" if asked else "notification",
                "request": message,
                "response": answers.get(json.dumps(message["id"])) if asked else None,
                "response_is_sse": asked,
                "response_status": 200 if asked else 202,
                "latency_ms": 0,
                "http_method": None,
                "http_path": None,
            }
        )
    document = {"version": "1.0", "metadata": {"server_url": url}, "interactions": interactions}
    path.write_text(json.dumps(document))


# -- the ways --------------------------------------------------------------------------

Way = Callable[[int], Awaitable[float]]


def in_memory() -> Way:
    from mcp.shared.memory import create_connected_server_and_client_session

    mcp = server()

    async def round_(count: int) -> float:
        async with create_connected_server_and_client_session(mcp) as session:
            return await calls(session, count)

    return round_


@contextlib.asynccontextmanager
async def stdio_session(command: str, args: list[str], cwd: Path) -> AsyncIterator[Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command, args=args, cwd=str(cwd), env=_child_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _child_env() -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "SYSTEMROOT", "TMPDIR")
    return {name: os.environ[name] for name in keep if name in os.environ}


def agentctx_replay(path: Path, folder: Path) -> Way:
    from pytest_agentctx.traffic.cassettes import Cassette

    async def round_(count: int) -> float:
        cassette = Cassette(path)
        cassette.start()
        try:
            async with stdio_session(sys.executable, [SERVER_SCRIPT], folder) as session:
                return await calls(session, count)
        finally:
            cassette.stop()
            cassette.check()

    return round_


def mcp_cassette_replay(python: str, path: Path, folder: Path) -> Way:
    async def round_(count: int) -> float:
        args = ["-m", "mcp_cassette", "serve", str(path)]
        async with stdio_session(python, args, folder) as session:
            return await calls(session, count)

    return round_


RECORDER_APP = """
import sys
import uvicorn
from mcp_recorder._types import Cassette
from mcp_recorder.matcher import create_matcher
from mcp_recorder.replayer import create_replay_app

cassette = Cassette.model_validate_json(open(sys.argv[1]).read())
app = create_replay_app(cassette, create_matcher("method_params", cassette.interactions))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _listening(port: int, child: asyncio.subprocess.Process) -> None:
    for _ in range(500):
        if child.returncode is not None:
            raise RuntimeError(f"mcp-recorder's replay server exited ({child.returncode})")
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            await writer.wait_closed()
            return
        await asyncio.sleep(0.02)
    raise RuntimeError("mcp-recorder's replay server did not listen within 10 s")


def mcp_recorder_replay(python: str, path: Path, port: int) -> Way:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def round_(count: int) -> float:
        child = await asyncio.create_subprocess_exec(
            *[python, "-c", RECORDER_APP, str(path), str(port)],
            env=_child_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            await _listening(port, child)
            url = f"http://127.0.0.1:{port}/mcp"
            async with (
                streamable_http_client(url) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await calls(session, count)
        finally:
            child.terminate()
            await asyncio.wait_for(child.wait(), timeout=10)

    return round_


# -- the run ---------------------------------------------------------------------------


def foreign_has(python: str | None, module: str) -> bool:
    if not python:
        return False
    probe = subprocess.run(
        [python, "-c", f"import {module}"], env=_child_env(), capture_output=True, check=False
    )
    return probe.returncode == 0


def has_agentctx_stdio() -> bool:
    import importlib.util

    return importlib.util.find_spec("pytest_agentctx.traffic.mcp.stdio") is not None


async def measure(rounds: int, count: int, python: str | None) -> dict[str, Any]:
    absent: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / SERVER_SCRIPT).write_text(SERVER_SOURCE)
        stream = await capture(count)
        ways: dict[str, Way] = {"in-memory": in_memory()}
        if has_agentctx_stdio():
            write_agentctx(stream, folder / "agentctx.json")
            ways["agentctx replay (stdio)"] = agentctx_replay(folder / "agentctx.json", folder)
        else:
            absent["agentctx replay (stdio)"] = "pytest_agentctx.traffic.mcp.stdio is missing"
        if foreign_has(python, "mcp_cassette"):
            assert python is not None
            write_mcp_cassette(stream, folder / "mcp_cassette.json")
            ways["mcp-cassette replay (stdio)"] = mcp_cassette_replay(
                python, folder / "mcp_cassette.json", folder
            )
        else:
            absent["mcp-cassette replay (stdio)"] = f"no {FOREIGN_ENV} with mcp_cassette"
        if foreign_has(python, "mcp_recorder"):
            assert python is not None
            port = _free_port()
            recorded = folder / "mcp_recorder.json"
            write_mcp_recorder(stream, recorded, f"http://127.0.0.1:{port}")
            ways["mcp-recorder replay (HTTP)"] = mcp_recorder_replay(python, recorded, port)
        else:
            absent["mcp-recorder replay (HTTP)"] = f"no {FOREIGN_ENV} with mcp_recorder"
        for way in ways.values():  # warm-up: imports, first patches, first spawn
            await way(count)
        times: dict[str, list[float]] = {name: [] for name in ways}
        names = list(ways)
        for number in range(rounds):
            turn = names[number % len(names) :] + names[: number % len(names)]
            for name in turn:
                times[name].append(await ways[name](count))
    best = {name: min(values) * 1e6 for name, values in times.items()}
    median = {name: statistics.median(values) * 1e6 for name, values in times.items()}
    result: dict[str, Any] = {
        "calls": count,
        "rounds": rounds,
        "best_us": best,
        "median_us": median,
        "absent": absent,
    }
    ours = "agentctx replay (stdio)"
    if ours in best:
        result["ratio_best"] = best[ours] / best["in-memory"]
        result["ratio_median"] = median[ours] / median["in-memory"]
        result["vs_others_best"] = {
            name: best[ours] / value for name, value in best.items() if name.startswith("mcp-")
        }
    return result


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"MCP tools/call, {result['calls']} calls per round, {result['rounds']} rounds; "
        "time per call (the session opened per round, outside the timer)",
        "",
        "| way | best | median |",
        "| --- | ---: | ---: |",
    ]
    for name in result["best_us"]:
        lines.append(
            f"| {name} | {result['best_us'][name]:,.0f} µs | {result['median_us'][name]:,.0f} µs |"
        )
    if "ratio_best" in result:
        lines.append(
            f"| **agentctx replay / in-memory** | **{result['ratio_best']:.2f}x** "
            f"| **{result['ratio_median']:.2f}x** |"
        )
        for name, ratio in result["vs_others_best"].items():
            lines.append(f"| agentctx replay / {name} | {ratio:.2f}x | |")
        within = "met" if result["ratio_best"] <= 1.1 else "NOT met"
        lines += ["", f"Target (replay within 1.1x of in-memory, best round): {within}"]
        if result["vs_others_best"]:
            faster = all(ratio < 1 for ratio in result["vs_others_best"].values())
            lines.append(
                "Target (faster than the other recorders' replay): "
                + ("met" if faster else "NOT met")
            )
    for name, why in result["absent"].items():
        lines.append(f"Not measured: {name}: {why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 50 calls")
    parser.add_argument("--rounds", type=int, default=7, help="rounds (best kept)")
    parser.add_argument("--calls", type=int, default=200, help="calls per round and way")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--foreign-python",
        default=os.environ.get(FOREIGN_ENV),
        help=f"the Python that has mcp_cassette / mcp_recorder (default: ${FOREIGN_ENV})",
    )
    args = parser.parse_args(argv)
    rounds, count = (3, 50) if args.quick else (args.rounds, args.calls)
    result = asyncio.run(measure(rounds, count, args.foreign_python))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"python {sys.version.split()[0]}")
        print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
