"""Cassettes side by side: pytest-agentctx against vcrpy / pytest-recording and cassetter.

    .venv/bin/python benchmarks/bench_cassettes.py           # the full run, ~6 minutes
    .venv/bin/python benchmarks/bench_cassettes.py --quick   # a smoke run, under a minute

Four measurements, the targets of the cassettes issue (see benchmarks/CASSETTES.md):

1. **Replay cost per request**, body matching on, through the real ``openai`` SDK
   (``client.chat.completions.create``): cassettes of 10 to 5,000 interactions with
   distinct small chat bodies, replayed in order, against the floor (the same SDK calls
   over an ``httpx2.MockTransport`` that returns the canned response directly).
2. **Cassette load time** at 1,000 and 5,000 interactions, each load in a fresh process
   (nothing cached): the package's ``load_cassette`` and the full ``Cassette(path)`` (with
   its match index), vcrpy's ``Cassette.load(path=...)``, cassetter's loader.
3. **Time to the first streamed event while recording**: a loopback SSE server sends the
   first event at once, then 20 more 50 ms apart; the openai SDK streams it live, while
   pytest-agentctx records, while vcrpy records (and cassetter).
4. **A shared cassette recorded under ``pytest -n 2``**: eight tests, five distinct
   requests each, record into one cassette; how many of the 40 interactions are kept.

cassetter is a separate install with its own pytest plugin (it registers a ``vcr`` marker
and ``--record-mode`` like pytest-recording), so it lives in its own virtualenv and is
driven there by this same script (``--worker``); ``--setup-cassetter`` creates it.

Nothing here leaves 127.0.0.1: replayed cassettes point at ``http://127.0.0.1:9`` (no
server), and every recording talks to a loopback server this script starts.
"""

from __future__ import annotations

import argparse
import contextlib
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


def _timed_calls(client: Any, indices: Sequence[int]) -> tuple[list[float], float]:
    """Wall seconds of each ``chat.completions.create`` call, and the CPU seconds of them
    all (the process's own time, which other processes on the machine barely change);
    checks each answer."""
    create = client.chat.completions.create
    out = []
    clock = time.perf_counter
    cpu_started = time.process_time()
    for index in indices:
        started = clock()
        completion = create(**request_body(index))
        out.append(clock() - started)
        if completion.id != response_id(index):
            raise AssertionError(f"call {index} got {completion.id}")
    return out, time.process_time() - cpu_started


def _floor_client(size: int) -> Any:
    """The SDK over an ``httpx2.MockTransport`` that hands back the canned responses in
    order (built before the clock starts), doing nothing else."""
    import httpx2

    canned = iter(
        [(response_headers(i), json.dumps(response_body(i)).encode()) for i in range(size)]
    )

    def handler(request: Any) -> Any:
        headers, content = next(canned)
        return httpx2.Response(200, headers=headers, content=content)

    return _sdk_client(httpx2.MockTransport(handler))


# -- cassette writers (each tool writes its own format) ------------------------------------


def write_ours(path: Path, size: int) -> None:
    from pytest_agentctx.cassettes import Interaction, write_cassette

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
    from cassetter._core import Body, HttpInteraction, HttpRequest, HttpResponse
    from cassetter._core import Cassette as RustCassette

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


def _replay_run(
    open_cassette: Callable[[], contextlib.AbstractContextManager[Any]],
    client: Any,
    size: int,
    tail: int | None = None,
) -> dict[str, float]:
    indices = range(size - tail, size) if tail else range(size)
    gc.collect()
    started = time.perf_counter()
    with open_cassette():
        opened = time.perf_counter() - started
        calls, cpu = _timed_calls(client, indices)
    return {
        "calls": len(calls),
        "mean": sum(calls) / len(calls),
        "tail": sum(calls[-10:]) / len(calls[-10:]),
        "cpu": cpu / len(calls),
        "open": opened,
        "tail_only": bool(tail),
    }


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    """The fastest repeat (the one least disturbed by the rest of the machine)."""
    best = min(runs, key=lambda run: run["mean"])
    return {**best, "cpu": min(run["cpu"] for run in runs), "repeats": len(runs)}


def replay_floor(size: int) -> dict[str, float]:
    return _replay_run(contextlib.nullcontext, _floor_client(size), size)


@contextlib.contextmanager
def _ours(path: Path) -> Iterator[None]:
    from pytest_agentctx.cassettes import Cassette, store

    store._cache.clear()  # parse the file again, as a new test process would
    cassette = Cassette(path)
    cassette.start()
    try:
        yield
    finally:
        cassette.stop()
    cassette.check()  # every interaction was replayed, nothing missed


def replay_ours(path: Path, size: int) -> dict[str, float]:
    return _replay_run(lambda: _ours(path), _sdk_client(), size)


def _vcr() -> Any:
    import vcr

    return vcr.VCR(match_on=["method", "scheme", "host", "port", "path", "query", "body"])


def replay_vcr(path: Path, size: int, tail: int | None = None) -> dict[str, float]:
    return _replay_run(
        lambda: _vcr().use_cassette(str(path), record_mode="none"), _sdk_client(), size, tail
    )


def replay_cassetter(path: Path, size: int, tail: int | None = None) -> dict[str, float]:
    from cassetter import use_cassette

    def open_cassette() -> contextlib.AbstractContextManager[Any]:
        return use_cassette(str(path), record_mode="none", match_on=["method", "uri", "json_body"])

    return _replay_run(open_cassette, _sdk_client(), size, tail)


def _repeats(size: int, quick: bool) -> int:
    if quick:
        return 1 if size >= 1000 else 2
    return {10: 7, 100: 5, 1000: 3}.get(size, 3)


def run_replay(workdir: Path, sizes: Sequence[int], vcr_plan: Plan, quick: bool) -> dict[str, Any]:
    """Floor, pytest-agentctx and vcrpy, interleaved within each repeat."""
    out: dict[str, Any] = {"floor": {}, "ours": {}, "vcr": {}}
    warm = workdir / "warm.json"  # warm-up: imports, first-call paths, a first cassette
    write_ours(warm, 10)
    replay_floor(10)
    replay_ours(warm, 10)
    warm_vcr = workdir / "warm.yaml"
    write_vcr(warm_vcr, 10)
    replay_vcr(warm_vcr, 10)
    for size in sizes:
        ours_path = workdir / f"ours-{size}.json"
        write_ours(ours_path, size)
        vcr_path = workdir / f"vcr-{size}.yaml"
        if size in vcr_plan:
            write_vcr(vcr_path, size)
        tail = vcr_plan.get(size)
        runs: dict[str, list[dict[str, float]]] = {"floor": [], "ours": [], "vcr": []}
        for _ in range(_repeats(size, quick)):
            runs["floor"].append(replay_floor(size))
            runs["ours"].append(replay_ours(ours_path, size))
            if size in vcr_plan and (tail is None or not runs["vcr"]):
                runs["vcr"].append(replay_vcr(vcr_path, size, tail))
        for name, done in runs.items():
            if done:
                out[name][size] = _best(done)
        print(f"  replay {size}: done", file=sys.stderr, flush=True)
    return out


def worker_cassetter_replay(payload: dict[str, Any]) -> dict[str, Any]:
    """In cassetter's venv: its floor and its replay, interleaved, per size."""
    from cassetter._core import Cassette as RustCassette

    workdir = Path(payload["workdir"])
    quick = payload["quick"]
    plan: Plan = {int(size): tail for size, tail in payload["plan"].items()}
    out: dict[str, Any] = {"floor": {}, "cassetter": {}, "refused": {}, "format": {}}
    warm = workdir / "cassetter-warm.yaml"
    write_cassetter(warm, 10)
    replay_floor(10)
    replay_cassetter(warm, 10)
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
        floor_runs, runs = [], []
        for _ in range(_repeats(size, quick) if tail is None else 1):
            floor_runs.append(replay_floor(size))
            runs.append(replay_cassetter(chosen, size, tail))
        out["floor"][size] = _best(floor_runs)
        out["cassetter"][size] = _best(runs)
    return out


# -- 2. load -------------------------------------------------------------------------------


def worker_load(payload: dict[str, Any]) -> dict[str, Any]:
    """One cold load in this fresh process: imports first, then only the load is timed."""
    kind, path = payload["kind"], payload["path"]
    load: Callable[[], int]
    if kind == "ours-store":
        from pytest_agentctx.cassettes import load_cassette

        def load() -> int:
            return len(load_cassette(Path(path)))

    elif kind == "ours-cassette":
        from pytest_agentctx.cassettes import Cassette

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
            "vcr": _cold_loads(ours_python, "vcr", vcr_path, vcr_repeats),
        }
        if cassetter:
            for suffix in formats:
                path = workdir / f"load-cassetter-{size}.{suffix}"
                _run_worker(cassetter, "write-cassetter", {"path": str(path), "size": size}, 300)
                row["bytes"][f"cassetter-{suffix}"] = path.stat().st_size
                for kind in ("cassetter-core", "cassetter-full"):
                    row[f"{kind}-{suffix}"] = _cold_loads(cassetter, kind, path, repeats)
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


def _stream_once(client: Any) -> tuple[float, float, int]:
    """(time to the first chunk, time to the end, chunks) of one streamed completion."""
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
    total = time.perf_counter() - started
    assert first is not None
    return first, total, count


def _stream_live(base_url: str, _path: Path) -> tuple[float, float, int]:
    return _stream_once(_sdk_client(base_url=base_url))


def _stream_ours(base_url: str, path: Path) -> tuple[float, float, int]:
    from pytest_agentctx.cassettes import Cassette, RecordMode

    cassette = Cassette(path, mode=RecordMode.REWRITE)
    client = _sdk_client(base_url=base_url)
    cassette.start()
    try:
        result = _stream_once(client)
    finally:
        cassette.stop()
    if len(cassette.new_interactions) != 1 or not cassette.new_interactions[0].is_stream:
        raise AssertionError("pytest-agentctx did not record the stream")
    return result


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


def run_stream(workdir: Path, repeats: int, cassetter: str | None) -> dict[str, Any]:
    with loopback_server(events=20, delay=0.05) as server:
        out = _stream_modes(
            {"live": _stream_live, "ours": _stream_ours, "vcr": _stream_vcr},
            server.base_url,
            workdir,
            repeats,
        )
        if cassetter:
            payload = {"base_url": server.base_url, "workdir": str(workdir), "repeats": repeats}
            theirs = _run_worker(cassetter, "cassetter-stream", payload, 300)
            out["live (cassetter's process)"] = theirs["live"]
            out["cassetter"] = theirs["cassetter"]
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


def _pytest_n2(root: Path, args: Sequence[str], base_url: str) -> tuple[float, str]:
    env = {**os.environ, "BENCH_LOOPBACK_URL": base_url, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", "-q", "-n", "2", *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    lines = [line for line in done.stdout.strip().splitlines() if line.strip()]
    summary = lines[-1] if lines else f"exit {done.returncode}"
    if done.returncode != 0:
        summary += f" (exit {done.returncode})"
    return elapsed, summary


def run_shared(workdir: Path, rounds: int) -> dict[str, Any]:
    expected = _SHARED_TESTS * _SHARED_REQUESTS
    out: dict[str, Any] = {"expected": expected, "ours": [], "vcr": []}
    with loopback_server(latency=0.02) as server:
        for round_ in range(rounds):
            ours = workdir / f"shared-ours-{round_}"
            _shared_project(ours, '@pytest.mark.agent(cassette="shared")')
            elapsed, summary = _pytest_n2(ours, ["--agent-record"], server.base_url)
            files = sorted(ours.glob("cassettes/**/*.json"))
            out["ours"].append(
                {
                    "kept": _count_interactions(files),
                    "files": [str(f.relative_to(ours)) for f in files],
                    "seconds": elapsed,
                    "pytest": summary,
                }
            )
            theirs = workdir / f"shared-vcr-{round_}"
            _shared_project(theirs, '@pytest.mark.vcr("shared.yaml")', _RECORDING_CONFTEST)
            elapsed, summary = _pytest_n2(theirs, ["--record-mode=all"], server.base_url)
            files = sorted(theirs.glob("**/cassettes/**/*.yaml"))
            out["vcr"].append(
                {
                    "kept": _count_interactions(files),
                    "files": [str(f.relative_to(theirs)) for f in files],
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


def _full_cell(run: dict[str, float] | None, floor: dict[str, float] | None) -> str:
    if run is None:
        return "not run"
    if run["tail_only"]:
        return f"not run in full (last {run['calls']:.0f} only: {_ms(run['mean'])} each)"
    return f"{_ms(run['mean'])} ({_ratio(run['mean'], floor['mean'] if floor else None)})"


def _replay_section(
    replay: dict[str, Any], theirs: dict[str, Any] | None, sizes: Sequence[int]
) -> tuple[str, dict[str, Any]]:
    floor, ours, vcr_runs = replay["floor"], replay["ours"], replay["vcr"]
    rows, tail_rows = [], []
    verdict: dict[str, Any] = {"ratios": {}, "cpu_ratios": {}}
    for size in sizes:
        f, o = floor[size], ours[size]
        v = vcr_runs.get(size)
        c = theirs["cassetter"].get(str(size)) if theirs else None
        cf = theirs["floor"].get(str(size)) if theirs else None
        verdict["ratios"][size] = o["mean"] / f["mean"]
        verdict["cpu_ratios"][size] = o["cpu"] / f["cpu"]
        if theirs is None:
            their_cell = "not installed"
        elif c is None:
            refused = [e for k, e in theirs["refused"].items() if k.startswith(f"{size}.")]
            their_cell = f"refused ({refused[0]})" if refused else "not run"
        else:
            their_cell = _full_cell(c, cf)
            if theirs["format"][str(size)] != "yaml":
                their_cell += (
                    f"; {theirs['format'][str(size)].upper()}, its YAML loader refused the file"
                )
        rows.append(
            [
                f"{size:,}",
                _ms(f["mean"]),
                f"**{_ms(o['mean'])}** ({_ratio(o['mean'], f['mean'])})",
                _ratio(o["cpu"], f["cpu"]),
                _full_cell(v, f) if v or size <= 100 else "not run (quadratic)",
                their_cell,
                _ms(cf["mean"]) if cf else "n/a",
            ]
        )
        tail_rows.append(
            [
                f"{size:,}",
                _ms(f["tail"]),
                f"{_ms(o['tail'])} ({_ratio(o['tail'], f['tail'])})",
                f"{_ms(v['tail'])} (last {v['calls']:.0f} only)"
                if v and v["tail_only"]
                else (_ms(v["tail"]) if v else "not run"),
                f"{_ms(c['tail'])} (last {c['calls']:.0f} only)"
                if c and c["tail_only"]
                else (_ms(c["tail"]) if c else "n/a"),
                _ms(o["open"]),
                _ms(v["open"]) if v else "n/a",
                _ms(c["open"]) if c else "n/a",
            ]
        )
    text = "\n\n".join(
        [
            "### 1. Replay cost per request (body matching on, openai SDK, in order)",
            "Mean wall time per `client.chat.completions.create` call over the whole "
            "cassette, best of the repeats; in brackets the ratio to the floor: the same "
            "calls over an `httpx2.MockTransport` that hands back the canned response. "
            "*CPU ratio*: the same ratio in CPU time of the process (best of the repeats), "
            "which the other processes on the machine disturb far less. cassetter runs in "
            "its own virtualenv and is compared with the floor measured there (last column).",
            _table(
                [
                    "interactions",
                    "floor (MockTransport)",
                    "pytest-agentctx",
                    "CPU ratio",
                    "vcrpy 9.4.2",
                    "cassetter 0.16.1",
                    "floor in cassetter's venv",
                ],
                rows,
            ),
            "Cost per request of the last 10 requests of the cassette, and the time to "
            "open the cassette before the first call (load, index, patching). "
            "*last k only*: only the last k requests of the cassette were sent (vcrpy's "
            "and cassetter's cost per request grows with the position of the match, so a "
            "full in-order replay does not fit the time budget; nothing is extrapolated).",
            _table(
                [
                    "interactions",
                    "floor",
                    "pytest-agentctx",
                    "vcrpy",
                    "cassetter",
                    "pytest-agentctx open",
                    "vcrpy open",
                    "cassetter open",
                ],
                tail_rows,
            ),
        ]
    )
    return text, verdict


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "not run"
    if entry["error"]:
        return "refused: " + entry["error"].split("\n")[0][:100]
    return _ms(_median(entry["times"]))


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
            "Median of the repeats; imports are done before the clock starts. "
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
    live = _median(stream["live"]["first"])
    rows = []
    labels = {
        "live": "live, no interception",
        "ours": "recording, pytest-agentctx (`RecordMode.REWRITE`)",
        "vcr": 'recording, vcrpy (`record_mode="all"`)',
        "live (cassetter's process)": "live, no interception (cassetter's venv)",
        "cassetter": 'recording, cassetter (`record_mode="all"`)',
    }
    for name, data in stream.items():
        base = (
            _median(stream["live (cassetter's process)"]["first"]) if name == "cassetter" else live
        )
        first = _median(data["first"])
        rows.append(
            [
                labels.get(name, name),
                f"**{_ms(first)}**" if name == "ours" else _ms(first),
                _ratio(first, base),
                _ms(min(data["first"])),
                _ms(_median(data["total"])),
                str(data["chunks"]),
            ]
        )
    return "\n\n".join(
        [
            "### 3. Time to the first streamed event while recording",
            "A loopback SSE server (127.0.0.1) sends the first event at once, then 20 more "
            "50 ms apart, flushing each. Time from the `create(..., stream=True)` call to "
            "the first chunk out of the SDK's stream; median of the repeats (interleaved), "
            "ratio to the live median.",
            _table(
                [
                    "mode",
                    "first event (median)",
                    "vs live",
                    "first event (best)",
                    "whole stream (median)",
                    "chunks",
                ],
                rows,
            ),
        ]
    )


def _shared_section(shared: dict[str, Any]) -> str:
    expected = shared["expected"]
    rows = []
    for name, label in (
        ("ours", "pytest-agentctx `--agent-record -n 2`"),
        ("vcr", "pytest-recording `--record-mode=all -n 2`"),
    ):
        for round_, run in enumerate(shared[name], 1):
            rows.append(
                [
                    label,
                    str(round_),
                    f"**{run['kept']} of {expected}**"
                    if name == "ours"
                    else f"{run['kept']} of {expected}",
                    ", ".join(run["files"]) or "none",
                    run["pytest"],
                    f"{run['seconds']:.1f} s",
                ]
            )
    return "\n\n".join(
        [
            "### 4. A shared cassette recorded under `pytest -n 2`",
            f"{_SHARED_TESTS} tests, {_SHARED_REQUESTS} distinct requests each through the "
            "openai SDK to a loopback server (which answers after 20 ms), all recording "
            'into one cassette: pytest-agentctx with `@pytest.mark.agent(cassette="shared")`,'
            " pytest-recording with `@pytest.mark.vcr` and a `default_cassette_name` fixture "
            'returning `"shared"` (its marker\'s positional cassettes are for playback only).'
            " Each run is a fresh project in a subprocess.",
            _table(["tool", "run", "interactions kept", "files", "pytest", "wall"], rows),
        ]
    )


def _verdicts(
    replay_verdict: dict[str, Any],
    replay: dict[str, Any],
    load: dict[str, Any],
    stream: dict[str, Any],
    shared: dict[str, Any],
    cassetter: bool,
) -> str:
    rows = []
    ratios, cpu_ratios = replay_verdict["ratios"], replay_verdict["cpu_ratios"]
    worst = max(ratios.values())
    ours_means = [replay["ours"][s]["mean"] for s in ratios]
    floor_means = [replay["floor"][s]["mean"] for s in ratios]
    spread = max(ours_means) / min(ours_means)
    floor_spread = max(floor_means) / min(floor_means)
    detail = ", ".join(f"{s:,}: {r:.2f}x" for s, r in ratios.items())
    cpu_detail = ", ".join(f"{r:.2f}x" for r in cpu_ratios.values())
    rows.append(
        [
            "replay within 1.2x of the floor, constant in size",
            "met" if worst <= 1.2 else "not met",
            f"ratio to the floor (wall) {detail}; in CPU time {cpu_detail}; "
            f"pytest-agentctx slowest/fastest size {spread:.2f}x (floor {floor_spread:.2f}x)",
        ]
    )
    load_parts, load_ok = [], True
    for size, row in load.items():
        ours = row["ours-cassette"]
        if ours["error"]:
            load_ok = False
            load_parts.append(f"{int(size):,}: pytest-agentctx failed ({ours['error']})")
            continue
        ours_t, ours_cpu = _median(ours["times"]), _median(ours["cpu"])
        part = f"{int(size):,}: Cassette(path) {_ms(ours_t)}"
        if row["vcr"]["times"]:
            vcr_t, vcr_cpu = _median(row["vcr"]["times"]), _median(row["vcr"]["cpu"])
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
            their_t = _median(their["times"])
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
    live = _median(stream["live"]["first"])
    ours_first = _median(stream["ours"]["first"])
    rows.append(
        [
            "first streamed event while recording within 1.1x of live",
            "met" if ours_first <= 1.1 * live else "not met",
            f"live {_ms(live)}, pytest-agentctx {_ms(ours_first)} "
            f"({ours_first / live:.2f}x), vcrpy {_ms(_median(stream['vcr']['first']))}",
        ]
    )
    expected = shared["expected"]
    kept = [run["kept"] for run in shared["ours"]]
    rows.append(
        [
            "shared cassette under -n 2 keeps every interaction",
            "met" if all(k == expected for k in kept) else "not met",
            f"pytest-agentctx kept {', '.join(map(str, kept))} of {expected}; "
            f"pytest-recording kept {', '.join(str(r['kept']) for r in shared['vcr'])}",
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
        replay_text, replay_verdict = _replay_section(replay, theirs, sizes)
        print(replay_text + "\n", flush=True)

        load = run_load(
            workdir,
            (1000,) if quick else (1000, 5000),
            repeats=1 if quick else 5,
            vcr_repeats=1 if quick else 3,
            cassetter=cassetter,
            formats=("yaml",) if quick else ("yaml", "toml"),
        )
        print(_load_section(load, bool(cassetter)) + "\n", flush=True)

        stream = run_stream(workdir, repeats=2 if quick else 7, cassetter=cassetter)
        print(_stream_section(stream) + "\n", flush=True)

        shared = run_shared(workdir, rounds=1 if quick else 2)
        print(_shared_section(shared) + "\n", flush=True)

    print(_verdicts(replay_verdict, replay, load, stream, shared, bool(cassetter)) + "\n")
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
