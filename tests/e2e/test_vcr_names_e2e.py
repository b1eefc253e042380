"""End-to-end tests of a pytest-recording or pytest-vcr suite run by this plugin: its
cassettes found where the tool put them (``agent_cassette_names``), its ``vcr_config`` read,
and what the tool leaves in the project (options in ``addopts``, a
``pytest_recording_configure`` hook, its markers under ``--strict-markers``) accepted once
the tool is disabled (``-p no:recording``, as when it is uninstalled).

pytest-recording itself records the cassettes (it is installed beside the plugin) and runs
the baseline; the outer test serves an OpenAI-compatible chat completions API on 127.0.0.1
that answers ``"<version>: <question>"``, stopped before the replays.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
from support.chat_server import ChatServer

CLIENT = """
import os

import httpx


def ask(question, headers=None):
    reply = httpx.post(
        os.environ["AGENT_SERVER"] + "/v1/chat/completions",
        json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]},
        headers=headers or {},
    )
    return reply.json()["choices"][0]["message"]["content"]
"""

#: A suite in the shape of a real one: parametrize ids with spaces and punctuation, a class.
SUITE = """
import pytest
from vcr_client import ask

@pytest.mark.vcr
@pytest.mark.parametrize("question", ["is it safe?", "a/b: c|d", "plain"])
def test_ask(question):
    assert ask(question) == f"v1: {question}"


class TestCities:
    @pytest.mark.vcr
    def test_rome(self):
        assert ask("Rome") == "v1: Rome"
"""

#: The files pytest-recording writes for SUITE.
RECORDING_FILES = [
    "TestCities.test_rome.yaml",
    "test_ask[a-b- c-d].yaml",
    "test_ask[is it safe-].yaml",
    "test_ask[plain].yaml",
]

INI = """
[pytest]
addopts = --strict-markers
agent_cassette_names = {names}
filterwarnings = error
"""


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    server = ChatServer()
    monkeypatch.setenv("AGENT_SERVER", server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tester(agent_pytester: pytest.Pytester, provider: ChatServer) -> pytest.Pytester:
    agent_pytester.makepyfile(vcr_client=CLIENT)
    return agent_pytester


def _files(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.yaml"))


def _recorded_by_pytest_recording(tester: pytest.Pytester, provider: ChatServer, n: int) -> None:
    """The suite recorded and replayed by pytest-recording (the baseline), the server gone."""
    tester.runpytest("--record-mode=once").assert_outcomes(passed=n)
    provider.stop()
    tester.runpytest("--record-mode=none", "--block-network").assert_outcomes(passed=n)


def test_a_pytest_recording_suite_replays_its_cassettes_where_they_are(tester, provider):
    tester.makepyfile(test_suite=SUITE)
    _recorded_by_pytest_recording(tester, provider, 4)
    folder = tester.path / "cassettes" / "test_suite"
    assert _files(folder) == RECORDING_FILES
    tester.makeini(INI.format(names="pytest-recording"))

    result = tester.runpytest("-p", "no:recording", "--agent-report=report.json")

    result.assert_outcomes(passed=4)
    assert _files(folder) == RECORDING_FILES  # nothing written beside them
    assert "replayed" in (tester.path / "report.json").read_text()


def test_the_vcr_marker_makes_no_agent_test_under_the_default_names(tester, provider):
    tester.makepyfile(test_suite=SUITE)
    _recorded_by_pytest_recording(tester, provider, 4)
    tester.makeini(INI.format(names="agentctx").replace("--strict-markers", ""))

    result = tester.runpytest("-p", "no:recording")

    # no cassette answers: the tests reach for the stopped server, as without the plugin
    result.assert_outcomes(failed=4)
    assert "ConnectError" in result.stdout.str()


def test_a_fixture_computed_name_and_the_default_cassette_marker_are_read(tester, provider):
    tester.makeconftest(
        """
import pytest

@pytest.fixture
def default_cassette_name(request):
    return "computed-" + request.node.name
"""
    )
    tester.makepyfile(
        test_named="""
import pytest
from vcr_client import ask

@pytest.mark.vcr
def test_paris():
    assert ask("Paris") == "v1: Paris"
"""
    )
    sub = tester.mkpydir("marked")
    (sub / "test_marked.py").write_text(
        """
import pytest
from vcr_client import ask

@pytest.fixture
def default_cassette_name(request):
    marker = request.node.get_closest_marker("default_cassette")
    return marker.args[0]

@pytest.mark.vcr
@pytest.mark.default_cassette("shared-berlin")
def test_berlin():
    assert ask("Berlin") == "v1: Berlin"
"""
    )
    _recorded_by_pytest_recording(tester, provider, 2)
    assert (tester.path / "cassettes" / "test_named" / "computed-test_paris.yaml").is_file()
    assert (sub / "cassettes" / "test_marked" / "shared-berlin.yaml").is_file()
    tester.makeini(INI.format(names="pytest-recording"))

    tester.runpytest("-p", "no:recording").assert_outcomes(passed=2)


def test_the_default_cassette_marker_names_the_file(tester, provider):
    tester.makepyfile(
        test_marker="""
import pytest
from vcr_client import ask

@pytest.mark.vcr
@pytest.mark.default_cassette("berlin")
def test_berlin():
    assert ask("Berlin") == "v1: Berlin"
"""
    )
    _recorded_by_pytest_recording(tester, provider, 1)
    assert _files(tester.path / "cassettes" / "test_marker") == ["berlin.yaml"]
    tester.makeini(INI.format(names="pytest-recording"))

    tester.runpytest("-p", "no:recording").assert_outcomes(passed=1)


LEFTOVERS_CONFTEST = """
import pytest

def pytest_recording_configure(config, vcr):
    vcr.register_matcher("same_question", lambda request, recorded: None)

@pytest.fixture
def vcr_config():
    return {"match_on": ["method", "path", "same_question"], "filter_headers": ["x-team-token"]}
"""


def test_leftovers_of_pytest_recording_do_not_break_the_run(tester, provider):
    tester.makeconftest(LEFTOVERS_CONFTEST)
    tester.makepyfile(test_suite=SUITE)
    _recorded_by_pytest_recording(tester, provider, 4)
    tester.makeini(
        INI.format(names="pytest-recording").replace(
            "--strict-markers", "--strict-markers --block-network --record-mode=none"
        )
    )

    result = tester.runpytest("-p", "no:recording")

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "agentctx: --block-network (pytest-recording's, which is not loaded) is "
            "deprecated: agent tests never reach the network while they replay; remove it.",
            "agentctx: --record-mode=none (pytest-recording's, which is not loaded) is "
            "deprecated: replaying is the default; remove it.",
        ]
    )
    assert "INTERNALERROR" not in result.stdout.str()


def test_a_leftover_record_mode_records_as_the_mode_it_maps_to(tester, provider):
    tester.makepyfile(test_suite=SUITE)
    tester.makeini(INI.format(names="pytest-recording"))

    result = tester.runpytest("-p", "no:recording", "--record-mode=once")

    result.assert_outcomes(passed=4)
    assert "read as --agent-record=missing; use that instead." in result.stdout.str()
    assert _files(tester.path / "cassettes" / "test_suite") == RECORDING_FILES
    provider.stop()
    tester.runpytest("-p", "no:recording").assert_outcomes(passed=4)


def test_the_hook_is_no_unknown_hook_under_the_default_names(tester, provider):
    tester.makeconftest(LEFTOVERS_CONFTEST)
    tester.makepyfile(test_plain="def test_plain():\n    pass\n")

    result = tester.runpytest("-p", "no:recording", "--block-network", "--disable-recording")

    result.assert_outcomes(passed=1)
    assert "read as --agent-live" in result.stdout.str()


def test_a_hook_using_more_than_register_matcher_says_what_to_do(tester, provider):
    tester.makeconftest(
        """
def pytest_recording_configure(config, vcr):
    vcr.register_persister(object())
"""
    )
    tester.makepyfile(test_plain="def test_plain():\n    pass\n")

    result = tester.runpytest("-p", "no:recording")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*vcr.register_persister*Remove that line from the hook*"])


def test_the_names_refuse_pytest_recording_loaded_too(tester, provider):
    tester.makepyfile(test_suite=SUITE)
    tester.makeini(INI.format(names="pytest-recording"))

    result = tester.runpytest()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest-recording is loaded too*-p no:recording*"])


def test_a_bad_value_of_the_names_is_a_usage_error(tester, provider):
    tester.makeini(INI.format(names="vcrpy"))
    tester.makepyfile(test_plain="def test_plain():\n    pass\n")

    result = tester.runpytest("-p", "no:recording")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*agent_cassette_names = 'vcrpy'; expected one of agentctx, pytest-recording, pytest-vcr*"]
    )


def test_a_vcr_config_key_the_plugin_cannot_honour_fails_the_test(tester, provider):
    tester.makepyfile(
        test_bad="""
import pytest
from vcr_client import ask

@pytest.fixture
def vcr_config():
    return {"path_transformer": str}

@pytest.mark.vcr
def test_paris():
    ask("Paris")
"""
    )
    tester.makeini(INI.format(names="pytest-recording"))

    result = tester.runpytest("-p", "no:recording")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*vcr_config path_transformer=* cannot be honoured*"])


def test_filtered_headers_never_reach_a_cassette(tester, provider):
    tester.makeconftest(
        """
import pytest

@pytest.fixture
def vcr_config():
    return {"filter_headers": ["x-tenant"]}
"""
    )
    tester.makepyfile(
        test_token="""
import pytest
from vcr_client import ask

@pytest.mark.vcr
def test_token():
    assert ask("Paris", headers={"x-tenant": "tenant-0123456789"}) == "v1: Paris"
"""
    )
    tester.makeini(INI.format(names="pytest-recording"))

    tester.runpytest("-p", "no:recording", "--agent-record").assert_outcomes(passed=1)

    (cassette,) = (tester.path / "cassettes" / "test_token").iterdir()
    assert "tenant-0123456789" not in cassette.read_text()


# -- pytest-vcr's names --------------------------------------------------------------------

VCR_SUITE = """
import pytest
from vcr_client import ask

@pytest.mark.vcr
@pytest.mark.parametrize("question", ["is it safe?", "a: c|d"])
def test_ask(question):
    assert ask(question) == f"v1: {question}"


class TestCities:
    @pytest.mark.vcr(record_mode="none")
    def test_rome(self):
        assert ask("Rome") == "v1: Rome"
"""


def test_a_pytest_vcr_suite_finds_its_cassettes_by_their_raw_names(tester, provider):
    tester.makepyfile(test_vcr_suite=VCR_SUITE)
    tester.makeini(
        INI.format(names="pytest-vcr") + "agent_cassette_format = vcr\n"
    )  # vcrpy's own YAML, as pytest-vcr writes it
    tester.runpytest("-p", "no:recording", "--agent-record").assert_outcomes(passed=3)
    provider.stop()

    result = tester.runpytest("-p", "no:recording")

    result.assert_outcomes(passed=3)
    assert _files(tester.path / "cassettes") == [
        "TestCities.test_rome.yaml",
        "test_ask[a: c|d].yaml",
        "test_ask[is it safe?].yaml",
    ]


def test_a_pytest_vcr_name_fixture_is_read(tester, provider):
    tester.makepyfile(
        test_vcr_named="""
import pytest
from vcr_client import ask

@pytest.fixture
def vcr_cassette_name(request):
    return "by-fixture"

@pytest.mark.vcr
def test_paris():
    assert ask("Paris") == "v1: Paris"
"""
    )
    tester.makeini(INI.format(names="pytest-vcr"))

    tester.runpytest("-p", "no:recording", "--agent-record").assert_outcomes(passed=1)

    assert _files(tester.path / "cassettes") == ["by-fixture.yaml"]


def test_vcr_configs_cassette_library_dir_and_record_mode_are_read(tester, provider):
    tester.makeconftest(
        """
from pathlib import Path

import pytest

@pytest.fixture
def vcr_config():
    return {
        "cassette_library_dir": str(Path(__file__).parent / "vcr_files"),
        "record_mode": "once",
        "decode_compressed_response": True,
    }
"""
    )
    tester.makepyfile(test_suite=SUITE)
    tester.runpytest().assert_outcomes(passed=4)  # pytest-recording records (mode once)
    assert _files(tester.path / "vcr_files") == RECORDING_FILES
    provider.stop()
    tester.makeini(INI.format(names="pytest-recording"))

    result = tester.runpytest("-p", "no:recording")

    result.assert_outcomes(passed=4)  # mode once (missing): the cassettes exist, replayed
    assert _files(tester.path / "vcr_files") == RECORDING_FILES
    assert not (tester.path / "cassettes").exists()
