"""Unit tests of pytest_agentctx.evals.judge: one model call under the judge role, the
rubric and subject it sends, the verdict it gives; answered by FakeLLM."""

from __future__ import annotations

import pytest

from pytest_agentctx import AgentContext, FakeLLM
from pytest_agentctx.evals.errors import JudgeError, JudgeReplyError, VerdictFailed
from pytest_agentctx.evals.judge import Judge, subject_text
from pytest_agentctx.evals.verdict import Verdict
from pytest_agentctx.traffic.roles import rubric_in

VERDICT = '{"score": 0.9, "rationale": "It names the city."}'


async def test_a_judge_gives_the_verdict_of_its_models_reply():
    with FakeLLM() as fake:
        fake.reply(VERDICT)
        verdict = await Judge()("Names the city.", "Paris", rubric_name="city")

    assert verdict == Verdict(
        "judge", "city", "Names the city.", 0.9, 0.7, "It names the city.", True
    )


async def test_the_judges_call_is_made_under_the_judge_role():
    with FakeLLM() as fake:
        fake.reply(VERDICT)
        await Judge()("Names the city.", "Paris")

    assert [exchange.role for exchange in fake.exchanges] == ["judge"]


async def test_the_request_holds_the_rubric_between_its_markers_and_the_subject():
    with FakeLLM() as fake:
        fake.reply(VERDICT)
        await Judge()("Names the city.", "It is Paris.")

    body = fake.exchanges[0].request_json()
    assert rubric_in(body) == "Names the city."
    assert "It is Paris." in body["messages"][1]["content"]


async def test_a_reply_that_is_no_verdict_fails_loudly():
    with FakeLLM() as fake:
        fake.reply("Looks fine to me!")
        judge = Judge()
        with pytest.raises(JudgeReplyError, match="'Looks fine to me!'"):
            await judge("Names the city.", "Paris")

    assert judge.verdicts == []


async def test_a_threshold_of_the_call_overrides_the_judges():
    with FakeLLM() as fake:
        fake.reply(VERDICT)
        verdict = await Judge(threshold=0.5)("Names the city.", "Paris", threshold=0.95)

    assert (verdict.threshold, verdict.passed) == (0.95, False)


async def test_assert_passes_fails_on_a_verdict_below_the_threshold():
    with FakeLLM() as fake:
        fake.reply('{"score": 0.1, "rationale": "No city."}')
        with pytest.raises(VerdictFailed, match=r"score 0.1 < threshold 0.7"):
            await Judge().assert_passes("Names the city.", "Hello")


async def test_each_verdict_is_kept_and_handed_on():
    seen: list[Verdict] = []
    with FakeLLM() as fake:
        fake.reply(VERDICT)
        judge = Judge(on_verdict=seen.append)
        verdict = await judge("Names the city.", "Paris")

    assert judge.verdicts == seen == [verdict]


async def test_an_empty_rubric_is_refused():
    with pytest.raises(JudgeError, match="rubric=''"):
        await Judge()("", "Paris")


async def test_a_model_without_its_provider_is_refused():
    with pytest.raises(JudgeError, match="model='gpt-4o'"):
        await Judge(model="gpt-4o")("Names the city.", "Paris")


def test_a_context_is_shown_as_its_conversation():
    context = AgentContext.new("Weather in Paris?").add_assistant_message("18C")

    assert subject_text(context) == "[user] Weather in Paris?\n[assistant] 18C"


def test_a_subject_of_another_kind_is_refused():
    with pytest.raises(JudgeError, match="subject is a int"):
        subject_text(42)
