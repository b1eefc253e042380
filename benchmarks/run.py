"""Run every benchmark and print the results as Markdown.

    .venv/bin/python benchmarks/run.py           # the full run (`make bench`): ~100 s of CPU
    .venv/bin/python benchmarks/run.py --quick   # a smoke run while developing: ~30 s of CPU

Nothing here touches the network. See benchmarks/README.md for what each benchmark
measures and the figures of the last full run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_context  # noqa: E402
import bench_frozen_clock  # noqa: E402

PACKAGES = ("pytest-agentctx", "pydantic", "pydantic-core", "freezegun", "openai", "anthropic")


def _command() -> str:
    python = Path(sys.executable)
    try:
        shown = str(python.relative_to(Path.cwd()))
    except ValueError:
        shown = str(python)
    script = Path(sys.argv[0]).resolve()
    try:
        script_shown = str(script.relative_to(Path.cwd()))
    except ValueError:
        script_shown = str(script)
    return shlex.join([shown, script_shown, *sys.argv[1:]])


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return platform.processor() or "unknown"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git_revision() -> str:
    """The commit of the checkout, and whether the package has uncommitted changes."""
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
    """A short digest of the package's source, to tell runs on different code apart."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "pytest_agentctx").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def machine_facts() -> list[tuple[str, str]]:
    """What the figures depend on."""
    return [
        ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("command", f"`{_command()}`"),
        ("python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("platform", platform.platform()),
        ("cpu", f"{_cpu_model()}, {os.cpu_count()} logical CPUs"),
        ("checkout", _git_revision()),
        ("pytest_agentctx/**/*.py sha256", _source_digest()),
        *((name, _version(name)) for name in PACKAGES),
    ]


def _facts_table(facts: Sequence[tuple[str, str]]) -> str:
    rows = ["| | |", "|---|---|", *(f"| {key} | {value} |" for key, value in facts)]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the pytest-agentctx benchmarks.")
    parser.add_argument(
        "--quick", action="store_true", help="smaller sizes and fewer repeats (a smoke run)"
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    facts = machine_facts()
    load_before = _load()
    print("## pytest-agentctx benchmarks" + (" (--quick)" if args.quick else ""), flush=True)
    print()

    context = bench_context.run(quick=args.quick)
    print(bench_context.markdown(context), flush=True)
    print()

    clock = bench_frozen_clock.run(quick=args.quick)
    print(bench_frozen_clock.markdown(clock), flush=True)
    print()

    facts += [
        ("load average (1, 5, 15 min) before / after", f"{load_before} / {_load()}"),
        ("wall time of the run", f"{time.perf_counter() - started:.0f} s"),
    ]
    print("### Machine and run")
    print()
    print(_facts_table(facts))


if __name__ == "__main__":
    main()
