"""Unit tests of pytest_agentctx._untrusted: files read within limits, strict JSON, the
limits' ini options, and untrusted text made printable."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from pytest_agentctx._untrusted import (
    LimitExceeded,
    Limits,
    NotAFile,
    current_limits,
    limits_from,
    load_json,
    read_untrusted,
    use_limits,
    visible,
)
from pytest_agentctx.exceptions import UsageError


@pytest.fixture
def limits() -> Iterator[None]:
    """The limits in force are restored after the test."""
    previous = use_limits(current_limits())
    yield
    use_limits(previous)


# -- files -----------------------------------------------------------------------------


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b"{}")

    assert read_untrusted(path) == b"{}"


def test_a_link_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_bytes(b"[1]")
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "real.json")

    assert read_untrusted(link) == b"[1]"


def test_a_link_to_a_device_is_refused_before_reading(tmp_path: Path) -> None:
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")

    with pytest.raises(NotAFile) as caught:
        read_untrusted(link)

    assert caught.value.kind == "a character device"
    assert caught.value.filename == str(link)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "entry.json"
    os.mkfifo(fifo)

    with pytest.raises(NotAFile, match="a FIFO, not a regular file"):
        read_untrusted(fifo)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotAFile, match="a folder, not a regular file"):
        read_untrusted(tmp_path)


def test_a_file_past_the_size_limit_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 11)

    with pytest.raises(LimitExceeded) as caught:
        read_untrusted(path, limit=10)

    assert str(caught.value).startswith(
        f"{path}: a file of 11 bytes, past the limit agent_max_file_bytes = "
    )
    assert read_untrusted(path, limit=11) == b"x" * 11


def test_the_size_limit_in_force_applies(tmp_path: Path, limits: None) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 11)
    use_limits(Limits(file_bytes=10))

    with pytest.raises(LimitExceeded, match=r"agent_max_file_bytes = 10\. "):
        read_untrusted(path)


# -- strict JSON -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[Infinity]", "Infinity is not a JSON number"),
        ("[-Infinity]", "-Infinity is not a JSON number"),
        ("[NaN]", "NaN is not a JSON number"),
        ("[" + "1" * 5000 + "]", "Exceeds the limit (4300 digits)"),
    ],
)
def test_json_that_python_would_misread_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        load_json(text, "r.json")


def test_json_nested_past_the_depth_limit_is_refused(limits: None) -> None:
    use_limits(Limits(depth=3))

    assert load_json("[[[1]]]", "r.json") == [[[1]]]
    with pytest.raises(LimitExceeded, match=r"r\.json: lists or mappings nested 4 deep"):
        load_json('[[{"a": [1]}]]', "r.json")


def test_json_nested_past_what_the_parser_reads_is_refused() -> None:
    with pytest.raises(LimitExceeded, match="JSON nested deeper than its parser reads"):
        load_json("[" * 100_000 + "]" * 100_000, "r.json")


@given(st.recursive(st.integers() | st.text(), lambda inner: st.lists(inner, max_size=3)))
def test_json_within_the_limits_reads_as_json_does(value: object) -> None:
    text = json.dumps(value)

    assert load_json(text, "r.json") == json.loads(text)


# -- the limits' options -----------------------------------------------------------------


def test_limits_come_from_their_ini_options() -> None:
    limits = limits_from({"agent_max_body_bytes": "1_000", "agent_max_depth": " 50 "})

    assert limits == Limits(body_bytes=1000, depth=50)
    assert limits_from({"agent_max_depth": ""}) == Limits()


@pytest.mark.parametrize("value", ["deep", "0", "-5", "1.5"])
def test_a_limit_that_is_not_a_whole_number_of_1_or_more_is_a_usage_error(value: str) -> None:
    with pytest.raises(UsageError) as caught:
        limits_from({"agent_max_depth": value})

    assert str(caught.value) == (
        f"agent_max_depth = {value!r}: expected a whole number of 1 or more (the default "
        "is 200). Fix it in the ini file."
    )


# -- printable text --------------------------------------------------------------------


def test_control_characters_are_shown_as_escapes() -> None:
    hostile = "a\x1b]52;c;cGF3bmVk\x07b\x1b[2Jc\x08d\re\x9bf\u202eg\x00"

    assert visible(hostile) == (
        "a\\x1b]52;c;cGF3bmVk\\x07b\\x1b[2Jc\\x08d\\x0de\\x9bf\\u202eg\\x00"
    )


def test_newlines_tabs_and_other_text_are_kept() -> None:
    text = "line one\n\tline two: café, 日本, emoji 🙂"

    assert visible(text) is text


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


@given(st.text())
def test_no_control_character_survives(text: str) -> None:
    shown = visible(text)

    assert _CONTROL.search(shown) is None
    assert visible(shown) == shown


@given(st.text().filter(lambda text: _CONTROL.search(text) is None))
def test_text_without_control_characters_is_unchanged(text: str) -> None:
    assert visible(text) == text


# -- every file read goes through read_untrusted ------------------------------------------

#: The package's direct file reads that are not of untrusted input, each with why: files the
#: user's own code and templates name, files this run wrote itself, the package's own data.
_TRUSTED_READS = {
    "pytest_agentctx/runtime/persistence.py": "a conversation file the test itself saved",
    "pytest_agentctx/runtime/artifacts.py": "artifacts the agent under test wrote this run",
    "pytest_agentctx/runtime/prompts.py": "prompt templates of the user's own project",
    "pytest_agentctx/plugin/suites/_scheduling.py": "the file an xdist worker wrote this session",
    "pytest_agentctx/cli/config.py": "the project's own pytest configuration",
    "pytest_agentctx/cli/migrate.py": "the project's own dependency files",
    "pytest_agentctx/cli/migrate_config.py": "the project's own pytest configuration",
    "pytest_agentctx/cli/migrate_scan.py": "the project's own test sources and conftests",
    "pytest_agentctx/traffic/cassettes/readcache.py": "the package's own modules, hashed",
    "pytest_agentctx/reports/html.py": "the package's own stylesheet and script",
    "pytest_agentctx/cli/rejudge.py": "the rubric file the user names on the command line",
    "pytest_agentctx/evals/rejudge.py": "the judges' rubric files the user's judges file names",
}
_DIRECT_READ = re.compile(r"\.read_text\(|\.read_bytes\(|\bjson\.load\(")


def _package_sources() -> Iterator[tuple[str, str]]:
    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "pytest_agentctx").rglob("*.py")):
        yield path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")


def test_the_package_reads_untrusted_files_only_through_read_untrusted() -> None:
    direct = {
        name
        for name, source in _package_sources()
        if name != "pytest_agentctx/_untrusted.py" and _DIRECT_READ.search(source)
    }

    # A new direct read of a file (a cassette, a report, a snapshot, a cache entry: input a
    # stranger may have written) must go through read_untrusted, which bounds it; a read of
    # a file the user or this run made is listed above with its reason.
    assert direct == set(_TRUSTED_READS)


def test_the_plugin_reads_the_ini_option_of_every_limit() -> None:
    from pytest_agentctx._untrusted import LIMIT_OPTIONS
    from pytest_agentctx.plugin.options import LIMIT_INI

    assert tuple(LIMIT_OPTIONS.values()) == LIMIT_INI
