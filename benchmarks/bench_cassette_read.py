"""Reading a cassette cold, in each format pytest-agentctx reads, against vcrpy and cassetter.

    .venv/bin/python benchmarks/bench_cassette_read.py           # 1,000 and 5,000, 5 rounds
    .venv/bin/python benchmarks/bench_cassette_read.py --quick   # 1,000 only, 2 rounds

The same realistic chat traffic (benchmarks/bench_cassettes.py builds it: distinct chat
completion requests and replies, the openai SDK's headers), written as the package's JSON,
its YAML (``agent_cassette_format = yaml``) and vcrpy's YAML. Every read is cold: a fresh
process, its imports done before the clock starts, only the read timed. Rounds are
interleaved and the order of the variants rotates from round to round, so a busy machine
slows them alike; the table shows the median and the best of the rounds.

pytest-agentctx is measured twice per file: ``load_cassette(path)`` (the interactions) and
``Cassette(path)`` (also the index that matches requests). Each YAML file is read three
ways, as a pytest session finds it:

- **no cache**: outside pytest, or under ``-p no:cacheprovider``: parsed from the YAML;
- **first read**: pytest's cache folder holds no entry yet (a fresh checkout, a CI job
  without a kept cache, the cassette just changed): parsed, and the entry written;
- **cache hit**: the entry a previous run wrote (docs/reference/cassettes.md, "Reading YAML
  cassettes fast"), read instead of the YAML.

The vcrpy file is also read as the package read YAML before (``PyYAML CSafeLoader``:
``yaml.load`` with libyaml's loader, then the same conversion), by vcrpy's
``Cassette.load``, and by cassetter (``cassetter._core.Cassette.load``, its Rust loader,
and ``cassetter.cassette.Cassette.load``, what its pytest plugin calls) in its own
virtualenv (``--setup-cassetter`` in bench_cassettes.py creates it). The ratios are to
cassetter's Rust loader. cassetter refuses a file of more than 250,000 YAML nodes ("budget
breached: Nodes"), which 5,000 interactions of this traffic exceed (some 58 nodes each):
then it reads a file of 4,300 interactions instead, and its times are scaled to 5,000
(marked ``*``).

Wall time is what the table compares; the CPU time of the same reads is beside it, as a
check when the machine is busy (a read that waited shows more wall than CPU time).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_cassettes as traffic  # noqa: E402

THIS = Path(__file__).resolve()
SIZES = (1000, 5000)
#: About the most interactions of this traffic cassetter reads (its budget: 250,000 YAML
#: nodes, some 58 an interaction; 4,400 are refused).
CASSETTER_LIMIT = 4300
FORMATS = ("json", "yaml", "vcr")
FORMAT_NAMES = {"json": "its JSON", "yaml": "its YAML", "vcr": "vcrpy's YAML"}
#: cassetter's reads (bench_cassettes.py's worker kinds), fastest first.
CASSETTER_READS = {
    "cassetter-core": "cassetter (Rust loader)",
    "cassetter-full": "cassetter Cassette.load",
}
#: How each state of pytest's cache shows in a variant's name.
STATES = {"off": ", no cache", "first": ", first read", "hit": ", cache hit"}


# -- one read, in a fresh process ----------------------------------------------------------


def _reader(kind: str, path: Path) -> Callable[[], int]:
    """The read of ``kind``, its imports done."""
    if kind in ("store", "safe-loader"):
        from pytest_agentctx.traffic.cassettes import load_cassette, readcache, yamlread

        del readcache  # imported before the clock, as a session has it
        if kind == "safe-loader":  # the package's reading before yamlread
            yamlread.load = lambda text, where="": yamlread.safe_load(text)
        return lambda: len(load_cassette(path))
    if kind == "cassette":
        from pytest_agentctx.traffic.cassettes import Cassette, readcache, yamlread

        del readcache, yamlread  # imported before the clock, as a session has them
        return lambda: len(Cassette(path).loaded)
    if kind == "vcrpy":
        from vcr.cassette import Cassette as VcrCassette

        return lambda: len(VcrCassette.load(path=str(path)))
    raise ValueError(kind)


def worker_read(payload: dict[str, Any]) -> dict[str, Any]:
    """One cold read: ``kind`` of ``path``, with pytest's cache folder ``cache`` (or none)."""
    path = Path(payload["path"])
    read = _reader(payload["kind"], path)
    if payload.get("cache"):
        from pytest_agentctx.redaction.active import SessionSecrets, set_active
        from pytest_agentctx.traffic.cassettes import readcache

        folder = Path(payload["cache"])
        readcache.use_folder(lambda: folder)  # as the plugin sets it in a session
        set_active(SessionSecrets())
    gc.collect()
    cpu_started = time.process_time()
    started = time.perf_counter()
    count = read()
    return {
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu_started,
        "count": count,
    }


def _run(python: str, payload: dict[str, Any], script: Path = THIS, kind: str = "read") -> Any:
    """A worker's answer: ``kind`` run by ``script`` in a fresh ``python``."""
    command = [python, str(script), "--worker", kind]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [*command, json.dumps(payload)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=traffic.ROOT,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{payload} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the variants --------------------------------------------------------------------------


class Variant:
    """One way of reading one file, run once per round."""

    def __init__(self, name: str, fmt: str, run: Callable[[], dict[str, Any]]) -> None:
        self.name, self.format, self._run = name, fmt, run
        self.times: list[float] = []
        self.cpu: list[float] = []
        self.error: str | None = None
        self.count: int | None = None
        self.scale = 1.0  # cassetter read a smaller file: its time scaled to the size
        self.refusal: str | None = None  # why it refused the file of the size

    def run(self) -> None:
        if self.error:
            return
        result = self._run()
        if "error" in result:
            self.error = result["error"]
            return
        self.times.append(result["seconds"])
        self.cpu.append(result["cpu"])
        self.count = result["count"]

    @property
    def median(self) -> float | None:
        return traffic._median(self.times) * self.scale if self.times else None


def _ours(name: str, fmt: str, kind: str, path: Path, cache: str, work: Path) -> Variant:
    """pytest-agentctx's read; ``cache``: "off", "first" (an empty folder each time) or
    "hit" (a folder that a first read filled)."""
    runs = iter(range(10**6))
    warm = work / f"cache-{fmt}-{path.stem}"

    def run() -> dict[str, Any]:
        payload: dict[str, Any] = {"kind": kind, "path": str(path)}
        if cache == "first":
            payload["cache"] = str(work / f"first-{fmt}-{kind}-{next(runs)}")
        elif cache == "hit":
            if not warm.exists():
                _run(sys.executable, {**payload, "cache": str(warm)})
            payload["cache"] = str(warm)
        result: dict[str, Any] = _run(sys.executable, payload)
        return result

    return Variant(name, fmt, run)


def _cassetter(python: str, kind: str, path: Path) -> Callable[[], dict[str, Any]]:
    """cassetter's read, by bench_cassettes.py's worker in cassetter's virtualenv."""
    script = HERE / "bench_cassettes.py"
    return lambda: _run(python, {"kind": kind, "path": str(path)}, script, "load")


def variants(work: Path, size: int, cassetter: str | None) -> list[Variant]:
    paths = {fmt: work / f"{fmt}-{size}.{'json' if fmt == 'json' else 'yaml'}" for fmt in FORMATS}
    traffic.write_ours(paths["json"], size)
    traffic.write_ours(paths["yaml"], size)
    traffic.write_vcr(paths["vcr"], size)
    out: list[Variant] = []
    for fmt in FORMATS:
        for kind, label in (("store", "load_cassette"), ("cassette", "Cassette")):
            caches = ("off",) if fmt == "json" else ("off", "first", "hit")
            for cache in caches:
                note = STATES[cache] if fmt != "json" else ""
                name = f"pytest-agentctx {label}, {FORMAT_NAMES[fmt]}{note}"
                out.append(_ours(name, fmt, kind, paths[fmt], cache, work))
    before = "pytest-agentctx load_cassette, vcrpy's YAML, PyYAML CSafeLoader (before)"
    out.append(_ours(before, "vcr", "safe-loader", paths["vcr"], "off", work))
    vcr_path = paths["vcr"]
    out.append(
        Variant(
            "vcrpy Cassette.load",
            "vcr",
            lambda: _run(sys.executable, {"kind": "vcrpy", "path": str(vcr_path)}),
        )
    )
    if cassetter:
        for kind, name in CASSETTER_READS.items():
            out.append(Variant(name, "vcr", _cassetter(cassetter, kind, vcr_path)))
    return out


def _fit_cassetter(work: Path, size: int, found: list[Variant], python: str) -> None:
    """A cassetter variant that refused the file reads the largest it can instead."""
    for variant in found:
        if variant.name not in CASSETTER_READS.values() or not variant.error:
            continue
        if size <= CASSETTER_LIMIT:
            continue
        smaller = work / f"vcr-{CASSETTER_LIMIT}.yaml"
        if not smaller.exists():
            traffic.write_vcr(smaller, CASSETTER_LIMIT)
        kind = next(k for k, name in CASSETTER_READS.items() if name == variant.name)
        variant.refusal, variant.error = variant.error, None
        variant._run = _cassetter(python, kind, smaller)
        variant.scale = size / CASSETTER_LIMIT
        variant.name += "*"


# -- the report ----------------------------------------------------------------------------


def _baseline(found: list[Variant]) -> Variant | None:
    """cassetter's Rust loader (its fastest read), else its full load."""
    for name in CASSETTER_READS.values():
        for variant in found:
            if variant.name.rstrip("*") == name and variant.times:
                return variant
    return None


def _table(size: int, found: list[Variant]) -> str:
    base = _baseline(found)
    rows = []
    for variant in found:
        cell = traffic._ms(variant.median)
        best = traffic._ms(min(variant.times) * variant.scale) if variant.times else "n/a"
        if variant.error:
            cell = f"refused: {variant.error}"
        ratio = traffic._ratio(variant.median, base.median if base else None)
        cpu = traffic._ms(traffic._median(variant.cpu) * variant.scale) if variant.cpu else "n/a"
        rows.append([variant.name, cell, best, ratio, cpu, str(variant.count or "")])
    header = ["read (cold, fresh process)", "median", "best", "/ cassetter", "CPU", "read"]
    return f"### {size:,} interactions\n\n" + traffic._table(header, rows)


def _verdicts(results: dict[int, list[Variant]]) -> list[str]:
    """Per size and format, whether pytest-agentctx's slower read (load_cassette or
    Cassette) is no slower than cassetter's, in each state of pytest's cache."""
    lines = []
    for size, found in results.items():
        base = _baseline(found)
        if base is None or base.median is None:
            lines.append(f"- {size:,}: cassetter not measured, no verdict")
            continue
        for fmt in FORMATS:
            parts = []
            for state in ("",) if fmt == "json" else tuple(STATES.values()):
                medians = [
                    v.median
                    for v in found
                    if v.format == fmt
                    and v.name.startswith("pytest-agentctx")
                    and "(before)" not in v.name
                    and v.name.endswith(state)
                    and v.median is not None
                ]
                if not medians:
                    continue
                worst = max(medians)
                verdict = "met" if worst <= base.median else "not met"
                label = state.strip(", ") or "read"
                parts.append(f"{label}: {verdict} ({traffic._ratio(worst, base.median)})")
            lines.append(f"- {size:,}, {FORMAT_NAMES[fmt]}: " + "; ".join(parts))
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 interactions, 2 rounds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cassetter-python", default=traffic.DEFAULT_CASSETTER_PYTHON)
    parser.add_argument("--json", metavar="PATH", help="also write the raw figures here")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        traffic._emit(worker_read(json.loads(args.worker[1])))
        return
    started, load_before = time.perf_counter(), traffic._load_average()
    sizes, rounds = ((1000,), 2) if args.quick else (SIZES, args.rounds)
    cassetter: str | None = args.cassetter_python
    versions = None
    if cassetter and Path(cassetter).exists():
        versions = traffic._run_worker(cassetter, "versions", {}, 60)
    else:
        cassetter = None
    results: dict[int, list[Variant]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cassette-read-") as temp:
        for size in sizes:
            work = Path(temp) / str(size)
            work.mkdir()
            found = variants(work, size, cassetter)
            for round_index in range(rounds):
                shift = round_index % len(found)
                for variant in found[shift:] + found[:shift]:
                    variant.run()
                if round_index == 0 and cassetter:
                    _fit_cassetter(work, size, found, cassetter)
                print(f"  {size}: round {round_index + 1} of {rounds}", file=sys.stderr)
            results[size] = found
    import yaml

    extra = [
        ("libyaml (PyYAML's C parser)", "yes" if yaml.__with_libyaml__ else "no"),
        ("rounds", str(rounds)),
        ("load average before / after", f"{load_before} / {traffic._load_average()}"),
        ("elapsed", f"{time.perf_counter() - started:.0f} s"),
    ]
    print("## Reading a cassette cold\n")
    for size, found in results.items():
        print(_table(size, found) + "\n")
    refusals = [
        f"- {v.name.rstrip('*')} refused {size:,} interactions: {v.refusal}; measured on "
        f"{CASSETTER_LIMIT:,} and scaled to {size:,} (*)"
        for size, found in results.items()
        for v in found
        if v.refusal
    ]
    print("### Verdicts (no slower than cassetter's Rust loader)\n")
    print("\n".join(_verdicts(results) + refusals) + "\n")
    print(traffic._facts(versions, extra))
    if args.json:
        raw = {
            str(size): {
                v.name: {
                    "times": v.times,
                    "cpu": v.cpu,
                    "scale": v.scale,
                    "error": v.error,
                    "refusal": v.refusal,
                    "count": v.count,
                }
                for v in found
            }
            for size, found in results.items()
        }
        Path(args.json).write_text(json.dumps(raw, indent=2) + "\n")


if __name__ == "__main__":
    main()
