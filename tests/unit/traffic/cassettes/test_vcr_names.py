"""Unit tests of pytest_agentctx.traffic.cassettes.vcr_names: cassette names as
pytest-recording and pytest-vcr compute them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_agentctx.redaction.names import digest
from pytest_agentctx.traffic.cassettes.options import CassetteSettings
from pytest_agentctx.traffic.cassettes.per_test import cassette_path
from pytest_agentctx.traffic.cassettes.vcr_names import (
    MAX_FILENAME_LEN,
    compat_path,
    fit_name,
    parse_naming,
    recording_folder,
    recording_name,
    vcr_folder,
    vcr_name,
)
from pytest_agentctx.traffic.errors import CassetteConfigError

MODULE = Path("/project/tests/test_weather.py")


@pytest.mark.parametrize(
    ("test_name", "expected"),
    [
        ("test_ask[is it safe?]", "test_ask[is it safe-]"),
        ("test_ask[a/b: c|d]", "test_ask[a-b- c-d]"),
        ("test_ask[<%*\"'\\>]", "test_ask[-------]"),
        ("test_ask[openai:gpt-4o-mini]", "test_ask[openai-gpt-4o-mini]"),
        ("test_plain", "test_plain"),
    ],
)
def test_pytest_recording_replaces_its_forbidden_characters_only(test_name, expected):
    assert recording_name(None, test_name) == expected


def test_pytest_recording_names_a_class_test_with_its_class():
    assert recording_name("TestCities", "test_rome[a:b]") == "TestCities.test_rome[a-b]"


def test_pytest_vcr_keeps_the_raw_name():
    assert vcr_name("TestCities", "test_ask[is it safe?]") == "TestCities.test_ask[is it safe?]"


def test_the_tools_folders():
    assert recording_folder(MODULE) == Path("/project/tests/cassettes/test_weather")
    assert vcr_folder(MODULE) == Path("/project/tests/cassettes")


def test_a_name_too_long_is_cut_as_pytest_recording_cuts_it():
    name = "test_x[" + "a" * 400 + "]"

    fitted = fit_name(name)

    assert len(fitted) + len(".yaml") == MAX_FILENAME_LEN
    assert fitted.startswith("test_x[aaa")
    assert fitted.endswith("..." + hashlib.md5(name.encode()).hexdigest())


def test_a_name_that_fits_is_kept():
    assert fit_name("test_x[a]") == "test_x[a]"


def test_the_path_gets_the_suffix_unless_the_name_has_it():
    assert compat_path("/c", "test_x[a b?]") == Path("/c/test_x[a b?].yaml")
    assert compat_path("/c", "shared.yaml") == Path("/c/shared.yaml")


def test_a_slash_in_a_pytest_vcr_name_is_a_folder_as_vcrpy_joins_it():
    assert compat_path("/c", "test_x[a/b]") == Path("/c/test_x[a/b].yaml")
    assert compat_path("/c", "/abs/name") == Path("/abs/name.yaml")


def test_a_secret_in_a_name_is_redacted_and_the_name_gets_a_digest():
    name = "test_key[sk-secret-123456]"

    path = compat_path("/c", name, redact=lambda text: text.replace("sk-secret-123456", "R"))

    assert path == Path(f"/c/test_key[R]~{digest(name)}.yaml")


def test_a_name_without_a_secret_is_untouched_by_the_redactor():
    path = compat_path("/c", "test_ask[is it safe-]", redact=lambda text: text)

    assert path == Path("/c/test_ask[is it safe-].yaml")


@pytest.mark.parametrize("value", ["agentctx", "pytest-recording", "PYTEST-VCR ", ""])
def test_the_namings_are_read(value):
    assert parse_naming(value) in ("agentctx", "pytest-recording", "pytest-vcr")


def test_a_bad_naming_names_the_value_and_the_choices():
    with pytest.raises(CassetteConfigError, match=r"'vcrpy'; expected one of agentctx, "):
        parse_naming("vcrpy")


def test_the_settings_check_the_naming():
    with pytest.raises(CassetteConfigError, match="agent_cassette_names = 'recording'"):
        _settings(names="recording")


def test_the_settings_keep_the_naming():
    settings = _settings(names="pytest-recording")

    assert settings.names == "pytest-recording"
    assert settings.vcr_names
    assert not _settings().vcr_names


def test_the_tools_path_is_the_cassettes_unless_a_marker_names_one():
    settings = _settings(names="pytest-vcr")
    tool_path = Path("/project/tests/cassettes/test_x.yaml")

    def path(override: str | None) -> Path:
        return cassette_path(
            settings,
            rootpath=Path("/project"),
            module_path=MODULE,
            test_name="test_x",
            class_name=None,
            override=override,
            tool_path=tool_path,
        )

    assert path(None) == tool_path
    assert path("shared") == Path("/project/cassettes/shared.json")


def _settings(names: str = "agentctx") -> CassetteSettings:
    return CassetteSettings.build(
        rootpath=Path("/project"),
        directory="cassettes",
        cli_mode=None,
        ini_mode="none",
        all_tests=False,
        allow_unused=False,
        allowed_hosts=[],
        ignore_fields=[],
        cassette_format="json",
        secret_env=[],
        record_failing=False,
        run_id="r",
        names=names,
    )
