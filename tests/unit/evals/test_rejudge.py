"""Re-judging recorded runs: judge files, judge replies, the runs of a cassette, and one
judge call per run and judge."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from support.wire import chat_interaction

from pytest_agentctx.evals.rejudge import (
    JudgeSpec,
    RejudgeError,
    parse_judges,
    rejudge,
    runs_of,
)
from pytest_agentctx.traffic.codecs.base import Completion, get_codec
from pytest_agentctx.traffic.roles import current_role

JUDGE = JudgeSpec("polite", "The answer is polite.", "openai:gpt-4o-mini", 0.7)


class CountingJudge:
    """A provider answering every judge call with the same score, counting the calls."""

    def __init__(self, score: float = 0.9, reply: str | None = None) -> None:
        self.codec = get_codec("openai_chat")
        self.reply = reply or f'{{"score": {score}, "rationale": "Says please."}}'
        self.bodies: list[Mapping[str, object]] = []
        self.roles: list[str] = []

    async def send(self, body: Mapping[str, object]) -> dict[str, object]:
        self.bodies.append(body)
        self.roles.append(current_role())
        return self.codec.encode_response(Completion(content=self.reply), response_id="r1")


def test_a_judge_file_gives_each_judge_with_its_rubric_file(tmp_path: Path):
    (tmp_path / "cites.txt").write_text("Cites the order number.\n")
    text = """
[[judge]]
name = "polite"
rubric = "The answer is polite."
model = "openai:gpt-4o-mini"
threshold = 0.7

[[judge]]
name = "cites"
rubric_file = "cites.txt"
model = "anthropic:claude-sonnet-4-5"
"""
    judges = parse_judges(text, where="judges.toml", base=tmp_path)

    assert judges == [
        JUDGE,
        JudgeSpec("cites", "Cites the order number.", "anthropic:claude-sonnet-4-5", 0.7),
    ]


def test_a_judge_file_with_an_unknown_key_names_the_keys_a_judge_has(tmp_path: Path):
    text = '[[judge]]\nrubric = "x"\nmodel = "openai:m"\nthreshhold = 0.7\n'

    with pytest.raises(RejudgeError, match=r"unknown key\(s\) \['threshhold'\].*'threshold'"):
        parse_judges(text, where="judges.toml", base=tmp_path)


def test_a_threshold_outside_0_to_1_is_refused(tmp_path: Path):
    text = '[[judge]]\nrubric = "x"\nmodel = "openai:m"\nthreshold = 7\n'

    with pytest.raises(RejudgeError, match=r"threshold = 7: expected a number from 0 to 1"):
        parse_judges(text, where="judges.toml", base=tmp_path)


def test_the_rubric_id_changes_with_the_rubric():
    changed = JudgeSpec("polite", "The answer is polite and short.", JUDGE.model, 0.7)

    assert JUDGE.rubric_id != changed.rubric_id


def test_a_reply_that_is_not_a_verdict_fails_loudly_naming_the_run():
    runs = runs_of("a.json", [chat_interaction("Hi", "Hello")])
    judge = CountingJudge(reply="I think it is fine.")

    with pytest.raises(RejudgeError, match=r"'polite' on a.json#1: .* did not give a verdict"):
        rejudge(runs, [JUDGE], providers={"openai": judge})


def test_a_score_below_the_threshold_fails_the_verdict():
    runs = runs_of("a.json", [chat_interaction("Hi", "Go away")])
    judge = CountingJudge(reply='```json\n{"score": 0.2, "rationale": "Rude."}\n```')

    [given] = rejudge(runs, [JUDGE], providers={"openai": judge})

    assert (given.verdict.score, given.verdict.passed, given.verdict.rationale) == (
        0.2,
        False,
        "Rude.",
    )


def test_the_runs_of_a_cassette_leave_the_judges_calls_out():
    interactions = [
        chat_interaction("Where is my order?", "It ships today, order 42."),
        chat_interaction("Judge this.", '{"score": 1, "rationale": "ok"}', role="judge"),
    ]

    runs = runs_of("a.json", interactions)

    assert [run.context.final_output for run in runs] == ["It ships today, order 42."]


def test_each_run_is_judged_once_by_each_judge_with_the_judge_role():
    runs = [runs_of(f"r{i}.json", [chat_interaction(f"Q{i}", f"A{i}")])[0] for i in range(3)]
    strict = JudgeSpec("strict", "Perfect.", "openai:gpt-4o-mini", 0.95)
    judge = CountingJudge(score=0.9)

    verdicts = rejudge(runs, [JUDGE, strict], providers={"openai": judge})

    assert [(v.run.cassette, v.verdict.judge, v.verdict.passed) for v in verdicts] == [
        (f"r{i}.json", name, passed)
        for i in range(3)
        for name, passed in (("polite", True), ("strict", False))
    ]
    assert judge.roles == ["judge"] * 6
    assert "A1" in str(judge.bodies[2]["messages"])
