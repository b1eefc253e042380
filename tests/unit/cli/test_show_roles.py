"""``pytest-agentctx cassettes show`` names the role of a judge's or a simulated user's
recorded call, and nothing for the agent's own."""

from __future__ import annotations

from pathlib import Path

from pytest_agentctx.cli.show import show_cassette
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.store import write_cassette

CHAT_URL = "http://127.0.0.1:9/v1/chat/completions"


def _interaction(role: str) -> Interaction:
    return Interaction(
        method="POST",
        url=CHAT_URL,
        request_headers={"content-type": "application/json"},
        request_body={"json": {"model": "gpt-4o-mini", "messages": []}},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": {"choices": []}},
        role=role,
    )


def test_show_names_the_role_of_each_call_but_the_agents(tmp_path: Path):
    path = tmp_path / "judged.json"
    write_cassette(path, [_interaction("user_sim"), _interaction("agent"), _interaction("judge")])

    heads = [line for line in show_cassette(path) if line.startswith("#")]

    assert ["(role user_sim)" in head for head in heads] == [True, False, False]
    assert ["(role judge)" in head for head in heads] == [False, False, True]
    assert "role" not in heads[1]
