"""Capture keeps the exchanges of each role apart: the agent's conversations are built of
the agent's exchanges only, a judge's of its own."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentctx.traffic.capture import CapturedRuns, Exchange

URL = "https://api.openai.com/v1/chat/completions"


def _exchange(question: str, answer: str, role: str = "agent") -> Exchange:
    request: Any = {
        "json": {"model": "gpt-4o", "messages": [{"role": "user", "content": question}]}
    }
    response: Any = {
        "json": {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        }
    }
    return Exchange("POST", URL, 200, request, response, "live#0", role)


def _runs() -> CapturedRuns:
    return CapturedRuns(
        [_exchange("Weather?", "Sunny."), _exchange("Grade: Sunny.", '{"score": 1}', "judge")]
    )


def test_the_agents_conversations_leave_out_the_judges_calls():
    runs = _runs()

    assert [c.final_output for c in runs.contexts] == ["Sunny."]


def test_the_judges_conversations_are_given_by_their_role():
    assert [c.final_output for c in _runs().of_role("judge")] == ['{"score": 1}']


def test_the_records_of_budgets_are_the_agents_only():
    assert [record.name for record in _runs().records()] == ["conversation 1"]


def test_the_other_roles_records_are_named_by_role():
    assert [(r.name, r.role) for r in _runs().role_records()] == [("judge 1", "judge")]


def test_an_unknown_role_is_refused():
    with pytest.raises(ValueError, match="'grader'"):
        _runs().of_role("grader")
