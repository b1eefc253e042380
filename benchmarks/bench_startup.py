"""Start-up: what installing pytest-agentctx adds to a pytest run that uses nothing of it.

    .venv/bin/python benchmarks/bench_startup.py              # 21 rounds
    .venv/bin/python benchmarks/bench_startup.py --quick      # 5 rounds
    .venv/bin/python benchmarks/bench_startup.py --venv /tmp/other-venv --json raw.json
    .venv/bin/python benchmarks/bench_startup.py --instructions   # and callgrind's counts

The virtualenv (``--venv``, default ``/tmp/bench-startup-venv``; made when missing) holds
pytest and this checkout, installed from a wheel built from it (not editable: pytest then
rewrites the plugin's modules as a user's install has them), with its required dependencies
only; the wheel is built and installed again on every run (``--no-install`` measures what
the virtualenv has). Every pytest run is a process of its own, for each of:

- **bare**: pytest with the plugin disabled (``-p no:agentctx``; the other plugins the
  dependencies install, pytest-asyncio, syrupy and anyio's, load as usual);
- **plugin**: pytest as installed, the plugin loaded from its entry point;

each with three kinds of bytecode cache:

- **CI image** (the target's): ``PYTHONDONTWRITEBYTECODE=1`` and ``python -B``, as CI images
  set it; the installed packages, this one included, have the ``.pyc`` files pip wrote when
  it installed them (pip writes them whatever the variable says; this script compiles the
  package's with ``compileall`` as pip does), the project has none;
- **none**: the same, and no ``.pyc`` of this package either: every module of the plugin is
  compiled from source on every run (``pip install --no-compile``);
- **warm**: ``PYTHONPYCACHEPREFIX`` pointing at a cache warmed before the first round,
  which pytest's rewritten modules use too.

Rounds are
interleaved and the order of the variants rotates from round to round, so a machine that
slows down slows every variant alike. The project of the target is one plain test; a
project of one agent test replaying a small cassette is measured too, as information (its
bare run answers the same request from a loopback server this script starts). Target: the
plugin adds under 20 ms to the plain project's run in a CI image
(``PYTHONDONTWRITEBYTECODE=1``).

Wall times of whole processes vary from run to run on a shared machine (here by tens of
milliseconds between two runs of the same command), more than the target itself. With
``--instructions``, the target's two runs (the plain project in a CI image, bare and with
the plugin) are also counted in machine instructions by valgrind's callgrind, which gives
the same count on every run of the same files: the plugin's share is then converted to
milliseconds at the pace of the bare run (its median wall time over its instructions).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VENV = Path("/tmp/bench-startup-venv")
TARGET_MS = 20.0
TIMEOUT = 180  # seconds, for every subprocess
#: The kinds of bytecode cache (see the module docstring), in the order of the table.
MODES = ("ci", "none", "warm")
MODE_LABELS = {
    "ci": "CI image (PYTHONDONTWRITEBYTECODE=1, pip's .pyc)",
    "none": "none at all (no .pyc of the package)",
    "warm": "warm cache",
}

INI = """[pytest]
asyncio_default_fixture_loop_scope = function
markers =
    agent: an agent test (so the bare run knows the marker too)
"""

PLAIN_TEST = """
def test_plain():
    assert sum([1, 2, 3]) == 6
"""

AGENT_TEST = """
import os

import httpx2
import pytest


@pytest.mark.agent
def test_agent():
    with httpx2.Client() as client:
        response = client.post(
            os.environ["BENCH_MODEL_URL"] + "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]},
            headers={"authorization": "Bearer sk-bench-not-a-real-key-0000"},
        )
    assert response.json()["choices"][0]["message"]["content"] == "Hello from the bench."
"""

COMPLETION = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1735689600,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello from the bench."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
}


class _Provider(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps(COMPLETION).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def provider() -> Iterator[str]:
    """A loopback server answering every POST with one chat completion; stopped on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def run(cmd: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=TIMEOUT, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(
            f"{shlex.join(cmd)} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done


def prepare_venv(venv: Path, *, install: bool) -> Path:
    """The virtualenv's python, with this checkout installed from a fresh wheel."""
    python = venv / "bin" / "python"
    if not python.exists():
        run([sys.executable, "-m", "venv", str(venv)])
        install = True
    if install:
        with tempfile.TemporaryDirectory(prefix="bench-startup-wheel-") as folder:
            build = ["wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", folder]
            run([sys.executable, "-m", "pip", *build, str(ROOT)])
            wheels = sorted(Path(folder).glob("pytest_agentctx-*.whl"))
            if not wheels:
                raise RuntimeError(f"no wheel of pytest-agentctx was built in {folder}")
            pip = [str(python), "-m", "pip", "install", "--quiet"]
            run([*pip, "--force-reinstall", "--no-deps", str(wheels[-1])])  # this checkout
            run([*pip, str(wheels[-1])])  # and its dependencies, when the venv is new
    return python


def package_dir(python: Path, venv: Path) -> Path:
    """Where the virtualenv imports pytest_agentctx from: its site-packages, never the
    checkout (an editable install would be measured otherwise)."""
    done = run(
        [str(python), "-B", "-c", "import pytest_agentctx, os; print(pytest_agentctx.__file__)"],
        cwd="/",
    )
    folder = Path(done.stdout.strip()).parent
    if venv.resolve() not in folder.resolve().parents:
        raise RuntimeError(
            f"{python} imports pytest_agentctx from {folder}, not from {venv}: install it "
            "from a wheel (run without --no-install)."
        )
    return folder


def pyc_files(*folders: Path) -> list[Path]:
    return [pyc for folder in folders for pyc in folder.rglob("*.pyc")]


def drop_bytecode(*folders: Path) -> None:
    for folder in folders:
        for cache in list(folder.rglob("__pycache__")):
            shutil.rmtree(cache, ignore_errors=True)


def save_pip_bytecode(python: Path, package: Path, keep: Path) -> None:
    """The package's ``.pyc`` as pip writes them (``compileall``), copied to ``keep``."""
    drop_bytecode(package)
    run([str(python), "-m", "compileall", "-q", str(package)])
    for pyc in pyc_files(package):
        target = keep / pyc.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(pyc, target)
    if not pyc_files(keep):
        raise RuntimeError(f"compileall wrote no .pyc in {package}")


def restore_bytecode(keep: Path, package: Path) -> None:
    for pyc in pyc_files(keep):
        target = package / pyc.relative_to(keep)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(pyc, target)


class Variant:
    """One way of running pytest on one project, with its samples."""

    def __init__(
        self,
        name: str,
        python: Path,
        project: Path,
        *,
        plugin: bool,
        mode: str,
        cache_dir: Path,
        package: Path,
        pip_bytecode: Path,
        url: str,
    ) -> None:
        self.name, self.python, self.project = name, python, project
        self.plugin, self.mode, self.package = plugin, mode, package
        self.pip_bytecode = pip_bytecode
        self.wall: list[float] = []
        self.cpu: list[float] = []
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON"))}
        env["BENCH_MODEL_URL"] = url
        if mode == "warm":
            env["PYTHONPYCACHEPREFIX"] = str(cache_dir)
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        self.env = env
        self.cmd = [str(python), *([] if mode == "warm" else ["-B"]), "-m", "pytest", "-q"]
        self.cmd += ["-p", "no:cacheprovider", *([] if plugin else ["-p", "no:agentctx"])]

    def prepare(self) -> None:
        """The bytecode this variant's run starts with (see the module docstring)."""
        if self.mode != "warm":  # the project's modules compiled anew
            drop_bytecode(self.project, self.package)
            if self.mode == "ci":  # the package's .pyc as pip wrote them
                restore_bytecode(self.pip_bytecode, self.package)
            left = pyc_files(self.project, *([self.package] if self.mode == "none" else []))
            if left:
                raise RuntimeError(f"{self.name}: bytecode left before the run: {left[0]}")

    def run(self, *, measured: bool = True) -> None:
        self.prepare()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        run(self.cmd, cwd=self.project, env=self.env)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if measured:
            self.wall.append(wall)
            self.cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)

    def instructions(self) -> int:
        """The machine instructions one run executes, counted by valgrind's callgrind with
        Python's hash seed fixed: the same count on every run of the same files, whatever
        else the machine is doing."""
        self.prepare()
        with tempfile.TemporaryDirectory(prefix="bench-startup-callgrind-") as folder:
            out = Path(folder) / "callgrind.out"
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *self.cmd]
            done = run(cmd, cwd=self.project, env={**self.env, "PYTHONHASHSEED": "0"})
        found = re.search(r"Collected : ([\d,]+)", done.stderr)
        if found is None:
            raise RuntimeError(f"{self.name}: valgrind counted nothing:\n{done.stderr}")
        return int(found.group(1).replace(",", ""))


def make_projects(base: Path, python: Path, url: str) -> dict[str, Path]:
    plain = base / "plain"
    agent = base / "agent"
    for folder, test in ((plain, PLAIN_TEST), (agent, AGENT_TEST)):
        folder.mkdir(parents=True)
        (folder / "pytest.ini").write_text(INI)
        (folder / "test_one.py").write_text(test)
    env = {**os.environ, "BENCH_MODEL_URL": url, "PYTHONDONTWRITEBYTECODE": "1"}
    run([str(python), "-B", "-m", "pytest", "-q", "--agent-record"], cwd=agent, env=env)
    cassettes = sorted((agent / "cassettes").rglob("*.json"))
    if len(cassettes) != 1:
        raise RuntimeError(f"recording the agent test's cassette left {cassettes}")
    markers = run([str(python), "-B", "-m", "pytest", "--markers"], cwd=plain, env=env).stdout
    bare = [str(python), "-B", "-m", "pytest", "--markers", "-p", "no:agentctx"]
    bare_markers = run(bare, cwd=plain, env=env).stdout
    if "agent_budget" not in markers or "agent_budget" in bare_markers:
        raise RuntimeError("the plugin is not loaded as installed, or -p no:agentctx keeps it")
    return {"plain": plain, "agent": agent}


def measure(python: Path, venv: Path, rounds: int, *, instructions: bool) -> dict[str, Any]:
    package = package_dir(python, venv)
    results: dict[str, Any] = {"rounds": rounds, "projects": {}}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as temp, provider() as url:
        base = Path(temp)
        save_pip_bytecode(python, package, base / "pip-bytecode")
        projects = make_projects(base, python, url)
        drop_bytecode(package, *projects.values())
        variants: list[Variant] = []
        for project_name, project in projects.items():
            for plugin in (False, True):
                for mode in MODES:
                    variants.append(
                        Variant(
                            f"{project_name}/{'plugin' if plugin else 'bare'}/{mode}",
                            python,
                            project,
                            plugin=plugin,
                            mode=mode,
                            cache_dir=base / f"pycache-{project_name}",
                            package=package,
                            pip_bytecode=base / "pip-bytecode",
                            url=url,
                        )
                    )
        for variant in variants:  # warm the file cache and the bytecode cache
            variant.run(measured=False)
        for index in range(rounds):
            shift = index % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                variant.run()
        for variant in variants:
            project_name, kind, cache = variant.name.split("/")
            entry = results["projects"].setdefault(project_name, {})
            entry[f"{kind}/{cache}"] = {
                "wall_ms": statistics.median(variant.wall) * 1000,
                "cpu_ms": statistics.median(variant.cpu) * 1000,
                "wall_samples_ms": [round(s * 1000, 2) for s in variant.wall],
            }
        if instructions:  # the target's runs: the plain project in a CI image
            counted = {v.name: v for v in variants if v.name.startswith("plain/")}
            results["instructions"] = {
                kind: counted[f"plain/{kind}/ci"].instructions() for kind in ("bare", "plugin")
            }
    return results


def render(results: Mapping[str, Any], facts: Mapping[str, Any]) -> str:
    out = [
        "## Start-up: what the plugin adds to a pytest run",
        "",
        f"Median of {results['rounds']} interleaved rounds, each pytest run a process of "
        "its own; wall time (CPU time of the process in brackets).",
        "",
        "| project | bytecode cache | bare pytest (ms) | with the plugin (ms) | added (ms) "
        "| ratio |",
        "|---|---|---:|---:|---:|---:|",
    ]
    verdict = ""
    for project, entry in results["projects"].items():
        for cache in MODES:
            bare, plugin = entry[f"bare/{cache}"], entry[f"plugin/{cache}"]
            added = plugin["wall_ms"] - bare["wall_ms"]
            added_cpu = plugin["cpu_ms"] - bare["cpu_ms"]
            label = "one plain test" if project == "plain" else "one agent test (replayed)"
            out.append(
                f"| {label} | {MODE_LABELS[cache]} "
                f"| {bare['wall_ms']:.1f} ({bare['cpu_ms']:.1f}) "
                f"| {plugin['wall_ms']:.1f} ({plugin['cpu_ms']:.1f}) "
                f"| **{added:+.1f}** ({added_cpu:+.1f}) "
                f"| {plugin['wall_ms'] / bare['wall_ms']:.3f}x |"
            )
            if project == "plain" and cache == "ci":
                met = added < TARGET_MS
                verdict = (
                    f"Target: the plugin adds under {TARGET_MS:.0f} ms to the plain project's "
                    f"run in a CI image (PYTHONDONTWRITEBYTECODE=1): {added:+.1f} ms, "
                    f"**{'met' if met else 'not met'}**."
                )
    out += ["", verdict]
    if "instructions" in results:
        out += ["", *_render_instructions(results), ""]
    out += ["", "| | |", "|---|---|"]
    out += [f"| {key} | {value} |" for key, value in facts.items()]
    return "\n".join(out)


def _render_instructions(results: Mapping[str, Any]) -> list[str]:
    """The instruction counts of the target's runs, and what the plugin's share is worth
    at the bare run's measured pace (its median wall time over its instructions)."""
    bare, plugin = results["instructions"]["bare"], results["instructions"]["plugin"]
    added = plugin - bare
    bare_ms = results["projects"]["plain"]["bare/ci"]["wall_ms"]
    worth = added * bare_ms / bare
    return [
        "Instructions (valgrind's callgrind, `PYTHONHASHSEED=0`; the same count on every "
        "run, however busy the machine), one plain test in a CI image:",
        "",
        "| bare pytest | with the plugin | added | added, at the bare run's pace |",
        "|---:|---:|---:|---:|",
        f"| {bare / 1e6:,.1f} M | {plugin / 1e6:,.1f} M | **{added / 1e6:+,.1f} M** "
        f"({plugin / bare - 1:+.1%}) | **{worth:+.1f} ms** ({bare_ms:.1f} ms for "
        f"{bare / 1e6:,.0f} M) |",
        "",
        f"Target, counted in instructions: {worth:+.1f} ms, "
        f"**{'met' if worth < TARGET_MS else 'not met'}**.",
    ]


def _git() -> str:
    try:
        head = run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT).stdout.strip()
        dirty = run(["git", "status", "--porcelain", "--", "pytest_agentctx"], cwd=ROOT).stdout
    except (OSError, RuntimeError):
        return "unknown"
    return f"{head} (uncommitted changes in pytest_agentctx/)" if dirty.strip() else head


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _versions(python: Path) -> str:
    names = ("pytest", "pytest-asyncio", "syrupy", "pydantic", "httpx2")
    script = "from importlib import metadata\n" + "".join(
        f"print('{name}', metadata.version('{name}'))\n" for name in names
    )
    return ", ".join(run([str(python), "-B", "-c", script]).stdout.split("\n")).strip(", ")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="the virtualenv used")
    parser.add_argument(
        "--no-install", action="store_true", help="measure what the virtualenv has installed"
    )
    parser.add_argument("--json", type=Path, help="write the raw figures to this file")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count the instructions of the target's runs with valgrind (callgrind)",
    )
    args = parser.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on PATH: apt-get install valgrind")
    rounds = 5 if args.quick else args.rounds
    command = shlex.join([Path(sys.executable).name, *sys.argv])
    load_before, started = _load(), time.perf_counter()
    python = prepare_venv(args.venv, install=not args.no_install)
    results = measure(python, args.venv, rounds, instructions=args.instructions)
    facts = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": f"`{command}`",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpu": f"{_cpu_model()}, {os.cpu_count()} logical CPUs",
        "checkout": _git(),
        "virtualenv": f"{args.venv}: {_versions(python)}",
        "load average before / after": f"{load_before} / {_load()}",
        "wall time of the run": f"{time.perf_counter() - started:.0f} s",
    }
    print(render(results, facts))
    if args.json:
        args.json.write_text(json.dumps({**results, "facts": facts}, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
