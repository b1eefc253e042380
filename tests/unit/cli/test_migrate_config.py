"""The pytest configuration edited line by line (``cli/migrate_config.py``): the options
added after the section's last one, ``addopts`` tokens dropped and added where they are,
every other line as written."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_agentctx.cli.migrate_config import ConfigFile, load_config
from pytest_agentctx.exceptions import UsageError

NO_RECORDING = ["-p", "no:recording"]


def block_network(tokens: Sequence[str]) -> set[int]:
    return {index for index, token in enumerate(tokens) if token == "--block-network"}


def edited(name: str, text: str) -> str:
    config = ConfigFile(Path(name), text)
    config.edit_tokens("addopts", block_network, NO_RECORDING)
    return config.text


def test_an_ini_line_loses_the_option_and_gains_the_plugin_switch() -> None:
    text = "[pytest]\n# offline\naddopts = --block-network -ra\n"

    assert edited("pytest.ini", text) == "[pytest]\n# offline\naddopts = -ra -p no:recording\n"


def test_continuation_lines_keep_their_indentation() -> None:
    text = "[tox]\nenvlist = py\n\n[pytest]\naddopts =\n    -ra\n    --block-network\nx = 1\n"

    assert edited("tox.ini", text) == (
        "[tox]\nenvlist = py\n\n[pytest]\naddopts =\n    -ra\n    -p no:recording\nx = 1\n"
    )


def test_a_setup_cfg_section_is_edited() -> None:
    text = "[metadata]\nname = x\n\n[tool:pytest]\naddopts = --block-network\n"

    assert edited("setup.cfg", text).endswith("[tool:pytest]\naddopts = -p no:recording\n")


def test_a_toml_string_is_edited_inside_its_quotes() -> None:
    text = '[tool.pytest.ini_options]\naddopts = "-ra --block-network"  # CI\n'

    assert edited("pyproject.toml", text) == (
        '[tool.pytest.ini_options]\naddopts = "-ra -p no:recording"  # CI\n'
    )


def test_a_toml_array_on_one_line() -> None:
    text = '[tool.pytest.ini_options]\naddopts = ["--block-network", "-ra"]\n'

    assert edited("pyproject.toml", text) == (
        '[tool.pytest.ini_options]\naddopts = ["-ra", "-p", "no:recording"]\n'
    )


def test_a_toml_array_over_lines() -> None:
    text = '[tool.pytest.ini_options]\naddopts = [\n    "-ra",\n    "--block-network"\n]\n'

    assert edited("pyproject.toml", text) == (
        '[tool.pytest.ini_options]\naddopts = [\n    "-ra",\n    "-p", "no:recording",\n]\n'
    )


def test_tokens_are_the_arguments_pytest_gets() -> None:
    config = ConfigFile(Path("pytest.ini"), "[pytest]\naddopts = -k 'a or b' --block-network\n")

    assert config.tokens("addopts") == ["-k", "a or b", "--block-network"]


def test_options_are_added_after_the_last_option_of_the_section() -> None:
    config = ConfigFile(
        Path("pyproject.toml"),
        '[tool.pytest.ini_options]\ntestpaths = [\n  "tests",\n]\n\n[tool.ruff]\nx = 1\n',
    )

    config.add([("agent_cassette_format", "vcr")], "added")

    assert config.text == (
        '[tool.pytest.ini_options]\ntestpaths = [\n  "tests",\n]\n# added\n'
        'agent_cassette_format = "vcr"\n\n[tool.ruff]\nx = 1\n'
    )


def test_an_option_that_is_not_set_is_left_to_the_caller() -> None:
    config = ConfigFile(Path("pytest.ini"), "[pytest]\n")

    assert config.edit_tokens("addopts", block_network, NO_RECORDING) is False
    assert config.text == "[pytest]\n"


def test_a_pytest_ini_without_its_section_gets_one() -> None:
    config = ConfigFile(Path("pytest.ini"), "# empty\n")

    config.add([("agent_cassette_format", "vcr")], "added")

    assert config.text == "# empty\n\n[pytest]\n# added\nagent_cassette_format = vcr\n"


def test_no_configuration_is_a_usage_error_that_says_what_to_create(tmp_path) -> None:
    with pytest.raises(UsageError, match=r"no pytest configuration in .*a pytest.ini holding"):
        load_config(tmp_path)


def test_a_toml_value_that_does_not_parse_names_its_line(tmp_path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.pytest.ini_options]\naddopts = ["-ra"\n')

    with pytest.raises(UsageError, match="cannot be read as TOML"):
        load_config(tmp_path)
