"""A replayed judged test against the same test with its judge answered by the fake model.

    .venv/bin/python benchmarks/bench_judge.py           # 7 rounds of 200 tests each
    .venv/bin/python benchmarks/bench_judge.py --quick   # 3 rounds of 50
    .venv/bin/python benchmarks/bench_judge.py --json

The test body, run in this process as the plugin runs a test's: its cassette loaded and
started, one agent call through ``openai.AsyncOpenAI`` (a chat completion), then
``Judge()(rubric, subject)``, the judge's call made under ``model_role("judge")`` through the
runtime's ``OpenAIChatProvider`` on the same client, the cassette stopped. Two variants:

- **judge replayed**: both calls replayed from the test's cassette (mode ``none``), the
  judge's matched only against the judge's recording;
- **judge by fake_llm**: the cassette holds the agent's call only; the judge's call is
  answered by a ``FakeLLM`` started for it (as a test that fakes its judge does).

Rounds interleave the variants (order rotated), so a busy machine slows them alike; the
figure is the median over rounds of the mean time per test, and the headline the ratio of
the two. The cassettes are recorded first against a LoopbackProvider on 127.0.0.1, then
replayed with that server stopped: nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx2  # noqa: E402
import openai  # noqa: E402

from pytest_agentctx import FakeLLM, Judge, LoopbackProvider, OpenAIChatProvider  # noqa: E402
from pytest_agentctx.traffic.cassettes import Cassette, RecordMode  # noqa: E402

RUBRIC = "The answer gives the temperature in Paris, in degrees."
ANSWER = "It is 18 degrees in Paris."
VERDICT = '{"score": 0.9, "rationale": "It gives 18 degrees."}'


async def judged_test(path: Path, base_url: str, *, fake_judge: bool) -> float:
    """One test: the agent's call, then the judge's; the verdict's score."""
    cassette = Cassette(path, test_id="bench::test_judged")
    cassette.start()
    try:
        async with openai.AsyncOpenAI(
            api_key="sk-bench-not-a-real-key",
            base_url=f"{base_url}/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(trust_env=False),
        ) as client:
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Paris?"}]
            )
            judge = Judge(providers={"openai": OpenAIChatProvider(client=client)})
            subject = reply.choices[0].message.content or ""
            if fake_judge:
                with FakeLLM() as fake:
                    fake.reply(VERDICT)
                    verdict = await judge(RUBRIC, subject)
            else:
                verdict = await judge(RUBRIC, subject)
    finally:
        cassette.stop()
    assert not cassette.misses, cassette.misses
    return verdict.score


async def record(folder: Path) -> tuple[Path, Path, str]:
    """The two cassettes (agent and judge; agent only), recorded against a loopback
    provider, and its (now stopped) base URL."""
    both, agent_only = folder / "both.json", folder / "agent.json"
    with LoopbackProvider() as provider:
        provider.reply(ANSWER).reply(VERDICT).reply(ANSWER)
        for path, fake in ((both, False), (agent_only, True)):
            cassette = Cassette(path, mode=RecordMode.REWRITE, test_id="bench::test_judged")
            cassette.start()
            try:
                async with openai.AsyncOpenAI(
                    api_key="sk-bench-not-a-real-key",
                    base_url=f"{provider.base_url}/v1",
                    max_retries=0,
                    http_client=httpx2.AsyncClient(trust_env=False),
                ) as client:
                    await client.chat.completions.create(
                        model="gpt-4o-mini",
                        messages=[{"role": "user", "content": "Weather in Paris?"}],
                    )
                    if not fake:
                        judge = Judge(providers={"openai": OpenAIChatProvider(client=client)})
                        await judge(RUBRIC, ANSWER)
            finally:
                cassette.stop()
            cassette.save("bench-record")
        base_url = provider.base_url
    return both, agent_only, base_url


async def measure(rounds: int, tests: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        both, agent_only, base_url = await record(Path(tmp))
        variants = {
            "judge replayed": (both, False),
            "judge by fake_llm": (agent_only, True),
        }
        for path, fake in variants.values():  # warm-up: imports, caches
            await judged_test(path, base_url, fake_judge=fake)
        means: dict[str, list[float]] = {name: [] for name in variants}
        names = list(variants)
        for number in range(rounds):
            order = names[number % 2 :] + names[: number % 2]
            for name in order:
                path, fake = variants[name]
                started = time.perf_counter()
                for _ in range(tests):
                    await judged_test(path, base_url, fake_judge=fake)
                means[name].append((time.perf_counter() - started) / tests)
    medians = {name: statistics.median(values) for name, values in means.items()}
    return {
        "rounds": rounds,
        "tests_per_round": tests,
        "ms_per_test": {name: round(value * 1000, 3) for name, value in medians.items()},
        "ratio_replayed_over_fake": round(
            medians["judge replayed"] / medians["judge by fake_llm"], 3
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rounds, tests = (3, 50) if args.quick else (7, 200)
    result = asyncio.run(measure(rounds, tests))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print("| variant | ms per test |")
    print("|---|---:|")
    for name, value in result["ms_per_test"].items():  # type: ignore[attr-defined]
        print(f"| {name} | {value:.3f} |")
    print(f"\nreplayed / fake_llm: {result['ratio_replayed_over_fake']}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
