"""A replayed agent test that builds its own client: pytest-agentctx against no plugin at all.

    .venv/bin/python benchmarks/bench_replay_client.py            # 7 rounds of 20 tests each
    .venv/bin/python benchmarks/bench_replay_client.py --quick    # 3 rounds of 10
    .venv/bin/python benchmarks/bench_replay_client.py --setup-cassetter  # cassetter too

The test: build ``openai.OpenAI()`` (as a user's test does, so it builds its own ``httpx2``
client and, with it, an SSL context) and make five chat completion calls. Measured per test,
from the start of its setup to the end of its teardown (``pytest_runtest_protocol``), in
separate pytest processes, the variants one after the other in each round (rounds
interleaved, order rotated), so a busy machine slows them alike:

- **agentctx replay**: pytest-agentctx replaying a cassette (mode ``none``); replayed
  tests build their clients' SSL contexts lazily, so this one builds none;
- **no plugin, mock transport**: pytest-agentctx disabled (``-p no:agentctx``); the five
  calls answered at once by an ``httpx2.MockTransport`` that answers from a dict, put in
  place of ``httpx2.HTTPTransport.handle_request``: the client builds its SSL context as a
  user's does, the calls cost next to nothing;
- **pytest-recording (vcrpy) replay**: the same test, replayed from a vcrpy cassette
  (matched on the body too). vcrpy 9.4 patches ``httpx2`` as well as ``httpx``; the script
  checks it with a probe recording, and with a vcrpy that records no ``httpx2`` call it
  measures the same five calls made with an ``httpx.Client()`` the test builds;
- **cassetter replay**: the same openai test, replayed by cassetter's own pytest plugin
  (``@pytest.mark.vcr``, ``--record-mode=none``, ``match_on=["method", "uri",
  "json_body"]``, one cassette per test under ``cassettes/test_bench/``). cassetter
  registers a ``vcr`` marker and ``--record-mode`` as pytest-recording does, so it runs in
  a virtualenv of its own: the interpreter ``--cassetter-python`` names (default
  ``/tmp/bench-venv/bin/python``). ``--setup-cassetter`` creates that virtualenv first and
  installs cassetter, openai, httpx2 and pytest in it (``CASSETTER_SETUP``); by hand::

      python3.11 -m venv /tmp/bench-venv
      /tmp/bench-venv/bin/pip install cassetter==0.16.1 openai==3.54.0 httpx2==2.16.2 pytest

  Its cassettes are recorded against the loopback server, then their URLs are rewritten to
  the replay URL (``uri`` is matched, port included). Without that interpreter the variant
  is reported as not installed and the others run.

The first test of each process (which imports the SDKs) is left out. Nothing leaves
127.0.0.1: cassettes are recorded against a loopback HTTP server this script starts, and
replayed with the base URL ``http://127.0.0.1:9`` (no server).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CASSETTER_PYTHON = "/tmp/bench-venv/bin/python"
#: What ``--setup-cassetter`` installs in cassetter's virtualenv (its pytest plugin runs
#: the inner project there, so pytest too).
CASSETTER_SETUP = ("cassetter==0.16.1", "openai==3.54.0", "httpx2==2.16.2", "pytest")
REPLAY_URL = "http://127.0.0.1:9"
CALLS = 5


def completion(index: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-bench{index}",
        "object": "chat.completion",
        "created": 1735689600,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"Answer {index}."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
    }


# -- the inner projects ------------------------------------------------------------------

TIMING_CONFTEST = """
import json
import os
import time

import pytest

_TIMES = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    started = time.perf_counter()
    yield
    _TIMES.append(time.perf_counter() - started)


def pytest_sessionfinish(session):
    out = os.environ.get("BENCH_OUT")
    if out:
        with open(out, "w") as file:
            json.dump(_TIMES, file)
"""

MOCK_CONFTEST = """
import json

import httpx2
import pytest


def _answer(request):
    turn = json.loads(request.content)["messages"][0]["content"].split()[-1]
    return httpx2.Response(200, json=ANSWERS[turn])


ANSWERS = {str(i): __COMPLETIONS__[i] for i in range(__CALLS__)}
_MOCK = httpx2.MockTransport(_answer)


@pytest.fixture(autouse=True)
def instant_mock(monkeypatch):
    monkeypatch.setattr(
        httpx2.HTTPTransport, "handle_request", lambda self, request: _MOCK.handle_request(request)
    )
"""

OPENAI_TEST = """
import os

import openai
import pytest


@pytest.mark.parametrize("index", range(__TESTS__))
@__MARK__
def test_agent(index):
    client = openai.OpenAI(
        api_key="sk-bench-not-a-real-key", base_url=os.environ["BENCH_URL"] + "/v1", max_retries=0
    )
    for turn in range(__CALLS__):
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"Turn {turn}"}]
        )
        assert reply.choices[0].message.content == f"Answer {turn}."
"""

#: Matched on the body, as pytest-agentctx matches; not on the port (recorded against the
#: loopback server's, replayed with port 9).
VCR_CONFTEST = """
import pytest


@pytest.fixture(scope="module")
def vcr_config():
    return {"match_on": ["method", "scheme", "host", "path", "query", "body"]}
"""

#: cassetter's plugin reads the same fixture; the URI (port included) is matched, so its
#: recorded cassettes are rewritten to the replay URL (``_cassetter_cassettes``).
CASSETTER_CONFTEST = """
import pytest


@pytest.fixture(scope="module")
def vcr_config():
    return {"match_on": ["method", "uri", "json_body"]}
"""

HTTPX_TEST = """
import json
import os

import httpx
import pytest


@pytest.mark.parametrize("index", range(__TESTS__))
@__MARK__
def test_agent(index):
    client = httpx.Client()
    for turn in range(__CALLS__):
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"Turn {turn}"}]}
        reply = client.post(os.environ["BENCH_URL"] + "/v1/chat/completions", json=body)
        assert reply.json()["choices"][0]["message"]["content"] == f"Answer {turn}."
"""


def _fill(text: str, tests: int, mark: str = "pytest.mark.agent") -> str:
    completions = [completion(i) for i in range(CALLS)]
    return (
        text.replace("__TESTS__", str(tests))
        .replace("__CALLS__", str(CALLS))
        .replace("__MARK__", mark)
        .replace("__COMPLETIONS__", repr(completions))
    )


#: The ``agent`` marker is registered for the runs without the plugin too.
INI = "[pytest]\nmarkers =\n    agent: an agent test\n"


def _project(folder: Path, test: str, conftest: str = "") -> Path:
    folder.mkdir(parents=True)
    (folder / "pytest.ini").write_text(INI)
    (folder / "conftest.py").write_text(TIMING_CONFTEST + conftest)
    (folder / "test_bench.py").write_text(test)
    return folder


class _Provider(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        turn = int(request["messages"][0]["content"].split()[-1])
        body = json.dumps(completion(turn)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def _provider() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def _pytest(
    python: str, folder: Path, args: Sequence[str], url: str, out: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCH_URL": url, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    if out is not None:
        env["BENCH_OUT"] = str(out)
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def _check(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        raise SystemExit(f"{what} failed (exit {done.returncode}):\n{done.stdout[-3000:]}")


# -- the variants ----------------------------------------------------------------------------


class Variant:
    def __init__(self, name: str, folder: Path, args: Sequence[str], python: str = sys.executable):
        self.name = name
        self.folder = folder
        self.args = list(args)
        self.python = python
        self.times: list[float] = []

    def run(self) -> None:
        out = self.folder / "times.json"
        done = _pytest(self.python, self.folder, self.args, REPLAY_URL, out)
        _check(done, self.name)
        self.times.extend(json.loads(out.read_text())[1:])  # the first test imports the SDKs


def _vcr_records_openai(base: Path, url: str) -> int:
    """How many interactions vcrpy records of the openai SDK's calls (httpx2)."""
    folder = _project(base / "vcr-openai", _fill(OPENAI_TEST, 1, "pytest.mark.vcr"))
    _pytest(sys.executable, folder, ["-p", "no:agentctx", "--record-mode=once"], url)
    cassettes = list(folder.rglob("*.yaml"))
    return sum(Path(c).read_text().count("- request:") for c in cassettes)


def _cassetter_versions(python: str) -> str:
    """The versions in cassetter's virtualenv, or raise RuntimeError saying why not."""
    names = ("cassetter", "pytest", "openai", "httpx2")
    code = (
        "import importlib.metadata as m, platform; "
        f"print(', '.join(n + ' ' + m.version(n) for n in {names!r}), "
        "'on Python', platform.python_version())"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "no output")
    return done.stdout.strip()


def _cassetter_cassettes(folder: Path, url: str, tests: int) -> None:
    """Point the cassettes cassetter recorded against ``url`` at ``REPLAY_URL``; check them."""
    cassettes = sorted((folder / "cassettes" / "test_bench").glob("*.yaml"))
    recorded = f"uri: {REPLAY_URL}/v1/chat/completions"
    for cassette in cassettes:
        text = cassette.read_text().replace(url, REPLAY_URL)
        text = text.replace(url.removeprefix("http://"), REPLAY_URL.removeprefix("http://"))
        cassette.write_text(text)
        if text.count(recorded) != CALLS:
            raise SystemExit(
                f"cassetter recorded {text.count(recorded)} calls to {REPLAY_URL} in "
                f"{cassette.name}, expected {CALLS}; check cassetter's venv with "
                f"`<its python> -m pytest --version` and rerun with --setup-cassetter"
            )
    if len(cassettes) != tests:
        raise SystemExit(
            f"cassetter recorded {len(cassettes)} cassettes in {folder / 'cassettes'}, expected "
            f"{tests} (one per test); rerun with --setup-cassetter to reinstall it"
        )


def _cassetter_variant(base: Path, tests: int, python: str, url: str) -> tuple[Variant | None, str]:
    """cassetter's variant, recorded against ``url`` in its own virtualenv, and a note."""
    if not Path(python).exists():
        return None, (
            f"cassetter: not installed ({python} missing), not measured; "
            "add --setup-cassetter to create it"
        )
    try:
        versions = _cassetter_versions(python)
    except RuntimeError as exc:
        return None, (
            f"cassetter: not usable at {python} ({exc}), not measured; "
            "add --setup-cassetter to reinstall it"
        )
    folder = _project(
        base / "cassetter", _fill(OPENAI_TEST, tests, "pytest.mark.vcr"), CASSETTER_CONFTEST
    )
    _check(_pytest(python, folder, ["--record-mode=once"], url), "cassetter recording")
    _cassetter_cassettes(folder, url, tests)
    variant = Variant("cassetter replay (openai.OpenAI)", folder, ["--record-mode=none"], python)
    return variant, f"cassetter in its own virtualenv ({python}): {versions}"


def build(base: Path, tests: int, cassetter_python: str) -> tuple[list[Variant], list[str]]:
    notes: list[str] = []
    agentctx = _project(base / "agentctx", _fill(OPENAI_TEST, tests))
    mock = _project(base / "mock", _fill(OPENAI_TEST, tests), _fill(MOCK_CONFTEST, tests))
    with _provider() as url:
        _check(_pytest(sys.executable, agentctx, ["--agent-record"], url), "agentctx recording")
        recorded = _vcr_records_openai(base, url)
        # vcrpy replays the same openai test when it records httpx2 (vcrpy 9.4 patches
        # it), else the same calls through an httpx.Client() the test builds.
        vcr_test = OPENAI_TEST if recorded == CALLS else HTTPX_TEST
        vcr = _project(base / "vcr", _fill(vcr_test, tests, "pytest.mark.vcr"), VCR_CONFTEST)
        _check(
            _pytest(sys.executable, vcr, ["-p", "no:agentctx", "--record-mode=once"], url),
            "vcrpy recording",
        )
        cassetter, cassetter_note = _cassetter_variant(base, tests, cassetter_python, url)
    vcr_client = "openai.OpenAI" if recorded == CALLS else "httpx.Client"
    notes.append(
        f"vcrpy recorded {recorded} of {CALLS} calls of the openai SDK (httpx2) in a probe run; "
        f"its variant builds {vcr_client}()"
    )
    variants = [
        Variant("agentctx replay (openai.OpenAI)", agentctx, []),
        Variant("no plugin, MockTransport (openai.OpenAI)", mock, ["-p", "no:agentctx"]),
        Variant(
            f"pytest-recording replay ({vcr_client})",
            vcr,
            ["-p", "no:agentctx", "--record-mode=none"],
        ),
    ]
    if cassetter is not None:
        variants.append(cassetter)
    notes.append(cassetter_note)
    return variants, notes


def setup_cassetter(python: str) -> None:
    """Create the virtualenv of ``python`` and install ``CASSETTER_SETUP`` in it."""
    venv = Path(python).parent.parent
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=600)
    pip = [python, "-m", "pip", "install", "--quiet", *CASSETTER_SETUP]
    subprocess.run(pip, check=True, timeout=900)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 10 tests")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tests", type=int, default=20, help="tests per process")
    parser.add_argument(
        "--cassetter-python",
        default=DEFAULT_CASSETTER_PYTHON,
        help="interpreter of a virtualenv with cassetter, openai, httpx2 and pytest "
        f"(default {DEFAULT_CASSETTER_PYTHON})",
    )
    parser.add_argument(
        "--setup-cassetter",
        action="store_true",
        help="create that virtualenv first: pip install " + " ".join(CASSETTER_SETUP),
    )
    args = parser.parse_args(argv)
    if args.setup_cassetter:
        setup_cassetter(args.cassetter_python)
    rounds, tests = (3, 10) if args.quick else (args.rounds, args.tests)
    with tempfile.TemporaryDirectory(prefix="bench-replay-client-") as temp:
        variants, notes = build(Path(temp), tests, args.cassetter_python)
        started = time.perf_counter()
        for round_index in range(rounds):
            shift = round_index % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                variant.run()
        elapsed = time.perf_counter() - started
    baseline = statistics.median(variants[1].times)
    print(f"\n{rounds} rounds x {tests} tests per variant ({CALLS} calls each), {elapsed:.0f} s\n")
    print("| variant | median per test | p90 | speed-up over no plugin + mock |")
    print("|---|---|---|---|")
    for variant in variants:
        times = sorted(variant.times)
        median = statistics.median(times)
        p90 = times[int(len(times) * 0.9) - 1]
        print(
            f"| {variant.name} | {median * 1000:.2f} ms | {p90 * 1000:.2f} ms "
            f"| {baseline / median:.2f}x |"
        )
    print()
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
