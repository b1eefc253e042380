"""``pytest-agentctx migrate --convert-json``: the vcrpy cassettes rewritten in JSON (the
same documents, as YAML reads them), those JSON cannot hold left as YAML with the reason,
a dry run that writes nothing, and a second run that changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_agentctx.cli.main import main

RECORDING_TEST = "import pytest\n\n\n@pytest.mark.vcr\ndef test_ask():\n    pass\n"


def _cassette(body: str | bytes) -> dict[str, object]:
    return {
        "interactions": [
            {
                "request": {
                    "body": '{"model": "gpt-4o"}',
                    "headers": {"Content-Type": ["application/json"]},
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                },
                "response": {
                    "body": {"string": body},
                    "headers": {"Content-Type": ["application/json"]},
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ],
        "version": 1,
    }


PLAIN = _cassette('{"choices": []}')
GZIP = _cassette(b"\x1f\x8b\x08\x00binary")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    cassettes = tmp_path / "tests" / "cassettes" / "test_ask"
    cassettes.mkdir(parents=True)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "tests" / "test_ask.py").write_text(RECORDING_TEST)
    (cassettes / "test_plain.yaml").write_text(yaml.safe_dump(PLAIN))
    (cassettes / "test_gzip.yaml").write_text(yaml.safe_dump(GZIP))
    (tmp_path / "mkdocs.yml").write_text("site_name: docs\n")
    return tmp_path


def migrate(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    main(["migrate", "--from", "pytest-recording", *args])
    return capsys.readouterr().out.splitlines()


def _plain(project: Path) -> Path:
    return project / "tests" / "cassettes" / "test_ask" / "test_plain.yaml"


def _gzip(project: Path) -> Path:
    return project / "tests" / "cassettes" / "test_ask" / "test_gzip.yaml"


def test_a_cassette_is_rewritten_in_json_as_the_same_document(project, capsys) -> None:
    lines = migrate(capsys, "--convert-json")

    text = _plain(project).read_text()
    assert (text.startswith("{"), yaml.safe_load(text)) == (True, PLAIN)
    assert "  converted: tests/cassettes/test_ask/test_plain.yaml" in lines


def test_a_cassette_holding_bytes_stays_yaml_and_says_why(project, capsys) -> None:
    before = _gzip(project).read_text()

    lines = migrate(capsys, "--convert-json")

    assert _gzip(project).read_text() == before
    assert any(
        line.startswith("  stays YAML: tests/cassettes/test_ask/test_gzip.yaml: it holds bytes")
        for line in lines
    ), lines


def test_a_file_that_is_no_cassette_is_left_alone_and_unlisted(project, capsys) -> None:
    lines = migrate(capsys, "--convert-json")

    assert (project / "mkdocs.yml").read_text() == "site_name: docs\n"
    assert not [line for line in lines if "mkdocs" in line]


def test_a_dry_run_lists_what_it_would_convert_and_writes_nothing(project, capsys) -> None:
    before = _plain(project).read_text()

    lines = migrate(capsys, "--convert-json", "--dry-run")

    assert _plain(project).read_text() == before
    assert "  would convert: tests/cassettes/test_ask/test_plain.yaml" in lines


def test_a_second_run_converts_nothing(project, capsys) -> None:
    migrate(capsys, "--convert-json")
    text = _plain(project).read_text()

    lines = migrate(capsys, "--convert-json")

    assert _plain(project).read_text() == text
    assert any(
        "converted 0 vcrpy cassette(s)" in line and "1 already in JSON" in line for line in lines
    ), lines


def test_without_the_flag_nothing_is_converted_and_the_flag_is_named(project, capsys) -> None:
    before = _plain(project).read_text()

    lines = migrate(capsys)

    assert _plain(project).read_text() == before
    assert any(line.startswith("  pytest-agentctx migrate --convert-json") for line in lines)
