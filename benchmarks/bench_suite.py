"""Suites and reports: the plugin's own cost, side by side with pytest-recording.

1. **Start-up**: ``pytest --co -q`` on a tiny project (20 empty tests), with no plugin
   (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``), with pytest-agentctx only
   (``-p pytest_agentctx.plugin``) and with pytest-recording only
   (``-p pytest_recording.plugin``); also in the virtualenv as installed (every plugin
   loads), with and without the agentctx plugin (``-p no:agentctx``). Target: pytest-agentctx
   adds at most 100 ms. The modules the plugin imports are then listed by their cumulative
   import time (``python -X importtime``).
2. **A replayed suite of 1,000 tests**, each a 5-iteration agent run (four tool calls, then
   the answer), serially and with ``-n 2``. pytest-agentctx: the package's runtime with one
   tool (``agent_runtime``), replaying a cassette per test. pytest-recording: the same loop
   written with the plain ``openai`` SDK under ``@pytest.mark.vcr``, replaying a vcrpy
   cassette per test. The cassettes are recorded once, through the real SDK, against a
   ``LoopbackProvider`` on 127.0.0.1, then copied to every test's path. Both suites run
   with the same plugins (autoload off; pytest-asyncio, pytest-xdist and the tool under
   test). Target: ``-n 2`` at least 1.7x faster than serial for pytest-agentctx.
3. **The HTML report** of a 1,000-test report of 5-iteration runs (``render_html``).

Every figure is the median of several interleaved rounds (wall time, and the CPU time of
the pytest processes: ``RUSAGE_CHILDREN``); the suites' speed-up is also given per round.
pytest keeps its bytecode cache of the rewritten test modules, as from a developer's second
run; ``--no-bytecode`` measures a fresh checkout's first run instead. Nothing leaves
127.0.0.1.

    .venv/bin/python benchmarks/bench_suite.py            # full run
    .venv/bin/python benchmarks/bench_suite.py --quick    # smoke run: 100 tests, 1 round
    .venv/bin/python benchmarks/bench_suite.py --json raw.json
    .venv/bin/python benchmarks/bench_suite.py --only suites --no-bytecode
    .venv/bin/python benchmarks/bench_suite.py --only suites --phases  # where the time goes
    .venv/bin/python benchmarks/bench_suite.py --only suites --reference  # xdist's ceiling
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON = sys.executable

TINY_TESTS = 20
PLUGIN = "pytest_agentctx.plugin"
MODULES = 10  # the suite's tests are spread over this many modules
TOOL_CALLS = 4  # per run: four iterations with a tool call, then the answer (5 iterations)
QUESTION = "Look up the four keys and summarise them."
SYSTEM = "You look keys up with the lookup tool, one at a time, then answer."
ANSWER = "The four keys are k0, k1, k2 and k3."

# -- the two suites --------------------------------------------------------------------------

_AGENT_MODULE = f'''\
"""The agent of the benchmark suite: one tool, at most five iterations."""

from pytest_agentctx import Agent, tool


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {{key}}"


AGENT = Agent(
    name="bench",
    model="openai:gpt-4o-mini",
    system_prompt={SYSTEM!r},
    tools=[lookup],
    max_iterations={TOOL_CALLS + 1},
)
'''

_OURS_TEST = f"""
async def test_run_{{index}}(agent_runtime):
    result = await agent_runtime.run(AGENT, {QUESTION!r})
    assert len(result.context.iterations) == {TOOL_CALLS + 1}
    assert result.output == {ANSWER!r}
"""

_VCR_HEAD = f'''\
"""The same agent loop on the plain openai SDK, replayed by pytest-recording (vcrpy)."""

import json
import os

import httpx2
import openai
import pytest

pytestmark = pytest.mark.vcr

TOOLS = [
    {{
        "type": "function",
        "function": {{
            "name": "lookup",
            "description": "Look a key up.",
            "parameters": {{
                "type": "object",
                "properties": {{"key": {{"type": "string"}}}},
                "required": ["key"],
                "additionalProperties": False,
            }},
        }},
    }}
]


def lookup(key: str) -> str:
    return f"value of {{key}}"


def run_agent() -> tuple[int, str | None]:
    client = openai.OpenAI(
        api_key="sk-bench",
        base_url=os.environ.get("BENCH_BASE_URL", "http://127.0.0.1:9/v1"),
        max_retries=0,
        http_client=httpx2.Client(),
    )
    messages = [
        {{"role": "system", "content": {SYSTEM!r}}},
        {{"role": "user", "content": {QUESTION!r}}},
    ]
    with client:
        for iteration in range(1, {TOOL_CALLS + 2}):
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            ).choices[0].message
            if not reply.tool_calls:
                return iteration, reply.content
            messages.append(reply.model_dump(exclude_none=True))
            for call in reply.tool_calls:
                result = lookup(**json.loads(call.function.arguments))
                messages.append({{"role": "tool", "tool_call_id": call.id, "content": result}})
    raise AssertionError("the agent did not answer in {TOOL_CALLS + 1} iterations")
'''

_VCR_TEST = f"""

def test_run_{{index}}():
    assert run_agent() == ({TOOL_CALLS + 1}, {ANSWER!r})
"""

#: ``--reference``: tests that do nothing but keep the CPU busy for a fixed time (the thread's
#: CPU time, so a test preempted by another process still does the same work). With no
#: recording plugin and no agent, a run of them shows what pytest-xdist itself gives on this
#: machine for tests that take as long as the agent tests: the ceiling of the speed-up.
_SPIN_HEAD = """\
import time


def spin(ms: float) -> None:
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass
"""

_SPIN_TEST = """

def test_run_{index}():
    spin({ms})
"""

#: ``--phases``: a conftest that writes, per process (controller, each xdist worker), the
#: wall-clock time its first test started and its last test ended.
_PHASES_CONFTEST = """\
import json, os, time

_SEEN = {}


def pytest_runtest_logstart(nodeid, location):
    _SEEN.setdefault("first", time.time())


def pytest_runtest_logfinish(nodeid, location):
    _SEEN["last"] = time.time()


def pytest_unconfigure(config):
    name = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    folder = os.environ.get("BENCH_PHASES_DIR")
    if folder is None or not _SEEN:
        return
    with open(os.path.join(folder, name + ".json"), "w") as stream:
        json.dump(_SEEN, stream)
"""

#: The plugins both suites run with (autoload off, so unrelated installed plugins stay out).
_COMMON_PLUGINS = ("-p", "pytest_asyncio.plugin", "-p", "xdist.plugin")
SUITES: dict[str, dict[str, Any]] = {
    "ours": {
        "label": "pytest-agentctx",
        "plugins": ("-p", "pytest_agentctx.plugin", *_COMMON_PLUGINS),
        "record": ("--agent-record",),
    },
    "vcr": {
        "label": "pytest-recording",
        "plugins": ("-p", "pytest_recording.plugin", *_COMMON_PLUGINS),
        "record": ("--record-mode=once",),
    },
}
#: ``--reference``: two suites of busy tests (``--spin-ms`` each), the same plugins, no tool
#: under test: one alone, one whose modules import the openai SDK as the agent suites do.
REFERENCES: dict[str, dict[str, Any]] = {
    "spin": {"label": "reference: busy tests", "plugins": _COMMON_PLUGINS, "openai": False},
    "spin-openai": {
        "label": "reference: busy tests + `import openai`",
        "plugins": _COMMON_PLUGINS,
        "openai": True,
    },
}
#: ``--spin-ms``: how long each reference test keeps the CPU busy
SPIN = {"ms": 14.0}
_INI = """\
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
addopts = -p no:cacheprovider
"""


#: pytest's bytecode cache of the rewritten test modules: kept (pytest's default, what a
#: developer's second run has) or off (``--no-bytecode``: every run rewrites and compiles the
#: test modules again, as the first run on a fresh CI checkout does, in every xdist worker).
BYTECODE = {"write": True}


def _env(**extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "OPENAI_", "ANTHROPIC_", "PYTHONDONTWRITEBYTECODE"))
    }
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **extra)
    if not BYTECODE["write"]:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _pytest(
    root: Path, args: Sequence[str], env: Mapping[str, str], timeout: float = 1800
) -> tuple[float, float, str]:
    """Run pytest in ``root``: wall seconds, CPU seconds of the process tree, last line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", *args],
        cwd=root,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if done.returncode != 0:
        raise RuntimeError(
            f"pytest {shlex.join(args)} in {root} exited {done.returncode}:\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return wall, cpu, last


def build_suite(kind: str, root: Path, tests: int) -> list[Path]:
    """Write the project; return the cassette path of every test (in test order)."""
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text(_INI)
    per_module = -(-tests // MODULES)
    paths: list[Path] = []
    if kind == "ours":
        (root / "bench_agent.py").write_text(_AGENT_MODULE)
    for module in range(MODULES):
        indices = range(module * per_module, min(tests, (module + 1) * per_module))
        if not indices:
            break
        name = f"test_suite_{module:02d}"
        if kind in REFERENCES:
            head = ("import openai\n" if REFERENCES[kind]["openai"] else "") + _SPIN_HEAD
            body = head + "".join(_SPIN_TEST.format(index=i, ms=SPIN["ms"]) for i in indices)
        elif kind == "ours":
            body = "from bench_agent import AGENT\n" + "".join(
                _OURS_TEST.format(index=i) for i in indices
            )
            paths += [root / "cassettes" / name / f"test_run_{i}.json" for i in indices]
        else:
            body = _VCR_HEAD + "".join(_VCR_TEST.format(index=i) for i in indices)
            paths += [root / "cassettes" / name / f"test_run_{i}.yaml" for i in indices]
        (root / f"{name}.py").write_text(body)
    return paths


def record_and_copy(kind: str, root: Path, paths: Sequence[Path]) -> dict[str, Any]:
    """Record the first test's cassette through the real SDK against a loopback provider,
    then copy it to every other test's path (every test sends the same requests)."""
    from pytest_agentctx import LoopbackProvider

    first = paths[0]
    nodeid = f"{first.parent.name}.py::{first.stem}"
    with LoopbackProvider() as provider:
        base_url = provider.openai_base_url
        for key in range(TOOL_CALLS):
            provider.reply_tool_call("lookup", key=f"k{key}")
        provider.reply(ANSWER, usage={"input_tokens": 120, "output_tokens": 12})
        env = _env(
            OPENAI_BASE_URL=provider.openai_base_url,
            BENCH_BASE_URL=provider.openai_base_url,
            OPENAI_API_KEY="sk-bench-record",
        )
        _pytest(root, [*SUITES[kind]["plugins"], *SUITES[kind]["record"], nodeid], env)
        provider.verify()
    if not first.is_file():
        found = sorted(str(p.relative_to(root)) for p in root.rglob("cassettes/**/*.*"))
        raise RuntimeError(f"{kind}: no cassette at {first}; found {found}")
    data = first.read_bytes()
    for path in paths[1:]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    # the replay sends its requests to the recorded URL (nothing listens there any more)
    return {"bytes": len(data), "files": len(paths), "base_url": base_url}


# -- 1. start-up ---------------------------------------------------------------------------

STARTUP = {
    "bare": ("pytest alone (autoload off)", ("--co",), True),
    "ours": (
        "+ pytest-agentctx (-p pytest_agentctx.plugin)",
        ("--co", "-p", "pytest_agentctx.plugin"),
        True,
    ),
    "vcr": (
        "+ pytest-recording (-p pytest_recording.plugin)",
        ("--co", "-p", "pytest_recording.plugin"),
        True,
    ),
    "all": ("as installed: every plugin", ("--co",), False),
    "all-no-ours": ("as installed, -p no:agentctx", ("--co", "-p", "no:agentctx"), False),
    "all-no-vcr": ("as installed, -p no:recording", ("--co", "-p", "no:recording"), False),
}


def run_startup(workdir: Path, rounds: int) -> dict[str, Any]:
    root = workdir / "tiny"
    root.mkdir()
    (root / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:cacheprovider\n"
    )
    (root / "test_tiny.py").write_text(
        "".join(f"def test_{i}():\n    pass\n\n\n" for i in range(TINY_TESTS))
    )
    quiet = _env()
    installed = {k: v for k, v in quiet.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    samples: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in STARTUP}
    for _, args, autoload_off in STARTUP.values():  # warm the file cache
        _pytest(root, args, quiet if autoload_off else installed)
    for _ in range(rounds):
        for name, (_, args, autoload_off) in STARTUP.items():
            wall, cpu, _ = _pytest(root, args, quiet if autoload_off else installed)
            samples[name]["wall"].append(wall)
            samples[name]["cpu"].append(cpu)
    medians = {
        name: {"wall": statistics.median(s["wall"]), "cpu": statistics.median(s["cpu"])}
        for name, s in samples.items()
    }
    return {"rounds": rounds, "samples": samples, "median": medians, "imports": _imports(root)}


def _import_rows(text: str) -> list[tuple[str, int, int, str | None]]:
    """``-X importtime`` output as (module, self us, cumulative us, importer), in order.

    The output is post-order: a module's line follows those of the modules it imported,
    which are indented one level deeper; its importer is the next line less indented.
    """
    parsed: list[tuple[str, int, int, int]] = []
    for line in text.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own_us, cumulative_us, module = line.removeprefix("import time:").split("|")
        level = (len(module) - len(module.lstrip(" "))) // 2
        parsed.append((module.strip(), int(own_us), int(cumulative_us), level))
    rows: list[tuple[str, int, int, str | None]] = []
    pending: list[tuple[int, int]] = []  # (index in rows, level) still waiting for an importer
    for name, own, cumulative, level in parsed:
        while pending and pending[-1][1] > level:
            index, _ = pending.pop()
            rows[index] = (*rows[index][:3], name)
        rows.append((name, own, cumulative, None))
        pending.append((len(rows) - 1, level))
    return rows


def _imports(root: Path) -> dict[str, Any]:
    """What the plugin's imports cost: modules loaded with it that bare pytest does not load,
    as the plugin's direct imports and as third-party packages (time of first import)."""

    def importtime(args: Sequence[str]) -> list[tuple[str, int, int, str | None]]:
        done = subprocess.run(
            [PYTHON, "-X", "importtime", *args],
            cwd=root,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        return _import_rows(done.stderr)

    # pytest imports a plugin through its assertion-rewriting hook, which hides the plugin's
    # own line from -X importtime: import it plainly, after pytest, instead
    bare = {row[0] for row in importtime(["-m", "pytest", "-q", "--co"])}
    plain = importtime(["-c", f"import pytest; import {PLUGIN}"])
    extra = [row for row in plain if row[0] not in bare]
    direct = sorted(
        (
            (name, cum / 1000)
            for name, _, cum, parent in extra
            if parent in (PLUGIN, "pytest_agentctx")
        ),
        key=lambda item: -item[1],
    )
    packages: dict[str, float] = {}
    for name, _, cumulative, parent in extra:
        top = name.split(".")[0]
        if top != "pytest_agentctx" and (parent is None or parent.startswith("pytest_agentctx")):
            packages[top] = packages.get(top, 0.0) + cumulative / 1000
    plugin = [cum / 1000 for name, _, cum, _ in extra if name == PLUGIN]
    return {
        "modules": len(extra),
        "self_ms": sum(row[1] for row in extra) / 1000,
        "plugin_ms": plugin[0] if plugin else None,
        "direct": direct,
        "packages": sorted(packages.items(), key=lambda item: -item[1]),
        "package_self": sorted(
            ((n, own / 1000) for n, own, _, _ in extra if n.startswith("pytest_agentctx")),
            key=lambda item: -item[1],
        )[:15],
    }


# -- 2. the replayed suite -------------------------------------------------------------------


def _phases(folder: Path, started: float, wall: float) -> dict[str, float]:
    """A run's wall time in three parts, from the times its processes wrote (``--phases``):
    the head (start to the first test), the tests (first test to the last test of every
    process) and the tail (from there to the end of the run)."""
    marks = [json.loads(path.read_text()) for path in folder.glob("*.json")]
    first = min(mark["first"] for mark in marks if "first" in mark)
    last = max(mark["last"] for mark in marks if "last" in mark)
    return {"head": first - started, "tests": last - first, "tail": started + wall - last}


def run_suites(
    workdir: Path, tests: int, rounds: int, phases: bool = False, references: bool = False
) -> dict[str, Any]:
    kinds = {**SUITES, **(REFERENCES if references else {})}
    out: dict[str, Any] = {"tests": tests, "rounds": rounds, "suites": {}, "kinds": list(kinds)}
    if references:
        out["spin_ms"] = SPIN["ms"]
    roots = {}
    for kind in kinds:
        root = workdir / f"suite-{kind}"
        paths = build_suite(kind, root, tests)
        if kind in SUITES:
            out["suites"][kind] = {"cassettes": record_and_copy(kind, root, paths)}
        roots[kind] = root
    for kind, root in roots.items():  # one untimed collection: the file and bytecode caches
        if phases:
            (root / "conftest.py").write_text(_PHASES_CONFTEST)
        _pytest(root, [*kinds[kind]["plugins"], "--co"], _env())
    plan = [(kind, workers) for kind in kinds for workers in (0, 2)]
    samples: dict[str, dict[str, list[float]]] = {
        f"{kind}-{workers}": {"wall": [], "cpu": []} for kind, workers in plan
    }
    lines: dict[str, str] = {}
    samples_of_phases: dict[str, list[dict[str, float]]] = {key: [] for key in samples}
    for number in range(rounds):
        order = plan if number % 2 == 0 else plan[::-1]  # interleaved, alternating order
        for kind, workers in order:
            key = f"{kind}-{workers}"
            args = list(kinds[kind]["plugins"])
            if workers:
                args += ["-n", str(workers)]
            env = _env()
            if kind in SUITES:
                base_url = out["suites"][kind]["cassettes"]["base_url"]
                # a replayed run sends nothing, but the SDK refuses to build a client without
                # a key; the requests go to the recorded URL, where nothing listens any more
                env.update(
                    OPENAI_API_KEY="sk-bench-replay",
                    OPENAI_BASE_URL=base_url,
                    BENCH_BASE_URL=base_url,
                )
            marks = Path(tempfile.mkdtemp(prefix="phases-", dir=workdir)) if phases else None
            if marks is not None:
                env["BENCH_PHASES_DIR"] = str(marks)
            started = time.time()
            wall, cpu, last = _pytest(roots[kind], args, env)
            if marks is not None:
                samples_of_phases[key].append(_phases(marks, started, wall))
            if f"{tests} passed" not in last:
                raise RuntimeError(f"{kind} -n {workers}: expected {tests} passed, got {last!r}")
            samples[key]["wall"].append(wall)
            samples[key]["cpu"].append(cpu)
            lines[key] = last
    out["samples"] = samples
    if phases:
        out["phases"] = {
            key: {part: statistics.median(p[part] for p in found) for part in found[0]}
            for key, found in samples_of_phases.items()
        }
    out["bytecode"] = BYTECODE["write"]
    # serial / -n 2 per round: the two runs of a round are minutes apart at most, so a change
    # of the machine's speed between rounds cancels out of each round's ratio
    out["round_ratios"] = {
        kind: [
            serial / parallel
            for serial, parallel in zip(
                samples[f"{kind}-0"]["wall"], samples[f"{kind}-2"]["wall"], strict=True
            )
        ]
        for kind in kinds
    }
    out["median"] = {
        key: {"wall": statistics.median(s["wall"]), "cpu": statistics.median(s["cpu"])}
        for key, s in samples.items()
    }
    out["pytest"] = lines
    return out


# -- 3. the HTML report ----------------------------------------------------------------------


def run_html(tests: int, rounds: int) -> dict[str, Any]:
    from datetime import timedelta

    from pytest_agentctx import AgentContext, ToolCall, ToolResult
    from pytest_agentctx.reports.figures import run_stats
    from pytest_agentctx.reports.html import render_html

    at = datetime(2025, 1, 1, tzinfo=UTC)
    ctx = AgentContext.new(QUESTION, system_prompt=SYSTEM, at=at)
    for step in range(TOOL_CALLS):
        call = ToolCall(id=f"call_{step}", name="lookup", arguments={"key": f"k{step}"})
        ctx = ctx.add_assistant_message(None, [call], at=at + timedelta(seconds=2 * step + 1))
        ctx = ctx.with_iteration_metadata(
            {"model": "gpt-4o-mini", "usage": {"input_tokens": 120, "output_tokens": 12}}
        )
        result = ToolResult(tool_call_id=call.id, name="lookup", content=f"value of k{step}")
        ctx = ctx.add_tool_results([result], at=at + timedelta(seconds=2 * step + 2))
    ctx = ctx.add_assistant_message(ANSWER, at=at + timedelta(seconds=9))
    stats = run_stats(ctx).to_dict()
    context = ctx.model_dump(mode="json")
    entries = [
        {
            "nodeid": f"test_suite_{i % MODULES:02d}.py::test_run_{i}",
            "outcome": "passed",
            "suite": "unit",
            "cassette": None,
            "budget": None,
            "repeat": None,
            "stats": stats,
            "runs": [{"name": "bench", "source": "runtime", "stats": stats, "context": context}],
        }
        for i in range(tests)
    ]
    report = {
        "format": "pytest-agentctx-report",
        "version": 1,
        "summary": {"tests": tests, "passed": tests, "gate": {"enabled": False}},
        "tests": entries,
    }
    walls, cpus, size = [], [], 0
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        size = len(render_html(report).encode())
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {
        "tests": tests,
        "rounds": rounds,
        "bytes": size,
        "wall": statistics.median(walls),
        "cpu": statistics.median(cpus),
    }


# -- the report ----------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def _s(seconds: float) -> str:
    return f"{seconds:,.2f}"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "pytest_agentctx"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{head} (uncommitted changes in pytest_agentctx/)" if dirty else head


def render(results: Mapping[str, Any], command: str) -> str:
    out: list[str] = ["## Suites and reports: pytest-agentctx and pytest-recording", ""]
    startup = results.get("startup")
    if startup:
        med = startup["median"]
        bare = med["bare"]
        out += [
            f"### Start-up: `pytest --co -q` on {TINY_TESTS} empty tests "
            f"(median of {startup['rounds']} interleaved rounds)",
            "",
            "Wall = time.perf_counter around the subprocess; CPU = user + system time of "
            "the pytest process (RUSAGE_CHILDREN).",
            "",
            "| run | wall (ms) | CPU (ms) | over pytest alone, wall / CPU (ms) |",
            "|---|---:|---:|---:|",
        ]
        for name, (label, _, _) in STARTUP.items():
            row = med[name]
            over = ""
            if name in ("ours", "vcr"):
                over = f"{_ms(row['wall'] - bare['wall'])} / {_ms(row['cpu'] - bare['cpu'])}"
            out.append(f"| {label} | {_ms(row['wall'])} | {_ms(row['cpu'])} | {over} |")
        all_on, no_ours, no_vcr = med["all"], med["all-no-ours"], med["all-no-vcr"]
        out += [
            "",
            "As installed (every plugin of the virtualenv loads), the agentctx plugin adds "
            f"**{_ms(all_on['wall'] - no_ours['wall'])} ms wall / "
            f"{_ms(all_on['cpu'] - no_ours['cpu'])} ms CPU**, pytest-recording "
            f"{_ms(all_on['wall'] - no_vcr['wall'])} ms wall / "
            f"{_ms(all_on['cpu'] - no_vcr['cpu'])} ms CPU.",
            "",
        ]
        imports = startup["imports"]
        out += [
            f"Modules imported with `-p pytest_agentctx.plugin` that pytest alone does not "
            f"import: {imports['modules']}, {imports['self_ms']:,.0f} ms of import time in "
            f"total; `pytest_agentctx.plugin` itself {imports['plugin_ms'] or 0:,.0f} ms "
            "cumulative (`python -X importtime`, which inflates times). A module's cost is "
            "counted where it is first imported.",
            "",
            "| imported by the plugin or the package's `__init__` | cumulative (ms) |",
            "|---|---:|",
            *[f"| `{n}` | {c:,.1f} |" for n, c in imports["direct"][:15]],
            "",
            "| third-party packages it brings in | cumulative (ms) |",
            "|---|---:|",
            *[f"| `{n}` | {c:,.1f} |" for n, c in imports["packages"][:12]],
            "",
            "| the package's own modules, self time | ms |",
            "|---|---:|",
            *[f"| `{n}` | {c:,.1f} |" for n, c in imports["package_self"][:12]],
            "",
        ]
    suites = results.get("suites")
    if suites:
        med = suites["median"]
        cache = (
            "pytest's bytecode cache kept (its default: a second run)"
            if suites["bytecode"]
            else "no bytecode cache (PYTHONDONTWRITEBYTECODE=1: a fresh checkout's first run)"
        )
        out += [
            f"### A replayed suite of {suites['tests']:,} tests, 5 iterations each "
            f"(median of {suites['rounds']} interleaved rounds; {cache})",
            "",
            "| tool | serial wall (s) | `-n 2` wall (s) | serial / `-n 2` (of the medians) | "
            "serial / `-n 2`, median of the rounds' | serial CPU (s) | `-n 2` CPU (s) | "
            "per test, serial (ms) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        kinds = {**SUITES, **REFERENCES}
        run_kinds = {k: kinds[k] for k in suites["kinds"]}
        for kind, spec in run_kinds.items():
            serial, parallel = med[f"{kind}-0"], med[f"{kind}-2"]
            ratios = suites["round_ratios"][kind]
            out.append(
                f"| {spec['label']} | {_s(serial['wall'])} | {_s(parallel['wall'])} | "
                f"**{serial['wall'] / parallel['wall']:.2f}x** | "
                f"**{statistics.median(ratios):.2f}x** "
                f"({', '.join(f'{r:.2f}' for r in ratios)}) | {_s(serial['cpu'])} | "
                f"{_s(parallel['cpu'])} | {serial['wall'] / suites['tests'] * 1000:.1f} |"
            )
        if "phases" in suites:
            out += [
                "",
                "Where the time goes (`--phases`: median seconds of the rounds; head = start to "
                "the first test, tests = first test to the last test of every process, tail = "
                "from there to the end of the run):",
                "",
                "| tool | run | head (s) | tests (s) | tail (s) |",
                "|---|---|---:|---:|---:|",
            ]
            for kind, spec in run_kinds.items():
                for workers in (0, 2):
                    part = suites["phases"][f"{kind}-{workers}"]
                    out.append(
                        f"| {spec['label']} | {'`-n 2`' if workers else 'serial'} | "
                        f"{part['head']:.2f} | {part['tests']:.2f} | {part['tail']:.2f} |"
                    )
            part_ratios = {
                k: suites["phases"][f"{k}-0"]["tests"] / suites["phases"][f"{k}-2"]["tests"]
                for k in run_kinds
            }
            out += [
                "",
                "Serial / `-n 2` of the tests part alone: "
                + ", ".join(f"{kinds[k]['label']} **{r:.2f}x**" for k, r in part_ratios.items())
                + ".",
            ]
        if "spin_ms" in suites:
            out += [
                "",
                f"The references (`--reference`): {suites['tests']:,} tests that each keep the "
                f"CPU busy for {suites['spin_ms']:g} ms (thread CPU time), with the same "
                "plugins (pytest-asyncio, pytest-xdist) and no tool under test; the second "
                "suite's modules also `import openai`, as both agent suites' do. They show "
                "what pytest-xdist gives on this machine for tests as long as the agent tests.",
            ]
        ours, vcr = med["ours-0"], med["vcr-0"]
        out += [
            "",
            f"pytest-agentctx / pytest-recording, serial wall: "
            f"{ours['wall'] / vcr['wall']:.2f}x; with `-n 2`: "
            f"{med['ours-2']['wall'] / med['vcr-2']['wall']:.2f}x. Cassettes: "
            + ", ".join(
                f"{SUITES[k]['label']} {v['cassettes']['bytes']:,} bytes x "
                f"{v['cassettes']['files']:,} files"
                for k, v in suites["suites"].items()
            )
            + ". Every run: "
            + "; ".join(f"{k}: `{v}`" for k, v in sorted(suites["pytest"].items()))
            + ".",
            "",
            "All samples, wall seconds: "
            + "; ".join(
                f"{k} " + " ".join(f"{x:.2f}" for x in v["wall"])
                for k, v in suites["samples"].items()
            )
            + ".",
            "",
        ]
    html = results.get("html")
    if html:
        out += [
            f"### HTML report of {html['tests']:,} tests of 5-iteration runs "
            f"(median of {html['rounds']})",
            "",
            f"`render_html`: {_ms(html['wall'])} ms wall / {_ms(html['cpu'])} ms CPU, "
            f"{html['bytes'] / 1e6:.1f} MB of HTML.",
            "",
        ]
    facts = results["facts"]
    out += [
        "### Machine and run",
        "",
        "| | |",
        "|---|---|",
        f"| date | {facts['date']} |",
        f"| command | `{command}` |",
        f"| python | {facts['python']} |",
        f"| cpu | {facts['cpu']} |",
        f"| checkout | {facts['git']} |",
        *[f"| {name} | {version} |" for name, version in facts["versions"].items()],
        f"| load average before / after | {facts['load_before']} / {facts['load_after']} |",
        f"| wall time of the run | {facts['seconds']:.0f} s |",
        "",
    ]
    return "\n".join(out)


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 tests, 1 round: a smoke run")
    parser.add_argument("--tests", type=int, default=None, help="tests in the suite (1000)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of the suites (3)")
    parser.add_argument("--startup-rounds", type=int, default=None, help="start-up rounds (7)")
    parser.add_argument(
        "--only", choices=("startup", "suites", "html"), action="append", help="run only these"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the raw figures as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the temporary projects")
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="run pytest with PYTHONDONTWRITEBYTECODE=1: every run rewrites the test modules "
        "(a fresh checkout's first run); by default pytest's bytecode cache is kept",
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="split each suite run's wall time into head, tests and tail (a conftest in both "
        "suites writes when each process's first and last tests ran)",
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also run two reference suites of busy tests with no tool under test (one also "
        "imports openai): what pytest-xdist itself gives for tests that long",
    )
    parser.add_argument(
        "--spin-ms",
        type=float,
        default=SPIN["ms"],
        help=f"how long each reference test keeps the CPU busy (default {SPIN['ms']:g} ms)",
    )
    args = parser.parse_args(argv)
    if args.spin_ms <= 0:
        parser.error(f"--spin-ms must be above 0, got {args.spin_ms:g}")
    SPIN["ms"] = args.spin_ms
    BYTECODE["write"] = not args.no_bytecode
    tests = args.tests or (100 if args.quick else 1000)
    rounds = args.rounds or (1 if args.quick else 3)
    startup_rounds = args.startup_rounds or (3 if args.quick else 7)
    parts = set(args.only or ("startup", "suites", "html"))
    command = shlex.join(
        [os.path.relpath(PYTHON), os.path.relpath(__file__), *(argv or sys.argv[1:])]
    )
    started, load_before = time.perf_counter(), _load()
    results: dict[str, Any] = {}
    workdir = Path(tempfile.mkdtemp(prefix="agentctx-bench-suite-"))
    try:
        if "startup" in parts:
            results["startup"] = run_startup(workdir, startup_rounds)
        if "suites" in parts:
            results["suites"] = run_suites(
                workdir, tests, rounds, phases=args.phases, references=args.reference
            )
        if "html" in parts:
            results["html"] = run_html(tests, 3)
    finally:
        if args.keep:
            print(f"projects kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    results["facts"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpu": f"{_cpu_model()}, {os.cpu_count()} logical CPUs",
        "git": _git(),
        "versions": {
            name: _version(name)
            for name in (
                "pytest-agentctx",
                "pytest",
                "pytest-xdist",
                "pytest-asyncio",
                "pytest-recording",
                "vcrpy",
                "openai",
            )
        },
        "load_before": load_before,
        "load_after": _load(),
        "seconds": time.perf_counter() - started,
    }
    print(render(results, command))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
