"""Re-judging recorded agent runs: judges given now, run over the conversations of cassettes.

A recorded run is one conversation that capture rebuilds from a cassette's agent-role
interactions (the judge's and the simulated user's recordings left aside). Each judge (a
rubric, a model, a threshold) is asked once per run, through the runtime's providers with
its calls made under ``model_role("judge")``; the agent is never run and none of its
recorded requests is sent anywhere: its calls are read from the file.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_agentctx.context.model import AgentContext
from pytest_agentctx.evals.verdict import Verdict
from pytest_agentctx.exceptions import UsageError
from pytest_agentctx.runtime.providers import Provider, default_provider, split_model
from pytest_agentctx.traffic.capture.runs import build_contexts
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.roles import model_role

#: What the judge is told to answer, before the rubric and the run.
INSTRUCTIONS = (
    "You are a judge of an AI agent's run. Score how well the run meets the rubric, from 0 "
    "(not at all) to 1 (fully). Answer with one JSON object and nothing else: "
    '{"score": <a number from 0 to 1>, "rationale": "<one or two sentences>"}'
)
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
        """A short digest of the rubric: the same rubric, the same id."""
        return hashlib.sha256(self.rubric.encode("utf-8")).hexdigest()[:12]


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
        table.get("threshold", 0.5),
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


def transcript(context: AgentContext) -> str:
    """The run as the judge reads it: one line per message, tool calls included."""
    lines = []
    for message in context.get_all_messages():
        text = message.content or ""
        calls = "; ".join(
            f"calls {call.name}({json.dumps(call.arguments, sort_keys=True)})"
            for call in message.tool_calls
        )
        lines.append(f"{message.role}: {' '.join(part for part in (text, calls) if part)}")
    return "\n".join(lines)


def judge_messages(judge: JudgeSpec, context: AgentContext) -> list[dict[str, object]]:
    """The messages of the one call a judge makes about a run."""
    final = context.final_output or "(no final output)"
    prompt = (
        f"Rubric:\n{judge.rubric}\n\nThe run:\n{transcript(context)}\n\n"
        f"The agent's final output:\n{final}"
    )
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": prompt}]


def parse_reply(judge: JudgeSpec, run: RecordedRun, content: str | None) -> Verdict:
    """The verdict in a judge's reply; :class:`RejudgeError` when there is none."""
    text = (content or "").strip()
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if 0 <= start < end else None
    except json.JSONDecodeError:
        data = None
    score = data.get("score") if isinstance(data, dict) else None
    rationale = data.get("rationale", "") if isinstance(data, dict) else None
    if (
        isinstance(score, bool)
        or not isinstance(score, int | float)
        or not 0 <= score <= 1
        or not isinstance(rationale, str)
    ):
        raise RejudgeError(
            f"judge {judge.name!r} on {run.label}: its reply is not a verdict: "
            f"{text[:200]!r}; expected one JSON object with a score from 0 to 1 and a "
            f"rationale. Check the judge's model ({judge.model}) or its rubric, then run again."
        )
    return Verdict(
        judge=judge.name,
        rubric_id=judge.rubric_id,
        rubric=judge.rubric,
        score=float(score),
        threshold=judge.threshold,
        rationale=rationale,
        passed=score >= judge.threshold,
    )


async def _ask(judge: JudgeSpec, run: RecordedRun, provider: Provider) -> Verdict:
    _, model = split_model(judge.model)
    body = provider.codec.encode_request(model=model, messages=judge_messages(judge, run.context))
    try:
        with model_role("judge"):
            reply = await provider.send(body)
    except Exception as exc:  # any SDK's error: the judge could not be asked
        raise RejudgeError(
            f"judge {judge.name!r} on {run.label}: the call to {judge.model} failed: "
            f"{type(exc).__name__}: {exc}. Check the model's name, its key and base URL "
            "(the SDK's environment variables), then run again."
        ) from exc
    return parse_reply(judge, run, provider.codec.decode_response(reply).content)


async def _rejudge(
    runs: Sequence[RecordedRun], judges: Sequence[JudgeSpec], providers: dict[str, Provider]
) -> list[RunVerdict]:
    verdicts = []
    try:
        for run in runs:
            for judge in judges:
                prefix, _ = split_model(judge.model)
                if prefix not in providers:
                    providers[prefix] = default_provider(prefix)
                verdict = await _ask(judge, run, providers[prefix])
                verdicts.append(RunVerdict(run, verdict))
    finally:
        for provider in providers.values():
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
    return verdicts


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
