"""The ``mcp_stream`` of an interaction (when an MCP server's streamed events came), in the
package's cassette format and in vcrpy's: written only when there is one, read back."""

from __future__ import annotations

import pytest

from pytest_agentctx.traffic.cassettes.fileformat import (
    Interaction,
    McpStream,
    from_native,
    native_document,
)
from pytest_agentctx.traffic.cassettes.vcr import from_vcr, vcr_interaction
from pytest_agentctx.traffic.errors import CassetteFormatError


def interaction(stream: McpStream | None) -> Interaction:
    return Interaction(
        method="GET",
        url="http://127.0.0.1:8000/sse",
        request_headers={},
        request_body=None,
        status=200,
        response_headers={"content-type": "text/event-stream"},
        response_body={"sse": [{"event": "endpoint", "data": "/messages/?session_id=a"}]},
        mcp_stream=stream,
    )


@pytest.mark.parametrize("stream", [{"after": [0, 2]}, {"after": [0], "open": True}])
def test_the_native_format_keeps_it(stream: McpStream) -> None:
    document = native_document([interaction(stream)])

    assert document["interactions"][0]["mcp_stream"] == stream
    assert from_native(document, "c.json")[0].mcp_stream == stream


def test_vcrpy_s_format_keeps_it() -> None:
    stream: McpStream = {"after": [0], "open": True}
    document = {"interactions": [vcr_interaction(interaction(stream))], "version": 1}

    assert from_vcr(document, "c.yaml")[0].mcp_stream == stream


def test_an_interaction_without_it_is_written_as_before() -> None:
    document = native_document([interaction(None)])

    assert "mcp_stream" not in document["interactions"][0]
    assert "mcp_stream" not in vcr_interaction(interaction(None))
    assert from_native(document, "c.json")[0].mcp_stream is None


@pytest.mark.parametrize(
    "stream", [{"after": [-1]}, {"after": "0"}, [0], {"after": [0], "open": 1}]
)
def test_a_malformed_one_is_refused(stream: object) -> None:
    document = native_document([interaction(None)])
    document["interactions"][0]["mcp_stream"] = stream  # type: ignore[typeddict-item]

    with pytest.raises(CassetteFormatError, match="mcp_stream"):
        from_native(document, "c.json")
