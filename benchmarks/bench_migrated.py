"""A migrated suite: the same vcrpy cassettes replayed by pytest-recording and by pytest-agentctx.

    .venv/bin/python benchmarks/bench_migrated.py             # 200 tests, 3 rounds
    .venv/bin/python benchmarks/bench_migrated.py --quick     # 40 tests, 1 round

A generated project in the shape of a pytest-recording suite: ``--tests`` tests spread over
10 modules, each marked ``@pytest.mark.vcr`` and sending ``--requests`` distinct chat
completions through the openai SDK (on ``httpx2``). It is recorded once by
pytest-recording (``--record-mode=once``) against a loopback server on 127.0.0.1, which is
then stopped; the vcrpy cassettes (``cassettes/<module>/<test>.yaml``, the
``Authorization`` header kept, as vcrpy does by default) are then replayed, unchanged, by:

- **pytest-recording**: ``pytest -p no:agentctx --record-mode=none``;
- **pytest-agentctx, first run**: ``pytest -p no:recording`` with no ``.pytest_cache`` (a
  fresh checkout, CI's first run): every cassette read from its YAML;
- **pytest-agentctx, later runs**: the same with the ``.pytest_cache`` the run before left
  (a developer's next run, a CI job that keeps the cache and sets
  ``PYTEST_AGENTCTX_CACHE_KEY``): every cassette read from the read cache;
- both tools again on a copy of the project whose cassettes ``convert_vcr_yaml`` rewrote
  in JSON (what the migrate command does once): pytest-recording still replays them,
  pytest-agentctx reads them with orjson from its first run.

The test files are the pytest-recording suite's, untouched, with no conftest: the ini's
``agent_cassette_names = pytest-recording`` makes pytest-agentctx take the tests marked
``@pytest.mark.vcr`` as agent tests and find each one's cassette where pytest-recording
put it (pytest-recording ignores the option). Rounds are interleaved and the order
rotates; the table shows the median wall time of the whole pytest process and the CPU time
of its children.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_cassettes as traffic  # noqa: E402

MODULES = 10
#: Every port is the recording server's in the cassettes; nothing listens there on replay.
URL_ENV = "BENCH_LOOPBACK_URL"

_INI = """\
[pytest]
markers =
    vcr: pytest-recording's marker
agent_cassette_names = pytest-recording
"""

_MODULE = """\
import os

import httpx2
import openai
import pytest


def ask(test: str, requests: int) -> None:
    client = openai.OpenAI(
        api_key="{api_key}",
        base_url=os.environ["{url_env}"],
        max_retries=0,
        http_client=httpx2.Client(),
    )
    for request in range(requests):
        content = f"{{test}} request {{request}}"
        completion = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{{"role": "user", "content": content}}]
        )
        assert completion.choices[0].message.content == f"Answer to {{content}}"
"""


def write_project(root: Path, tests: int, requests: int) -> None:
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text(_INI)
    for module in range(MODULES):
        text = _MODULE.format(api_key=traffic.API_KEY, url_env=URL_ENV)
        for test in range(module, tests, MODULES):
            text += (
                f"\n\n@pytest.mark.vcr\ndef test_{test}() -> None:\n"
                f'    ask("module {module} test {test}", {requests})\n'
            )
        (root / f"test_module_{module}.py").write_text(text)


def run_pytest(root: Path, args: Sequence[str], url: str) -> dict[str, Any]:
    """One pytest run in a fresh process: its wall time, its CPU time, its summary line."""
    env = {**os.environ, URL_ENV: url, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in done.stdout.strip().splitlines() if line.strip()]
    summary = lines[-1] if lines else f"exit {done.returncode}"
    if done.returncode != 0:
        raise RuntimeError(f"pytest {' '.join(args)} failed:\n{done.stdout[-3000:]}")
    return {"wall": wall, "cpu": cpu, "summary": summary}


_VCR = ["-p", "no:agentctx", "--record-mode=none"]
_OURS = ["-p", "no:recording"]
#: (label, pytest arguments) of each replay; a key ending in ``-first`` starts with no
#: ``.pytest_cache``, one starting with ``converted-`` runs the copy of the project whose
#: cassettes ``convert_vcr_yaml`` rewrote in JSON (what the migrate command does once).
VARIANTS = {
    "vcr": ("pytest-recording `--record-mode=none`", _VCR),
    "ours-first": ("pytest-agentctx, first run (no .pytest_cache)", _OURS),
    "ours-later": ("pytest-agentctx, later run (read cache filled)", _OURS),
    "converted-vcr": ("pytest-recording, cassettes converted to JSON", _VCR),
    "converted-ours-first": ("pytest-agentctx, cassettes converted, first run", _OURS),
}


def _convert(root: Path) -> int:
    """The cassettes of the project at ``root`` rewritten in JSON; how many were."""
    from pytest_agentctx.traffic.cassettes.vcr import convert_vcr_yaml

    return sum(convert_vcr_yaml(path) for path in root.glob("cassettes/*/*.yaml"))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 tests, 1 round")
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--requests", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the raw figures here")
    args = parser.parse_args(argv)
    tests, rounds = (40, 1) if args.quick else (args.tests, args.rounds)
    started, load_before = time.perf_counter(), traffic._load_average()
    results: dict[str, list[dict[str, Any]]] = {key: [] for key in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bench-migrated-") as temp:
        root = Path(temp) / "project"
        write_project(root, tests, args.requests)
        with traffic.loopback_server() as server:
            url = server.base_url
            recorded = run_pytest(root, ["-p", "no:agentctx", "--record-mode=once"], url)
        cassettes = sorted(root.glob("cassettes/*/*.yaml"))
        interactions = traffic._count_interactions(cassettes)
        other = Path(temp) / "converted"
        shutil.copytree(root, other)
        converted = _convert(other)
        roots = {key: other if key.startswith("converted-") else root for key in VARIANTS}
        # The read cache's key: made once, in this run's own folder.
        os.environ["XDG_CONFIG_HOME"] = str(Path(temp) / "config")
        run_pytest(root, VARIANTS["ours-later"][1], url)  # warm-up; fills the cache
        for index in range(rounds):
            order = list(VARIANTS)
            order = order[index % len(order) :] + order[: index % len(order)]
            for key in order:
                if key.endswith("-first"):
                    shutil.rmtree(roots[key] / ".pytest_cache", ignore_errors=True)
                results[key].append(run_pytest(roots[key], VARIANTS[key][1], url))
            print(f"  round {index + 1} of {rounds}", file=sys.stderr)
    base = traffic._median([run["wall"] for run in results["vcr"]])
    rows = []
    for key, (label, arguments) in VARIANTS.items():
        runs = results[key]
        wall = traffic._median([run["wall"] for run in runs])
        cpu = traffic._median([run["cpu"] for run in runs])
        rows.append(
            [
                label,
                traffic._ms(wall),
                traffic._ms(min(run["wall"] for run in runs)),
                traffic._ratio(wall, base),
                traffic._ms(cpu),
                runs[-1]["summary"],
                "`pytest " + " ".join(arguments) + "`",
            ]
        )
    header = ["replay", "median", "best", "/ pytest-recording", "CPU", "outcome", "command"]
    print(
        f"## A migrated suite: {tests} tests, {args.requests} requests each, "
        f"{len(cassettes)} vcrpy cassettes ({interactions} interactions)\n"
    )
    print(traffic._table(header, rows) + "\n")
    facts = [
        ("recorded by", f"pytest-recording, `--record-mode=once`: {recorded['summary']}"),
        ("converted", f"{converted} of {len(cassettes)} cassettes, by `convert_vcr_yaml`"),
        ("rounds", str(rounds)),
        ("load average before / after", f"{load_before} / {traffic._load_average()}"),
        ("elapsed", f"{time.perf_counter() - started:.0f} s"),
    ]
    lines = traffic._facts(None, facts).splitlines()
    print("\n".join(line for line in lines if not line.startswith("| cassetter |")))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
