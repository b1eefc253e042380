"""Do the statistics of repeated runs and of a baseline comparison keep their promises?

A simulation, not a timing: every figure is a rate over simulated suites (10,000 per
setting; 1,000 with ``--quick``), drawn with ``random.Random`` seeded from the setting's
name, so a run gives the same figures on any machine.

1. **Coverage of the 95% intervals.** One test run ``n`` times (n = 5, 10, 20, 30, 50),
   each run passing with the true rate ``p`` (0.5, 0.8, 0.9, 0.95, 0.99), independently.
   For each suite, whether the interval of its passes (:func:`wilson`,
   :func:`clopper_pearson`, and the normal (Wald) :func:`normal_interval` beside them)
   holds ``p``. Reported: the mean coverage over the 25 cells and the worst cell, simulated
   and exact (the binomial probabilities of the counts whose interval holds ``p``, summed:
   what the simulation estimates, without its sampling noise). Target: at least 95%.
2. **Bias of the pass^k estimator.** The same runs (n = 5, 10, 20; k = 2, 3, 5 with
   k <= n; p = 0.5, 0.8, 0.9, 0.95): the mean of :func:`pass_hat_k` over the suites
   against ``p**k``, beside the plug-in ``(c/n)**k``. Reported: the largest ``|mean -
   p**k|`` over the cells, with the simulation's standard error there, and the exact bias.
   Target: under 0.005.
3. **The gate on a baseline comparison.** A suite is 100 tests. Each test has its own
   true pass rate, drawn per suite: with probability 0.7 a *solid* test, rate uniform in
   [0.97, 1.0]; else a *flaky* one, rate uniform in [0.5, 0.95] (mean rate about 0.91).
   Each test runs ``r`` times (r = 1, 3, 5) before and ``r`` times after, every run
   independent; repetition ``j`` of a test before is paired with its repetition ``j``
   after, so a comparison has ``100 r`` pairs. The gate rule simulated: the drop is
   ``(broke - fixed) / pairs``, and the gate fails when the drop is past a tolerance of 2
   points (``drop > 0.02``) **and** the exact McNemar test of the flips
   (:func:`mcnemar_exact`) gives ``p <= 0.05`` (:func:`check_drop`).

   - *A/A*: the same rates after as before; every failure is a false alarm. Target: at
     most 5%.
   - *10-point drop, spread*: every test's rate falls in proportion,
     ``p' = p (1 - 0.10 / mean rate)``, so the suite's mean rate falls by 10 points.
   - *10-point drop, concentrated*: tests picked at random break (rate 0 after) until
     their rates sum to 10 (the last one picked loses only the rest), so the mean rate
     falls by 10 points in a handful of tests: a regression that breaks some features.

   Power: the share of suites with a drop on which the gate fails. Target: at least 80%
   over 100 paired tests. Beside the gate: the tolerance alone (``drop > 0.02``, what a
   comparison of totals does), McNemar alone, the same gate with the one-sided McNemar
   p-value (half the two-sided one, for a drop), and the unpaired two-proportion z test
   (two-sided, 0.05) on the same runs.

    .venv/bin/python benchmarks/bench_stats.py            # 10,000 suites per setting
    .venv/bin/python benchmarks/bench_stats.py --quick    # 1,000
    .venv/bin/python benchmarks/bench_stats.py --json     # the figures as JSON
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections.abc import Callable
from statistics import NormalDist
from typing import Any

from pytest_agentctx.reports.estimators import (
    Interval,
    clopper_pearson,
    normal_interval,
    pass_hat_k,
    wilson,
)
from pytest_agentctx.reports.pairing import check_drop, mcnemar_exact

COVERAGE_NS = (5, 10, 20, 30, 50)
COVERAGE_RATES = (0.5, 0.8, 0.9, 0.95, 0.99)
BIAS_NS = (5, 10, 20)
BIAS_KS = (2, 3, 5)
BIAS_RATES = (0.5, 0.8, 0.9, 0.95)
TESTS = 100
REPETITIONS = (1, 3, 5)
TOLERANCE = 0.02
LEVEL = 0.05
DROP = 0.10
INTERVALS: dict[str, Callable[[int, int], Interval]] = {
    "Wilson": wilson,
    "Clopper-Pearson": clopper_pearson,
    "normal (Wald)": normal_interval,
}


def passes(generator: random.Random, n: int, rate: float) -> int:
    draw = generator.random
    return sum(draw() < rate for _ in range(n))


def binomial_pmf(n: int, k: int, rate: float) -> float:
    return math.comb(n, k) * rate**k * (1 - rate) ** (n - k)


def coverage(suites: int) -> dict[str, Any]:
    """Simulated and exact coverage of each interval, per (n, rate) cell."""
    cells: dict[str, list[dict[str, float]]] = {name: [] for name in INTERVALS}
    for n in COVERAGE_NS:
        bounds = {
            name: [interval(x, n) for x in range(n + 1)] for name, interval in INTERVALS.items()
        }
        for rate in COVERAGE_RATES:
            generator = random.Random(f"coverage-{n}-{rate}")
            counts = [0] * (n + 1)
            for _ in range(suites):
                counts[passes(generator, n, rate)] += 1
            for name, table in bounds.items():
                held = [table[x].contains(rate) for x in range(n + 1)]
                simulated = sum(c for c, h in zip(counts, held, strict=True) if h) / suites
                exact = math.fsum(binomial_pmf(n, x, rate) for x in range(n + 1) if held[x])
                cells[name].append({"n": n, "rate": rate, "simulated": simulated, "exact": exact})
    return {
        name: {
            "mean_simulated": sum(c["simulated"] for c in found) / len(found),
            "mean_exact": math.fsum(c["exact"] for c in found) / len(found),
            "worst_simulated": min(found, key=lambda c: c["simulated"]),
            "worst_exact": min(found, key=lambda c: c["exact"]),
            "cells_below_95_exact": sum(c["exact"] < 0.95 for c in found),
            "cells": found,
        }
        for name, found in cells.items()
    }


def bias(suites: int) -> dict[str, Any]:
    """The mean of pass^k's unbiased estimate and of the plug-in, against rate**k."""
    cells = []
    for n in BIAS_NS:
        for rate in BIAS_RATES:
            generator = random.Random(f"bias-{n}-{rate}")
            draws = [passes(generator, n, rate) for _ in range(suites)]
            for k in (k for k in BIAS_KS if k <= n):
                truth = rate**k
                unbiased = [pass_hat_k(n, c, k) for c in draws]
                mean = math.fsum(unbiased) / suites
                spread = math.sqrt(math.fsum((u - mean) ** 2 for u in unbiased) / (suites - 1))
                plug_in = math.fsum((c / n) ** k for c in draws) / suites
                exact = math.fsum(
                    binomial_pmf(n, c, rate) * pass_hat_k(n, c, k) for c in range(n + 1)
                )
                exact_plug_in = math.fsum(
                    binomial_pmf(n, c, rate) * (c / n) ** k for c in range(n + 1)
                )
                cells.append(
                    {
                        "n": n,
                        "k": k,
                        "rate": rate,
                        "truth": truth,
                        "unbiased_bias": mean - truth,
                        "unbiased_standard_error": spread / math.sqrt(suites),
                        "unbiased_exact_bias": exact - truth,
                        "plug_in_bias": plug_in - truth,
                        "plug_in_exact_bias": exact_plug_in - truth,
                    }
                )
    for cell in cells:
        cell["unbiased_z"] = cell["unbiased_bias"] / cell["unbiased_standard_error"]
    worst = max(cells, key=lambda c: abs(c["unbiased_bias"]))
    worst_plug_in = max(cells, key=lambda c: abs(c["plug_in_bias"]))
    return {
        "worst_unbiased": worst,
        "worst_plug_in": worst_plug_in,
        "max_exact_unbiased_bias": max(abs(c["unbiased_exact_bias"]) for c in cells),
        "max_abs_unbiased_z": max(abs(c["unbiased_z"]) for c in cells),
        "cells_unbiased_below_0_005": sum(abs(c["unbiased_bias"]) < 0.005 for c in cells),
        "max_exact_plug_in_bias": max(abs(c["plug_in_exact_bias"]) for c in cells),
        "cells": cells,
    }


def suite_rates(generator: random.Random) -> list[float]:
    """The true pass rates of a suite's tests: 70% solid, 30% flaky."""
    return [
        generator.uniform(0.97, 1.0) if generator.random() < 0.7 else generator.uniform(0.5, 0.95)
        for _ in range(TESTS)
    ]


def spread_drop(rates: list[float], generator: random.Random) -> list[float]:
    factor = 1 - DROP / (sum(rates) / len(rates))
    return [rate * factor for rate in rates]


def concentrated_drop(rates: list[float], generator: random.Random) -> list[float]:
    after = list(rates)
    left = DROP * len(rates)
    for index in generator.sample(range(len(rates)), len(rates)):
        lost = min(after[index], left)
        after[index] -= lost
        left -= lost
        if left <= 1e-12:
            break
    return after


def same_rates(rates: list[float], generator: random.Random) -> list[float]:
    return rates


SCENARIOS: dict[str, Callable[[list[float], random.Random], list[float]]] = {
    "A/A (no change)": same_rates,
    "10-point drop, spread": spread_drop,
    "10-point drop, concentrated": concentrated_drop,
}
_Z = NormalDist()


def unpaired_p(passed_before: int, passed_after: int, runs: int) -> float:
    """The two-sided p-value of the unpaired two-proportion z test (pooled)."""
    pooled = (passed_before + passed_after) / (2 * runs)
    if pooled in (0.0, 1.0):
        return 1.0
    z = (passed_before - passed_after) / runs / math.sqrt(pooled * (1 - pooled) * 2 / runs)
    return 2 * (1 - _Z.cdf(abs(z)))


def one_comparison(
    generator: random.Random, scenario: Callable[..., list[float]], repetitions: int
) -> tuple[bool, bool, bool, bool, bool, float]:
    before_rates = suite_rates(generator)
    after_rates = scenario(before_rates, generator)
    draw = generator.random
    broke = fixed = passed_before = passed_after = 0
    for was, now in zip(before_rates, after_rates, strict=True):
        for _ in range(repetitions):
            before, after = draw() < was, draw() < now
            passed_before += before
            passed_after += after
            if before != after:
                if before:
                    broke += 1
                else:
                    fixed += 1
    pairs = TESTS * repetitions
    drop = (broke - fixed) / pairs
    p_value = mcnemar_exact(broke, fixed)
    check = check_drop(drop, TOLERANCE, p_value, LEVEL)
    # the one-sided p-value of a drop (broke > fixed): half the two-sided one, exactly
    one_sided = check_drop(drop, TOLERANCE, p_value / 2 if drop > 0 else 1.0, LEVEL)
    unpaired = (
        passed_after < passed_before and unpaired_p(passed_before, passed_after, pairs) <= LEVEL
    )
    true_drop = (sum(before_rates) - sum(after_rates)) / TESTS
    return (
        check.fails,
        check.past_tolerance,
        drop > 0 and check.significant,
        one_sided.fails,
        unpaired,
        true_drop,
    )


def gate(suites: int) -> list[dict[str, Any]]:
    rows = []
    for name, scenario in SCENARIOS.items():
        for repetitions in REPETITIONS:
            generator = random.Random(f"gate-{name}-{repetitions}")
            results = [one_comparison(generator, scenario, repetitions) for _ in range(suites)]
            rows.append(
                {
                    "scenario": name,
                    "repetitions": repetitions,
                    "pairs": TESTS * repetitions,
                    "gate": sum(r[0] for r in results) / suites,
                    "tolerance_only": sum(r[1] for r in results) / suites,
                    "mcnemar_only": sum(r[2] for r in results) / suites,
                    "gate_one_sided": sum(r[3] for r in results) / suites,
                    "unpaired_z": sum(r[4] for r in results) / suites,
                    "mean_true_drop": sum(r[5] for r in results) / suites,
                }
            )
    return rows


def run(suites: int) -> dict[str, Any]:
    started, started_cpu = time.perf_counter(), time.process_time()
    result = {"suites": suites, "coverage": coverage(suites), "bias": bias(suites)}
    result["gate"] = gate(suites)
    result["seconds"] = time.perf_counter() - started
    result["cpu_seconds"] = time.process_time() - started_cpu
    return result


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"### Coverage of the 95% intervals ({result['suites']:,} suites per cell; "
        f"n = {', '.join(map(str, COVERAGE_NS))}; rates {', '.join(map(str, COVERAGE_RATES))})",
        "",
        "| interval | mean coverage, simulated | worst cell, simulated | mean, exact | "
        "worst cell, exact | cells below 95%, exact |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, found in result["coverage"].items():
        worst, worst_exact = found["worst_simulated"], found["worst_exact"]
        lines.append(
            f"| {name} | {_percent(found['mean_simulated'])} | "
            f"{_percent(worst['simulated'])} (n={worst['n']}, p={worst['rate']}) | "
            f"{_percent(found['mean_exact'])} | {_percent(worst_exact['exact'])} "
            f"(n={worst_exact['n']}, p={worst_exact['rate']}) | "
            f"{found['cells_below_95_exact']} of {len(found['cells'])} |"
        )
    found = result["bias"]
    worst, plug_in = found["worst_unbiased"], found["worst_plug_in"]
    lines += [
        "",
        f"### Bias of pass^k ({result['suites']:,} suites per cell; n = "
        f"{', '.join(map(str, BIAS_NS))}, k = {', '.join(map(str, BIAS_KS))}, rates "
        f"{', '.join(map(str, BIAS_RATES))})",
        "",
        "| estimator | largest \\|mean - p^k\\|, simulated | its cell | largest exact bias |",
        "|---|---:|---|---:|",
        f"| C(c,k)/C(n,k) (pass_hat_k) | {abs(worst['unbiased_bias']):.4f} "
        f"(standard error {worst['unbiased_standard_error']:.4f}) | n={worst['n']}, "
        f"k={worst['k']}, p={worst['rate']} | {found['max_exact_unbiased_bias']:.1e} |",
        f"| (c/n)^k (plug-in) | {abs(plug_in['plug_in_bias']):.4f} | n={plug_in['n']}, "
        f"k={plug_in['k']}, p={plug_in['rate']} | {found['max_exact_plug_in_bias']:.4f} |",
        "",
        f"pass_hat_k: {found['cells_unbiased_below_0_005']} of {len(found['cells'])} cells "
        "under 0.005 simulated; the largest deviation over its standard error, over all "
        f"cells: {found['max_abs_unbiased_z']:.2f}.",
        "",
        f"### The gate on 100 paired tests ({result['suites']:,} suites per row; fails when the "
        f"drop > {TOLERANCE:g} and McNemar p <= {LEVEL:g})",
        "",
        "| scenario | runs per test | pairs | gate fails | tolerance alone | McNemar alone "
        "(drops) | gate, one-sided McNemar | unpaired z test (drops) | mean true drop |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["gate"]:
        lines.append(
            f"| {row['scenario']} | {row['repetitions']} | {row['pairs']} | "
            f"**{_percent(row['gate'])}** | {_percent(row['tolerance_only'])} | "
            f"{_percent(row['mcnemar_only'])} | {_percent(row['gate_one_sided'])} | "
            f"{_percent(row['unpaired_z'])} | "
            f"{row['mean_true_drop']:.3f} |"
        )
    lines += [
        "",
        f"Simulation time: {result['seconds']:.1f} s wall, {result['cpu_seconds']:.1f} s CPU.",
    ]
    return "\n".join(lines)


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 suites per setting")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = run(1_000 if args.quick else 10_000)
    print(json.dumps(result, indent=2) if args.json else markdown(result))


if __name__ == "__main__":
    cli()
