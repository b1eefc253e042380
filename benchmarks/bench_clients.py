"""Replay through the client libraries other than httpx, against their own mocks.

    .venv/bin/python benchmarks/bench_clients.py           # 10, 1,000 and 5,000 interactions
    .venv/bin/python benchmarks/bench_clients.py --quick   # 10 and 200, a smoke run

For each client library (one function per library in :data:`CLIENTS`), the same number of
distinct GET requests (``/weather?city=c<i>``, a small JSON answer each) is answered three
ways, in one process:

* **agentctx**: a pytest-agentctx :class:`~pytest_agentctx.traffic.cassettes.Cassette`
  of N interactions, replayed in order (the library's patch, the match index, redaction of
  each request as in a test);
* **the mock floor**: the library's own mock library with the same N answers registered
  (``responses`` for ``requests``), what a test that mocks the library pays;
* **vcrpy**: ``vcr.use_cassette`` on a vcrpy cassette of the same N interactions,
  ``record_mode="none"``.

Only the requests are timed (a cassette's loading and the mocks' registration are not),
with the garbage collector paused, best of ``--repeats`` rounds; the figure is the time
per request. The sessions do not read proxy settings from the environment (see
:func:`_session`). Each round sends :data:`SAMPLE` of the N requests, spread evenly over
the cassette (all N, over and over up to about as many, when N is smaller): ``responses``
and vcrpy look for a match among all N answers on every request, so sending all 5,000
through them would take most of an hour. The target: agentctx within 1.2x of the mock floor.

Nothing leaves 127.0.0.1: the URLs point at ``http://127.0.0.1:9`` (no server), so a
request that a tool failed to answer is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

BASE = "http://127.0.0.1:9"
SIZES = (10, 1_000, 5_000)
QUICK_SIZES = (10, 200)
#: How many of a cassette's N requests a round sends (spread over all N).
SAMPLE = 200


def url(i: int) -> str:
    return f"{BASE}/weather?city=c{i}"


def answer(i: int) -> dict[str, Any]:
    return {"city": f"c{i}", "temp": 12 + i % 20, "conditions": "sunny", "wind_kmh": i % 40}


# -- cassettes ------------------------------------------------------------------------------


def write_ours(path: Path, size: int) -> None:
    from pytest_agentctx.traffic.cassettes import Interaction, write_cassette

    write_cassette(
        path,
        [
            Interaction(
                method="GET",
                url=url(i),
                request_headers={"accept": "*/*"},
                request_body=None,
                status=200,
                response_headers={"content-type": "application/json"},
                response_body={"json": answer(i)},
            )
            for i in range(size)
        ],
    )


def write_vcr(path: Path, size: int) -> None:
    from vcr.request import Request
    from vcr.serialize import serialize
    from vcr.serializers import yamlserializer

    requests = [Request("GET", url(i), b"", {"accept": "*/*"}) for i in range(size)]
    responses = [
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": json.dumps(answer(i)).encode()},
        }
        for i in range(size)
    ]
    text = serialize({"requests": requests, "responses": responses}, yamlserializer)
    path.write_text(text, encoding="utf-8")


# -- timing ---------------------------------------------------------------------------------


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def per_request(calls: Callable[[], None], size: int) -> float:
    """Seconds per request of ``calls`` (which makes ``size`` requests)."""
    with no_gc():
        start = time.perf_counter()
        calls()
        return (time.perf_counter() - start) / size


def sample(size: int) -> list[int]:
    """The requests a round sends: :data:`SAMPLE` of ``size``, evenly spread, in order."""
    if size <= SAMPLE:
        return list(range(size))
    return [k * size // SAMPLE for k in range(SAMPLE)]


# -- requests -------------------------------------------------------------------------------


def bench_requests(size: int, folder: Path) -> dict[str, float]:
    """Per-request seconds of ``requests`` replayed by agentctx, ``responses`` and vcrpy."""
    import requests
    import responses
    import vcr

    from pytest_agentctx.traffic.cassettes import Cassette

    ours = folder / f"requests-{size}.json"
    write_ours(ours, size)
    theirs = folder / f"requests-{size}.yaml"
    write_vcr(theirs, size)

    sent = sample(size)
    passes = max(1, SAMPLE // size)  # a small cassette is replayed several times over

    def send_all(session: requests.Session) -> None:
        for i in sent:
            reply = session.get(url(i), timeout=5)
            assert reply.json()["city"] == f"c{i}", reply.text

    def timed(session: requests.Session) -> float:
        return per_request(lambda: send_all(session), len(sent))

    times: dict[str, float] = {}
    with _session() as session:
        spent = 0.0
        for _ in range(passes):
            cassette = Cassette(ours, allow_unused=True)  # each pass replays a fresh one
            cassette.start()
            try:
                spent += timed(session)
            finally:
                cassette.stop()
            cassette.check()
        times["agentctx"] = spent / passes

    unsent = responses.RequestsMock(assert_all_requests_are_fired=False)
    with unsent as mock, _session() as session:
        for i in range(size):
            mock.get(url(i), json=answer(i))
        times["mock floor (responses)"] = sum(timed(session) for _ in range(passes)) / passes

    replays = vcr.use_cassette(str(theirs), record_mode="none", allow_playback_repeats=True)
    with replays, _session() as session:
        times["vcrpy"] = sum(timed(session) for _ in range(passes)) / passes
    return times


def _session() -> Any:
    """A requests session that does not read proxy settings from the environment: they
    cost every request the same whatever answers it (a scan of ``os.environ``, a third of
    a request here), which would only dilute the differences measured."""
    import requests

    session = requests.Session()
    session.trust_env = False
    return session


#: Each client library's benchmark: name -> function(size, folder) -> {way: seconds}.
CLIENTS: dict[str, Callable[[int, Path], dict[str, float]]] = {"requests": bench_requests}


def run(sizes: tuple[int, ...], repeats: int) -> list[tuple[str, int, dict[str, float]]]:
    rows = []
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        for client, bench in CLIENTS.items():
            bench(10, folder)  # warm-up: imports, first patches
            for size in sizes:
                rounds = [bench(size, folder) for _ in range(repeats)]
                best = {way: min(r[way] for r in rounds) for way in rounds[0]}
                rows.append((client, size, best))
    return rows


def markdown(rows: list[tuple[str, int, dict[str, float]]]) -> str:
    lines = [
        "| client | interactions | agentctx | mock floor | vcrpy | agentctx / floor "
        "| agentctx / vcrpy |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for client, size, times in rows:
        ours = times["agentctx"]
        floor = next(value for way, value in times.items() if way.startswith("mock floor"))
        vcr = times["vcrpy"]
        lines.append(
            f"| {client} | {size:,} | {ours * 1e6:.0f} µs | {floor * 1e6:.0f} µs "
            f"| {vcr * 1e6:.0f} µs | {ours / floor:.2f}x | {ours / vcr:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds per size (best kept)")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    repeats = 1 if args.quick else args.repeats
    print(f"python {sys.version.split()[0]}; per-request time, best of {repeats}", flush=True)
    print(markdown(run(sizes, repeats)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
