"""``pytest-agentctx migrate``: the tool found, the configuration written, what is left to
change by hand printed with its line, a dry run that writes nothing, a second run that
changes nothing, and errors that say what to run."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pytest_agentctx.cli.main import main

RECORDING_TEST = """
import pytest


@pytest.mark.vcr
def test_ask():
    pass
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()
    return tmp_path


def write(root: Path, **files: str) -> None:
    for name, text in files.items():
        path = root / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def migrate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["migrate", *args])
    captured = capsys.readouterr()
    return code, (captured.out + captured.err).splitlines()


def recording_project(root: Path, ini: str = "[pytest]\naddopts = --block-network\n") -> None:
    write(
        root,
        **{
            "pytest.ini": ini,
            "tests__conftest.py": "def pytest_recording_configure(config, vcr):\n    pass\n",
            "tests__test_ask.py": RECORDING_TEST,
        },
    )


def test_a_pytest_recording_project_is_switched_in_its_pytest_ini(project, capsys) -> None:
    recording_project(project, "[pytest]\naddopts = --block-network --record-mode=once -ra\n")
    until = (dt.date.today() + dt.timedelta(days=30)).isoformat()

    code, _ = migrate(capsys)

    assert code == 0
    assert (project / "pytest.ini").read_text() == (
        "[pytest]\naddopts = -ra -p no:recording\n"
        "# pytest-agentctx migrate (docs/migrating.md)\n"
        "agent_cassette_names = pytest-recording\nagent_cassette_format = vcr\n"
        f"agent_record_mode = missing\nagent_migration_until = {until}\n"
    )


def test_the_tool_is_named_with_the_line_that_shows_it(project, capsys) -> None:
    recording_project(project)

    _, lines = migrate(capsys)

    assert lines[0].startswith("pytest-agentctx migrate: a pytest-recording suite (")
    assert "tests/conftest.py:1: def pytest_recording_configure" in lines[0]


@pytest.mark.parametrize(
    ("option", "mode"),
    [("once", "missing"), ("new_episodes", "new"), ("all", "rewrite"), ("rewrite", "rewrite")],
)
def test_record_modes_map_to_the_package_s(project, capsys, option, mode) -> None:
    recording_project(project, f"[pytest]\naddopts = --record-mode {option}\n")

    migrate(capsys)

    assert f"agent_record_mode = {mode}\n" in (project / "pytest.ini").read_text()


def test_record_mode_none_is_the_default_and_not_written(project, capsys) -> None:
    recording_project(project, "[pytest]\naddopts = --record-mode=none\n")

    migrate(capsys)

    assert "agent_record_mode" not in (project / "pytest.ini").read_text()


def test_a_dry_run_prints_the_diff_and_writes_nothing(project, capsys) -> None:
    recording_project(project)

    code, lines = migrate(capsys, "--dry-run")

    assert code == 0
    assert (project / "pytest.ini").read_text() == "[pytest]\naddopts = --block-network\n"
    assert "-addopts = --block-network" in lines
    assert "+addopts = -p no:recording" in lines
    assert "would change pytest.ini:" in lines
    assert lines[lines.index("next:") - 1].startswith("dry run: nothing written")


def test_a_second_run_changes_nothing(project, capsys) -> None:
    recording_project(project)
    migrate(capsys)
    first = (project / "pytest.ini").read_text()

    code, lines = migrate(capsys)

    assert (code, (project / "pytest.ini").read_text()) == (0, first)
    assert "pytest.ini: nothing to change (already migrated)" in lines


def test_an_option_already_set_is_kept_and_named(project, capsys) -> None:
    recording_project(project, "[pytest]\nagent_cassette_format = json\n")

    code, lines = migrate(capsys)

    assert code == 1
    assert "agent_cassette_format = json" in (project / "pytest.ini").read_text()
    assert "  pytest.ini:2: agent_cassette_format = json" in lines


def test_a_pyproject_table_is_edited_in_place(project, capsys) -> None:
    write(
        project,
        **{
            "pyproject.toml": '[project]\nname = "x"\n\n[tool.pytest.ini_options]\n'
            'addopts = ["--block-network"]\n\n[tool.ruff]\nline-length = 99\n',
            "tests__test_ask.py": RECORDING_TEST,
            "requirements-dev.txt": "pytest-recording==0.13.2\n",
        },
    )

    migrate(capsys)

    text = (project / "pyproject.toml").read_text()
    assert 'addopts = ["-p", "no:recording"]\n' in text
    assert 'agent_cassette_names = "pytest-recording"\n' in text
    assert text.endswith("\n[tool.ruff]\nline-length = 99\n")


def test_a_pytest_vcr_project_turns_pytest_vcr_off(project, capsys) -> None:
    write(
        project,
        **{
            "pytest.ini": "[pytest]\naddopts = --vcr-record=none\n",
            "tests__test_ask.py": RECORDING_TEST,
        },
    )

    migrate(capsys)

    text = (project / "pytest.ini").read_text()
    assert "addopts = -p no:vcr\n" in text
    assert "agent_cassette_names = pytest-vcr\n" in text


def test_plain_vcrpy_gets_the_format_and_each_use_cassette_printed(project, capsys) -> None:
    write(
        project,
        **{
            "pytest.ini": "[pytest]\n",
            "tests__test_ask.py": "import vcr\n\n\ndef test_ask():\n"
            "    with vcr.use_cassette('fixtures/ask.yaml'):\n        pass\n",
        },
    )

    code, lines = migrate(capsys)

    assert code == 1
    assert "agent_cassette_names" not in (project / "pytest.ini").read_text()
    assert "  tests/test_ask.py:5: with vcr.use_cassette('fixtures/ask.yaml'):" in lines
    assert any('@pytest.mark.agent(cassette="fixtures/ask.yaml")' in line for line in lines)


def test_left_for_you_lists_each_line_to_change(project, capsys) -> None:
    recording_project(project, "[pytest]\naddopts = --allowed-hosts=.*\\.internal\n")
    write(
        project,
        tests__test_more="",
        **{
            "tests__conftest.py": "import pytest\n\n\n"
            "def pytest_recording_configure(config, vcr):\n"
            "    vcr.register_persister(object())\n\n\n@pytest.fixture\ndef vcr_config():\n"
            "    return {'path_transformer': str, 'allow_playback_repeats': True}\n",
            "tests__test_old.py": "def test_old(vcr):\n    assert vcr.play_count == 1\n",
        },
    )

    code, lines = migrate(capsys)

    assert code == 1
    left = [line for line in lines if line.startswith("  ") and ":" in line.split()[0]]
    assert [line.split(": ", 1)[0].strip() for line in left] == [
        "pytest.ini:2",
        "tests/conftest.py:5",
        "tests/conftest.py:10",
        "tests/conftest.py:10",
        "tests/test_old.py:1",
    ]


def test_no_use_of_vcrpy_is_a_usage_error(project, capsys) -> None:
    write(project, **{"pytest.ini": "[pytest]\n", "tests__test_x.py": "def test_x():\n    pass\n"})

    code, lines = migrate(capsys)

    assert code == 2
    assert "no use of vcrpy found" in lines[0]
    assert "--from vcrpy" in lines[0]


def test_both_tools_ask_for_from(project, capsys) -> None:
    recording_project(project, "[pytest]\naddopts = --vcr-record=none --block-network\n")

    code, lines = migrate(capsys)

    assert code == 2
    assert "both pytest-recording and pytest-vcr" in lines[0]
    assert "--from pytest-recording" in lines[0]


def test_from_decides_when_the_project_shows_both(project, capsys) -> None:
    recording_project(project, "[pytest]\naddopts = --vcr-record=none --block-network\n")

    code, _ = migrate(capsys, "--from", "pytest-vcr")

    assert code == 0
    assert "agent_cassette_names = pytest-vcr" in (project / "pytest.ini").read_text()


def test_a_folder_can_be_given(project, capsys, monkeypatch) -> None:
    recording_project(project)
    monkeypatch.chdir(project / "tests")

    code, _ = migrate(capsys, str(project))

    assert code == 0
    assert "agent_cassette_names" in (project / "pytest.ini").read_text()


# -- --rename: from the old tool's names to the package's -----------------------------------


def report(*entries: tuple[str, str]) -> str:
    stats: dict[str, object] = {
        "runs": 0,
        "iterations": 0,
        "tool_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "cost_usd": None,
        "duration_s": 0.0,
        "models": [],
        "trajectory": [],
    }
    tests: list[dict[str, object]] = [
        {
            "nodeid": nodeid,
            "outcome": "passed",
            "suite": "unit",
            "cassette": {
                "path": path,
                "mode": "none",
                "status": "replayed",
                "interactions": 0,
                "unused": [],
            },
            "budget": None,
            "repeat": None,
            "stats": stats,
            "runs": [],
        }
        for nodeid, path in entries
    ]
    document = {"format": "pytest-agentctx-report", "version": 1, "tests": tests}
    return json.dumps({**document, "summary": {"gate": {"enabled": False}}})


def renaming(project: Path) -> None:
    recording_project(project)
    old = project / "tests/cassettes/test_ask/test_ask[is it safe-].yaml"
    old.parent.mkdir(parents=True)
    old.write_text("interactions: []\nversion: 1\n")
    write(
        project,
        **{
            "old.json": report(
                ("tests/test_ask.py::test_ask[is it safe?]", str(old.relative_to(project)))
            ),
            "new.json": report(
                (
                    "tests/test_ask.py::test_ask[is it safe?]",
                    "cassettes/tests/test_ask/test_ask[is_it_safe_]~ae7697fa.yaml",
                )
            ),
        },
    )


def test_rename_moves_each_test_s_file_to_its_new_path(project, capsys) -> None:
    renaming(project)

    code, lines = migrate(capsys, "--rename", "old.json", "new.json")

    assert code == 0
    assert (project / "cassettes/tests/test_ask/test_ask[is_it_safe_]~ae7697fa.yaml").is_file()
    assert list((project / "tests/cassettes/test_ask").glob("*.yaml")) == []
    assert lines[0] == (
        "moved tests/cassettes/test_ask/test_ask[is it safe-].yaml -> "
        "cassettes/tests/test_ask/test_ask[is_it_safe_]~ae7697fa.yaml"
    )


def test_rename_dry_run_moves_nothing(project, capsys) -> None:
    renaming(project)

    code, lines = migrate(capsys, "--rename", "old.json", "new.json", "--dry-run")

    assert code == 0
    assert lines[0].startswith("would move tests/cassettes/test_ask/test_ask[is it safe-].yaml")
    assert (project / "tests/cassettes/test_ask/test_ask[is it safe-].yaml").is_file()


def test_rename_leaves_a_shared_file_and_says_which_marker_to_write(project, capsys) -> None:
    recording_project(project)
    (project / "shared.yaml").write_text("interactions: []\nversion: 1\n")
    write(
        project,
        **{
            "old.json": report(("t.py::a", "shared.yaml"), ("t.py::b", "shared.yaml")),
            "new.json": report(
                ("t.py::a", "cassettes/t/a.yaml"), ("t.py::b", "cassettes/t/b.yaml")
            ),
        },
    )

    code, lines = migrate(capsys, "--rename", "old.json", "new.json")

    assert code == 1
    assert (project / "shared.yaml").is_file()
    assert lines[-1] == (
        "  shared.yaml is shared by 2 tests (t.py::a, t.py::b): mark them "
        '@pytest.mark.agent(cassette="shared.yaml") instead of moving it'
    )


def test_an_allowed_hosts_regex_that_is_no_host_name_is_left_to_the_user(project, capsys) -> None:
    recording_project(project)
    write(
        project,
        **{
            "tests__test_hosts.py": "import pytest\n\n\n@pytest.fixture\ndef vcr_config():\n"
            "    return {'allowed_hosts': "
            "['localhost', r'api\\.example\\.com', r'^10\\.0\\.\\d+']}\n"
        },
    )

    code, lines = migrate(capsys)

    assert code == 1
    wanted = "the regex '^10\\\\.0\\\\.\\\\d+' is not a plain host name"
    assert any(wanted in line for line in lines)
    assert sum("allowed_hosts" in line for line in lines) == 2
