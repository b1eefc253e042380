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


def _corpus_reader(kind: str, path: Path) -> Callable[[], int]:
    """The read of ``kind`` (one of :data:`CORPUS_KINDS`), in this virtualenv."""
    if kind == "cassetter-core":
        from cassetter._core import Cassette as RustCassette

        return lambda: len(RustCassette.load(str(path)).interactions)
    if kind == "cassetter-full":
        from cassetter.cassette import Cassette as CassetterCassette
        from cassetter.recording import RecordMode

        def full() -> int:
            cassette = CassetterCassette(str(path), record_mode=RecordMode.NONE)
            cassette.load()
            return len(cassette.interactions)

        return full
    return _reader(kind, path)


def worker_corpus(payload: dict[str, Any]) -> dict[str, Any]:
    """Each file of ``paths`` read once, cold (the first read of it in this process), by
    ``kind``, with pytest's cache folder ``cache`` (or none): the time of each read, or
    the error of a file the reader refused."""
    paths = [Path(path) for path in payload["paths"]]
    reads = {path: _corpus_reader(payload["kind"], path) for path in paths}
    if payload.get("cache"):
        from pytest_agentctx.redaction.active import SessionSecrets, set_active
        from pytest_agentctx.traffic.cassettes import readcache

        folder = Path(payload["cache"])
        readcache.use_folder(lambda: folder)  # as the plugin sets it in a session
        set_active(SessionSecrets())
    times: dict[str, float] = {}
    errors: dict[str, str] = {}
    gc.collect()
    for path, read in reads.items():
        started = time.perf_counter()
        try:
            read()
        except Exception as exc:  # a file this reader refuses: noted, not timed
            errors[path.name] = f"{type(exc).__name__}: {exc}"[:200]
            continue
        times[path.name] = time.perf_counter() - started
    return {"times": times, "errors": errors}


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


# -- the corpus of real cassettes ----------------------------------------------------------

#: The shared corpus of real vcrpy cassettes, beside the checkout.
DEFAULT_CORPUS = traffic.ROOT.parent / "shared" / "corpus"
#: The reads of the corpus: (label, worker kind, pytest's cache, python: ours or
#: cassetter's, files: as they are or "converted" by ``convert_vcr_yaml``).
CORPUS_KINDS = (
    ("pytest-agentctx load_cassette, no cache", "store", "off", "ours", "yaml"),
    ("pytest-agentctx load_cassette, first read", "store", "first", "ours", "yaml"),
    ("pytest-agentctx load_cassette, cache hit", "store", "hit", "ours", "yaml"),
    ("pytest-agentctx Cassette, no cache", "cassette", "off", "ours", "yaml"),
    ("pytest-agentctx Cassette, first read", "cassette", "first", "ours", "yaml"),
    ("pytest-agentctx Cassette, cache hit", "cassette", "hit", "ours", "yaml"),
    ("pytest-agentctx load_cassette, converted, first read", "store", "first", "ours", "converted"),
    ("pytest-agentctx Cassette, converted, first read", "cassette", "first", "ours", "converted"),
    ("vcrpy Cassette.load", "vcrpy", "off", "ours", "yaml"),
    ("vcrpy Cassette.load, converted", "vcrpy", "off", "ours", "converted"),
    ("cassetter (Rust loader)", "cassetter-core", "off", "cassetter", "yaml"),
    ("cassetter Cassette.load", "cassetter-full", "off", "cassetter", "yaml"),
)


def _converted(paths: list[Path], folder: Path) -> tuple[list[Path], int]:
    """Copies of ``paths`` in ``folder``, rewritten in JSON where ``convert_vcr_yaml``
    can (what the migrate command does once); how many were."""
    import shutil

    from pytest_agentctx.traffic.cassettes.vcr import convert_vcr_yaml

    folder.mkdir()
    copies = []
    for path in paths:
        copy = folder / path.name
        shutil.copyfile(path, copy)
        copies.append(copy)
    return copies, sum(convert_vcr_yaml(copy) for copy in copies)


def run_corpus(folder: Path, rounds: int, cassetter: str | None, raw: str | None) -> None:
    """Every file of ``folder`` read cold by each of :data:`CORPUS_KINDS`, ``rounds``
    times interleaved; prints the table."""
    started, load_before = time.perf_counter(), traffic._load_average()
    paths = sorted(folder.glob("*.yaml"))
    if not paths:
        raise SystemExit(f"{folder}: no .yaml cassettes; give the corpus with --corpus DIR")
    if not (cassetter and Path(cassetter).exists()):
        raise SystemExit(
            f"cassetter's virtualenv {cassetter} is missing: "
            "run benchmarks/bench_cassettes.py --setup-cassetter first"
        )
    versions = traffic._run_worker(cassetter, "versions", {}, 60)
    found: dict[str, list[dict[str, Any]]] = {kind[0]: [] for kind in CORPUS_KINDS}
    with tempfile.TemporaryDirectory(prefix="bench-corpus-read-") as temp:
        work = Path(temp)
        converted, count = _converted(paths, work / "converted")
        files = {"yaml": paths, "converted": converted}
        runs = iter(range(10**6))
        for round_index in range(rounds):
            shift = round_index % len(CORPUS_KINDS)
            for label, kind, cache, python, source in CORPUS_KINDS[shift:] + CORPUS_KINDS[:shift]:
                payload: dict[str, Any] = {
                    "kind": kind,
                    "paths": [str(p) for p in files[source]],
                }
                if cache == "first":
                    payload["cache"] = str(work / f"first-{next(runs)}")
                elif cache == "hit":
                    payload["cache"] = str(work / f"hit-{kind}-{source}")
                    if round_index == 0:  # filled once, by a read before
                        _run(sys.executable, payload, kind="corpus")
                runner = cassetter if python == "cassetter" else sys.executable
                found[label].append(_run(runner, payload, kind="corpus"))
            print(f"  corpus: round {round_index + 1} of {rounds}", file=sys.stderr)
        json_names = {p.name for p in converted if p.read_bytes().startswith(b"{")}
    print(_corpus_report(paths, found, rounds))
    print(_converted_report(found, json_names))
    extra = [
        (
            "corpus",
            f"{folder}: {len(paths)} files, {sum(p.stat().st_size for p in paths):,} B",
        ),
        (
            "converted",
            f"{count} of {len(paths)} files (the others: !!binary bodies that are no UTF-8 "
            "text once decoded, or values JSON cannot say as YAML reads them)",
        ),
        ("rounds", str(rounds)),
        ("load average before / after", f"{load_before} / {traffic._load_average()}"),
        ("elapsed", f"{time.perf_counter() - started:.0f} s"),
    ]
    print(traffic._facts(versions, extra))
    if raw:
        Path(raw).write_text(json.dumps(found, indent=2) + "\n")


def _converted_report(found: dict[str, list[dict[str, Any]]], names: set[str]) -> str:
    """The sums over the files ``convert_vcr_yaml`` rewrote in JSON only."""
    base_runs = found["cassetter (Rust loader)"]
    rows = []
    for label in (
        "pytest-agentctx load_cassette, no cache",
        "pytest-agentctx load_cassette, converted, first read",
        "pytest-agentctx Cassette, converted, first read",
        "cassetter (Rust loader)",
    ):
        runs = found[label]
        read = [n for n in sorted(names) if all(n in run["times"] for run in runs + base_runs)]
        total = sum(traffic._median([run["times"][n] for run in runs]) for n in read)
        base = sum(traffic._median([run["times"][n] for run in base_runs]) for n in read)
        rows.append([label, str(len(read)), traffic._ms(total), traffic._ratio(total, base)])
    header = ["read", "files", "sum of the files' times", "/ cassetter (same files)"]
    title = f"### The {len(names)} files converted to JSON only\n"
    return "\n".join([title, traffic._table(header, rows), ""])


def _corpus_report(paths: list[Path], found: dict[str, list[dict[str, Any]]], rounds: int) -> str:
    """The table: per reader, the sum over the files every reader read of each file's
    median time, its ratio to cassetter's Rust loader, and the per-file ratios."""
    # the files that pytest-agentctx and cassetter both read (vcrpy's refusals are its own)
    refused = {
        name
        for label, runs in found.items()
        if not label.startswith("vcrpy")
        for run in runs
        for name in run["errors"]
    }
    common = [p.name for p in paths if p.name not in refused]
    medians = {
        label: {
            name: traffic._median([run["times"][name] for run in runs])
            for name in common
            if all(name in run["times"] for run in runs)
        }
        for label, runs in found.items()
    }
    base = medians["cassetter (Rust loader)"]
    rows = []
    for label, per_file in medians.items():
        total = sum(per_file.values())
        ratios = sorted(per_file[name] / base[name] for name in per_file)
        missing = len(common) - len(per_file)
        rows.append(
            [
                label,
                f"{len(per_file)}" + (f" ({missing} refused)" if missing else ""),
                traffic._ms(total),
                traffic._ratio(total, sum(base[name] for name in per_file)),
                f"{traffic._median(ratios):.2f}x",
                str(sum(1 for name in per_file if per_file[name] <= base[name])),
            ]
        )
    header = [
        "read (each file cold, fresh process)",
        "files read",
        "sum of the files' times",
        "/ cassetter (same files)",
        "median file ratio",
        "files no slower",
    ]
    notes = [
        f"- {name}: refused by {label}: {run['errors'][name]}"
        for label, runs in found.items()
        for name in sorted({n for run in runs for n in run["errors"]})
        for run in runs[:1]
        if name in run["errors"]
    ]
    title = (
        f"## Reading the corpus cold: {len(common)} of {len(paths)} real vcrpy cassettes "
        f"(each file's median of {rounds} rounds)\n"
    )
    return "\n".join([title, traffic._table(header, rows), "", *notes, ""])


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
    parser.add_argument(
        "--corpus",
        metavar="DIR",
        nargs="?",
        const=str(DEFAULT_CORPUS),
        help=f"read the vcrpy cassettes of DIR instead (default {DEFAULT_CORPUS})",
    )
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker = worker_corpus if args.worker[0] == "corpus" else worker_read
        traffic._emit(worker(json.loads(args.worker[1])))
        return
    if args.corpus:
        run_corpus(Path(args.corpus), args.rounds, args.cassetter_python, args.json)
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
