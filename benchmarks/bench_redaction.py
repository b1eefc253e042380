"""What redaction adds to recording: 5,000 realistic interactions through a Cassette.

    timeout 900 .venv/bin/python benchmarks/bench_redaction.py           # 5,000, 5 pairs
    timeout 300 .venv/bin/python benchmarks/bench_redaction.py --quick   # 1,000, 3 pairs

One round records ``--size`` interactions into a fresh cassette in ``rewrite`` mode and saves
it: a ``httpx2.Client`` posts each request (the openai SDK's headers, ``Authorization:
Bearer`` with the API key), the cassette records it, the client reads the whole response,
and :meth:`Cassette.save` writes the file. The traffic is chat completions with tools: the
requests carry a system prompt, tool definitions and 2 to 12 messages of history (tool calls
and results); half the responses are JSON (gzip-compressed, a text or tool calls), half are
streams (about 50 content deltas, or tool-call argument deltas, and a usage chunk); the
response headers are OpenAI's (request id, timings, rate-limit counters, cookies). One stream
in a hundred repeats the API key split over several deltas, so the cutting path runs too.

Two variants, rounds interleaved (on, off, off, on, ...) so a busy machine slows both alike:

* ``redacted``: the package's ``Redactor`` with the usual key environment variables set;
* ``no redaction``: a redactor whose every method hands its input back unchanged.

The figure is the median, over the pairs of rounds, of the ratio of the two rounds' wall
times (CPU time beside it): what redaction adds to recording. Nothing leaves the process:
``httpx2.HTTPTransport.handle_request`` is replaced, before the cassette starts, by a stand-in
network that answers from memory, so the figure is the share of redaction in recording with
no network at all (a real recording, which waits on the provider, sees a smaller share).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV  # noqa: E402
from pytest_agentctx.traffic.cassettes import Cassette, RecordMode  # noqa: E402
from pytest_agentctx.traffic.cassettes.body import Body  # noqa: E402
from pytest_agentctx.traffic.cassettes.redact import Redactor  # noqa: E402
from pytest_agentctx.traffic.codecs.sse import split_text  # noqa: E402

FULL_SIZE, FULL_PAIRS = 5_000, 5
QUICK_SIZE, QUICK_PAIRS = 1_000, 3
API_KEY = "sk-proj-bench-Xq8v2LmT0pWz9Rk4Ns7Yc1Hd"
URL = "https://api.openai.com/v1/chat/completions"
SYSTEM = (
    "You are a travel assistant for a booking company. Answer in two sentences at most, use "
    "the tools to look up the weather, documents and flights before you answer, never invent "
    "a flight number, and say so when a tool fails. " * 3
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ').capitalize()} for the traveller.",
            "parameters": {
                "type": "object",
                "properties": {field: {"type": "string"} for field in fields},
                "required": list(fields),
            },
        },
    }
    for name, fields in (
        ("get_weather", ("city", "unit")),
        ("search_docs", ("query", "top_k")),
        ("book_flight", ("origin", "destination", "date")),
    )
]
ANSWER = (
    "The weather in Paris is sunny, 21 °C, with a light wind from the west; the flight "
    "AF1234 leaves Lyon at 07:45 and lands at 08:50, and seats are still available in economy."
)


def _headers(index: int, stream: bool) -> list[tuple[str, str]]:
    headers = [
        ("date", f"Tue, 14 Jan 2025 10:{index // 60 % 60:02d}:{index % 60:02d} GMT"),
        ("content-type", "text/event-stream; charset=utf-8" if stream else "application/json"),
        ("transfer-encoding", "chunked"),
        ("connection", "keep-alive"),
        ("access-control-expose-headers", "X-Request-ID"),
        ("openai-organization", "org-bench"),
        ("openai-processing-ms", str(300 + index % 700)),
        ("openai-project", "proj_bench"),
        ("openai-version", "2020-10-01"),
        ("x-ratelimit-limit-requests", "10000"),
        ("x-ratelimit-limit-tokens", "2000000"),
        ("x-ratelimit-remaining-requests", str(9999 - index % 100)),
        ("x-ratelimit-remaining-tokens", str(1999000 - index)),
        ("x-ratelimit-reset-requests", "6ms"),
        ("x-ratelimit-reset-tokens", "0s"),
        ("x-request-id", f"req_{index:032x}"),
        ("strict-transport-security", "max-age=31536000; includeSubDomains; preload"),
        ("cf-cache-status", "DYNAMIC"),
        # Cloudflare's bot cookie, renewed every half hour: a few values in a long recording.
        ("set-cookie", f"__cf_bm=cfbm{index // 1000:04d}x9Qz; path=/; HttpOnly; Secure"),
        ("x-content-type-options", "nosniff"),
        ("server", "cloudflare"),
        ("cf-ray", f"8f{index:08x}-CDG"),
        ("alt-svc", 'h3=":443"; ma=86400'),
    ]
    if not stream:
        headers.append(("content-encoding", "gzip"))
    return headers


def _history(index: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Trip {index}: weather in Paris and a flight from Lyon?"},
    ]
    for turn in range(index % 6):
        call_id = f"call_{index}_{turn}"
        arguments = json.dumps({"city": "Paris", "unit": "celsius"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": arguments},
                    }
                ],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"forecast": ANSWER})}
        )
    return messages


def _request(index: int, stream: bool) -> bytes:
    body: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": _history(index),
        "tools": TOOLS,
        "temperature": 0,
    }
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return json.dumps(body).encode()


def _chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
    data = {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion.chunk",
        "created": 1736848800,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _stream(index: int) -> bytes:
    tools = index % 4 == 1
    events = [_chunk(index, {"role": "assistant", "content": "", "refusal": None})]
    if tools:
        call = {"index": 0, "id": f"call_{index}", "type": "function"}
        events.append(
            _chunk(index, {"tool_calls": [{**call, "function": {"name": "book_flight"}}]})
        )
        arguments = json.dumps({"origin": "LYS", "destination": "CDG", "date": "2025-02-03"})
        events += [
            _chunk(index, {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in split_text(arguments)
        ]
    else:
        text = ANSWER if index % 100 != 3 else f"Your key is {API_KEY}, keep it. {ANSWER}"
        events += [_chunk(index, {"content": piece}) for piece in split_text(text)]
    events.append(_chunk(index, {}, "tool_calls" if tools else "stop"))
    usage = {"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960}
    last = json.loads(_chunk(index, {})[len(b"data: ") :])
    events.append(
        b"data: " + json.dumps({**last, "choices": [], "usage": usage}).encode() + b"\n\n"
    )
    events.append(b"data: [DONE]\n\n")
    return b"".join(events)


def _completion(index: int) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": ANSWER, "refusal": None}
    if index % 4 == 0:
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": "search_docs", "arguments": '{"query":"baggage","top_k":"3"}'},
            }
        ]
    body = {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "created": 1736848800,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960},
        "system_fingerprint": "fp_bench",
    }
    return gzip.compress(json.dumps(body).encode(), mtime=0)


Traffic = list[tuple[bytes, list[tuple[str, str]], bytes]]


def traffic(size: int) -> Traffic:
    """``size`` exchanges: (request body, response headers, raw response body)."""
    out = []
    for index in range(size):
        stream = index % 2 == 1
        raw = _stream(index) if stream else _completion(index)
        out.append((_request(index, stream), _headers(index, stream), raw))
    return out


REQUEST_HEADERS = {
    "authorization": f"Bearer {API_KEY}",
    "content-type": "application/json",
    "accept": "application/json",
    "user-agent": "OpenAI/Python 3.57.0",
    "x-stainless-lang": "python",
    "x-stainless-package-version": "3.57.0",
    "x-stainless-retry-count": "0",
}


class NoRedaction(Redactor):
    """A redactor that hands everything back unchanged: recording without redaction."""

    def refresh(self) -> None:
        pass

    def learn(
        self, headers: Iterable[tuple[str, str]], url: str = "", *, signature: Any = None
    ) -> None:
        pass

    def text(self, value: str) -> str:
        return value

    def url(self, url: str) -> str:
        return url

    def json(self, value: Any, *, raw: bytes | None = None) -> Any:
        return value

    def body(self, body: Body, *, raw: bytes | None = None, texts: list[str] | None = None) -> Body:
        return body

    def binary(self, raw: bytes) -> bytes:
        return raw

    def header_items(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        return list(items)

    def response_header_items(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        return list(items)


class _Network:
    """Stands in for ``httpx2.HTTPTransport.handle_request``: answers from memory, in order."""

    def __init__(self) -> None:
        self.answers: Iterator[tuple[list[tuple[str, str]], bytes]] = iter(())
        self._original = httpx2.HTTPTransport.handle_request

    def __enter__(self) -> _Network:
        owner = self

        def handle_request(transport: Any, request: Any) -> Any:
            headers, raw = next(owner.answers)
            return httpx2.Response(200, headers=headers, stream=httpx2.ByteStream(raw))

        httpx2.HTTPTransport.handle_request = handle_request  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        httpx2.HTTPTransport.handle_request = self._original  # type: ignore[method-assign]


def record_round(
    exchanges: Traffic, redactor: Redactor, network: _Network, folder: Path
) -> tuple[float, float, int]:
    """Record ``exchanges`` into a fresh cassette and save it: (wall s, CPU s, file bytes)."""
    path = folder / "cassette.json"
    path.unlink(missing_ok=True)
    network.answers = iter([(headers, raw) for _, headers, raw in exchanges])
    start, cpu = time.perf_counter(), time.process_time()
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id="bench", redactor=redactor)
    cassette.start()
    try:
        with httpx2.Client(trust_env=False) as client:
            for body, _, _ in exchanges:
                client.post(URL, content=body, headers=REQUEST_HEADERS)
    finally:
        cassette.stop()
    cassette.save("bench-run")
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall, cpu, path.stat().st_size


def run(size: int, pairs: int) -> dict[str, Any]:
    for name in DEFAULT_SECRET_ENV:  # the usual environment: provider keys set
        os.environ[name] = f"{API_KEY}-{name.lower()}" if name != "OPENAI_API_KEY" else API_KEY
    exchanges = traffic(size)
    rounds: dict[str, list[tuple[float, float, int]]] = {"redacted": [], "no redaction": []}
    orders = itertools.cycle([("redacted", "no redaction"), ("no redaction", "redacted")])
    with tempfile.TemporaryDirectory() as folder, _Network() as network:
        record_round(exchanges[:50], Redactor(), network, Path(folder))  # warm-up
        for _, order in zip(range(pairs), orders, strict=False):
            for variant in order:
                redactor = Redactor() if variant == "redacted" else NoRedaction()
                rounds[variant].append(record_round(exchanges, redactor, network, Path(folder)))
    on, off = rounds["redacted"], rounds["no redaction"]
    return {
        "size": size,
        "pairs": pairs,
        "wall_ratio": statistics.median(a[0] / b[0] for a, b in zip(on, off, strict=True)),
        "cpu_ratio": statistics.median(a[1] / b[1] for a, b in zip(on, off, strict=True)),
        "redacted_wall_s": statistics.median(r[0] for r in on),
        "plain_wall_s": statistics.median(r[0] for r in off),
        "redacted_bytes": on[0][2],
        "plain_bytes": off[0][2],
    }


def markdown(result: dict[str, Any]) -> str:
    added = (result["wall_ratio"] - 1) * 100
    return "\n".join(
        [
            f"Recording {result['size']:,} interactions, median of {result['pairs']} "
            "interleaved pairs of rounds:",
            "",
            "| variant | wall (median) | cassette |",
            "|---|---:|---:|",
            f"| no redaction | {result['plain_wall_s']:.2f} s | {result['plain_bytes']:,} B |",
            f"| redacted | {result['redacted_wall_s']:.2f} s | {result['redacted_bytes']:,} B |",
            "",
            f"Redaction adds {added:+.1f} % wall time (ratio {result['wall_ratio']:.3f}; CPU "
            f"ratio {result['cpu_ratio']:.3f}); the target is under +10 %.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1,000 interactions, 3 pairs")
    parser.add_argument("--size", type=int, help="interactions per round")
    parser.add_argument("--pairs", type=int, help="pairs of rounds (one of each variant)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    args = parser.parse_args(argv)
    size = args.size or (QUICK_SIZE if args.quick else FULL_SIZE)
    pairs = args.pairs or (QUICK_PAIRS if args.quick else FULL_PAIRS)
    result = run(size, pairs)
    print(json.dumps(result, indent=2) if args.json else markdown(result))


if __name__ == "__main__":
    main()
