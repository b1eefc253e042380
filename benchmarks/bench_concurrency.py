"""Agent runs awaited together, each with its own cassette, against the same runs one by one.

    .venv/bin/python benchmarks/bench_concurrency.py           # the full run, ~1 minute
    .venv/bin/python benchmarks/bench_concurrency.py --quick   # a smoke run, a few seconds

Two measurements:

1. **50 runs awaited together** (``asyncio.gather``) against **50 runs one after the
   other**. Each run starts its own ``Cassette`` inside its task and replays a short tool
   loop (a tool call, then the answer: two requests) through the real ``AsyncOpenAI``
   SDK, then checks the cassette (no miss, every recording used). The cassette was
   recorded once, at the start, against a loopback server that is stopped before the
   replays. Median of the repeats; the target is that the runs together take at most the
   time of the runs one by one.
2. **The per-request cost of choosing the handlers**: the scoped look-up the transport
   makes now (the context's interceptors that are still active, :mod:`.scopes`) against
   the process-wide list it read before (a copy of the list, newest first), with the
   interceptors of one test (the test's cassette and one run's), and with 50 concurrent
   runs active. For scale, the time of a whole request an interceptor answers, through
   ``httpx2.AsyncClient``.

Nothing leaves 127.0.0.1: the replays point at the stopped loopback server's address.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

import httpx2
import openai

from pytest_agentctx import LoopbackProvider
from pytest_agentctx.traffic import scopes
from pytest_agentctx.traffic.cassettes import Cassette, RecordMode
from pytest_agentctx.traffic.transport import Interceptor

RUNS = 50
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


async def tool_loop(base_url: str) -> str:
    """Ask the model, run the tool it calls, give it the result; return its answer."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    async with client:
        for _ in range(4):
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                assert call.type == "function", call
                city = json.loads(call.function.arguments)["city"]
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": f"sunny in {city}"}
                )
    raise RuntimeError("the agent did not stop")


def record(path: Path) -> str:
    """Record the tool loop into ``path``; returns the base URL it was recorded at."""
    with LoopbackProvider() as provider:
        provider.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
        cassette = Cassette(path, mode=RecordMode.REWRITE)
        with Interceptor(cassette.handle, witness=True):
            answer = asyncio.run(tool_loop(provider.openai_base_url))
        cassette.save("")
        provider.verify()
        url = provider.openai_base_url
    assert answer == "Sunny in Paris.", answer
    return url


async def replay(path: Path, base_url: str) -> None:
    cassette = Cassette(path)
    cassette.start()  # in this run's task: it answers this run only
    try:
        answer = await tool_loop(base_url)
    finally:
        cassette.stop()
    cassette.check()
    assert answer == "Sunny in Paris.", answer


async def sequential(path: Path, base_url: str) -> float:
    started = time.perf_counter()
    for _ in range(RUNS):
        await replay(path, base_url)
    return time.perf_counter() - started


async def together(path: Path, base_url: str) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(replay(path, base_url) for _ in range(RUNS)))
    return time.perf_counter() - started


def run_times(path: Path, base_url: str, repeats: int) -> tuple[float, float]:
    """Median seconds of the runs one by one and of the runs together, alternated."""
    asyncio.run(sequential(path, base_url))  # warm-up: imports, the SDK's first calls
    one_by_one, at_once = [], []
    for _ in range(repeats):
        one_by_one.append(asyncio.run(sequential(path, base_url)))
        at_once.append(asyncio.run(together(path, base_url)))
    return statistics.median(one_by_one), statistics.median(at_once)


# -- the look-up of the handlers ------------------------------------------------------


def _nothing(request: Any) -> None:
    return None


def _old_lookup(handlers: list[Any], witnesses: list[Any]) -> list[Any]:
    """What the transport did before: the process-wide list, newest first."""
    return list(reversed(handlers))


def _new_lookup() -> list[Any]:
    """What it does now (transport.dispatch._offered without a respx route)."""
    scoped = scopes.offered()
    assert scoped is not None
    assert not isinstance(scoped, scopes.Ended)
    return [m.handler for m in scoped]


def lookup_ns(active_runs: int, number: int) -> tuple[float, float]:
    """Nanoseconds per look-up, before and now, in the context of one run while the test's
    cassette and ``active_runs`` runs' cassettes are active."""
    root = Interceptor(_nothing)
    root.start()
    contexts = [contextvars.copy_context() for _ in range(active_runs)]
    runs = [Interceptor(_nothing) for _ in range(active_runs)]
    for context, run in zip(contexts, runs, strict=True):
        context.run(run.start)
    try:
        handlers = [root.handler, *(r.handler for r in runs)]
        old = min(timeit.repeat(lambda: _old_lookup(handlers, []), number=number, repeat=5))
        new = min(timeit.repeat(lambda: contexts[0].run(_new_lookup), number=number, repeat=5))
        # the context switch of contexts[0].run is not part of the look-up: take it out
        switch = min(timeit.repeat(lambda: contexts[0].run(len, ()), number=number, repeat=5))
    finally:
        for run in runs:
            run.stop()
        root.stop()
    return old / number * 1e9, (new - switch) / number * 1e9


async def _requests(count: int) -> float:
    async with httpx2.AsyncClient() as client:
        started = time.perf_counter()
        for _ in range(count):
            await client.get("http://127.0.0.1:9/v1/models")
        return time.perf_counter() - started


def request_us(count: int) -> float:
    """Microseconds per request an interceptor answers, through httpx2.AsyncClient."""
    with Interceptor(lambda request: httpx2.Response(200, text="ok")):
        asyncio.run(_requests(50))
        return min(asyncio.run(_requests(count)) for _ in range(3)) / count * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run, a few seconds")
    quick = parser.parse_args(argv).quick
    repeats, number = (1, 20_000) if quick else (7, 200_000)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tool-loop.json"
        base_url = record(path)
        seq, conc = run_times(path, base_url, repeats)
    print(f"{RUNS} runs, 2 replayed requests each, median of {repeats}:")
    print(f"  one after the other : {seq * 1000:8.1f} ms")
    print(f"  awaited together    : {conc * 1000:8.1f} ms")
    print(f"  together / one by one: {conc / seq:.2f} (target: at most 1.00)")
    print("Choosing the handlers of a request (ns per request):")
    for active in (1, RUNS):
        old, new = lookup_ns(active, number)
        print(
            f"  {active:>2} run(s) active: process-wide list {old:6.0f} ns, "
            f"scoped {new:6.0f} ns (+{new - old:.0f} ns)"
        )
    print(f"A whole request an interceptor answers: {request_us(500 if quick else 3000):.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
