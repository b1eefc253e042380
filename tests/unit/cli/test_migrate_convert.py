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


def _with_secrets(key: str) -> dict[str, object]:
    cassette = _cassette(f'{{"echo": "{key}"}}')
    interaction = cassette["interactions"][0]  # type: ignore[index]
    interaction["request"]["headers"]["Authorization"] = [f"Bearer {key}"]
    interaction["request"]["uri"] += "?api_key=query-secret-0123456789"
    return cassette


def test_a_converted_cassette_passes_the_redactor(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-proj-converted-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    path = project / "tests" / "cassettes" / "test_ask" / "test_secret.yaml"
    path.write_text(yaml.safe_dump(_with_secrets(key)))

    migrate(capsys, "--convert-json")

    text = path.read_text()
    loaded = yaml.safe_load(text)["interactions"][0]
    assert (key not in text, "query-secret-0123456789" not in text) == (True, True)
    assert loaded["request"]["headers"]["Authorization"] == ["REDACTED"]
    assert loaded["response"]["body"]["string"] == '{"echo": "REDACTED"}'


def test_a_converted_cassette_is_redacted_of_the_projects_secret_env(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tenant-token-0123456789")
    (project / "pytest.ini").write_text("[pytest]\nagent_secret_env = MY_SERVICE_TOKEN\n")
    path = project / "tests" / "cassettes" / "test_ask" / "test_token.yaml"
    path.write_text(yaml.safe_dump(_cassette('{"token": "tenant-token-0123456789"}')))

    migrate(capsys, "--convert-json")

    assert "tenant-token-0123456789" not in path.read_text()
