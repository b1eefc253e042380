"""What it costs to freeze the wall clock for one test, with the LLM SDKs imported.

freezegun's ``start()`` walks every loaded module and patches the attributes that point at
the real ``datetime``/``time`` functions. The first start lists every attribute of every
module (cold: it builds freezegun's module cache); every later start still walks all
modules and hashes each one's ``dir()`` to validate that cache (warm). ``openai`` and
``anthropic`` load thousands of modules, and a test suite pays the warm cost on every test
that freezes time.

Three scenarios, each in a fresh subprocess (so the cold start is really cold) with the
same modules imported (pytest, openai, anthropic and their clients' resources,
pytest_agentctx, freezegun):

* ``FrozenClock``: ``pytest_agentctx.freeze.FrozenClock()`` (real asyncio time and a
  default ignore list of the standard library and of known libraries).
* ``freeze_time(real_asyncio=True)``: ``freezegun.freeze_time("2025-01-01",
  real_asyncio=True)``, the setting that keeps ``asyncio.sleep`` and the SDKs' retries alive.
* ``freeze_time()``: ``freezegun.freeze_time("2025-01-01")`` with freezegun's defaults.

One "per test" cost is: build the freezer, ``start()``, ``stop()``. The subprocess prints
one JSON object; :func:`run` collects them.

Also measured (informational): the cost of one ``datetime.now()`` from a user module while
the clock is frozen. freezegun checks the caller's stack against the ignore list on every
call, so a long ignore list makes each call dearer.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

FULL_RUNS = 50
QUICK_RUNS = 10
NOW_CALLS = 2_000
FREEZE_AT = "2025-01-01"

# freezegun swaps time.perf_counter, and every module attribute bound to it, while the
# clock is frozen. A reference kept inside a container is not touched: time with this one.
_REAL: dict[str, Callable[[], float]] = {"perf_counter": time.perf_counter}


def _clock() -> float:
    return _REAL["perf_counter"]()


class _Freezer(Protocol):
    def start(self) -> object: ...

    def stop(self) -> None: ...


#: Scenario key -> label shown in the table.
SCENARIOS: dict[str, str] = {
    "agentctx": "FrozenClock()",
    "freezegun_real_asyncio": 'freeze_time("2025-01-01", real_asyncio=True)',
    "freezegun_default": 'freeze_time("2025-01-01")',
}


# -- inside the subprocess ----------------------------------------------------------------


def _load_realistic_modules() -> None:
    """Import what a test session of an SDK-based agent has loaded."""
    import anthropic
    import openai
    import pytest  # noqa: F401  (every test session has it)

    import pytest_agentctx.freeze  # noqa: F401

    # The clients load their resource modules lazily; touch them. No request is made.
    oa = openai.AsyncOpenAI(api_key="benchmark-no-network", base_url="http://127.0.0.1:9")
    _ = (oa.chat.completions, oa.responses, oa.embeddings, oa.models)
    an = anthropic.AsyncAnthropic(api_key="benchmark-no-network", base_url="http://127.0.0.1:9")
    _ = (an.messages, an.models, an.beta)


def _factory(scenario: str) -> Callable[[], _Freezer]:
    from freezegun import freeze_time

    from pytest_agentctx.freeze import FrozenClock

    factories: dict[str, Callable[[], _Freezer]] = {
        "agentctx": lambda: FrozenClock(FREEZE_AT),
        "freezegun_real_asyncio": lambda: freeze_time(FREEZE_AT, real_asyncio=True),
        "freezegun_default": lambda: freeze_time(FREEZE_AT),
    }
    return factories[scenario]


def _now_cost_us(calls: int) -> float:
    """Microseconds per ``datetime.now()`` made from this (non-ignored) module."""
    from datetime import datetime

    start = _clock()
    for _ in range(calls):
        datetime.now()
    return (_clock() - start) / calls * 1e6


def measure(scenario: str, runs: int) -> dict[str, Any]:
    """Run one scenario in this process; meant to run in a fresh interpreter."""
    started = _clock()
    _load_realistic_modules()
    import_s = _clock() - started
    make = _factory(scenario)
    modules = len(sys.modules)

    # Cold: the first freeze of the process.
    freezer = make()
    t0 = _clock()
    freezer.start()
    t1 = _clock()
    now_cold_us = _now_cost_us(NOW_CALLS)
    t2 = _clock()
    freezer.stop()
    t3 = _clock()
    cold = {"start_ms": (t1 - t0) * 1e3, "stop_ms": (t3 - t2) * 1e3}

    # Warm: what every later test pays (build the freezer, start, stop).
    per_test: list[float] = []
    starts: list[float] = []
    for _ in range(runs):
        t0 = _clock()
        freezer = make()
        freezer.start()
        t1 = _clock()
        freezer.stop()
        t2 = _clock()
        per_test.append((t2 - t0) * 1e3)
        starts.append((t1 - t0) * 1e3)

    if len(sys.modules) != modules:
        raise AssertionError("modules were loaded during the measure; it is not steady")
    return {
        "scenario": scenario,
        "python": sys.version.split()[0],
        "modules": modules,
        "import_s": import_s,
        "cold_start_ms": cold["start_ms"],
        "cold_stop_ms": cold["stop_ms"],
        "runs": runs,
        "warm_mean_ms": statistics.fmean(per_test),
        "warm_median_ms": statistics.median(per_test),
        "warm_min_ms": min(per_test),
        "warm_max_ms": max(per_test),
        "warm_start_median_ms": statistics.median(starts),
        "now_us": now_cold_us,
    }


# -- in the parent ------------------------------------------------------------------------


@dataclass(frozen=True)
class FrozenClockResults:
    runs: int
    scenarios: list[dict[str, Any]]

    def by_key(self) -> dict[str, dict[str, Any]]:
        return {s["scenario"]: s for s in self.scenarios}

    def ratio(self, other: str, field: str) -> float:
        """How many times ``other``'s ``field`` is FrozenClock's."""
        found = self.by_key()
        return float(found[other][field]) / float(found["agentctx"][field])

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "scenarios": self.scenarios}


def run_scenario(scenario: str, runs: int, *, timeout: float = 300.0) -> dict[str, Any]:
    """Measure one scenario in a fresh interpreter and return its JSON result."""
    completed = subprocess.run(
        [sys.executable, __file__, "--scenario", scenario, "--runs", str(runs)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(
            f"scenario {scenario!r} failed with exit code {completed.returncode}:\n"
            f"{completed.stderr}"
        )
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def run(*, quick: bool = False) -> FrozenClockResults:
    """Every scenario, each in its own subprocess."""
    runs = QUICK_RUNS if quick else FULL_RUNS
    return FrozenClockResults(runs=runs, scenarios=[run_scenario(key, runs) for key in SCENARIOS])


def markdown(results: FrozenClockResults) -> str:
    """The results as a Markdown table and the ratios."""
    lines = [
        f"### Freezing the clock for one test, SDKs imported (warm: {results.runs} runs, "
        "each in-process after the cold one)",
        "",
        "| scenario | modules loaded | cold start | cold stop | warm per test, mean "
        "| warm per test, median | warm min / max | datetime.now() while frozen |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in results.scenarios:
        lines.append(
            f"| `{SCENARIOS[s['scenario']]}` | {s['modules']:,} | {s['cold_start_ms']:,.1f} ms "
            f"| {s['cold_stop_ms']:,.1f} ms | {s['warm_mean_ms']:,.2f} ms "
            f"| {s['warm_median_ms']:,.2f} ms "
            f"| {s['warm_min_ms']:,.2f} / {s['warm_max_ms']:,.2f} ms "
            f"| {s['now_us']:,.2f} µs |"
        )
    lines.append("")
    for key in ("freezegun_real_asyncio", "freezegun_default"):
        lines.append(
            f"`{SCENARIOS[key]}` / `FrozenClock()`: warm median "
            f"**{results.ratio(key, 'warm_median_ms'):.1f}x**, warm mean "
            f"{results.ratio(key, 'warm_mean_ms'):.1f}x, cold start "
            f"{results.ratio(key, 'cold_start_ms'):.1f}x, "
            f"datetime.now() {results.ratio(key, 'now_us'):.2f}x."
        )
        lines.append("")
    return "\n".join(lines).rstrip()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), help="measure one, print JSON")
    parser.add_argument("--runs", type=int, default=FULL_RUNS, help="warm runs per scenario")
    parser.add_argument("--quick", action="store_true", help="fewer warm runs")
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    args = parser.parse_args(argv)
    if args.scenario:
        print(json.dumps(measure(args.scenario, args.runs)))
        return
    results = run(quick=args.quick)
    print(json.dumps(results.to_json(), indent=2) if args.json else markdown(results))


if __name__ == "__main__":
    main()
