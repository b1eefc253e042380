"""A Bedrock ConverseStream call replayed from a cassette, against botocore answered by a
stubbed transport with the same bytes.

    .venv/bin/python benchmarks/bench_bedrock_stream.py           # 7 rounds of 200 calls
    .venv/bin/python benchmarks/bench_bedrock_stream.py --quick   # 3 rounds of 50
    .venv/bin/python benchmarks/bench_bedrock_stream.py --json

One call: ``boto3.client("bedrock-runtime").converse_stream(...)`` with one user message,
its event stream read to the end (``messageStart``, 24 ``contentBlockDelta`` events,
``contentBlockStop``, ``messageStop``, ``metadata``: the
``application/vnd.amazon.eventstream`` framing, CRCs included, made by :func:`frame` here,
as botocore has a decoder but no encoder). Timed two ways, in one process, with the same
client settings (fake credentials, SigV4 signing, retries off):

* **agentctx replay**: the call answered by a pytest-agentctx
  :class:`~pytest_agentctx.traffic.cassettes.Cassette` (mode ``none``) through the botocore
  interceptor, in botocore's HTTP session (``URLLib3Session.send``): the request matched
  (body included) and redacted as in a test, the recorded response served to botocore as
  an ``AWSResponse`` over a urllib3 response. The cassette is
  *recorded* by the package first, against a loopback HTTP server that answers the bytes
  (so it holds the response in whatever form the package stores event streams), then the
  server is stopped;
* **stubbed transport (the floor)**: the same call answered in botocore's ``before-send``
  event (where moto answers) by an ``AWSResponse`` over a urllib3 ``HTTPResponse`` of the
  same bytes, unread (``preload_content=False``): botocore parses the stream as from a
  socket, and nothing of the network or of a cassette is paid for.

Each round makes N calls with each way, the ways interleaved and their order rotated, the
collector paused; the figure per way is the time per call, best round (and median); the
target: replay within 1.1x of the floor. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import binascii
import gc
import io
import json
import os
import statistics
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL = "us.anthropic.claude-3-5-sonnet-20240620-v1:0"
REGION = "us-east-1"
#: The pieces of the streamed answer, one ``contentBlockDelta`` event each.
PIECES = [f"word{i} " for i in range(24)]
ANSWER = "".join(PIECES)
#: Fake credentials: the calls are signed as real ones are, and go nowhere.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "AKIABENCHFAKEKEY0001",
    "AWS_SECRET_ACCESS_KEY": "benchFakeSecretAccessKey/0123456789abcdef",
}


# -- the event stream -------------------------------------------------------------------


def _header(name: str, value: str) -> bytes:
    """One event-stream header of type string (7)."""
    raw_name, raw_value = name.encode(), value.encode()
    return (
        struct.pack("!B", len(raw_name))
        + raw_name
        + struct.pack("!BH", 7, len(raw_value))
        + raw_value
    )


def frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One event-stream message: prelude (total and headers length, their CRC32), headers,
    payload, and the CRC32 of everything before it."""
    headers = b"".join(
        [
            _header(":event-type", event_type),
            _header(":content-type", "application/json"),
            _header(":message-type", "event"),
        ]
    )
    body = json.dumps(payload, separators=(",", ":")).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack("!II", total, len(headers))
    prelude += struct.pack("!I", binascii.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack("!I", binascii.crc32(message))


def stream_bytes() -> bytes:
    """The whole ConverseStream response body, as Bedrock frames it."""
    events = [frame("messageStart", {"role": "assistant"})]
    events += [
        frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}})
        for piece in PIECES
    ]
    events += [
        frame("contentBlockStop", {"contentBlockIndex": 0}),
        frame("messageStop", {"stopReason": "end_turn"}),
        frame(
            "metadata",
            {
                "usage": {"inputTokens": 12, "outputTokens": 24, "totalTokens": 36},
                "metrics": {"latencyMs": 321},
            },
        ),
    ]
    return b"".join(events)


BODY = stream_bytes()
HEADERS = {
    "content-type": "application/vnd.amazon.eventstream",
    "x-amzn-requestid": "bench-request-id",
}


# -- the call ---------------------------------------------------------------------------


def client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "bedrock-runtime",
        region_name=REGION,
        endpoint_url=endpoint,
        config=Config(retries={"total_max_attempts": 1}),
    )


def call(runtime: Any) -> str:
    """One ConverseStream call, its stream read to the end; the text it streamed."""
    reply = runtime.converse_stream(
        modelId=MODEL,
        messages=[{"role": "user", "content": [{"text": "Count to twenty-four."}]}],
        inferenceConfig={"maxTokens": 64},
    )
    text = []
    for event in reply["stream"]:
        delta = event.get("contentBlockDelta")
        if delta is not None:
            text.append(delta["delta"]["text"])
    return "".join(text)


# -- the loopback server the cassette is recorded from -----------------------------------


class _Bedrock(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        for name, value in HEADERS.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


@contextmanager
def loopback() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Bedrock)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def record(path: Path, calls: int) -> str:
    """Record ``calls`` identical calls into the cassette at ``path`` (one interaction
    each, replayed in order); the endpoint they were sent to (the server is stopped)."""
    from pytest_agentctx.traffic.cassettes import Cassette, RecordMode

    with loopback() as endpoint:
        runtime = client(endpoint)
        cassette = Cassette(path, mode=RecordMode.REWRITE)
        cassette.start()
        try:
            for _ in range(calls):
                assert call(runtime) == ANSWER
        finally:
            cassette.stop()
        cassette.save("bench")
    return endpoint


# -- timing -----------------------------------------------------------------------------


def timed(calls: Callable[[], None], count: int) -> float:
    """Seconds per call of ``calls`` (which makes ``count`` calls), collector paused."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        calls()
        return (time.perf_counter() - start) / count
    finally:
        gc.enable()


def replayed(path: Path, endpoint: str, count: int) -> Callable[[], float]:
    """A round of ``count`` calls replayed from the cassette (a fresh one each round)."""
    from pytest_agentctx.traffic.cassettes import Cassette

    runtime = client(endpoint)

    def round_() -> float:
        cassette = Cassette(path)
        cassette.start()
        try:
            return timed(lambda: _calls(runtime, count), count)
        finally:
            cassette.stop()
            cassette.check()

    return round_


def stubbed(endpoint: str, count: int) -> Callable[[], float]:
    """A round of ``count`` calls answered in botocore's ``before-send`` event with
    urllib3 responses of the same bytes."""
    from botocore.awsrequest import AWSResponse
    from urllib3.response import HTTPResponse

    runtime = client(endpoint)

    def answer(request: Any, **_: Any) -> AWSResponse:
        raw = HTTPResponse(
            body=io.BytesIO(BODY),
            headers={**HEADERS, "content-length": str(len(BODY))},
            status=200,
            preload_content=False,
            decode_content=False,
        )
        return AWSResponse(request.url, 200, raw.headers, raw)

    runtime.meta.events.register("before-send.bedrock-runtime.ConverseStream", answer)

    def round_() -> float:
        return timed(lambda: _calls(runtime, count), count)

    return round_


def pooled(endpoint: str, count: int) -> Callable[[], float]:
    """A round of ``count`` calls answered below botocore's HTTP session, in urllib3's
    pool (``HTTPConnectionPool._make_request``, where the package's urllib3 interceptor
    patches), by urllib3 responses of the same bytes: botocore's and urllib3's own cost
    of a request, without the package's."""
    from urllib3.connectionpool import HTTPConnectionPool
    from urllib3.response import HTTPResponse

    runtime = client(endpoint)

    def answer(*_: Any, **__: Any) -> HTTPResponse:
        return HTTPResponse(
            body=io.BytesIO(BODY),
            headers={**HEADERS, "content-length": str(len(BODY))},
            status=200,
            preload_content=False,
            decode_content=False,
        )

    def round_() -> float:
        original = vars(HTTPConnectionPool)["_make_request"]
        HTTPConnectionPool._make_request = answer  # type: ignore[method-assign]
        try:
            return timed(lambda: _calls(runtime, count), count)
        finally:
            HTTPConnectionPool._make_request = original  # type: ignore[method-assign]

    return round_


def _calls(runtime: Any, count: int) -> None:
    for _ in range(count):
        text = call(runtime)
        assert text == ANSWER, text


def run(rounds: int, count: int) -> dict[str, Any]:
    for name, value in CREDENTIALS.items():
        os.environ.setdefault(name, value)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "converse_stream.json"
        endpoint = record(path, count)
        ways = {
            "agentctx replay": replayed(path, endpoint, count),
            "stubbed transport": stubbed(endpoint, count),
            "stubbed urllib3 pool": pooled(endpoint, count),
        }
        for way in ways.values():  # warm-up: imports, botocore's loaders, first patches
            way()
        times: dict[str, list[float]] = {name: [] for name in ways}
        names = list(ways)
        for number in range(rounds):
            turn = names[number % len(names) :] + names[: number % len(names)]
            for name in turn:
                times[name].append(ways[name]())
    best = {name: min(values) for name, values in times.items()}
    median = {name: statistics.median(values) for name, values in times.items()}
    return {
        "calls": count,
        "rounds": rounds,
        "events": len(PIECES) + 4,
        "body_bytes": len(BODY),
        "best_us": {name: value * 1e6 for name, value in best.items()},
        "median_us": {name: value * 1e6 for name, value in median.items()},
        "ratio_best": best["agentctx replay"] / best["stubbed transport"],
        "ratio_median": median["agentctx replay"] / median["stubbed transport"],
        "pool_ratio_best": best["agentctx replay"] / best["stubbed urllib3 pool"],
        "pool_ratio_median": median["agentctx replay"] / median["stubbed urllib3 pool"],
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"ConverseStream, {result['events']} events ({result['body_bytes']:,} bytes); "
        f"{result['calls']} calls per round, {result['rounds']} rounds; time per call",
        "",
        "| way | best | median |",
        "| --- | ---: | ---: |",
    ]
    for name in result["best_us"]:
        lines.append(
            f"| {name} | {result['best_us'][name]:,.0f} µs | {result['median_us'][name]:,.0f} µs |"
        )
    lines.append(
        f"| **replay / stubbed** | **{result['ratio_best']:.2f}x** "
        f"| **{result['ratio_median']:.2f}x** |"
    )
    lines.append(
        f"| replay / stubbed urllib3 pool | {result['pool_ratio_best']:.2f}x "
        f"| {result['pool_ratio_median']:.2f}x |"
    )
    target = "met" if result["ratio_best"] <= 1.1 else "NOT met"
    lines += ["", f"Target (replay within 1.1x of the stubbed transport, best round): {target}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 50 calls")
    parser.add_argument("--rounds", type=int, default=7, help="rounds (best kept)")
    parser.add_argument("--calls", type=int, default=200, help="calls per round and way")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    rounds, count = (3, 50) if args.quick else (args.rounds, args.calls)
    result = run(rounds, count)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"python {sys.version.split()[0]}")
        print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
