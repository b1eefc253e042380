"""A judge's verdict: its score against a rubric, the threshold it is held to, the
rationale; the rubric's stable id; the judge model's reply read as a verdict.

A verdict is data: kept in the test's record (reports: ``verdicts``), never counted in the
agent's budgets or trajectory.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass

from pytest_agentctx.evals.errors import JudgeError, JudgeReplyError, VerdictFailed

#: How much of a reply a message shows.
_SHOWN = 300

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)


@dataclass(frozen=True)
class Verdict:
    """What a judge said of a subject against a rubric.

    ``judge``: the judge's name (``"judge"`` unless named); ``rubric_id``: the rubric's
    stable id (its name, or ``sha256:`` and the start of its digest, see :func:`rubric_id`);
    ``score`` from 0 to 1; ``passed``: ``score >= threshold``.
    """

    judge: str
    rubric_id: str
    rubric: str
    score: float
    threshold: float
    rationale: str
    passed: bool

    def to_dict(self) -> dict[str, object]:
        """The verdict as the reports keep it (JSON)."""
        return {
            "judge": self.judge,
            "rubric_id": self.rubric_id,
            "rubric": self.rubric,
            "score": self.score,
            "threshold": self.threshold,
            "rationale": self.rationale,
            "passed": self.passed,
        }

    def describe(self) -> str:
        """The verdict in a few lines: rubric, score against threshold, rationale."""
        outcome = "passed" if self.passed else "failed"
        return (
            f"judge {self.judge!r} {outcome} rubric {self.rubric_id!r}: score "
            f"{self.score:.3g} {'>=' if self.passed else '<'} threshold {self.threshold:.3g}\n"
            f"  rubric: {_indented(self.rubric)}\n"
            f"  rationale: {_indented(self.rationale)}"
        )

    def assert_passed(self) -> Verdict:
        """The verdict, when it passed; else :class:`VerdictFailed` (the test fails) with
        the rubric, the score, the threshold and the rationale."""
        if not self.passed:
            raise VerdictFailed(
                f"{self.describe()}\nThe subject scored below the threshold. Look at the "
                "rationale; if the bar is wrong, change threshold= where the judge is called.",
                self,
            )
        return self


def _indented(text: str) -> str:
    return text.strip().replace("\n", "\n    ")


def rubric_id(rubric: str, name: str | None = None) -> str:
    """A rubric's stable id: ``name`` when given, else ``sha256:`` and the first 12 hex
    digits of the digest of the rubric's text (its surrounding whitespace left out)."""
    if name is not None:
        if not isinstance(name, str) or not name.strip():
            raise JudgeError(
                f"rubric_name={name!r}: expected a non-empty name (rubric_name='helpful'), "
                "or none for an id made of the rubric's digest."
            )
        return name.strip()
    digest = hashlib.sha256(rubric.strip().encode("utf-8")).hexdigest()
    return f"sha256:{digest[:12]}"


def check_threshold(threshold: object) -> float:
    """``threshold`` as a float from 0 to 1, else :class:`JudgeError`."""
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0.0 <= threshold <= 1.0
    ):
        raise JudgeError(
            f"threshold={threshold!r}: expected a number from 0 to 1 (threshold=0.7), the "
            "score a verdict needs to pass."
        )
    return float(threshold)


def parse_verdict(reply: str | None, *, model: str = "the judge model") -> tuple[float, str]:
    """The score and rationale of a judge model's reply: a JSON object (alone, or in one
    fenced code block) with ``score`` a number from 0 to 1 and ``rationale`` a string.
    Anything else raises :class:`JudgeReplyError`, which shows the reply."""
    text = (reply or "").strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except ValueError:
        raise _bad(reply, model, "it is not JSON") from None
    if not isinstance(data, dict):
        raise _bad(reply, model, f"it is a JSON {type(data).__name__}, not an object")
    score = data.get("score")
    if (
        isinstance(score, bool)
        or not isinstance(score, int | float)
        or not math.isfinite(score)
        or not 0 <= score <= 1
    ):
        raise _bad(reply, model, f"its score is {score!r}, not a number from 0 to 1")
    rationale = data.get("rationale")
    if not isinstance(rationale, str):
        raise _bad(reply, model, f"its rationale is {rationale!r}, not a string")
    return float(score), rationale


def _bad(reply: str | None, model: str, why: str) -> JudgeReplyError:
    cut = "..." if reply and len(reply) > _SHOWN else ""
    shown = "no text" if not reply else repr(reply[:_SHOWN] + cut)
    return JudgeReplyError(
        f"{model} did not give a verdict: {why}. Its reply: {shown}. Expected only a JSON "
        'object {"score": <0..1>, "rationale": "<why>"}. Use a model that follows the '
        "instruction (model=...), or, replaying, re-record the judge: pytest "
        "--agent-record=judge."
    )
