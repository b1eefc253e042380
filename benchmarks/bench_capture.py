"""Capture: what rebuilding the contexts costs, next to replaying the same test.

    .venv/bin/python benchmarks/bench_capture.py           # 100 (best of 3) and 1,000 calls
    .venv/bin/python benchmarks/bench_capture.py --quick   # 10 and 100 calls, once each

One agent on the raw ``openai`` SDK (chat completions) runs a conversation of N model
calls: every reply asks for one tool, the agent appends the reply and the tool's result
and calls again, so request *k* repeats the whole history (2k + 2 messages); the last reply
is the answer. The conversation is first recorded once (the fake model answers, a
:class:`TrafficRecorder` keeps the exchanges, written as a cassette), then measured:

* **replay**: the same agent, its requests answered by a replaying :class:`Cassette`
  (matching on, as in a test), wall and CPU time of the whole run;
* **capture**: ``CapturedRuns(...).contexts`` over the cassette's exchange log after the
  run: what the ``agent_context`` fixture adds to that test;
* **capture per request message**: capture time divided by the number of messages in all
  requests (the size of what must be read); flat from 100 to 1,000 calls means linear in
  what the requests hold, with no quadratic term of its own.

A first table measures capture alone on the same conversation written by the codec (no
SDK, no replay: seconds instead of many minutes), at 100, 1,000 and 2,000 calls.

Nothing leaves 127.0.0.1: the client points at ``http://127.0.0.1:9`` (nobody listens)
and every request is answered in-process.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

from pytest_agentctx import FakeLLM, ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.capture import CapturedRuns, Exchange, TrafficRecorder, build_contexts
from pytest_agentctx.traffic.cassettes import Cassette
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.store import write_cassette
from pytest_agentctx.traffic.codecs import Completion, Usage, get_codec

BASE_URL = "http://127.0.0.1:9/v1"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a step up.",
            "parameters": {"type": "object", "properties": {"step": {"type": "integer"}}},
        },
    }
]


def run_agent(client: openai.OpenAI, calls: int) -> str | None:
    """The agent: a raw chat-completions loop that repeats the whole history each call."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a patient assistant that looks steps up."},
        {"role": "user", "content": f"Look up {calls - 1} steps, then say done."},
    ]
    while True:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            step = json.loads(call.function.arguments)["step"]  # type: ignore[union-attr]
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": f"step {step} is fine"}
            )


def record(calls: int, path: Path) -> int:
    """Record a conversation of ``calls`` model calls into ``path``; returns the number of
    messages in all its requests."""
    fake = FakeLLM()
    for step in range(calls - 1):
        fake.reply(tool_calls=[("lookup", {"step": step})], usage={"input_tokens": 10})
    fake.reply("done")
    recorder = TrafficRecorder()
    with fake:
        recorder.start()
        try:
            with openai.OpenAI(api_key="sk-bench", base_url=BASE_URL, max_retries=0) as client:
                run_agent(client, calls)
        finally:
            recorder.stop()
    interactions = [
        Interaction(
            method=e.method,
            url=e.url,
            request_headers={"content-type": "application/json"},
            request_body=e.request,
            status=e.status,
            response_headers={"content-type": "application/json"},
            response_body=e.response,
        )
        for e in recorder.exchanges
    ]
    write_cassette(path, interactions)
    return sum(len(e.request_json()["messages"]) for e in recorder.exchanges)


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def measure(calls: int, repeats: int, folder: Path) -> dict[str, float]:
    path = folder / f"conversation_{calls}.json"
    request_messages = record(calls, path)
    best: dict[str, float] = {}
    for _ in range(repeats):
        cassette = Cassette(path)
        with openai.OpenAI(api_key="sk-bench", base_url=BASE_URL, max_retries=0) as client:
            cassette.start()
            try:
                replay_wall, replay_cpu, _ = timed(lambda: run_agent(client, calls))
            finally:
                cassette.stop()
        assert not cassette.misses, cassette.miss_message(cassette.misses[0])
        runs = CapturedRuns(cassette.exchange_log)
        capture_wall, capture_cpu, contexts = timed(lambda: runs.contexts)  # noqa: B023
        assert [len(context.iterations) for context in contexts] == [calls]
        figures = {
            "replay_wall": replay_wall,
            "replay_cpu": replay_cpu,
            "capture_wall": capture_wall,
            "capture_cpu": capture_cpu,
        }
        for key, value in figures.items():
            best[key] = min(best.get(key, value), value)
    best["request_messages"] = request_messages
    return best


def synthetic(calls: int) -> list[Exchange]:
    """The exchanges of the same conversation, written by the codec (no SDK, no replay)."""
    codec = get_codec("openai_chat")
    url = BASE_URL + "/chat/completions"
    spec = ToolSpec("lookup", "Look a step up.", {"type": "object"})
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a patient assistant that looks steps up."},
        {"role": "user", "content": f"Look up {calls - 1} steps, then say done."},
    ]
    exchanges = []
    for step in range(calls):
        body = codec.encode_request(model="gpt-4o-mini", messages=history, tools=[spec])
        call = ToolCall(id=f"call_{step}", name="lookup", arguments={"step": step})
        last = step == calls - 1
        completion = Completion(
            content="done" if last else None,
            tool_calls=() if last else (call,),
            model="gpt-4o-mini",
            usage=Usage(10, 2),
        )
        response = codec.encode_response(completion, response_id=f"chatcmpl-{step}")
        exchanges.append(Exchange("POST", url, 200, {"json": body}, {"json": response}))
        history.append({"role": "assistant", "content": None, "tool_calls": [call.model_dump()]})
        history.append({"role": "tool", "tool_call_id": call.id, "content": f"step {step} ok"})
    return exchanges


def capture_only(sizes: tuple[int, ...]) -> None:
    """Capture alone (best of 3) on codec-written conversations: the linearity check."""
    print()
    print("| calls | messages in all requests | capture (CPU, best of 3) | per request message |")
    print("|---:|---:|---:|---:|")
    for calls in sizes:
        exchanges = synthetic(calls)
        messages = sum(len(e.request_json()["messages"]) for e in exchanges)
        best = min(timed(lambda: build_contexts(exchanges).contexts)[1] for _ in range(3))  # noqa: B023
        per_message = 1e9 * best / messages
        print(f"| {calls:,} | {messages:,} | {best * 1e3:,.1f} ms | {per_message:,.0f} ns |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 and 100 calls, once each")
    options = parser.parse_args(argv)
    capture_only((10, 100, 1000) if options.quick else (100, 1000, 2000))
    print()
    # (calls, repeats): a 1,000-call replay takes minutes (the SDK and the cassette read
    # about a million messages), so it runs once
    sizes = ((10, 1), (100, 1)) if options.quick else ((100, 3), (1000, 1))
    print(f"Python {platform.python_version()}, openai {openai.__version__}")
    print()
    print(
        "| calls | messages in all requests | replay (wall / CPU) | capture (wall / CPU) "
        "| capture / replay (CPU) | capture per request message (CPU) |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for calls, repeats in sizes:
            f = measure(calls, repeats, Path(folder))
            print(
                f"| {calls:,} | {int(f['request_messages']):,} "
                f"| {f['replay_wall'] * 1e3:,.0f} ms / {f['replay_cpu'] * 1e3:,.0f} ms "
                f"| {f['capture_wall'] * 1e3:,.1f} ms / {f['capture_cpu'] * 1e3:,.1f} ms "
                f"| {100 * f['capture_cpu'] / f['replay_cpu']:.1f} % "
                f"| {1e9 * f['capture_cpu'] / f['request_messages']:,.0f} ns |",
                flush=True,
            )


if __name__ == "__main__":
    main()
