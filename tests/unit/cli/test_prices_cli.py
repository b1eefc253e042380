"""``pytest-agentctx prices pin``: the agent_price_data line that pins the installed price
data, beside what the project pins."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from pytest_agentctx.cli.main import main

INSTALLED = metadata.version("genai-prices")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["prices", "pin", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_pin_prints_the_line_for_the_installed_data_and_the_day(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--day", "2026-11-29")

    assert code == 0
    assert f"    agent_price_data = genai-prices=={INSTALLED} 2026-11-29\n" in out


def test_pin_says_when_the_project_already_pins_that_data(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pytest.ini").write_text(
        f"[pytest]\nagent_price_data = genai-prices=={INSTALLED} 2026-11-29\n"
    )

    code, out, _ = run(capsys, "--day", "2026-11-29")

    assert (code, out) == (
        0,
        f"The project already pins this data: agent_price_data = genai-prices=={INSTALLED} "
        "2026-11-29\n",
    )


def test_pin_shows_what_the_project_pins_beside_the_new_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pytest.ini").write_text(
        "[pytest]\nagent_price_data = genai-prices==0.0.1 2025-01-01\n"
    )

    _, out, _ = run(capsys, "--day", "2026-11-29")

    assert out.startswith("The project pins: agent_price_data = genai-prices==0.0.1 2025-01-01 (")
    assert f"agent_price_data = genai-prices=={INSTALLED} 2026-11-29" in out


def test_a_day_that_is_not_a_date_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--day", "2026-13-01")

    assert code == 2
    assert "--day '2026-13-01' is not a date; expected YYYY-MM-DD" in err
