"""aiohttp replayed from a cassette: pytest-agentctx against aioresponses and vcrpy.

    .venv/bin/python benchmarks/bench_aiohttp.py            # 10, 1,000 and 5,000 requests
    .venv/bin/python benchmarks/bench_aiohttp.py --quick    # a smoke run
    .venv/bin/python benchmarks/bench_aiohttp.py --profile  # where our time goes (1,000)

One ``aiohttp.ClientSession`` posts N distinct small JSON bodies to one URL, in order, and
reads each JSON answer (``async with session.post(...) as r: await r.json()``), three ways:

- **floor**: aioresponses (aiohttp's usual mock, which patches ``ClientSession._request``)
  with the N canned answers registered before the clock starts;
- **ours**: a pytest-agentctx ``Cassette`` of the N interactions, replayed (body matching);
- **vcrpy**: ``vcr.use_cassette`` replaying the same N interactions (matching on method,
  URL and body), from its YAML cassette.

It prints the per-request wall time of each, for a cassette of 10, 1,000 and 5,000
interactions (does the cost per request stay constant as the cassette grows?), and the
ratios to the floor. Each figure is the best of the repeats. vcrpy looks every request up
by scanning the whole cassette, so at 1,000 and 5,000 only the last 200 and 100 requests of
its cassette are sent (their cost is the one at that size). Nothing leaves the process: the URL is
``http://127.0.0.1:9`` and no server listens.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import platform
import pstats
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp

URL = "http://127.0.0.1:9/tools/weather"
SIZES = (10, 1000, 5000)
JSON = {"content-type": "application/json"}
VCR_TAIL = {1000: 200, 5000: 100}


def request_body(i: int) -> dict[str, Any]:
    return {"city": f"city-{i}", "day": i % 7, "units": "metric"}


def response_body(i: int) -> dict[str, Any]:
    return {"city": f"city-{i}", "forecast": "sunny", "high": 20 + i % 10, "low": 10}


class _MockedResponse(aiohttp.ClientResponse):
    """aioresponses 0.7.9 builds responses without the ``stream_writer`` aiohttp 3.14
    requires; given as its ``response_class``, this class supplies one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("stream_writer", SimpleNamespace(output_size=0))
        super().__init__(*args, **kwargs)


def write_ours(path: Path, size: int) -> None:
    from pytest_agentctx.traffic.cassettes import Interaction, write_cassette

    write_cassette(
        path,
        [
            Interaction(
                method="POST",
                url=URL,
                request_headers={"content-type": "application/json"},
                request_body={"json": request_body(i)},
                status=200,
                response_headers={"content-type": "application/json"},
                response_body={"json": response_body(i)},
            )
            for i in range(size)
        ],
    )


def write_vcr(path: Path, size: int) -> None:
    from vcr.request import Request
    from vcr.serialize import serialize
    from vcr.serializers import yamlserializer

    headers = {"Content-Type": "application/json"}
    requests = [
        Request("POST", URL, json.dumps(request_body(i)).encode(), headers) for i in range(size)
    ]
    responses = [
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["application/json"]},
            "body": {"string": json.dumps(response_body(i)).encode()},
        }
        for i in range(size)
    ]
    text = serialize({"requests": requests, "responses": responses}, yamlserializer)
    path.write_text(text, encoding="utf-8")


async def _send(indices: range) -> float:
    """Post the requests of ``indices`` in order; the seconds they took."""
    async with aiohttp.ClientSession() as session:
        started = time.perf_counter()
        for i in indices:
            # bytes, not json=: vcrpy records json= as the object, and matches it as such
            data = json.dumps(request_body(i)).encode()
            async with session.post(URL, data=data, headers=JSON) as response:
                body = await response.json()
            if body["city"] != f"city-{i}":
                raise AssertionError(f"request {i} got the answer of {body['city']}")
        return time.perf_counter() - started


@contextmanager
def _floor(indices: range) -> Iterator[None]:
    from aioresponses import aioresponses

    with aioresponses() as mocked:
        for i in indices:
            mocked.post(URL, payload=response_body(i), response_class=_MockedResponse)
        yield


@contextmanager
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


def _vcr(path: Path) -> AbstractContextManager[Any]:
    import vcr

    recorder = vcr.VCR(match_on=["method", "scheme", "host", "port", "path", "query", "body"])
    cassette: AbstractContextManager[Any] = recorder.use_cassette(
        str(path), record_mode="none", allow_playback_repeats=False
    )
    return cassette


def _best(open_: Callable[[], AbstractContextManager[Any]], indices: range, repeats: int) -> float:
    """The best per-request seconds of ``repeats`` replays of ``indices``."""
    times = []
    for _ in range(repeats):
        gc.collect()
        with open_():
            seconds = asyncio.run(_send(indices))
        times.append(seconds / len(indices))
    return min(times)


def measure(workdir: Path, size: int, repeats: int) -> dict[str, float]:
    ours_path, vcr_path = workdir / f"ours-{size}.json", workdir / f"vcr-{size}.yaml"
    write_ours(ours_path, size)
    write_vcr(vcr_path, size)
    every = range(size)
    tail = range(size - VCR_TAIL.get(size, size), size)
    return {
        "floor": _best(lambda: _floor(every), every, repeats),
        "ours": _best(lambda: _ours(ours_path), every, repeats),
        "vcr": _best(lambda: _vcr(vcr_path), tail, 1 if size >= 1000 else repeats),
    }


def profile(workdir: Path, size: int) -> None:
    path = workdir / "profile.json"
    write_ours(path, size)
    profiler = cProfile.Profile()
    with _ours(path):
        profiler.runcall(asyncio.run, _send(range(size)))
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes 10 and 1,000, one repeat")
    parser.add_argument("--profile", action="store_true", help="profile our replay of 1,000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if args.profile:
            profile(workdir, 1000)
            return
        measure(workdir, 10, 1)  # warm-up: imports and first-call paths
        sizes = (10, 1000) if args.quick else SIZES
        print(
            f"Python {platform.python_version()}, aiohttp {version('aiohttp')}, "
            f"aioresponses {version('aioresponses')}, vcrpy {version('vcrpy')}\n"
        )
        print(
            "| interactions | floor (aioresponses) | pytest-agentctx | vcrpy | ours / floor "
            "| vcrpy / floor | vcrpy / ours |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for size in sizes:
            repeats = 1 if args.quick else (5 if size < 1000 else 3)
            got = measure(workdir, size, repeats)
            tail = f" (last {VCR_TAIL[size]})" if size in VCR_TAIL else ""
            print(
                f"| {size:,} | {got['floor'] * 1e6:,.0f} µs | {got['ours'] * 1e6:,.0f} µs "
                f"| {got['vcr'] * 1e6:,.0f} µs{tail} | {got['ours'] / got['floor']:.2f}x "
                f"| {got['vcr'] / got['floor']:.2f}x | {got['vcr'] / got['ours']:,.1f}x |"
            )


if __name__ == "__main__":
    main()
