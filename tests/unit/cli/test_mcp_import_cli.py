"""``pytest-agentctx mcp import``: another recorder's session written as a cassette of the
package, scrubbed of secrets, never over an existing file; a usage error naming what to do
for a file it cannot convert."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentctx.cli.main import main
from pytest_agentctx.traffic.cassettes.store import load_cassette

CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_order"}}
SECRET = "sk-proj-import0secret0value0123456789"


def _recorder_file(tmp_path: Path, text: str = "ok") -> Path:
    answer = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": text}]}}
    path = tmp_path / "session.json"
    path.write_text(
        json.dumps(
            {
                "version": "1.0",
                "metadata": {
                    "server_url": "stdio://python orders_server.py",
                    "transport_type": "stdio",
                },
                "interactions": [{"type": "jsonrpc_request", "request": CALL, "response": answer}],
            }
        )
    )
    return path


@pytest.fixture(autouse=True)
def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    monkeypatch.chdir(tmp_path)


def test_import_writes_the_cassette_and_lists_its_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    out = tmp_path / "cassettes" / "test_orders.json"

    code = main(["mcp", "import", str(_recorder_file(tmp_path)), "--out", str(out)])

    (interaction,) = load_cassette(out)
    assert code == 0
    assert interaction.url == "mcp+stdio://orders_server/"
    assert interaction.request_body == {"json": CALL}
    printed = capsys.readouterr().out
    assert "(mcp-recorder, stdio server orders_server): 1 interaction(s)" in printed
    assert "  0: tools/call get_order" in printed


def test_import_scrubs_secrets_of_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = tmp_path / "out.json"

    assert main(["mcp", "import", str(_recorder_file(tmp_path, SECRET)), "--out", str(out)]) == 0

    assert SECRET not in out.read_text()


def test_import_never_overwrites_a_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "out.json"
    out.write_text("mine")

    assert main(["mcp", "import", str(_recorder_file(tmp_path)), "--out", str(out)]) == 2

    assert out.read_text() == "mine"
    assert "exists; the import writes a new cassette" in capsys.readouterr().err


def test_a_file_of_no_recorder_is_a_usage_error_saying_which_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    source = tmp_path / "notes.txt"
    source.write_text("hello")

    assert main(["mcp", "import", str(source), "--out", str(tmp_path / "o.json")]) == 2

    assert "not a cassette of mcp-recorder, mcp-cassette or mcp-vcr" in capsys.readouterr().err


def test_a_file_nested_past_the_limit_is_refused_with_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    source = tmp_path / "deep.json"
    source.write_text("[" * 100_000)

    assert main(["mcp", "import", str(source), "--out", str(tmp_path / "o.json")]) == 2

    assert "agent_max_depth" in capsys.readouterr().err
