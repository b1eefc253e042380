"""Cassettes side by side: pytest-agentctx against vcrpy / pytest-recording and cassetter.

    .venv/bin/python benchmarks/bench_cassettes.py           # the full run, ~6 minutes
    .venv/bin/python benchmarks/bench_cassettes.py --quick   # a smoke run, about a minute

Four measurements, the performance targets of the cassettes issue (benchmarks/README.md
says why each and shows the figures of the last full run):

1. **Replay cost per request**, body matching on, through the real ``openai`` SDK
   (``client.chat.completions.create``): cassettes of 10 to 5,000 interactions with
   distinct small chat bodies, replayed in order, against the floor (the same SDK calls
   over an ``httpx2.MockTransport`` that returns the canned response directly). Paired:
   call *i* goes over the floor and through the cassette one after the other, so a busy
   machine slows both alike; wall and CPU time.
2. **Cassette load time** at 1,000 and 5,000 interactions, each load in a fresh process
   (nothing cached), best of the repeats: the package's ``load_cassette`` and the full
   ``Cassette(path)`` (with its match index), vcrpy's ``Cassette.load(path=...)``,
   cassetter's loader.
3. **Time to the first streamed event while recording**: a loopback SSE server sends the
   first event at once, then 20 more 50 ms apart; the openai SDK streams it live, while
   pytest-agentctx records, while vcrpy records (and cassetter).
4. **A shared cassette recorded under ``pytest -n 2``**: eight tests, five distinct
   requests each, record into one cassette; how many of the 40 interactions are kept.

cassetter is a separate install with its own pytest plugin (it registers a ``vcr`` marker
and ``--record-mode`` as pytest-recording does), so it lives in its own virtualenv and is
driven there by this same script (``--worker``); ``--setup-cassetter`` creates it.

Nothing here leaves 127.0.0.1: replayed cassettes point at ``http://127.0.0.1:9`` (no
server), and every recording talks to a loopback server this script starts.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import hashlib
import json
import os
import platform
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

DEFAULT_CASSETTER_PYTHON = "/tmp/bench-venv/bin/python"
CASSETTER_SETUP = ("cassetter==0.16.1", "openai==3.54.0", "httpx2==2.16.2")

# -- the traffic ---------------------------------------------------------------------------

#: Replayed cassettes point here: a loopback port nobody listens on, so a request that a
#: tool failed to intercept is refused instead of leaving the machine.
REPLAY_BASE_URL = "http://127.0.0.1:9/v1"
REPLAY_URL = REPLAY_BASE_URL + "/chat/completions"
API_KEY = "sk-bench-not-a-real-key"
SYSTEM_PROMPT = "You are a concise travel assistant. Answer in one sentence."

REQUEST_HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "user-agent": "OpenAI/Python 3.54.0",
    "x-stainless-lang": "python",
    "x-stainless-package-version": "3.54.0",
}


def request_body(index: int) -> dict[str, Any]:
    """The keyword arguments of call ``index``; also its JSON request body."""
    return {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": f"Question {index}: what is the weather like in city {index} today?",
            },
        ],
        "temperature": 0,
    }


def response_id(index: int) -> str:
    return f"chatcmpl-bench{index:06d}"


def response_body(index: int) -> dict[str, Any]:
    return {
        "id": response_id(index),
        "object": "chat.completion",
        "created": 1735689600,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": f"In city {index} it is sunny and 21 degrees today.",
                    "refusal": None,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 31, "completion_tokens": 14, "total_tokens": 45},
        "service_tier": "default",
        "system_fingerprint": "fp_bench",
    }


def response_headers(index: int) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "date": "Wed, 01 Jan 2025 00:00:00 GMT",
        "openai-processing-ms": "412",
        "openai-version": "2020-10-01",
        "x-ratelimit-remaining-requests": "9999",
        "x-request-id": f"req_{index:06d}",
    }


# -- small helpers -------------------------------------------------------------------------


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _ms(seconds: float | None) -> str:
    if seconds is None or seconds != seconds:
        return "n/a"
    value = seconds * 1000
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def _ratio(value: float | None, base: float | None) -> str:
    if not value or not base:
        return "n/a"
    return f"{value / base:.2f}x"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    return "\n".join(lines)


def _emit(result: Any) -> None:
    """A worker's answer: one JSON line, last on stdout."""
    print(json.dumps(result), flush=True)


def _run_worker(python: str, kind: str, payload: dict[str, Any], timeout: float) -> Any:
    """Run ``kind`` in a fresh process of ``python`` and return its JSON answer."""
    command = [python, str(Path(__file__).resolve()), "--worker", kind, json.dumps(payload)]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT
    )
    if done.returncode != 0:
        raise RuntimeError(f"worker {kind} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _sdk_client(transport: Any = None, base_url: str = REPLAY_BASE_URL) -> Any:
    import httpx2
    import openai

    http_client = httpx2.Client(transport=transport) if transport else httpx2.Client()
    return openai.OpenAI(api_key=API_KEY, base_url=base_url, max_retries=0, http_client=http_client)


def _calls(client: Any, indices: Sequence[int]) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each ``chat.completions.create`` call; checks each answer.

    CPU time is the process's own, which the other processes on the machine barely
    change; wall time is what a test run feels."""
    create = client.chat.completions.create
    wall, cpu = [], []
    clock, cpu_clock = time.perf_counter, time.process_time
    for index in indices:
        started, cpu_started = clock(), cpu_clock()
        completion = create(**request_body(index))
        wall.append(clock() - started)
        cpu.append(cpu_clock() - cpu_started)
        if completion.id != response_id(index):
            raise AssertionError(f"call {index} got {completion.id}")
    return wall, cpu


def _paired_calls(
    floor: Any, tool: Any, indices: Sequence[int]
) -> tuple[tuple[list[float], list[float]], tuple[list[float], list[float]]]:
    """Call ``i`` over the floor client and over the tool's, one after the other (the order
    alternating), so both see the machine in the same state."""
    floor_wall: list[float] = []
    floor_cpu: list[float] = []
    tool_wall: list[float] = []
    tool_cpu: list[float] = []
    for position, index in enumerate(indices):
        pair = ((floor, floor_wall, floor_cpu), (tool, tool_wall, tool_cpu))
        for client, wall, cpu in pair if position % 2 == 0 else pair[::-1]:
            one_wall, one_cpu = _calls(client, (index,))
            wall.extend(one_wall)
            cpu.extend(one_cpu)
    return (floor_wall, floor_cpu), (tool_wall, tool_cpu)


def _floor_client(indices: Sequence[int]) -> Any:
    """The SDK over an ``httpx2.MockTransport`` that hands back the canned responses of
    ``indices`` in order (built before the clock starts), doing nothing else."""
    import httpx2

    canned = iter([(response_headers(i), json.dumps(response_body(i)).encode()) for i in indices])

    def handler(request: Any) -> Any:
        headers, content = next(canned)
        return httpx2.Response(200, headers=headers, content=content)

    return _sdk_client(httpx2.MockTransport(handler))


# -- cassette writers (each tool writes its own format) ------------------------------------


def write_ours(path: Path, size: int) -> None:
    from pytest_agentctx.traffic.cassettes import Interaction, write_cassette

    write_cassette(
        path,
        [
            Interaction(
                method="POST",
                url=REPLAY_URL,
                request_headers=dict(REQUEST_HEADERS),
                request_body={"json": request_body(i)},
                status=200,
                response_headers=response_headers(i),
                response_body={"json": response_body(i)},
            )
            for i in range(size)
        ],
    )


def write_vcr(path: Path, size: int) -> None:
    from vcr.request import Request
    from vcr.serialize import serialize
    from vcr.serializers import yamlserializer

    requests = [
        Request("POST", REPLAY_URL, json.dumps(request_body(i)).encode(), dict(REQUEST_HEADERS))
        for i in range(size)
    ]
    responses = [
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {k: [v] for k, v in response_headers(i).items()},
            "body": {"string": json.dumps(response_body(i)).encode()},
        }
        for i in range(size)
    ]
    text = serialize({"requests": requests, "responses": responses}, yamlserializer)
    path.write_text(text, encoding="utf-8")


def write_cassetter(path: Path, size: int) -> None:
    from cassetter._core import (
        Body,
        Cassette as RustCassette,
        HttpInteraction,
        HttpRequest,
        HttpResponse,
    )

    cassette = RustCassette()
    for i in range(size):
        request = HttpRequest(
            "POST",
            REPLAY_URL,
            {k: [v] for k, v in REQUEST_HEADERS.items()},
            Body("json", request_body(i)),
        )
        response = HttpResponse(
            200,
            {k: [v] for k, v in response_headers(i).items()},
            Body("json", response_body(i)),
        )
        cassette.add_interaction(HttpInteraction(request, response, "2025-01-01T00:00:00Z"))
    cassette.save(str(path))


# -- 1. replay -----------------------------------------------------------------------------

Plan = dict[int, int | None]
"""Per cassette size: ``None`` replays every request in order; ``k`` sends only the last
``k`` requests of the cassette (for tools whose cost per request grows with the position
of the match, where a full replay does not fit the time budget)."""


def _stats(wall: list[float], cpu: list[float]) -> dict[str, float]:
    tail = max(10, len(wall) // 10)  # the last tenth of the cassette, at least 10 calls
    return {
        "calls": len(wall),
        "mean": sum(wall) / len(wall),
        "cpu": sum(cpu) / len(cpu),
        "tail": sum(wall[-tail:]) / len(wall[-tail:]),
        "tail_cpu": sum(cpu[-tail:]) / len(cpu[-tail:]),
    }


def _replay_once(
    open_cassette: Callable[[], contextlib.AbstractContextManager[Any]],
    size: int,
    tail: int | None,
    paired: bool,
) -> dict[str, Any]:
    """One replay of the cassette (or of its last ``tail`` requests) next to the floor.

    ``paired``: floor and tool calls alternate inside the cassette (the tool does not
    intercept ``MockTransport``). Otherwise (vcrpy patches ``MockTransport`` too) the floor
    runs right after the cassette is closed."""
    indices = range(size - tail, size) if tail else range(size)
    floor, tool = _floor_client(indices), _sdk_client()
    gc.collect()
    started = time.perf_counter()
    with open_cassette():
        opened = time.perf_counter() - started
        if paired:
            floor_calls, tool_calls = _paired_calls(floor, tool, indices)
        else:
            tool_calls = _calls(tool, indices)
    if not paired:
        gc.collect()
        floor_calls = _calls(floor, indices)
    floor_stats, tool_stats = _stats(*floor_calls), _stats(*tool_calls)
    return {
        "floor": floor_stats,
        "tool": tool_stats,
        "open": opened,
        "tail_only": bool(tail),
        "ratio": tool_stats["mean"] / floor_stats["mean"],
        "cpu_ratio": tool_stats["cpu"] / floor_stats["cpu"],
    }


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The repeat with the median ratio to the floor (the lower one of an even count)."""
    ratio = statistics.median_low(run["ratio"] for run in runs)
    chosen = next(run for run in runs if run["ratio"] == ratio)
    return {**chosen, "repeats": len(runs), "ratios": [run["ratio"] for run in runs]}


@contextlib.contextmanager
def _ours(path: Path) -> Iterator[None]:
    from pytest_agentctx.traffic.cassettes import Cassette, store

    store._cache.clear()  # parse the file again, as a new test process would
    cassette = Cassette(path)
    cassette.start()
    try:
        yield
    finally:
        cassette.stop()
    cassette.check()  # every interaction was replayed, nothing missed


def _vcr() -> Any:
    import vcr

    return vcr.VCR(match_on=["method", "scheme", "host", "port", "path", "query", "body"])


def _vcr_cassette(path: Path) -> contextlib.AbstractContextManager[Any]:
    cassette: contextlib.AbstractContextManager[Any] = _vcr().use_cassette(
        str(path), record_mode="none"
    )
    return cassette


def _cassetter_cassette(path: Path) -> contextlib.AbstractContextManager[Any]:
    from cassetter import use_cassette

    return use_cassette(str(path), record_mode="none", match_on=["method", "uri", "json_body"])


def _repeats(size: int, quick: bool, tool: str = "ours") -> int:
    if quick:
        return 1 if size >= 1000 or tool != "ours" else 2
    if tool == "ours":
        return {10: 7, 100: 5, 1000: 3}.get(size, 2)
    return {10: 3, 100: 2}.get(size, 1)


def run_replay(workdir: Path, sizes: Sequence[int], vcr_plan: Plan, quick: bool) -> dict[str, Any]:
    """pytest-agentctx paired with the floor; vcrpy next to its own floor runs."""
    out: dict[str, Any] = {"ours": {}, "vcr": {}}
    warm = workdir / "warm.json"  # warm-up: imports, first-call paths, a first cassette
    write_ours(warm, 10)
    _replay_once(functools.partial(_ours, warm), 10, None, paired=True)
    warm_vcr = workdir / "warm.yaml"
    write_vcr(warm_vcr, 10)
    _replay_once(functools.partial(_vcr_cassette, warm_vcr), 10, None, paired=False)
    for size in sizes:
        path = workdir / f"ours-{size}.json"
        write_ours(path, size)
        runs = [
            _replay_once(functools.partial(_ours, path), size, None, paired=True)
            for _ in range(_repeats(size, quick))
        ]
        out["ours"][size] = _median_run(runs)
        if size in vcr_plan:
            vcr_path = workdir / f"vcr-{size}.yaml"
            write_vcr(vcr_path, size)
            tail = vcr_plan[size]
            runs = [
                _replay_once(functools.partial(_vcr_cassette, vcr_path), size, tail, paired=False)
                for _ in range(1 if tail else _repeats(size, quick, "vcr"))
            ]
            out["vcr"][size] = _median_run(runs)
        print(f"  replay {size}: done", file=sys.stderr, flush=True)
    return out


def worker_cassetter_replay(payload: dict[str, Any]) -> dict[str, Any]:
    """In cassetter's venv: cassetter paired with the floor, per size."""
    from cassetter._core import Cassette as RustCassette

    workdir = Path(payload["workdir"])
    quick = payload["quick"]
    plan: Plan = {int(size): tail for size, tail in payload["plan"].items()}
    out: dict[str, Any] = {"cassetter": {}, "refused": {}, "format": {}}
    warm = workdir / "cassetter-warm.yaml"
    write_cassetter(warm, 10)
    _replay_once(functools.partial(_cassetter_cassette, warm), 10, None, paired=True)
    for size, tail in plan.items():
        chosen = None
        for suffix in (".yaml", ".toml"):  # YAML is its default; TOML if YAML is refused
            path = workdir / f"cassetter-{size}{suffix}"
            write_cassetter(path, size)
            try:
                RustCassette.load(str(path))
            except ValueError as exc:
                out["refused"][f"{size}{suffix}"] = str(exc).splitlines()[0][:200]
                continue
            chosen = path
            break
        if chosen is None:
            continue
        out["format"][size] = chosen.suffix[1:]
        runs = [
            _replay_once(functools.partial(_cassetter_cassette, chosen), size, tail, paired=True)
            for _ in range(1 if tail else _repeats(size, quick, "cassetter"))
        ]
        out["cassetter"][size] = _median_run(runs)
    return out


# -- 2. load -------------------------------------------------------------------------------


def worker_load(payload: dict[str, Any]) -> dict[str, Any]:
    """One cold load in this fresh process: imports first, then only the load is timed."""
    kind, path = payload["kind"], payload["path"]
    load: Callable[[], int]
    if kind == "ours-store":
        from pytest_agentctx.traffic.cassettes import load_cassette

        def load() -> int:
            return len(load_cassette(Path(path)))

    elif kind == "ours-cassette":
        from pytest_agentctx.traffic.cassettes import Cassette

        def load() -> int:
            return len(Cassette(Path(path)).loaded)

    elif kind == "vcr":
        from vcr.cassette import Cassette as VcrCassette

        def load() -> int:
            return len(VcrCassette.load(path=path))

    elif kind == "cassetter-core":
        from cassetter._core import Cassette as RustCassette

        def load() -> int:
            return len(RustCassette.load(path).interactions)

    elif kind == "cassetter-full":
        from cassetter.cassette import Cassette as CassetterCassette
        from cassetter.recording import RecordMode

        def load() -> int:
            cassette = CassetterCassette(path, record_mode=RecordMode.NONE)
            cassette.load()
            return len(cassette.interactions)

    else:
        raise ValueError(kind)
    gc.collect()
    cpu_started = time.process_time()
    started = time.perf_counter()
    try:
        count = load()
    except Exception as exc:  # a loader that refuses the file: report what it said
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}
    return {
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu_started,
        "count": count,
    }


def _cold_loads(
    python: str, kind: str, path: Path, repeats: int, timeout: float = 120
) -> dict[str, Any]:
    times, cpu, error, count = [], [], None, None
    for _ in range(repeats):
        result = _run_worker(python, "load", {"kind": kind, "path": str(path)}, timeout)
        if "error" in result:
            error = result["error"]
            break
        times.append(result["seconds"])
        cpu.append(result["cpu"])
        count = result["count"]
    return {"times": times, "cpu": cpu, "error": error, "count": count}


def run_load(
    workdir: Path,
    sizes: Sequence[int],
    repeats: int,
    vcr_repeats: int,
    cassetter: str | None,
    formats: Sequence[str] = ("yaml", "toml"),
) -> dict[str, Any]:
    ours_python = sys.executable
    out: dict[str, Any] = {}
    for size in sizes:
        ours_path = workdir / f"load-ours-{size}.json"
        write_ours(ours_path, size)
        vcr_path = workdir / f"load-vcr-{size}.yaml"
        write_vcr(vcr_path, size)
        row: dict[str, Any] = {
            "bytes": {"ours": ours_path.stat().st_size, "vcr": vcr_path.stat().st_size},
            "ours-store": _cold_loads(ours_python, "ours-store", ours_path, repeats),
            "ours-cassette": _cold_loads(ours_python, "ours-cassette", ours_path, repeats),
            "vcr": _cold_loads(
                ours_python, "vcr", vcr_path, vcr_repeats if size < 5000 else min(vcr_repeats, 2)
            ),
        }
        if cassetter:
            for suffix in formats:
                path = workdir / f"load-cassetter-{size}.{suffix}"
                _run_worker(cassetter, "write-cassetter", {"path": str(path), "size": size}, 300)
                row["bytes"][f"cassetter-{suffix}"] = path.stat().st_size
                for kind in ("cassetter-core", "cassetter-full"):
                    row[f"{kind}-{suffix}"] = _cold_loads(cassetter, kind, path, min(repeats, 3))
        out[str(size)] = row
        print(f"  load {size}: done", file=sys.stderr, flush=True)
    return out


# -- 3. time to the first streamed event while recording -----------------------------------


def _chunk_event(index: int, text: str | None, finish: str | None = None) -> bytes:
    delta: dict[str, Any] = {"content": text} if text is not None else {}
    if index == 0:
        delta = {"role": "assistant", "content": ""}
    event = {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": 1735689600,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(event)}\n\n".encode()


class _LoopbackHandler(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions``: SSE when ``stream`` is set, else one JSON answer."""

    protocol_version = "HTTP/1.1"
    server: _LoopbackServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            events = self.server.events
            for index in range(events + 1):
                if index:
                    time.sleep(self.server.delay)
                last = index == events
                self._chunk(_chunk_event(index, f"word{index} ", "stop" if last else None))
            self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        time.sleep(self.server.latency)
        asked = body["messages"][-1]["content"]
        answer = response_body(0)
        answer["id"] = "chatcmpl-" + hashlib.sha256(asked.encode()).hexdigest()[:12]
        answer["choices"][0]["message"]["content"] = f"Answer to {asked}"
        content = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)


class _LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, *, events: int = 20, delay: float = 0.05, latency: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), _LoopbackHandler)
        self.events = events
        self.delay = delay
        self.latency = latency

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that hung up
            super().handle_error(request, client_address)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


@contextlib.contextmanager
def loopback_server(**kwargs: Any) -> Iterator[_LoopbackServer]:
    server = _LoopbackServer(**kwargs)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _stream_once(client: Any, first_only: bool = False) -> tuple[float, float, int]:
    """(time to the first chunk, time to the end, chunks) of one streamed completion;
    ``first_only`` closes the stream after its first chunk."""
    gc.collect()
    started = time.perf_counter()
    first = None
    count = 0
    with client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Stream me twenty words."}],
        stream=True,
    ) as stream:
        for _chunk in stream:
            if first is None:
                first = time.perf_counter() - started
            count += 1
            if first_only:
                break
    total = time.perf_counter() - started
    assert first is not None
    return first, total, count


def _stream_live(base_url: str, _path: Path, first_only: bool = False) -> tuple[float, float, int]:
    return _stream_once(_sdk_client(base_url=base_url), first_only)


def _stream_ours(base_url: str, path: Path, first_only: bool = False) -> tuple[float, float, int]:
    from pytest_agentctx.traffic.cassettes import Cassette, RecordMode

    cassette = Cassette(path, mode=RecordMode.REWRITE)
    client = _sdk_client(base_url=base_url)
    cassette.start()
    try:
        result = _stream_once(client, first_only)
    finally:
        cassette.stop()
    if len(cassette.new_interactions) != 1 or not cassette.new_interactions[0].is_stream:
        raise AssertionError("pytest-agentctx did not record the stream")
    return result


def _first_event_pairs(base_url: str, workdir: Path, pairs: int) -> dict[str, list[float]]:
    """Time to the first event, live and while pytest-agentctx records, in pairs (the order
    alternating), each stream closed after its first event: many samples of a few
    milliseconds each, to tell a fraction of a millisecond from the noise."""
    out: dict[str, list[float]] = {"live": [], "ours": []}
    runs = {"live": _stream_live, "ours": _stream_ours}
    for _ in range(3):  # warm-up
        for name, run in runs.items():
            run(base_url, workdir / f"first-warm-{name}.json", True)
    for pair in range(pairs):
        order = ["live", "ours"] if pair % 2 == 0 else ["ours", "live"]
        for name in order:
            out[name].append(runs[name](base_url, workdir / f"first-{pair}.json", True)[0])
    return out


def _stream_vcr(base_url: str, path: Path) -> tuple[float, float, int]:
    import vcr

    client = _sdk_client(base_url=base_url)
    with vcr.VCR().use_cassette(str(path), record_mode="all") as cassette:
        result = _stream_once(client)
    if len(cassette) != 1:
        raise AssertionError("vcrpy did not record the stream")
    return result


def _stream_cassetter(base_url: str, path: Path) -> tuple[float, float, int]:
    from cassetter import use_cassette

    client = _sdk_client(base_url=base_url)
    with use_cassette(str(path), record_mode="all") as cassette:
        result = _stream_once(client)
    if len(cassette.interactions) != 1:
        raise AssertionError("cassetter did not record the stream")
    return result


def _stream_modes(
    modes: dict[str, Callable[[str, Path], tuple[float, float, int]]],
    base_url: str,
    workdir: Path,
    repeats: int,
) -> dict[str, Any]:
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in modes}
    for name, run in modes.items():  # warm-up
        suffix = ".json" if name == "ours" else ".yaml"
        run(base_url, workdir / f"stream-warm-{name}{suffix}")
    for repeat in range(repeats):  # interleaved, so a busy moment hits every mode
        for name, run in modes.items():
            suffix = ".json" if name == "ours" else ".yaml"
            results[name].append(run(base_url, workdir / f"stream-{name}-{repeat}{suffix}"))
    return {
        name: {
            "first": [r[0] for r in runs],
            "total": [r[1] for r in runs],
            "chunks": runs[0][2],
        }
        for name, runs in results.items()
    }


def run_stream(
    workdir: Path, repeats: int, cassetter: str | None, events: int = 20, pairs: int = 60
) -> dict[str, Any]:
    with loopback_server(events=events, delay=0.05) as server:
        out = _stream_modes(
            {"live": _stream_live, "ours": _stream_ours, "vcr": _stream_vcr},
            server.base_url,
            workdir,
            repeats,
        )
        out["first_only"] = _first_event_pairs(server.base_url, workdir, pairs)
        if cassetter:
            payload = {"base_url": server.base_url, "workdir": str(workdir), "repeats": repeats}
            theirs = _run_worker(cassetter, "cassetter-stream", payload, 300)
            out["live (cassetter's process)"] = theirs["live"]
            out["cassetter"] = theirs["cassetter"]
    out["events"] = events
    return out


def worker_cassetter_stream(payload: dict[str, Any]) -> dict[str, Any]:
    return _stream_modes(
        {"live": _stream_live, "cassetter": _stream_cassetter},
        payload["base_url"],
        Path(payload["workdir"]),
        payload["repeats"],
    )


# -- 4. a shared cassette recorded under pytest -n 2 ---------------------------------------

_SHARED_TESTS = 8
_SHARED_REQUESTS = 5

_SHARED_MODULE = '''\
"""Eight tests, five distinct requests each, all recording into one shared cassette."""

import os

import httpx2
import openai
import pytest


def ask(test: int) -> None:
    client = openai.OpenAI(
        api_key="{api_key}",
        base_url=os.environ["BENCH_LOOPBACK_URL"],
        max_retries=0,
        http_client=httpx2.Client(),
    )
    for request in range({requests}):
        content = f"test {{test}} request {{request}}"
        completion = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{{"role": "user", "content": content}}]
        )
        assert completion.choices[0].message.content == f"Answer to {{content}}"
'''

_RECORDING_CONFTEST = """\
import pytest


@pytest.fixture
def default_cassette_name() -> str:
    # pytest-recording records into the test's default cassette; positional arguments of
    # @pytest.mark.vcr are extra cassettes for playback only. Sharing one file for
    # recording means naming the default cassette the same in every test.
    return "shared"
"""

_BODY_MATCHING = """

@pytest.fixture(scope="module")
def vcr_config() -> dict:
    # Body matching, as in the replay benchmark. With vcrpy's default (method and URL),
    # record_mode=all drops every loaded interaction to the same URL when it saves.
    return {"match_on": ["method", "scheme", "host", "port", "path", "query", "body"]}
"""


def _shared_project(root: Path, marker: str, conftest: str = "") -> None:
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    if conftest:
        (root / "conftest.py").write_text(conftest)
    module = _SHARED_MODULE.format(api_key=API_KEY, requests=_SHARED_REQUESTS)
    for test in range(_SHARED_TESTS):
        module += f"\n\n{marker}\ndef test_shared_{test}() -> None:\n    ask({test})\n"
    (root / "test_shared.py").write_text(module)


def _count_interactions(files: list[Path]) -> int:
    import yaml

    total = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        total += len((data or {}).get("interactions") or [])
    return total


def _run_pytest(root: Path, args: Sequence[str], base_url: str) -> tuple[float, str]:
    env = {**os.environ, "BENCH_LOOPBACK_URL": base_url, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", "-q", *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    lines = [line for line in done.stdout.strip().splitlines() if line.strip()]
    summary = lines[-1] if lines else f"exit {done.returncode}"
    if done.returncode != 0:
        problems = [line for line in lines if line.startswith(("ERROR ", "FAILED "))]
        summary += f" (exit {done.returncode})"
        if problems:  # what went wrong, in pytest's own words (first one)
            summary += ": " + problems[0][:160].replace("|", "\\|")
    return elapsed, summary


#: (label, marker, conftest, pytest arguments, cassette glob) of each way of recording.
_SHARED_SETUPS = {
    "ours": (
        "pytest-agentctx `--agent-record -n 2`",
        '@pytest.mark.agent(cassette="shared")',
        "",
        ["--agent-record", "-n", "2"],
        "cassettes/**/*.json",
    ),
    "vcr": (
        "pytest-recording `--record-mode=all -n 2`, body matching",
        '@pytest.mark.vcr("shared.yaml")',
        _RECORDING_CONFTEST + _BODY_MATCHING,
        ["--record-mode=all", "-n", "2"],
        "**/cassettes/**/*.yaml",
    ),
    "vcr-serial": (
        "pytest-recording `--record-mode=all`, body matching, serial (control)",
        '@pytest.mark.vcr("shared.yaml")',
        _RECORDING_CONFTEST + _BODY_MATCHING,
        ["--record-mode=all"],
        "**/cassettes/**/*.yaml",
    ),
    "vcr-default": (
        "pytest-recording `--record-mode=all -n 2`, default matching",
        '@pytest.mark.vcr("shared.yaml")',
        _RECORDING_CONFTEST,
        ["--record-mode=all", "-n", "2"],
        "**/cassettes/**/*.yaml",
    ),
}


def run_shared(workdir: Path, plan: Sequence[str]) -> dict[str, Any]:
    """Record the eight tests once per entry of ``plan`` (a key of ``_SHARED_SETUPS``)."""
    expected = _SHARED_TESTS * _SHARED_REQUESTS
    out: dict[str, Any] = {"expected": expected, "runs": []}
    with loopback_server(latency=0.02) as server:
        for number, name in enumerate(plan):
            label, marker, conftest, args, pattern = _SHARED_SETUPS[name]
            root = workdir / f"shared-{number}-{name}"
            _shared_project(root, marker, conftest)
            elapsed, summary = _run_pytest(root, args, server.base_url)
            files = sorted(root.glob(pattern))
            out["runs"].append(
                {
                    "setup": name,
                    "label": label,
                    "kept": _count_interactions(files),
                    "files": [str(f.relative_to(root)) for f in files],
                    "seconds": elapsed,
                    "pytest": summary,
                }
            )
    return out


# -- facts and the report -------------------------------------------------------------------


def _command() -> str:
    python = Path(sys.executable)
    with contextlib.suppress(ValueError):
        python = python.relative_to(Path.cwd())
    script = Path(sys.argv[0]).resolve()
    with contextlib.suppress(ValueError):
        script = script.relative_to(Path.cwd())
    return shlex.join([str(python), str(script), *sys.argv[1:]])


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or "unknown"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git_revision() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "pytest_agentctx"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{head} (uncommitted changes in pytest_agentctx/)" if dirty else head


def _source_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((ROOT / "pytest_agentctx").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


PACKAGES = (
    "pytest-agentctx",
    "openai",
    "httpx2",
    "vcrpy",
    "pytest-recording",
    "pytest",
    "pytest-xdist",
    "PyYAML",
)


def worker_versions(_payload: dict[str, Any]) -> dict[str, Any]:
    versions = {name: _version(name) for name in ("cassetter", "openai", "httpx2")}
    return {**versions, "python": platform.python_version()}


def worker_write_cassetter(payload: dict[str, Any]) -> dict[str, Any]:
    write_cassetter(Path(payload["path"]), payload["size"])
    return {}


WORKERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "load": worker_load,
    "cassetter-replay": worker_cassetter_replay,
    "cassetter-stream": worker_cassetter_stream,
    "write-cassetter": worker_write_cassetter,
    "versions": worker_versions,
}


def _tool_cell(run: dict[str, Any] | None, note: str = "") -> str:
    if run is None:
        return "not run"
    tool = run["tool"]
    if run["tail_only"]:
        return (
            f"last {tool['calls']:.0f} requests only: {_ms(tool['mean'])} each "
            f"({run['ratio']:.0f}x its floor){note}"
        )
    return f"{_ms(tool['mean'])} ({run['ratio']:.2f}x; CPU {run['cpu_ratio']:.2f}x){note}"


def _replay_section(
    replay: dict[str, Any], theirs: dict[str, Any] | None, sizes: Sequence[int]
) -> str:
    rows, tail_rows = [], []
    for size in sizes:
        ours = replay["ours"][size]
        vcr_run = replay["vcr"].get(size)
        their = theirs["cassetter"].get(str(size)) if theirs else None
        if theirs is None:
            their_cell = "not installed"
        elif their is None:
            refused = [e for k, e in theirs["refused"].items() if k.startswith(f"{size}.")]
            their_cell = f"refused ({refused[0]})" if refused else "not run"
        else:
            fmt = theirs["format"][str(size)]
            note = "" if fmt == "yaml" else f" [{fmt.upper()}: its YAML loader refused the file]"
            their_cell = _tool_cell(their, note)
        floor, tool = ours["floor"], ours["tool"]
        rows.append(
            [
                f"{size:,}",
                _ms(floor["mean"]),
                f"**{_ms(tool['mean'])}**",
                f"**{ours['ratio']:.2f}x**",
                f"{ours['cpu_ratio']:.2f}x",
                ", ".join(f"{r:.2f}" for r in ours["ratios"]),
                _tool_cell(vcr_run) if vcr_run else "not run (quadratic)",
                their_cell,
            ]
        )
        tail_rows.append(
            [
                f"{size:,}",
                f"{_ms(tool['tail'])} ({tool['tail'] / floor['tail']:.2f}x)",
                f"{_ms(vcr_run['tool']['tail'])}" if vcr_run else "not run",
                f"{_ms(their['tool']['tail'])}" if their else "n/a",
                _ms(ours["open"]),
                _ms(vcr_run["open"]) if vcr_run else "n/a",
                _ms(their["open"]) if their else "n/a",
            ]
        )
    return "\n\n".join(
        [
            "### 1. Replay cost per request (body matching on, openai SDK, in order)",
            "Mean time per `client.chat.completions.create` call. The floor is the same "
            "call over an `httpx2.MockTransport` that hands back the canned response. "
            "pytest-agentctx and cassetter are measured *paired*: inside the open cassette, "
            "call *i* goes once over the floor client and once through the cassette, the "
            "order alternating, so both see the machine in the same state; the ratio is "
            "tool / floor over the whole cassette, wall and CPU time (the process's own, "
            "which the other processes on the machine disturb far less). The repeat with "
            "the median ratio is shown, with the ratios of all repeats. vcrpy also patches "
            "`MockTransport`, so its floor runs right after its cassette closes. *last k "
            "requests only*: only the last k requests of the cassette were sent (vcrpy's "
            "and cassetter's cost per request grows with the position of the match, so a "
            "full in-order replay does not fit the time budget; nothing is extrapolated).",
            _table(
                [
                    "interactions",
                    "floor (MockTransport)",
                    "pytest-agentctx",
                    "ratio",
                    "CPU ratio",
                    "ratios of the repeats",
                    "vcrpy 9.4.2 (ratio to its floor)",
                    "cassetter 0.16.1 (ratio to its floor)",
                ],
                rows,
            ),
            "Cost per request of the last tenth of the cassette (at least 10 requests; for "
            "pytest-agentctx with the ratio to the floor's same calls), and the time to open "
            "the cassette before the first call (load, index, patching):",
            _table(
                [
                    "interactions",
                    "pytest-agentctx, last tenth",
                    "vcrpy, last requests",
                    "cassetter, last requests",
                    "open: pytest-agentctx",
                    "open: vcrpy",
                    "open: cassetter",
                ],
                tail_rows,
            ),
        ]
    )


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "not run"
    if entry["error"]:
        return "refused: " + entry["error"].split("\n")[0][:100]
    return _ms(min(entry["times"]))


def _load_section(load: dict[str, Any], cassetter: bool) -> str:
    rows = []
    for size, row in load.items():
        rows.append(
            [
                f"{int(size):,}",
                f"**{_cell(row['ours-store'])}**",
                f"**{_cell(row['ours-cassette'])}**",
                _cell(row["vcr"]),
                _cell(row.get("cassetter-core-yaml")) if cassetter else "not installed",
                _cell(row.get("cassetter-full-yaml")) if cassetter else "not installed",
                _cell(row.get("cassetter-full-toml")) if cassetter else "not installed",
            ]
        )
    size_rows = [
        [f"{int(size):,}", *(f"{b / 1e6:.2f} MB" for b in row["bytes"].values())]
        for size, row in load.items()
    ]
    first = next(iter(load.values()))
    return "\n\n".join(
        [
            "### 2. Cassette load time (cold: each load in a fresh process)",
            "Best of the repeats (each a fresh process); imports are done before the clock "
            "starts. "
            "pytest-agentctx: `load_cassette(path)` (parse into interactions) and "
            "`Cassette(path)` (the same plus the match key of every interaction and the "
            "index). vcrpy: `vcr.cassette.Cassette.load(path=...)`. cassetter: "
            "`cassetter._core.Cassette.load` (the Rust parser) and "
            "`cassetter.Cassette(...).load()` (what `use_cassette` does), on its default "
            "YAML format and on TOML.",
            _table(
                [
                    "interactions",
                    "pytest-agentctx load_cassette",
                    "pytest-agentctx Cassette(path)",
                    "vcrpy Cassette.load",
                    "cassetter core (YAML)",
                    "cassetter Cassette.load (YAML)",
                    "cassetter Cassette.load (TOML)",
                ],
                rows,
            ),
            "File sizes:",
            _table(["interactions", *first["bytes"].keys()], size_rows),
        ]
    )


def _stream_section(stream: dict[str, Any]) -> str:
    stream = dict(stream)
    events = stream.pop("events")
    first_only = stream.pop("first_only")
    rows = []
    labels = {
        "live": "live, no interception",
        "ours": "recording, pytest-agentctx (`RecordMode.REWRITE`)",
        "vcr": 'recording, vcrpy (`record_mode="all"`)',
        "live (cassetter's process)": "live, no interception (cassetter's venv)",
        "cassetter": 'recording, cassetter (`record_mode="all"`)',
    }
    for name, data in stream.items():
        live_name = "live (cassetter's process)" if name == "cassetter" else "live"
        base = _median(stream[live_name]["first"])
        first = _median(data["first"])
        # Each repeat ran every mode once, in turn: the difference within a repeat.
        difference = _median(
            [a - b for a, b in zip(data["first"], stream[live_name]["first"], strict=True)]
        )
        rows.append(
            [
                labels.get(name, name),
                f"**{_ms(first)}**" if name == "ours" else _ms(first),
                _ratio(first, base),
                "" if name.startswith("live") else f"{difference * 1000:+.2f} ms",
                _ms(min(data["first"])),
                _ms(_median(data["total"])),
                str(data["chunks"]),
            ]
        )
    return "\n\n".join(
        [
            "### 3. Time to the first streamed event while recording",
            "A loopback SSE server (127.0.0.1) sends the first event at once, then "
            f"{events} more 50 ms apart, flushing each. Time from the "
            "`create(..., stream=True)` call to the first chunk out of the SDK's stream; "
            "median of the repeats (each repeat runs every mode once, in turn), ratio to the "
            "live median, and the median of the differences to the live run of the same "
            "repeat.",
            _table(
                [
                    "mode",
                    "first event (median)",
                    "vs live",
                    "difference to live (median of the repeats)",
                    "first event (best)",
                    "whole stream (median)",
                    "chunks",
                ],
                rows,
            ),
            _first_only_text(first_only),
        ]
    )


def _first_only_summary(first_only: dict[str, list[float]]) -> tuple[float, float, float]:
    """(live median, recording median, median of the paired differences)."""
    live, ours = first_only["live"], first_only["ours"]
    differences = [o - li for o, li in zip(ours, live, strict=True)]
    return _median(live), _median(ours), _median(differences)


def _first_only_text(first_only: dict[str, list[float]]) -> str:
    live, ours, difference = _first_only_summary(first_only)
    return (
        f"First event only, {len(first_only['live'])} pairs (live and recording with "
        "pytest-agentctx one after the other, the order alternating; each stream closed "
        "after its first event, so each sample costs milliseconds, not a second; vcrpy and "
        "cassetter hand over nothing before the whole stream is in, as the table shows): "
        f"live median **{_ms(live)}**, recording median **{_ms(ours)}** "
        f"(**{ours / live:.2f}x**), median of the paired differences "
        f"**{difference * 1000:+.2f} ms**."
    )


def _shared_section(shared: dict[str, Any]) -> str:
    expected = shared["expected"]
    rows = [
        [
            run["label"],
            f"**{run['kept']} of {expected}**"
            if run["setup"] == "ours"
            else f"{run['kept']} of {expected}",
            ", ".join(run["files"]) or "none",
            run["pytest"],
            f"{run['seconds']:.1f} s",
        ]
        for run in shared["runs"]
    ]
    return "\n\n".join(
        [
            "### 4. A shared cassette recorded under `pytest -n 2`",
            f"{_SHARED_TESTS} tests, {_SHARED_REQUESTS} distinct requests each through the "
            "openai SDK to a loopback server (which answers after 20 ms), all recording "
            'into one cassette: pytest-agentctx with `@pytest.mark.agent(cassette="shared")`;'
            ' pytest-recording with `@pytest.mark.vcr("shared.yaml")` and a '
            '`default_cassette_name` fixture returning `"shared"` (the marker\'s positional '
            "cassettes are for playback only; recording goes to the default cassette), with "
            "body matching (`vcr_config`) unless said otherwise. Each row is a fresh project "
            "run by pytest in a subprocess.",
            _table(["setup", "interactions kept", "files", "pytest", "wall"], rows),
        ]
    )


def _verdicts(
    replay: dict[str, Any],
    load: dict[str, Any],
    stream: dict[str, Any],
    shared: dict[str, Any],
    cassetter: bool,
) -> str:
    rows = []
    ours_runs = replay["ours"]
    ratios = {size: run["ratio"] for size, run in ours_runs.items()}
    cpu_ratios = {size: run["cpu_ratio"] for size, run in ours_runs.items()}
    means = [run["tool"]["mean"] for run in ours_runs.values()]
    floors = [run["floor"]["mean"] for run in ours_runs.values()]
    worst, worst_cpu = max(ratios.values()), max(cpu_ratios.values())
    if worst <= 1.2:
        verdict = "met"
    elif worst_cpu <= 1.2:
        verdict = "met in CPU time, not in wall time"
    else:
        verdict = "not met"
    rows.append(
        [
            "replay within 1.2x of the floor, constant in size",
            verdict,
            "ratio to the floor "
            + ", ".join(f"{s:,}: {r:.2f}x" for s, r in ratios.items())
            + "; in CPU time "
            + ", ".join(f"{r:.2f}x" for r in cpu_ratios.values())
            + f"; per request {_ms(min(means))} to {_ms(max(means))} "
            f"(floor {_ms(min(floors))} to {_ms(max(floors))})",
        ]
    )
    load_parts, load_ok = [], True
    for size, row in load.items():
        ours = row["ours-cassette"]
        if ours["error"]:
            load_ok = False
            load_parts.append(f"{int(size):,}: pytest-agentctx failed ({ours['error']})")
            continue
        ours_t, ours_cpu = min(ours["times"]), min(ours["cpu"])
        part = f"{int(size):,}: Cassette(path) {_ms(ours_t)}"
        if row["vcr"]["times"]:
            vcr_t, vcr_cpu = min(row["vcr"]["times"]), min(row["vcr"]["cpu"])
            part += (
                f", vcrpy {_ms(vcr_t)} ({vcr_t / ours_t:.1f}x slower; "
                f"{vcr_cpu / ours_cpu:.1f}x in CPU time)"
            )
            load_ok = load_ok and vcr_t >= 10 * ours_t
        their, fmt = row.get("cassetter-full-yaml"), "YAML"
        if their is not None and not their["times"]:
            part += ", cassetter's YAML loader refused the file"
            their, fmt = row.get("cassetter-full-toml"), "TOML"
        if their is not None and their["times"]:
            their_t = min(their["times"])
            part += f", cassetter ({fmt}) {_ms(their_t)} ({their_t / ours_t:.1f}x slower)"
            load_ok = load_ok and ours_t <= their_t
        load_parts.append(part)
    rows.append(
        [
            ">=10x faster than vcrpy, no slower than cassetter, 5,000 load",
            ("met" if load_ok else "not met")
            + ("" if "5000" in load else " (5,000 not run in --quick)"),
            "; ".join(load_parts),
        ]
    )
    live, ours_first, difference = _first_only_summary(stream["first_only"])
    rows.append(
        [
            "first streamed event while recording within 1.1x of live",
            "met" if ours_first <= 1.1 * live else "not met",
            f"{len(stream['first_only']['live'])} pairs: live {_ms(live)}, pytest-agentctx "
            f"{_ms(ours_first)} ({ours_first / live:.2f}x, {difference * 1000:+.2f} ms); "
            f"whole streams: live {_ms(_median(stream['live']['first']))}, pytest-agentctx "
            f"{_ms(_median(stream['ours']['first']))}, vcrpy "
            f"{_ms(_median(stream['vcr']['first']))}",
        ]
    )
    expected = shared["expected"]
    kept = [run["kept"] for run in shared["runs"] if run["setup"] == "ours"]
    theirs = [str(run["kept"]) for run in shared["runs"] if run["setup"] in ("vcr", "vcr-default")]
    rows.append(
        [
            "shared cassette under -n 2 keeps every interaction",
            "met" if all(k == expected for k in kept) else "not met",
            f"pytest-agentctx kept {', '.join(map(str, kept))} of {expected}; "
            f"pytest-recording under -n 2 kept {', '.join(theirs)}",
        ]
    )
    return "### Targets\n\n" + _table(["target", "verdict", "figures"], rows)


def _facts(cassetter_versions: dict[str, str] | None, extra: list[tuple[str, str]]) -> str:
    facts = [
        ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("command", f"`{_command()}`"),
        ("python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("platform", platform.platform()),
        ("cpu", f"{_cpu_model()}, {os.cpu_count()} logical CPUs"),
        ("checkout", _git_revision()),
        ("pytest_agentctx/**/*.py sha256", _source_digest()),
        *((name, _version(name)) for name in PACKAGES),
    ]
    if cassetter_versions:
        facts.append(
            (
                "cassetter venv",
                ", ".join(f"{k} {v}" for k, v in cassetter_versions.items()),
            )
        )
    else:
        facts.append(("cassetter", "not installed (see --setup-cassetter)"))
    facts.extend(extra)
    return "### Machine and run\n\n" + _table(["", ""], [[k, v] for k, v in facts])


def setup_cassetter(python: str) -> None:
    venv = Path(python).parent.parent
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet", *CASSETTER_SETUP], check=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (under a minute)")
    parser.add_argument(
        "--cassetter-python",
        default=os.environ.get("BENCH_CASSETTER_PYTHON", DEFAULT_CASSETTER_PYTHON),
        help="interpreter of a virtualenv with cassetter, openai and httpx2 "
        f"(default {DEFAULT_CASSETTER_PYTHON})",
    )
    parser.add_argument(
        "--setup-cassetter",
        action="store_true",
        help="create that virtualenv first: " + " ".join(CASSETTER_SETUP),
    )
    parser.add_argument("--json", metavar="PATH", help="also write the raw figures here")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        kind, payload = args.worker
        _emit(WORKERS[kind](json.loads(payload)))
        return

    started = time.perf_counter()
    load_before = _load_average()
    quick = args.quick
    if args.setup_cassetter:
        setup_cassetter(args.cassetter_python)
    cassetter: str | None = args.cassetter_python
    cassetter_versions = None
    if cassetter and Path(cassetter).exists():
        try:
            cassetter_versions = _run_worker(cassetter, "versions", {}, 60)
        except RuntimeError as exc:
            print(f"cassetter not usable: {exc}", file=sys.stderr)
            cassetter = None
    else:
        cassetter = None

    sizes = (10, 100, 1000) if quick else (10, 100, 1000, 5000)
    vcr_plan: Plan = {10: None, 100: None} if quick else {10: None, 100: None, 1000: 10, 5000: 3}
    cassetter_plan: Plan = (
        {10: None, 100: None, 1000: 10} if quick else {10: None, 100: None, 1000: None, 5000: 10}
    )
    print("## Cassettes: pytest-agentctx, vcrpy, cassetter" + (" (--quick)" if quick else ""))
    print(flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-cassettes-") as tmp:
        workdir = Path(tmp)
        replay = run_replay(workdir, sizes, vcr_plan, quick)
        theirs = None
        if cassetter:
            payload = {"workdir": tmp, "plan": cassetter_plan, "quick": quick}
            theirs = _run_worker(cassetter, "cassetter-replay", payload, 900)
            print("  replay cassetter: done", file=sys.stderr, flush=True)
        print(_replay_section(replay, theirs, sizes) + "\n", flush=True)

        load = run_load(
            workdir,
            (1000,) if quick else (1000, 5000),
            repeats=1 if quick else 5,
            vcr_repeats=1 if quick else 3,
            cassetter=cassetter,
            formats=("yaml",) if quick else ("yaml", "toml"),
        )
        print(_load_section(load, bool(cassetter)) + "\n", flush=True)

        stream = run_stream(
            workdir,
            repeats=1 if quick else 5,
            cassetter=None if quick else cassetter,  # --quick: its stream is not timed
            events=5 if quick else 20,
            pairs=20 if quick else 80,
        )
        print(_stream_section(stream) + "\n", flush=True)

        shared = run_shared(
            workdir,
            ["ours", "vcr"] if quick else ["ours", "vcr", "vcr-serial", "vcr-default"],
        )
        print(_shared_section(shared) + "\n", flush=True)

    verdicts = _verdicts(replay, load, stream, shared, bool(cassetter))
    if quick:
        verdicts = verdicts.replace(
            "### Targets\n",
            "### Targets\n\n--quick: few repeats, smaller sizes, 5 stream events: a smoke run, "
            "not a verdict; run without --quick for the figures.\n",
        )
    print(verdicts + "\n")
    extra = [
        ("load average (1, 5, 15 min) before / after", f"{load_before} / {_load_average()}"),
        ("wall time of the run", f"{time.perf_counter() - started:.0f} s"),
    ]
    print(_facts(cassetter_versions, extra))
    if args.json:
        raw = {"replay": replay, "cassetter": theirs, "load": load, "stream": stream}
        raw["shared"] = shared
        Path(args.json).write_text(json.dumps(raw, indent=2, default=str))


if __name__ == "__main__":
    main()
