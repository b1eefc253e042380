"""What measuring every agent test costs: runs rebuilt from a replayed test's traffic.

Every agent test's runs are rebuilt from its traffic (cassette, fake model) when something
reads them: a budget, ``--agent-report``, ``--agent-gate`` or ``--agent-baseline``. A plain
replay must not pay for it. This script replays a suite of agent tests written on the raw
``openai`` SDK (no ``agent_context``, no runtime): each test builds its own client and runs
a 5-call tool loop (four tool calls, then the answer; requests of 2 KB and more, with
tools), replayed from its own cassette. The cassettes are recorded once, through the real
SDK, against a ``LoopbackProvider`` on 127.0.0.1.

Sessions, interleaved round by round (A B C [D] A B C [D] ...):

* ``plain``: ``pytest`` (nothing reads the runs);
* ``uncaptured``: the same, with the plugin's capture switched off (its ``capture_runs`` made a
  no-op by the conftest): what registering the capture costs a plain replay;
* ``budget``: ``-o agent_budget_max_iterations=10`` (every test's runs are rebuilt and
  checked);
* ``report``: ``--agent-report=PATH`` (rebuilt, and each run's context goes into the report);
* ``before`` (with ``--before REV``): a plain session of the package at git revision REV
  (a worktree put first on ``PYTHONPATH``), to show the plain replay did not get slower.

Also, in this process: the CPU time of rebuilding one test's runs from its recorded
cassette and measuring them (the capture's own cost, free of the noise of whole sessions).

Figures: the time from the first test's start to the last test's end (a ``conftest.py``
takes ``perf_counter`` and ``process_time`` in ``pytest_runtest_logstart`` and
``pytest_runtest_logfinish``), divided by the number of tests: what one replayed test
costs, start-up and report writing left out. The conftest also counts how many times the
capture builder ran. Medians over the rounds; ratios per round, then their median.

    .venv/bin/python benchmarks/bench_measure.py                  # 200 tests, 7 rounds
    .venv/bin/python benchmarks/bench_measure.py --before HEAD~3  # and the plain replay then
    .venv/bin/python benchmarks/bench_measure.py --quick          # 40 tests, 2 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON = sys.executable

TOOL_CALLS = 4  # then the answer: five model calls per test
SYSTEM = (
    "You are the operations assistant of a parcel carrier. You answer questions about "
    "parcels, depots and delivery windows. Always look facts up with the tools before you "
    "answer; never guess a tracking status, a depot's opening hours or a delivery window. "
) * 6

AGENT = f'''\
"""A raw-openai tool loop (no pytest-agentctx API): five model calls per question."""

import json

import openai

SYSTEM = {SYSTEM!r}
TOOLS = [
    {{
        "type": "function",
        "function": {{
            "name": name,
            "description": f"{{name}}: look the parcel, depot or window up in the carrier's "
            "systems and return what they hold, as JSON.",
            "parameters": {{
                "type": "object",
                "properties": {{
                    "key": {{"type": "string", "description": "The parcel or depot id."}},
                    "detail": {{"type": "string", "enum": ["short", "full"]}},
                }},
                "required": ["key"],
            }},
        }},
    }}
    for name in ("track_parcel", "depot_hours", "delivery_window", "contact_driver")
]


def ask(base_url, question):
    with openai.OpenAI(api_key="sk-bench", base_url=base_url, max_retries=0) as client:
        return _loop(client, question)


def _loop(client, question):
    messages = [{{"role": "system", "content": SYSTEM}}, {{"role": "user", "content": question}}]
    while True:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS
        )
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            key = json.loads(call.function.arguments)["key"]
            messages.append(
                {{"role": "tool", "tool_call_id": call.id, "content": json.dumps({{"key": key}})}}
            )
'''

CONFTEST = f"""\
import json
import os
import time

import pytest

from pytest_agentctx import LoopbackProvider

_SPAN = {{}}
_BUILDS = [0]


def pytest_configure(config):
    if os.environ.get("BENCH_NO_CAPTURE"):  # the plugin as if it captured nothing
        from pytest_agentctx.plugin import capture

        capture.capture_runs = lambda item, source: None
    try:
        from pytest_agentctx.traffic.capture import runs
    except ImportError:
        return
    original = runs.build

    def counted(*args, **kwargs):
        _BUILDS[0] += 1
        return original(*args, **kwargs)

    runs.build = counted


def pytest_runtest_logstart(nodeid, location):
    _SPAN.setdefault("start", (time.perf_counter(), time.process_time()))


def pytest_runtest_logfinish(nodeid, location):
    _SPAN["end"] = (time.perf_counter(), time.process_time())
    _SPAN["tests"] = _SPAN.get("tests", 0) + 1


def pytest_unconfigure(config):
    out = os.environ.get("BENCH_SPAN")
    if out and "end" in _SPAN:
        (start_wall, start_cpu), (end_wall, end_cpu) = _SPAN["start"], _SPAN["end"]
        data = {{
            "wall": end_wall - start_wall,
            "cpu": end_cpu - start_cpu,
            "tests": _SPAN["tests"],
            "builds": _BUILDS[0],
        }}
        with open(out, "w") as f:
            json.dump(data, f)


@pytest.fixture
def model_server():
    with LoopbackProvider() as provider:
        for number in range({TOOL_CALLS}):
            provider.reply_tool_call(
                ("track_parcel", "depot_hours", "delivery_window", "contact_driver")[number],
                key=f"P-{{number}}",
            )
        provider.reply("Parcel P-0 arrives tomorrow between 9 and 12; the depot opens at 8.")
        yield provider
"""

TEST = """\
import pytest

from parcel_agent import ask


@pytest.mark.agent
def test_ask_{index}(model_server):
    assert ask(model_server.openai_base_url, "Where is parcel P-0?").startswith("Parcel P-0")
"""

INI = """\
[pytest]
asyncio_default_fixture_loop_scope = function
filterwarnings = error
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def build(root: Path, tests: int) -> None:
    """The project: the agent, the conftest, one test module of ``tests`` tests, and one
    recorded cassette copied to every test's path."""
    (root / "pytest.ini").write_text(INI)
    (root / "parcel_agent.py").write_text(AGENT)
    (root / "conftest.py").write_text(CONFTEST)
    (root / "test_parcel.py").write_text(TEST.format(index=0))
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--agent-record"],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(f"recording failed:\n{done.stdout}\n{done.stderr}")
    recorded = root / "cassettes" / "test_parcel" / "test_ask_0.json"
    size = len(json.loads(recorded.read_text())["interactions"][-1]["request"]["body"]["json"])
    assert size, "the recording holds no request"
    (root / "test_parcel.py").write_text("".join(TEST.format(index=i) for i in range(tests)))
    for index in range(1, tests):
        shutil.copy(recorded, recorded.with_name(f"test_ask_{index}.json"))


def run_session(
    root: Path, args: Sequence[str], pythonpath: str | None, **extra: str
) -> dict[str, Any]:
    out = root / "span.json"
    out.unlink(missing_ok=True)
    env = _env(BENCH_SPAN=str(out), **extra)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed:\n{done.stdout[-3000:]}")
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def build_cost(root: Path, repeats: int = 300) -> dict[str, float]:
    """CPU milliseconds to rebuild one test's runs from its recorded cassette and measure
    them (what a budget or a report reads), in this process: the best of 5 batches."""
    from pytest_agentctx.reports.figures import PriceTable, run_stats
    from pytest_agentctx.traffic.capture import CapturedRuns
    from pytest_agentctx.traffic.cassettes.store import load_cassette

    interactions = load_cassette(root / "cassettes" / "test_parcel" / "test_ask_0.json")
    prices = PriceTable()
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeats):
            for record in CapturedRuns(list(interactions)).records():
                run_stats(record, prices=prices)
        best = min(best, (time.process_time() - start) / repeats * 1000)
    return {"build_ms": best, "interactions": len(interactions)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="40 tests, 2 rounds")
    parser.add_argument("--before", metavar="REV", help="also a plain session at revision REV")
    parser.add_argument("--json", metavar="PATH", help="write the raw figures here")
    options = parser.parse_args(argv)
    tests, rounds = (40, 2) if options.quick else (options.tests, options.rounds)

    with tempfile.TemporaryDirectory(prefix="bench-measure-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        build(root, tests)
        cost = build_cost(root)
        sessions: dict[str, tuple[list[str], str | None]] = {
            "plain": ([], None),
            "uncaptured": ([], None),
            "budget": (["-o", "agent_budget_max_iterations=10"], None),
            "report": ([f"--agent-report={Path(tmp) / 'report.json'}"], None),
        }
        if options.before:
            tree = Path(tmp) / "before"
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(tree), options.before],
                cwd=ROOT,
                check=True,
                capture_output=True,
                timeout=60,
            )
            sessions["before"] = ([], str(tree))
        try:
            samples: dict[str, list[dict[str, Any]]] = {name: [] for name in sessions}
            for _ in range(rounds):
                for name, (args, path) in sessions.items():
                    extra = {"BENCH_NO_CAPTURE": "1"} if name == "uncaptured" else {}
                    samples[name].append(run_session(root, args, path, **extra))
        finally:
            if options.before:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(Path(tmp) / "before")],
                    cwd=ROOT,
                    capture_output=True,
                    timeout=60,
                )
    results = {
        "tests": tests,
        "rounds": rounds,
        "samples": samples,
        "before": options.before,
        **cost,
    }
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2))
    print(render(results, command=" ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])])))
    return 0


def render(results: Mapping[str, Any], command: str) -> str:
    tests = results["tests"]
    samples = results["samples"]

    def per_test(name: str, key: str) -> list[float]:
        return [s[key] / s["tests"] * 1000 for s in samples[name]]

    lines = [
        f"### One replayed 5-call raw-SDK test ({tests} tests a session, "
        f"{results['rounds']} rounds, medians)",
        "",
        "| session | wall ms/test | CPU ms/test | captured contexts built | wall vs plain "
        "(median of rounds) | CPU vs plain |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    plain_wall, plain_cpu = per_test("plain", "wall"), per_test("plain", "cpu")
    for name in samples:
        wall, cpu = per_test(name, "wall"), per_test(name, "cpu")
        builds = statistics.median(s["builds"] for s in samples[name])
        wall_ratio = statistics.median(w / p for w, p in zip(wall, plain_wall, strict=True))
        cpu_ratio = statistics.median(c / p for c, p in zip(cpu, plain_cpu, strict=True))
        label = f"before ({results['before']})" if name == "before" else name
        lines.append(
            f"| {label} | {statistics.median(wall):.2f} | {statistics.median(cpu):.2f} | "
            f"{builds:g} | {wall_ratio:.3f}x | {cpu_ratio:.3f}x |"
        )
    plain_cpu_ms = statistics.median(plain_cpu)
    lines += [
        "",
        f"Rebuilding one test's runs from its cassette ({results['interactions']} "
        f"interactions) and measuring them: {results['build_ms']:.3f} ms of CPU (best of 5 "
        f"batches), {results['build_ms'] / plain_cpu_ms * 100:.1f}% of a plain replayed "
        "test's CPU.",
        "",
        f"Command: `.venv/bin/python benchmarks/{command}`; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; Python {platform.python_version()}; "
        f"load average {os.getloadavg()[0]:.1f} at the end.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
