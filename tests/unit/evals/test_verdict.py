"""Unit tests of pytest_agentctx.evals.verdict: replies read as verdicts, rubric ids, the
threshold, a failed verdict's message."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from pytest_agentctx.evals.errors import JudgeError, JudgeReplyError, VerdictFailed
from pytest_agentctx.evals.verdict import Verdict, check_threshold, parse_verdict, rubric_id


def _verdict(score: float = 0.4, threshold: float = 0.7) -> Verdict:
    return Verdict(
        "judge", "helpful", "Be helpful.", score, threshold, "Too short.", score >= threshold
    )


def test_a_json_object_reply_gives_its_score_and_rationale():
    assert parse_verdict('{"score": 0.8, "rationale": "Good."}') == (0.8, "Good.")


def test_a_reply_in_a_fenced_json_block_is_read():
    reply = '```json\n{"score": 1, "rationale": "All there."}\n```'

    assert parse_verdict(reply) == (1.0, "All there.")


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("The answer is good: 8/10.", "it is not JSON"),
        ("[0.8]", "it is a JSON list, not an object"),
        ('{"score": 8, "rationale": "x"}', "its score is 8, not a number from 0 to 1"),
        ('{"score": true, "rationale": "x"}', "its score is True"),
        ('{"score": "0.8", "rationale": "x"}', "its score is '0.8'"),
        ('{"score": NaN, "rationale": "x"}', "its score is nan"),
        ('{"score": 0.8}', "its rationale is None, not a string"),
        ("", "it is not JSON"),
    ],
)
def test_a_reply_that_is_no_verdict_is_refused_saying_why(reply: str, why: str):
    with pytest.raises(JudgeReplyError) as caught:
        parse_verdict(reply, model="The judge model 'openai:m'")

    message = str(caught.value)
    assert why in message
    assert "The judge model 'openai:m' did not give a verdict" in message
    assert '{"score": <0..1>, "rationale": "<why>"}' in message


def test_no_reply_at_all_is_refused():
    with pytest.raises(JudgeReplyError, match="Its reply: no text"):
        parse_verdict(None)


@given(st.floats(min_value=0, max_value=1), st.text())
def test_every_score_from_0_to_1_with_a_rationale_is_read_back(score: float, rationale: str):
    import json

    reply = json.dumps({"score": score, "rationale": rationale})

    assert parse_verdict(reply) == (score, rationale)


def test_a_named_rubric_has_its_name_as_id():
    assert rubric_id("Be helpful.", "helpful") == "helpful"


def test_an_unnamed_rubrics_id_is_a_digest_of_its_text():
    assert rubric_id("Be helpful.") == rubric_id("  Be helpful.\n")
    assert rubric_id("Be helpful.").startswith("sha256:")
    assert len(rubric_id("Be helpful.")) == len("sha256:") + 12


def test_different_rubrics_have_different_ids():
    assert rubric_id("Be helpful.") != rubric_id("Be brief.")


def test_an_empty_rubric_name_is_refused():
    with pytest.raises(JudgeError, match="rubric_name=' '"):
        rubric_id("Be helpful.", " ")


@pytest.mark.parametrize("threshold", [-0.1, 1.5, True, "0.7"])
def test_a_threshold_outside_0_to_1_is_refused(threshold: object):
    with pytest.raises(JudgeError, match="expected a number from 0 to 1"):
        check_threshold(threshold)


def test_a_failed_verdict_fails_the_test_with_rubric_score_threshold_and_rationale():
    with pytest.raises(VerdictFailed) as caught:
        _verdict().assert_passed()

    message = str(caught.value)
    assert "rubric 'helpful'" in message
    assert "score 0.4 < threshold 0.7" in message
    assert "rubric: Be helpful." in message
    assert "rationale: Too short." in message
    assert caught.value.verdict == _verdict()


def test_a_passed_verdict_is_given_back():
    verdict = _verdict(score=0.9)

    assert verdict.assert_passed() is verdict


def test_a_verdict_as_reports_keep_it():
    assert _verdict().to_dict() == {
        "judge": "judge",
        "rubric_id": "helpful",
        "rubric": "Be helpful.",
        "score": 0.4,
        "threshold": 0.7,
        "rationale": "Too short.",
        "passed": False,
    }
