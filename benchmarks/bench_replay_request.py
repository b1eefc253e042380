"""What replaying one realistic request costs, next to an SDK call that costs nothing else.

    .venv/bin/python benchmarks/bench_replay_request.py             # 5 rounds, 10 to 5,000
    .venv/bin/python benchmarks/bench_replay_request.py --quick     # 1 round, 10 to 1,000
    .venv/bin/python benchmarks/bench_replay_request.py --json out.json

Every call is ``client.chat.completions.create(...)`` of the real ``openai`` SDK. Two kinds
of request, both with tools, as an agent sends them:

- **tools**: a system prompt, three tool definitions with JSON schemas and a question
  (about 2.5 KB);
- **conversation**: the same, in the middle of an agent loop: the question, then three
  assistant turns that call tools and the tools' results (about 4.3 KB).

For each kind and each cassette size (10, 100, 1,000 and 5,000 interactions, each request
distinct), two clients answer the same calls:

- **floor**: the SDK over an ``httpx2.MockTransport`` whose handler looks the response up
  in a dict by the request's bytes (``canned[request.content]``): the SDK's own cost and a
  dict lookup, nothing else. The bytes are those the SDK sends, taken from a first pass;
- **pytest-agentctx**: the SDK over its default transport, inside a started
  ``Cassette(path)`` that replays the cassette (mode ``none``, matching on method, host,
  path, query and the whole JSON body, the default).

Call *i* goes once through each, one after the other, the order alternating, so both see
the machine in the same state; the ratio is taken over the whole cassette, in wall time and
in the process's CPU time. Rounds are interleaved: each round replays every kind and size
once, in an order rotated from round to round; a cassette of fewer than 1,000
interactions is replayed again (a new ``Cassette``, as the next test opens it) until 1,000
calls are measured. The table gives the median round; the
cassette is loaded and started before the clock starts (``bench_cassettes.py`` measures
loading). Nothing leaves 127.0.0.1: the cassettes point at ``http://127.0.0.1:9``, where
nothing listens.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASE_URL = "http://127.0.0.1:9/v1"
URL = BASE_URL + "/chat/completions"
API_KEY = "sk-bench-not-a-real-key"
TARGET = 1.1
#: Calls measured per size and round at least: a small cassette is replayed again.
CALLS_PER_ROUND = 1000

SYSTEM = (
    "You are the travel assistant of a large agency. Use the tools to look up flights, "
    "hotels and the weather before you answer, confirm dates and cities with the user, "
    "quote prices in the user's currency and never book without an explicit yes. " * 3
)


def _tool(name: str, fields: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name}: looks it up in the agency's systems and returns JSON. "
            "Call it once per city and date; results are cached for ten minutes.",
            "parameters": {
                "type": "object",
                "properties": {
                    field: {"type": "string", "description": f"The {field}, as free text."}
                    for field in fields
                },
                "required": list(fields[:2]),
                "additionalProperties": False,
            },
        },
    }


TOOLS = [
    _tool("search_flights", ["origin", "destination", "date", "cabin"]),
    _tool("search_hotels", ["city", "check_in", "check_out", "guests"]),
    _tool("get_weather", ["city", "date"]),
]


def _turns(index: int) -> list[dict[str, Any]]:
    """Three assistant turns that call a tool each, with the tools' results."""
    messages: list[dict[str, Any]] = []
    for turn, (tool, arguments, result) in enumerate(
        [
            ("search_flights", {"origin": "Paris", "destination": f"City {index}"}, "flights"),
            ("search_hotels", {"city": f"City {index}", "check_in": "2025-03-01"}, "hotels"),
            ("get_weather", {"city": f"City {index}", "date": "2025-03-01"}, "weather"),
        ]
    ):
        call_id = f"call_{index:06d}_{turn}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps(arguments)},
                    }
                ],
            }
        )
        found = [
            {"name": f"{result} option {option}", "price": 120 + option, "currency": "EUR"}
            for option in range(4)
        ]
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(found)})
    return messages


def request(kind: str, index: int) -> dict[str, Any]:
    """The keyword arguments of call ``index`` of ``kind``: also its JSON body."""
    question = {
        "role": "user",
        "content": f"Trip {index}: plan a week in city {index} in March, with flights from "
        "Paris, a hotel near the centre, and tell me what the weather will be like.",
    }
    messages = [{"role": "system", "content": SYSTEM}, question]
    if kind == "conversation":
        messages += _turns(index)
    return {
        "model": "gpt-4o-mini",
        "messages": messages,
        "tools": TOOLS,
        "tool_choice": "auto",
        "temperature": 0,
        "max_tokens": 600,
    }


def response(index: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-bench{index:06d}",
        "object": "chat.completion",
        "created": 1735689600,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": f"City {index} will be sunny; a flight and a hotel are held.",
                    "refusal": None,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 612, "completion_tokens": 18, "total_tokens": 630},
        "service_tier": "default",
        "system_fingerprint": "fp_bench",
    }


RESPONSE_HEADERS = {
    "content-type": "application/json",
    "openai-version": "2020-10-01",
    "x-request-id": "req_bench",
}


# -- the two clients -----------------------------------------------------------------------


def _client(transport: Any = None) -> Any:
    import httpx2
    import openai

    http_client = httpx2.Client(transport=transport) if transport else httpx2.Client()
    return openai.OpenAI(api_key=API_KEY, base_url=BASE_URL, max_retries=0, http_client=http_client)


def _sent_bytes(kind: str, size: int) -> list[bytes]:
    """The bytes the SDK sends for each call: what the floor's dict is keyed by."""
    import httpx2

    sent: list[bytes] = []

    def keep(message: Any) -> Any:
        sent.append(message.content)
        return httpx2.Response(200, json=response(len(sent) - 1))

    client = _client(httpx2.MockTransport(keep))
    for index in range(size):
        client.chat.completions.create(**request(kind, index))
    return sent


def _floor(kind: str, size: int) -> Any:
    import httpx2

    canned = {
        body: (RESPONSE_HEADERS, json.dumps(response(index)).encode())
        for index, body in enumerate(_sent_bytes(kind, size))
    }

    def answer(message: Any) -> Any:
        headers, content = canned[message.content]
        return httpx2.Response(200, headers=headers, content=content)

    return _client(httpx2.MockTransport(answer))


def write_cassette(path: Path, kind: str, size: int) -> None:
    from pytest_agentctx.traffic.cassettes import Interaction, write_cassette

    write_cassette(
        path,
        [
            Interaction(
                method="POST",
                url=URL,
                request_headers={"content-type": "application/json"},
                request_body={"json": request(kind, index)},
                status=200,
                response_headers=RESPONSE_HEADERS,
                response_body={"json": response(index)},
            )
            for index in range(size)
        ],
    )


# -- one paired replay ---------------------------------------------------------------------


def _call(client: Any, kind: str, index: int, wall: list[float], cpu: list[float]) -> None:
    arguments = request(kind, index)
    started, cpu_started = time.perf_counter(), time.process_time()
    answer = client.chat.completions.create(**arguments)
    wall.append(time.perf_counter() - started)
    cpu.append(time.process_time() - cpu_started)
    if answer.id != f"chatcmpl-bench{index:06d}":
        raise AssertionError(f"call {index} got {answer.id}")


def replay(path: Path, kind: str, size: int) -> dict[str, float]:
    """The cassette at ``path`` replayed in order, each call paired with the floor's; a
    small cassette is replayed again until 1,000 calls are measured (a new ``Cassette`` as
    a new test would open it), so that every size is measured on as many calls."""
    from pytest_agentctx.traffic.cassettes import Cassette, store

    floor, tool = _floor(kind, size), _client()
    times: dict[str, list[float]] = {"floor": [], "floor_cpu": [], "tool": [], "tool_cpu": []}
    for _ in range(max(1, CALLS_PER_ROUND // size)):
        store._cache.clear()  # read the file again, as a new test process would
        cassette = Cassette(path)
        gc.collect()
        cassette.start()
        try:
            for index in range(size):
                pair: list[tuple[Any, str]] = [(floor, "floor"), (tool, "tool")]
                for client, name in pair if index % 2 == 0 else pair[::-1]:
                    _call(client, kind, index, times[name], times[f"{name}_cpu"])
        finally:
            cassette.stop()
        cassette.check()  # every interaction replayed, nothing missed
    calls = len(times["tool"])
    return {
        "calls": calls,
        "floor": sum(times["floor"]) / calls,
        "tool": sum(times["tool"]) / calls,
        "ratio": sum(times["tool"]) / sum(times["floor"]),
        "cpu_ratio": sum(times["tool_cpu"]) / sum(times["floor_cpu"]),
    }


# -- the run -------------------------------------------------------------------------------


def _median_round(runs: list[dict[str, float]]) -> dict[str, Any]:
    ratio = statistics.median_low(run["ratio"] for run in runs)
    chosen = next(run for run in runs if run["ratio"] == ratio)
    return {**chosen, "ratios": [run["ratio"] for run in runs]}


def run(sizes: Sequence[int], rounds: int, workdir: Path) -> dict[str, Any]:
    kinds = ("tools", "conversation")
    cases = [(kind, size) for kind in kinds for size in sizes]
    paths: dict[tuple[str, int], Path] = {}
    for kind, size in cases:
        paths[kind, size] = workdir / f"{kind}-{size}.json"
        write_cassette(paths[kind, size], kind, size)
    replay(paths[cases[0]], *cases[0])  # warm-up: imports and first-call paths
    runs: dict[tuple[str, int], list[dict[str, float]]] = {case: [] for case in cases}
    for round_index in range(rounds):
        shift = round_index % len(cases)
        for kind, size in cases[shift:] + cases[:shift]:
            runs[kind, size].append(replay(paths[kind, size], kind, size))
        print(f"  round {round_index + 1} of {rounds}: done", file=sys.stderr, flush=True)
    request_bytes = {kind: len(_sent_bytes(kind, 1)[0]) for kind in kinds}
    return {
        "request_bytes": request_bytes,
        "results": [
            {"kind": kind, "size": size, **_median_round(runs[kind, size])} for kind, size in cases
        ],
    }


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def _versions() -> str:
    from importlib.metadata import version

    names = ("pytest-agentctx", "openai", "httpx2", "orjson")
    return ", ".join(f"{name} {version(name)}" for name in names)


def report(result: dict[str, Any], command: str, elapsed: float) -> str:
    lines = [
        "| request | interactions | floor per call | pytest-agentctx per call | over the floor "
        "| ratio (wall) | ratio (CPU) | ratios of the rounds |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in result["results"]:
        size_kb = result["request_bytes"][row["kind"]] / 1000
        ratios = ", ".join(f"{r:.3f}" for r in row["ratios"])
        lines.append(
            f"| {row['kind']} ({size_kb:.1f} KB) | {row['size']:,} | {row['floor'] * 1e3:.3f} ms "
            f"| {row['tool'] * 1e3:.3f} ms | +{(row['tool'] - row['floor']) * 1e6:.0f} µs "
            f"| **{row['ratio']:.3f}x** | {row['cpu_ratio']:.3f}x | {ratios} |"
        )
    worst = max(max(row["ratio"], row["cpu_ratio"]) for row in result["results"])
    verdict = "met" if worst <= TARGET else "not met"
    lines += [
        "",
        f"Target (within {TARGET}x of the floor at every size, wall and CPU): **{verdict}** "
        f"(largest ratio {worst:.3f}x).",
        "",
        f"- command: `{command}`",
        f"- commit: {_git('rev-parse', '--short', 'HEAD')}"
        + (" (uncommitted changes)" if _git("status", "--porcelain", "pytest_agentctx") else ""),
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, wall time {elapsed:.0f} s",
        f"- machine: {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.platform()}, {os.cpu_count()} CPUs, load average before "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"- versions: {_versions()}",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 10 to 1,000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args(argv)
    sizes, rounds = ((10, 100, 1000), 1) if args.quick else ((10, 100, 1000, 5000), args.rounds)
    command = " ".join(["python", "benchmarks/bench_replay_request.py", *(argv or sys.argv[1:])])
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-replay-request-") as temp:
        result = run(sizes, rounds, Path(temp))
    text = report(result, command, time.perf_counter() - started)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
