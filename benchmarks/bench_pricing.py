"""What pricing and the prompt-cache prefix check add to replayed tests with a budget.

A generated project of N tests (100 unless ``--tests``), each an agent of three turns on
the ``anthropic`` SDK whose calls read most of their input from the prompt cache, marked
``@pytest.mark.agent_budget(max_cost_usd=..., min_cache_read_share=...)``, is recorded
once against a loopback Anthropic server of this script's (untimed), then replayed from
its cassettes in a child pytest process with ``--agent-report``: the timed session. A
plugin of the benchmark times, in that process, every call of the code that prices (the
price table, each call's entry in the report, genai-prices' calculation) and of the prefix
check, wherever it runs, and the tests' own time (setup, call and teardown of each, as
pytest reports them).

Reported: the pricing and the prefix check as a share of the tests' time (target: under
5%), and each time; and the same share without the first call of each (which imports
their modules and loads genai-prices' data: once per session, whatever its size). The
share is a ratio inside one process, so the machine's speed cancels out; the absolute
times are the machine's. By default the replay has no pytest cache folder (a fresh CI job:
every price computed); with ``--kept`` it has the one the recording session wrote, where
that session kept the prices it computed, as a developer's machine or a CI job that keeps
``.pytest_cache`` has.

    .venv/bin/python benchmarks/bench_pricing.py               # 100 tests
    .venv/bin/python benchmarks/bench_pricing.py --kept        # prices kept from the recording
    .venv/bin/python benchmarks/bench_pricing.py --tests 20    # quick
    .venv/bin/python benchmarks/bench_pricing.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

#: The plugin the child session loads: the time of pricing, of the prefix check and of the
#: tests, written to ``$BENCH_OUT`` at exit.
TIMER_PLUGIN = """
import atexit
import functools
import importlib
import json
import os
import time

TIMES = {
    "pricing": 0.0, "prefix": 0.0, "tests": 0.0, "priced": 0, "checked": 0,
    "pricing_first": 0.0, "prefix_first": 0.0,
}
DEPTH = [0]


def timed(kind, counter, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        DEPTH[0] += 1
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            DEPTH[0] -= 1
            if DEPTH[0] == 0:  # nested calls are counted once
                spent = time.perf_counter() - began
                if not TIMES[counter]:  # the first: imports and price data loaded
                    TIMES[kind + "_first"] = spent
                TIMES[kind] += spent
                TIMES[counter] += 1
    return wrapper


def patch(kind, counter, module, owner, name):
    try:
        found = importlib.import_module(module)
    except ImportError:
        return
    target = getattr(found, owner) if owner else found
    if hasattr(target, name):
        setattr(target, name, timed(kind, counter, getattr(target, name)))


for module, owner, name in (
    ("pytest_agentctx.reports.figures", "PriceTable", "price"),
    ("pytest_agentctx.reports.figures", None, "call_entries"),
):
    patch("pricing", "priced", module, owner, name)
for module, owner, name in PREFIX_FUNCTIONS:
    patch("prefix", "checked", module, owner, name)


def pytest_runtest_logreport(report):
    TIMES["tests"] += report.duration


@atexit.register
def _write():
    with open(os.environ["BENCH_OUT"], "w") as out:
        json.dump(TIMES, out)
"""

#: Where the prefix check lives: (module, class or None, function), each timed if found.
PREFIX_FUNCTIONS: list[tuple[str, str | None, str]] = [
    ("pytest_agentctx.plugin.caches", None, "_cache_failure")
]

TEST_MODULE = """
import os

import anthropic
import pytest

URL = os.environ["BENCH_URL"]
SYSTEM = "You answer questions about orders. " * 40


@pytest.fixture
def client():
    return anthropic.Anthropic(base_url=URL, api_key="sk-ant-bench", max_retries=0)


{tests}
"""

ONE_TEST = """
@pytest.mark.agent
@pytest.mark.agent_budget(max_cost_usd=1.0, min_cache_read_share=0.5)
def test_{index}(client):
    messages = []
    for turn in range(3):
        messages.append({{"role": "user", "content": f"question {{turn}} of test {index}"}})
        reply = client.messages.create(
            model="claude-sonnet-4-6", max_tokens=256, system=SYSTEM, messages=messages
        )
        messages.append({{"role": "assistant", "content": reply.content[0].text}})
    assert len(messages) == 6
"""


class _Anthropic(BaseHTTPRequestHandler):
    """Answers every Messages request with a short text and cache-warm usage."""

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        body = json.dumps(
            {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": "The order ships tomorrow."}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 40,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 1800,
                    "output_tokens": 12,
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


def make_project(root: Path, tests: int) -> None:
    """``tests`` tests in files of 50, the timer plugin and an ini."""
    for start in range(0, tests, 50):
        body = "".join(ONE_TEST.format(index=i) for i in range(start, min(start + 50, tests)))
        (root / f"test_priced_{start // 50:03d}.py").write_text(TEST_MODULE.format(tests=body))
    plugin = TIMER_PLUGIN.replace("PREFIX_FUNCTIONS", repr(PREFIX_FUNCTIONS))
    (root / "bench_timer.py").write_text(plugin)
    (root / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")


def run(tests: int, kept: bool = False) -> dict[str, float]:
    """Record the project against the loopback server, then time its replay: with pytest's
    cache folder (``kept``: the prices the recording session computed are kept there, as on
    a developer's machine or a CI job that keeps ``.pytest_cache``), or without one (a
    fresh CI job: every price computed, genai-prices' data loaded)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Anthropic)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            make_project(root, tests)
            out = root / "times.json"
            inherited = os.environ.get("PYTHONPATH")
            path = os.pathsep.join([str(root), *([inherited] if inherited else [])])
            env = {
                **os.environ,
                "BENCH_OUT": str(out),
                "PYTHONPATH": path,
                "BENCH_URL": f"http://127.0.0.1:{server.server_port}",
                # the key of the kept prices' MAC, made in the project, not in the home
                "XDG_CONFIG_HOME": str(root / "config"),
            }
            env.pop("PYTEST_ADDOPTS", None)
            command = [
                sys.executable, "-m", "pytest", "-q",
                "-p", "no:randomly", "-p", "no:deepeval", "-p", "no:rerunfailures",
            ]  # fmt: skip
            if not kept:
                command[3:3] = ["-p", "no:cacheprovider"]
            recorded = subprocess.run(
                [*command, "--agent-record"],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            if recorded.returncode != 0:
                raise SystemExit(f"the recording session failed:\n{recorded.stdout[-3000:]}")
            server.shutdown()  # the replay is offline
            done = subprocess.run(
                [*command, "-p", "bench_timer", "--agent-report=report.json"],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            if done.returncode != 0 or not out.exists():
                raise SystemExit(f"the replayed session failed:\n{done.stdout[-3000:]}")
            times: dict[str, float] = json.loads(out.read_text())
            report = json.loads((root / "report.json").read_text())
            times["tests_run"] = len(report["tests"])
            times["cost_usd"] = report["summary"]["stats"]["cost_usd"]
            return times
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--kept",
        action="store_true",
        help="replay with pytest's cache folder, where the recording kept the prices",
    )
    options = parser.parse_args()
    times = run(options.tests, kept=options.kept)
    added = times["pricing"] + times["prefix"]
    first = times["pricing_first"] + times["prefix_first"]
    times["share_of_tests"] = added / times["tests"] if times["tests"] else 0.0
    times["share_after_first"] = (added - first) / times["tests"] if times["tests"] else 0.0
    if options.json:
        print(json.dumps(times, indent=2))
        return
    print(
        f"{times['tests_run']:.0f} replayed tests with a budget, 3 calls each "
        f"(cost {times['cost_usd']} USD in all), "
        f"{'prices kept in' if options.kept else 'no'} pytest cache folder\n"
        f"pricing:      {times['pricing'] * 1000:8.1f} ms in {times['priced']:.0f} calls "
        f"(the first {times['pricing_first'] * 1000:.1f} ms)\n"
        f"prefix check: {times['prefix'] * 1000:8.1f} ms in {times['checked']:.0f} calls "
        f"(the first {times['prefix_first'] * 1000:.1f} ms)\n"
        f"tests:        {times['tests'] * 1000:8.1f} ms\n"
        f"(pricing + prefix check) / tests: {times['share_of_tests']:.1%} (target < 5%); "
        f"without the first call of each: {times['share_after_first']:.1%}"
    )


if __name__ == "__main__":
    main()
