"""Misses of a role that a layer above explains (traffic/cassettes/explained.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_agentctx.traffic.cassettes.explained import EXPLAINERS, explain
from pytest_agentctx.traffic.cassettes.fileformat import Interaction


def interaction(role: str, text: str) -> Interaction:
    return Interaction(
        method="POST",
        url="http://127.0.0.1:9/v1/chat/completions",
        request_headers={},
        request_body={"json": {"text": text}},
        status=200,
        response_headers={},
        response_body=None,
        role=role,
    )


@pytest.fixture
def seen() -> Iterator[list[object]]:
    calls: list[object] = []

    def explainer(path: str, body: object, recorded: list[tuple[str, object]]) -> str:
        calls.append((path, body, recorded))
        return "explained"

    EXPLAINERS["judge"] = explainer
    yield calls
    del EXPLAINERS["judge"]


def test_the_explainer_of_the_role_gets_the_recordings_of_that_role(seen: list[object]) -> None:
    loaded = [interaction("agent", "a"), interaction("judge", "j")]

    assert explain("judge", "/v1/chat/completions", {"text": "k"}, loaded) == "explained"
    assert seen == [
        ("/v1/chat/completions", {"text": "k"}, [("/v1/chat/completions", {"text": "j"})])
    ]


def test_a_role_without_an_explainer_is_left_to_the_plain_miss(seen: list[object]) -> None:
    assert explain("agent", "/v1/chat/completions", {}, [interaction("agent", "a")]) is None
    assert seen == []


def test_no_recording_of_the_role_explains_nothing(seen: list[object]) -> None:
    assert explain("judge", "/v1/chat/completions", {}, [interaction("agent", "a")]) is None
