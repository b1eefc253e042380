"""Re-judging recorded agent runs: judges given now, run over the conversations of cassettes.

A recorded run is one conversation that capture rebuilds from a cassette's agent-role
interactions (the judge's and the simulated user's recordings left aside). Each judge (a
rubric, a model, a threshold) is asked once per run by a :class:`~.judge.Judge`: one call
through the runtime's providers under ``model_role("judge")``, shown the run's messages
and tool calls. The agent is never run and none of its recorded requests is sent anywhere:
its calls are read from the file.
"""

from __future__ import annotations

import asyncio
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_agentctx.context.model import AgentContext
from pytest_agentctx.evals.judge import DEFAULT_THRESHOLD, Judge
from pytest_agentctx.evals.verdict import Verdict, rubric_id
from pytest_agentctx.exceptions import AgentCtxError, UsageError
from pytest_agentctx.runtime.providers import Provider, split_model
from pytest_agentctx.traffic.capture.runs import build_contexts
from pytest_agentctx.traffic.cassettes.fileformat import Interaction

_JUDGE_KEYS = frozenset({"name", "rubric", "rubric_file", "model", "threshold"})


class RejudgeError(UsageError):
    """A judge file or option that cannot work, a source without recorded runs, or a judge
    reply that is not a verdict."""


@dataclass(frozen=True)
class JudgeSpec:
    """One judge: its name, the rubric it scores against, the model it asks, the lowest
    score that passes (from 0 to 1)."""

    name: str
    rubric: str
    model: str
    threshold: float

    @property
    def rubric_id(self) -> str:
        """The rubric's id, as a test's judge gives it: ``sha256:`` and its digest's start."""
        return rubric_id(self.rubric)


@dataclass(frozen=True)
class RecordedRun:
    """One recorded agent run: the cassette it is read from, the test that recorded it
    (``""`` when the cassette does not say), its number in that cassette (from 1)."""

    cassette: str
    test: str
    number: int
    context: AgentContext

    @property
    def label(self) -> str:
        return f"{self.cassette}#{self.number}"


@dataclass(frozen=True)
class RunVerdict:
    """A verdict given on one recorded run."""

    run: RecordedRun
    verdict: Verdict

    def to_dict(self) -> dict[str, object]:
        return {
            "cassette": self.run.cassette,
            "run": self.run.number,
            "test": self.run.test,
            **self.verdict.to_dict(),
        }


def make_judge(name: str, rubric: str, model: str, threshold: object, *, where: str) -> JudgeSpec:
    """A judge from its parts, each checked; ``where`` names them in errors."""
    if not isinstance(rubric, str) or not rubric.strip():
        raise RejudgeError(
            f"{where}: rubric = {rubric!r}: expected the text the judge scores against, e.g. "
            "'The answer is polite and cites the order number.'"
        )
    if not isinstance(model, str) or ":" not in model:
        raise RejudgeError(
            f"{where}: model = {model!r}: expected 'PROVIDER:MODEL', e.g. 'openai:gpt-4o-mini'."
        )
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not math.isfinite(threshold)
        or not 0 <= threshold <= 1
    ):
        raise RejudgeError(
            f"{where}: threshold = {threshold!r}: expected a number from 0 to 1, e.g. 0.7."
        )
    split_model(model)
    return JudgeSpec(name=name or "judge", rubric=rubric.strip(), model=model, threshold=threshold)


def _judge_table(index: int, table: Mapping[str, object], base: Path, where: str) -> JudgeSpec:
    here = f"{where}: [[judge]] {index + 1}"
    unknown = sorted(set(table) - _JUDGE_KEYS)
    if unknown:
        raise RejudgeError(f"{here}: unknown key(s) {unknown}; a judge has {sorted(_JUDGE_KEYS)}.")
    rubric = table.get("rubric")
    if "rubric_file" in table:
        if rubric is not None:
            raise RejudgeError(f"{here}: give rubric or rubric_file, not both.")
        rubric_path = base / str(table["rubric_file"])
        try:
            rubric = rubric_path.read_text(encoding="utf-8")
        except OSError as exc:
            raise RejudgeError(
                f"{here}: rubric_file {rubric_path}: {exc.strerror or exc}. Give the path of "
                "a text file, relative to the judge file."
            ) from None
    name = table.get("name", f"judge{index + 1}")
    return make_judge(
        str(name),
        rubric,  # type: ignore[arg-type]  # checked by make_judge
        table.get("model"),  # type: ignore[arg-type]
        table.get("threshold", DEFAULT_THRESHOLD),
        where=here,
    )


def parse_judges(text: str, *, where: str, base: Path) -> list[JudgeSpec]:
    """The judges of a judge file (TOML, one ``[[judge]]`` table each)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RejudgeError(f"{where}: not TOML ({exc}). Fix the file and run again.") from None
    tables = data.get("judge")
    if set(data) != {"judge"} or not isinstance(tables, list) or not tables:
        raise RejudgeError(
            f"{where}: expected one or more [[judge]] tables (name, rubric or rubric_file, "
            f"model, threshold) and nothing else; found the key(s) {sorted(data)}."
        )
    judges = [_judge_table(i, table, base, where) for i, table in enumerate(tables)]
    names = [judge.name for judge in judges]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise RejudgeError(f"{where}: judge name(s) {repeated} given twice; name each once.")
    return judges


def runs_of(cassette: str, interactions: Sequence[Interaction]) -> list[RecordedRun]:
    """The recorded agent runs of one cassette's interactions (agent-role ones only)."""
    agent = [item for item in interactions if item.role == "agent"]
    tests = sorted({item.test_id for item in agent if item.test_id})
    test = ", ".join(tests)
    return [
        RecordedRun(cassette=cassette, test=test, number=number, context=context)
        for number, context in enumerate(build_contexts(agent).contexts, start=1)
    ]


async def _verdict(judge: JudgeSpec, run: RecordedRun, providers: dict[str, Provider]) -> Verdict:
    """The one call of ``judge`` about ``run``, through :class:`~.judge.Judge`."""
    asked = Judge(judge.model, threshold=judge.threshold, name=judge.name, providers=providers)
    try:
        return await asked(judge.rubric, run.context)
    except AgentCtxError as exc:  # a reply that is no verdict, a model without a provider
        raise RejudgeError(f"judge {judge.name!r} on {run.label}: {exc}") from exc
    except Exception as exc:  # any SDK's error: the judge could not be asked
        raise RejudgeError(
            f"judge {judge.name!r} on {run.label}: the call to {judge.model} failed: "
            f"{type(exc).__name__}: {exc}. Check the model's name, its key and base URL "
            "(the SDK's environment variables), then run again."
        ) from exc


async def _rejudge(
    runs: Sequence[RecordedRun], judges: Sequence[JudgeSpec], providers: dict[str, Provider]
) -> list[RunVerdict]:
    return [
        RunVerdict(run, await _verdict(judge, run, providers)) for run in runs for judge in judges
    ]


def rejudge(
    runs: Sequence[RecordedRun],
    judges: Sequence[JudgeSpec],
    *,
    providers: Mapping[str, Provider] | None = None,
) -> list[RunVerdict]:
    """Each judge's verdict on each run, in order: one judge call per run and judge.

    ``providers`` maps a model prefix to a provider, as ``AgentRuntime(providers=)`` does;
    the others are the runtime's default ones (the official SDKs, configured by their
    environment variables).
    """
    return asyncio.run(_rejudge(runs, judges, dict(providers or {})))
