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

* ``FrozenClock``: ``pytest_agentctx.doubles.freeze.FrozenClock("2025-01-01")`` with its
  defaults (real asyncio time; the standard library and known libraries are left out of the walk).
* ``freeze_time(real_asyncio=True)``: ``freezegun.freeze_time("2025-01-01",
  real_asyncio=True)``, the setting that keeps ``asyncio.sleep`` and the SDKs' retries alive.
* ``freeze_time()``: ``freezegun.freeze_time("2025-01-01")`` with freezegun's defaults.

The cold measure is the first ``start()`` and ``stop()`` of the process. freezegun's first
start reads every attribute of every module it does not ignore, and the SDKs import many
modules lazily on attribute access, so it also imports them (the table shows how many).
The warm measure, one test's build of the freezer, ``start()`` and ``stop()``, runs twice:

* as loaded: on the modules the scenario's own first start left loaded (what a suite that
  uses only this freezer sees);
* same modules: after the scenario has read every attribute of every module itself, so all
  scenarios run on the same, larger set of modules (the conservative comparison: it makes
  ``FrozenClock`` walk the modules that only freezegun's first start imported).

The subprocess prints one JSON object; :func:`run` collects them.

Also measured (informational): the cost of one ``datetime.now()`` from a user module while
the clock is frozen (best of a few batches). freezegun checks the caller's stack against its
ignore list on every call, so the ignore list a freezer passes can make each call dearer.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

FULL_RUNS = 50
QUICK_RUNS = 10
NOW_CALLS = 4_000
NOW_BATCHES = 5
FREEZE_AT = "2025-01-01"

# freezegun swaps time.perf_counter, and every module attribute bound to it, while the
# clock is frozen. A reference kept inside a container is not touched: time with these.
_REAL: dict[str, Callable[[], float]] = {
    "perf_counter": time.perf_counter,
    "process_time": time.process_time,
}


def _clock() -> float:
    return _REAL["perf_counter"]()


def _cpu() -> float:
    """This process's CPU time: leaves out the time spent waiting for a core."""
    return _REAL["process_time"]()


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

    import pytest_agentctx.doubles.freeze  # noqa: F401

    # The clients load their resource modules lazily; touch them. No request is made.
    oa = openai.AsyncOpenAI(api_key="benchmark-no-network", base_url="http://127.0.0.1:9")
    _ = (oa.chat.completions, oa.responses, oa.embeddings, oa.models)
    an = anthropic.AsyncAnthropic(api_key="benchmark-no-network", base_url="http://127.0.0.1:9")
    _ = (an.messages, an.models, an.beta)


def _factory(scenario: str) -> Callable[[], _Freezer]:
    from freezegun import freeze_time

    from pytest_agentctx.doubles.freeze import FrozenClock

    factories: dict[str, Callable[[], _Freezer]] = {
        "agentctx": lambda: FrozenClock(FREEZE_AT),
        "freezegun_real_asyncio": lambda: freeze_time(FREEZE_AT, real_asyncio=True),
        "freezegun_default": lambda: freeze_time(FREEZE_AT),
    }
    return factories[scenario]


def _now_cost_us(calls: int = NOW_CALLS, batches: int = NOW_BATCHES) -> float:
    """Microseconds per ``datetime.now()`` made from this (non-ignored) module.

    The best of ``batches`` batches of ``calls`` calls.
    """
    from datetime import datetime

    best = float("inf")
    for _ in range(batches):
        start = _clock()
        for _ in range(calls):
            datetime.now()
        best = min(best, (_clock() - start) / calls * 1e6)
    return best


def _touch_all_modules() -> None:
    """Read every attribute of every loaded module until no new module gets imported.

    The SDKs load many modules lazily, on first attribute access; freezegun's first start
    reads every attribute of every module it does not ignore, so it imports them. Doing it
    here, in every scenario, gives all warm phases the same set of modules.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        count = -1
        while count != len(sys.modules):
            count = len(sys.modules)
            for module in list(sys.modules.values()):
                try:
                    names = dir(module)
                except Exception:
                    continue
                for name in names:
                    try:
                        getattr(module, name)
                    except Exception:
                        continue


def _warm(make: Callable[[], _Freezer], runs: int) -> tuple[list[float], list[float]]:
    """Milliseconds of wall and CPU time per (build, start, stop), after one untimed round.

    The untimed round lets freezegun refresh its cache for modules loaded since its last
    start, so the timed runs are the steady state.
    """
    freezer = make()
    freezer.start()
    freezer.stop()
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        wall, cpu = _clock(), _cpu()
        freezer = make()
        freezer.start()
        freezer.stop()
        walls.append((_clock() - wall) * 1e3)
        cpus.append((_cpu() - cpu) * 1e3)
    return walls, cpus


def _summary(prefix: str, timings: tuple[list[float], list[float]]) -> dict[str, float]:
    walls, cpus = timings
    return {
        f"{prefix}_mean_ms": statistics.fmean(walls),
        f"{prefix}_median_ms": statistics.median(walls),
        f"{prefix}_min_ms": min(walls),
        f"{prefix}_max_ms": max(walls),
        f"{prefix}_cpu_median_ms": statistics.median(cpus),
    }


def measure(scenario: str, runs: int) -> dict[str, Any]:
    """Run one scenario in this process; meant to run in a fresh interpreter."""
    started = _clock()
    _load_realistic_modules()
    import_s = _clock() - started
    make = _factory(scenario)
    modules_imported = len(sys.modules)

    # Cold: the first freeze of the process.
    freezer = make()
    t0, c0 = _clock(), _cpu()
    freezer.start()
    t1, c1 = _clock(), _cpu()
    now_us = _now_cost_us()
    t2 = _clock()
    freezer.stop()
    t3 = _clock()
    modules_after_cold = len(sys.modules)

    # Warm, as loaded: the modules this scenario's own first start left behind.
    as_loaded = _warm(make, runs)
    # Warm, same modules: every scenario on the same (largest) set of modules.
    _touch_all_modules()
    modules_warm = len(sys.modules)
    same = _warm(make, runs)

    return {
        "scenario": scenario,
        "modules_imported": modules_imported,
        "modules_after_cold": modules_after_cold,
        "modules_warm": modules_warm,
        "modules_warm_end": len(sys.modules),
        "import_s": import_s,
        "cold_start_ms": (t1 - t0) * 1e3,
        "cold_start_cpu_ms": (c1 - c0) * 1e3,
        "cold_stop_ms": (t3 - t2) * 1e3,
        "runs": runs,
        **_summary("warm_as_loaded", as_loaded),
        **_summary("warm", same),
        "now_us": now_us,
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
    script = str(Path(__file__).resolve())
    completed = subprocess.run(
        [sys.executable, script, "--scenario", scenario, "--runs", str(runs)],
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
        "### Freezing the clock for one test, SDKs imported",
        "",
        "Cold: the first start and stop in a fresh process. Warm: one test's build + start + "
        f"stop, {results.runs} runs, either on the modules the scenario's first start left "
        "loaded (as loaded) or on the same, larger set of modules in every scenario (same "
        "modules). Wall = time.perf_counter, CPU = time.process_time.",
        "",
        "| scenario | modules imported | imported by 1st start | cold start, wall / CPU "
        "| cold stop | warm median as loaded, wall / CPU | modules, same "
        "| warm median same modules, wall / CPU | warm mean / min / max, same "
        "| datetime.now() while frozen |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in results.scenarios:
        lines.append(
            f"| `{SCENARIOS[s['scenario']]}` | {s['modules_imported']:,} "
            f"| {s['modules_after_cold'] - s['modules_imported']:,} "
            f"| {s['cold_start_ms']:,.1f} / {s['cold_start_cpu_ms']:,.1f} ms "
            f"| {s['cold_stop_ms']:,.1f} ms "
            f"| {s['warm_as_loaded_median_ms']:,.2f} / "
            f"{s['warm_as_loaded_cpu_median_ms']:,.2f} ms "
            f"| {s['modules_warm']:,} "
            f"| {s['warm_median_ms']:,.2f} / {s['warm_cpu_median_ms']:,.2f} ms "
            f"| {s['warm_mean_ms']:,.1f} / {s['warm_min_ms']:,.1f} / {s['warm_max_ms']:,.1f} ms "
            f"| {s['now_us']:,.2f} µs |"
        )
    lines.append("")
    for key in ("freezegun_real_asyncio", "freezegun_default"):

        def ratio(field: str, key: str = key) -> str:
            return f"{results.ratio(key, field):.1f}x"

        lines += [
            f"`{SCENARIOS[key]}` / `FrozenClock()`, wall (CPU): cold start "
            f"**{ratio('cold_start_ms')}** ({ratio('cold_start_cpu_ms')}), warm median as "
            f"loaded **{ratio('warm_as_loaded_median_ms')}** "
            f"({ratio('warm_as_loaded_cpu_median_ms')}), warm median on the same modules "
            f"**{ratio('warm_median_ms')}** ({ratio('warm_cpu_median_ms')}), "
            f"datetime.now() while frozen {results.ratio(key, 'now_us'):.2f}x.",
            "",
        ]
    unsteady = [
        s["scenario"] for s in results.scenarios if s["modules_warm_end"] != s["modules_warm"]
    ]
    if unsteady:
        lines.append(f"Warning: modules were imported during the warm runs of {unsteady}.")
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
