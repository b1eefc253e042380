"""The first read of the converted corpus counted in machine instructions, against cassetter.

    .venv/bin/python benchmarks/bench_corpus_instructions.py            # shared/corpus
    .venv/bin/python benchmarks/bench_corpus_instructions.py --corpus DIR
    .venv/bin/python benchmarks/bench_corpus_instructions.py --checkout ../other-worktree

The corpus's vcrpy cassettes are copied and rewritten in JSON by ``convert_vcr_yaml`` (the
files JSON cannot hold stay YAML and are left out); each of the converted files is then
read once, in one process, by ``load_cassette``, by ``Cassette`` and by cassetter's Rust
loader (on the original YAML, in its own virtualenv: ``bench_cassettes.py
--setup-cassetter``), the process run under valgrind's callgrind with Python's hash seed
fixed. The same process run without the reads is counted too; the difference is the
reads' cost, the same on every run whatever else the machine does (wall times on a
shared machine are not). Kernel time is not counted. Needs ``valgrind``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_cassettes as traffic  # noqa: E402

DEFAULT_CORPUS = traffic.ROOT.parent / "shared" / "corpus"
_WORKER = """
import sys
from pathlib import Path

kind, folder, original, read = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
names = sorted(p.name for p in folder.glob("*.yaml") if p.read_bytes().startswith(b"{"))
if kind == "cassetter":
    from cassetter._core import Cassette

    reads = [lambda n=n: Cassette.load(str(original / n)).interactions for n in names]
else:
    from pytest_agentctx.redaction.active import SessionSecrets, set_active
    from pytest_agentctx.traffic.cassettes import Cassette, load_cassette, readcache, yamlread

    cache = Path(sys.argv[5])
    readcache.use_folder(lambda: cache)
    set_active(SessionSecrets())
    if kind == "store":
        reads = [lambda n=n: load_cassette(folder / n) for n in names]
    else:
        reads = [lambda n=n: Cassette(folder / n).loaded for n in names]
if read == "read":
    for one in reads:
        one()
"""


def count(python: str, args: Sequence[str], env: dict[str, str]) -> int:
    """The instructions callgrind counts in ``python -c WORKER args``."""
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as temp:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={temp}/out",
                python,
                "-c",
                _WORKER,
                *args,
            ],
            env={**env, "PYTHONHASHSEED": "0"},
            cwd=temp,  # python -c puts its folder first on sys.path: not a checkout
            capture_output=True,
            text=True,
            timeout=900,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"callgrind failed ({done.returncode}): {done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--cassetter-python", default=traffic.DEFAULT_CASSETTER_PYTHON)
    parser.add_argument(
        "--checkout",
        type=Path,
        default=traffic.ROOT,
        help="the checkout whose package reads (default: this one), to count another commit",
    )
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind")
    from pytest_agentctx.traffic.cassettes.vcr import convert_vcr_yaml

    ours_env = {**os.environ, "PYTHONPATH": str(args.checkout)}
    theirs_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory(prefix="bench-instructions-corpus-") as temp:
        folder, cache = Path(temp) / "converted", Path(temp) / "cache"
        folder.mkdir()
        for path in sorted(args.corpus.glob("*.yaml")):
            shutil.copyfile(path, folder / path.name)
            convert_vcr_yaml(folder / path.name)
        files = sum(p.read_bytes().startswith(b"{") for p in folder.glob("*.yaml"))
        rows = []
        for label, kind, python, env in (
            (
                "pytest-agentctx load_cassette, converted, first read",
                "store",
                sys.executable,
                ours_env,
            ),
            (
                "pytest-agentctx Cassette, converted, first read",
                "cassette",
                sys.executable,
                ours_env,
            ),
            ("cassetter (Rust loader), the YAML", "cassetter", args.cassetter_python, theirs_env),
        ):
            common = [kind, str(folder), str(args.corpus)]
            read = count(python, [*common, "read", str(cache / f"{kind}-read")], env)
            idle = count(python, [*common, "none", str(cache / f"{kind}-none")], env)
            rows.append((label, read - idle))
    base = rows[-1][1]
    print(f"## The {files} converted corpus files, each read once: instructions (callgrind)\n")
    print(f"checkout: {args.checkout}\n")
    print("| read | instructions | / cassetter |")
    print("|---|---:|---:|")
    for label, instructions in rows:
        print(f"| {label} | {instructions / 1e6:,.1f} M | {instructions / base:.2f}x |")


if __name__ == "__main__":
    main()
