"""``cassettes show`` decodes a recorded Bedrock ConverseStream reply (AWS's binary event
stream, stored as its messages) as it decodes the other streams."""

from __future__ import annotations

from pathlib import Path

from pytest_agentctx.cli.show import show_cassette

CORPUS = Path(__file__).resolve().parents[2] / "integration" / "corpus"


def test_show_decodes_a_recorded_event_stream_reply():
    lines = show_cassette(CORPUS / "pydantic-ai__bedrock_converse_stream_tool_call.yaml")

    assert any(
        line.startswith("#0 POST https://bedrock-runtime") and "[bedrock]" in line for line in lines
    )
    replies = [line for line in lines if line.startswith("  reply (stream):")]
    assert len(replies) == 2
    assert "get_temperature" in replies[0]
