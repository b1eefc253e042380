"""End-to-end tests: no recording is ever lost, no debris is left, and a cassette or report
that cannot be written fails clearly, in real pytest runs.

* An agent that stops reading a stream without closing it (``break`` out of
  ``for chunk in stream``) gets a cassette, which replays: the real ``openai`` (sync and
  async) and ``anthropic`` SDKs, against a :class:`LoopbackProvider` the inner test starts.
* A cassette that cannot be saved (a file where its folder should be, a file size limit, a
  read-only folder) fails the test at teardown with one clear message, the old cassette kept.
* A report path that cannot be written is a usage error at the start; one that fails at the
  end prints an error line and fails the session, with the test summary.
* ``kill -9`` in the middle of a cassette write, or between two tests, loses nothing; what
  it leaves (a temporary file, run markers) is gone after the next run.

The inner runs get a system temp dir of their own (``TMPDIR``), where the plugin keeps its
locks and run markers, so what is left there can be checked.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
from pathlib import Path

import anthropic  # noqa: F401  (imported here so the inner runs do not import it again)
import openai  # noqa: F401  (same)
import pytest

from pytest_agentctx.traffic.cassettes import load_cassette

#: Agents that stop reading a stream at its first word, without closing it.
AGENTS = """
import anthropic
import openai

QUESTION = [{"role": "user", "content": "Count, please."}]


def first_word_sync(base_url, close_client=False):
    client = openai.OpenAI(base_url=base_url, api_key="sk-e2e-test-key", max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=QUESTION, stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    if close_client:
        client.close()
    return chunk.choices[0].delta.content


def all_words_sync(base_url):
    client = openai.OpenAI(base_url=base_url, api_key="sk-e2e-test-key", max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=QUESTION, stream=True
    )
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


async def first_word_async(base_url):
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-e2e-test-key", max_retries=0)
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=QUESTION, stream=True
    )
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    return chunk.choices[0].delta.content


def first_word_anthropic(base_url):
    client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-e2e-test", max_retries=0)
    stream = client.messages.create(
        model="claude-haiku-4-5", max_tokens=100, messages=QUESTION, stream=True
    )
    for event in stream:
        if event.type == "content_block_delta":
            break
    return event.delta.text
"""

CONFTEST = '''
import errno
import os
import resource
import signal

import pytest
from pytest_agentctx import LoopbackProvider

# What the outer test asks of this run, through the environment:
if os.environ.get("AGENT_FILE_SIZE_LIMIT"):  # a full disk, as the OS says it: EFBIG
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = int(os.environ["AGENT_FILE_SIZE_LIMIT"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

_replace = os.replace


def _renaming(source, target, *args, **kwargs):
    if str(target).endswith(".json") and "cassettes" in str(target):
        if os.environ.get("AGENT_KILL_AT_RENAME"):  # the temporary file is whole
            os.kill(os.getpid(), signal.SIGKILL)
        if os.environ.get("AGENT_READ_ONLY"):  # a read-only file system
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(target))
    return _replace(source, target, *args, **kwargs)


os.replace = _renaming

_mkdir = os.mkdir


def _making(path, *args, **kwargs):
    if os.environ.get("AGENT_READ_ONLY_CASSETTES") and os.path.basename(
        os.path.dirname(os.fspath(path))
    ) == "cassettes":  # a folder in cassettes/ cannot be made: cassettes/ is read-only
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
    return _mkdir(path, *args, **kwargs)


os.mkdir = _making


@pytest.fixture
def provider():
    """The model while recording; on replay the cassette answers and it sees nothing."""
    with LoopbackProvider(event_delay=float(os.environ.get("AGENT_EVENT_DELAY", "0"))) as running:
        running.reply(os.environ.get("AGENT_REPLY", "one two three four five six"))
        yield running
'''

STREAM_TESTS = """
import pytest
from stream_agents import all_words_sync, first_word_anthropic, first_word_async, first_word_sync

pytestmark = pytest.mark.agent


def test_sync(provider):
    assert first_word_sync(provider.openai_base_url).strip() == "one"


async def test_async(provider):
    assert (await first_word_async(provider.openai_base_url)).strip() == "one"


def test_anthropic(provider):
    assert first_word_anthropic(provider.anthropic_base_url).strip() == "one"


def test_whole(provider):  # reads the whole stream
    assert all_words_sync(provider.openai_base_url).startswith("one")
"""

#: Three tests with a cassette each; ``test_two`` kills its own process (no clean-up, no
#: hook: the run stops between two tests) when ``AGENT_KILL`` is set.
THREE_TESTS = """
import os
import signal

import pytest
from stream_agents import all_words_sync

pytestmark = pytest.mark.agent


def test_one(provider):
    assert all_words_sync(provider.openai_base_url).startswith("one")


def test_two(provider):
    if os.environ.get("AGENT_KILL"):
        os.kill(os.getpid(), signal.SIGKILL)
    assert all_words_sync(provider.openai_base_url).startswith("one")


def test_three(provider):
    assert all_words_sync(provider.openai_base_url).startswith("one")
"""


@pytest.fixture
def project(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project with the agents and the provider fixture, and a system temp dir of its own
    (for in-process runs and subprocesses alike)."""
    agent_pytester.makepyfile(stream_agents=AGENTS)
    agent_pytester.makeconftest(CONFTEST)
    system_tmp = agent_pytester.path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    return agent_pytester


def _subprocess(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=120)


def _cassette(project: pytest.Pytester, module: str, test: str) -> Path:
    return project.path / "cassettes" / module / f"{test}.json"


def _answers(path: Path) -> list[str]:
    """The words of every streamed answer recorded in the cassette at ``path``."""
    words = []
    for interaction in load_cassette(path):
        for event in (interaction.response_body or {}).get("sse", []):
            data = event.get("data")
            if isinstance(data, dict) and data.get("choices"):
                words.append(data["choices"][0]["delta"].get("content") or "")
    return words


def _debris(project: pytest.Pytester) -> list[str]:
    """Every file in the cassette folders that is not a cassette, and every file in the
    plugin's folder of the system temp dir (locks, run markers)."""
    cassettes = project.path / "cassettes"
    left = [str(p) for p in cassettes.rglob("*") if p.is_file() and p.suffix != ".json"]
    locks = project.path / "system-tmp" / "pytest-agentctx-locks"
    return left + [str(p) for p in locks.rglob("*") if p.is_file()]


# -- streams the agent stops reading ---------------------------------------------------


def test_streams_an_agent_stops_reading_are_recorded_and_replay(project):
    project.makepyfile(test_streams=STREAM_TESTS)

    project.runpytest("--agent-record").assert_outcomes(passed=4)

    sync = json.loads(_cassette(project, "test_streams", "test_sync").read_text())
    [recorded] = sync["interactions"]
    assert recorded["response"]["body"]["sse"][-1] == {"data": "[DONE]"}  # read to its end
    assert "partial" not in recorded
    for test in ("test_async", "test_anthropic"):
        assert load_cassette(_cassette(project, "test_streams", test))
    project.runpytest().assert_outcomes(passed=4)


def test_a_stream_whose_client_closed_replays_what_the_agent_read(project, monkeypatch):
    monkeypatch.setenv("AGENT_EVENT_DELAY", "0.05")  # the rest has not arrived when it closes
    project.makepyfile(
        test_closed="""
        import pytest
        from stream_agents import first_word_sync

        @pytest.mark.agent
        def test_closed(provider):
            assert first_word_sync(provider.openai_base_url, close_client=True).strip() == "one"
        """
    )

    project.runpytest("--agent-record").assert_outcomes(passed=1)

    [recorded] = load_cassette(_cassette(project, "test_closed", "test_closed"))
    assert recorded.partial
    project.runpytest().assert_outcomes(passed=1)


def test_an_agent_reading_past_a_partial_recording_fails_and_says_to_re_record(
    project, monkeypatch
):
    tests = """
    import os

    import pytest
    from stream_agents import all_words_sync, first_word_sync

    @pytest.mark.agent
    def test_words(provider):
        if os.environ.get("AGENT_READS_ALL"):
            assert all_words_sync(provider.openai_base_url)
        else:
            assert first_word_sync(provider.openai_base_url, close_client=True).strip() == "one"
    """
    project.makepyfile(test_words=tests)
    monkeypatch.setenv("AGENT_EVENT_DELAY", "0.05")  # the rest has not arrived when it closes
    project.runpytest("--agent-record").assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_READS_ALL", "1")

    result = project.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*PartialRecording: Cassette *test_words.json: interaction #0 (POST *) is a partial "
            "recording of a stream (* event(s)): while recording, the agent stopped reading it "
            "without closing it, *Re-record this test: "
            'pytest --agent-record "test_words.py::test_words"; *'
        ]
    )


# -- a cassette that cannot be saved ---------------------------------------------------


def _assert_clear_teardown_error(result: pytest.RunResult, *lines: str) -> None:
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_whole*", *lines])
    output = result.stdout.str()
    assert "pytest_agentctx" not in output.replace("pytest_agentctx.exceptions", "")
    assert "Traceback" not in output
    assert "OSError" not in output


def test_a_file_where_the_cassette_folder_should_be_fails_the_test_clearly(project):
    project.makepyfile(test_streams=STREAM_TESTS)
    (project.path / "cassettes").write_text("not a folder")

    result = project.runpytest("--agent-record", "-k", "test_whole")

    _assert_clear_teardown_error(
        result,
        "CassetteWriteError: Cassette */cassettes/test_streams/test_whole.json could not be "
        "saved (*). No cassette was written (there was none before). */cassettes is a file, "
        "where a folder of the cassette should be: move it away (or set agent_cassette_dir to "
        'another folder), then record again: pytest --agent-record "test_streams.py::test_whole"',
    )
    assert (project.path / "cassettes").read_text() == "not a folder"


@pytest.mark.parametrize(
    ("environment", "reason", "what_to_do"),
    [
        (
            # the new cassette is larger (a real EFBIG); pytest's output, a file too, is not
            {"AGENT_FILE_SIZE_LIMIT": "65536"},
            "File too large, EFBIG",
            "Raise the file size limit of this process (ulimit -f)",
        ),
        (
            {"AGENT_READ_ONLY": "1"},
            "Read-only file system, EROFS",
            "Make */cassettes/test_streams writable for the user running pytest (or set "
            "agent_cassette_dir to a writable folder)",
        ),
    ],
    ids=["file-size-limit", "read-only"],
)
def test_a_cassette_that_cannot_be_written_keeps_the_old_one_and_says_why(
    project, monkeypatch, environment, reason, what_to_do
):
    project.makepyfile(test_streams=STREAM_TESTS)
    project.runpytest("--agent-record", "-k", "test_whole").assert_outcomes(passed=1)
    cassette = _cassette(project, "test_streams", "test_whole")
    before = cassette.read_bytes()
    monkeypatch.setenv("AGENT_REPLY", "one " + "two " * 2000)  # a new, larger recording
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    result = _subprocess(project, "--agent-record", "-k", "test_whole")

    _assert_clear_teardown_error(
        result,
        f"CassetteWriteError: Cassette {cassette} could not be saved ({reason}*). The previous "
        f"version of the cassette is kept unchanged. {what_to_do}, then record again: "
        'pytest --agent-record "test_streams.py::test_whole"',
    )
    assert cassette.read_bytes() == before
    assert _debris(project) == []


def test_a_new_cassette_under_a_read_only_folder_names_that_folder_and_is_unsaved(
    project, monkeypatch
):
    project.makepyfile(test_streams=STREAM_TESTS)
    (project.path / "cassettes").mkdir()
    monkeypatch.setenv("AGENT_READ_ONLY_CASSETTES", "1")

    result = _subprocess(project, "--agent-record", "-k", "test_whole")

    _assert_clear_teardown_error(
        result,
        f"CassetteWriteError: Cassette {_cassette(project, 'test_streams', 'test_whole')} could "
        "not be saved (Permission denied, EACCES, on */cassettes/test_streams). No cassette was "
        f"written (there was none before). Make {project.path / 'cassettes'} writable for the "
        "user running pytest (or set agent_cassette_dir to a writable folder), then record "
        'again: pytest --agent-record "test_streams.py::test_whole"',
    )
    result.stdout.fnmatch_lines(["* test_streams.py::test_whole * unsaved"])
    assert list((project.path / "cassettes").iterdir()) == []


def test_a_failing_test_s_recording_is_discarded_and_the_summary_says_how_to_keep_it(project):
    project.makepyfile(
        test_fails="""
import pytest
from stream_agents import all_words_sync

@pytest.mark.agent
def test_wrong(provider):
    assert all_words_sync(provider.openai_base_url) == "not what the model said"
"""
    )

    result = project.runpytest("--agent-record", "--agent-report=report.json")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "agentctx: 1 agent test, *; cassettes: 1 discarded (a failing test's recording is "
            "not kept: fix the test and record again, or keep it with --agent-record-failing)*"
        ]
    )
    [test] = json.loads((project.path / "report.json").read_text())["tests"]
    assert (
        test["cassette"]["status"],
        _cassette(project, "test_fails", "test_wrong").exists(),
    ) == (
        "discarded",
        False,
    )


# -- report paths ----------------------------------------------------------------------


def test_a_report_path_that_is_a_folder_is_a_usage_error(project):
    project.makepyfile(test_plain="def test_plain(): pass")
    (project.path / "reports").mkdir()

    result = project.runpytest("--agent-report=reports")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--agent-report=reports: the report cannot be written to */reports: */reports is "
            "a folder; give the path of a file. Give a file path in a writable folder, for "
            "example --agent-report=agentctx-report.json."
        ]
    )


def test_a_report_path_under_a_file_is_a_usage_error(project):
    project.makepyfile(test_plain="def test_plain(): pass")
    (project.path / "reports").write_text("not a folder")

    result = project.runpytest("--agent-report-html=reports/2025/run.html")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--agent-report-html=reports/2025/run.html: the report cannot be written to "
            "*/reports/2025/run.html: */reports is a file, not a folder, so */reports/2025 "
            "cannot be created. Give a file path in a writable folder, for example "
            "--agent-report-html=agentctx-report.html."
        ]
    )


def test_a_report_path_in_a_folder_that_is_not_writable_is_a_usage_error(project, monkeypatch):
    project.makepyfile(test_plain="def test_plain(): pass")
    locked = project.path / "locked"
    locked.mkdir()
    real = os.access
    # chmod does not stop root, who runs some CI containers: the check is what matters.
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != locked and real(p, mode))

    result = project.runpytest("--agent-report=locked/report.json")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--agent-report=locked/report.json: *: the folder */locked is not writable. *"]
    )


def test_a_report_that_cannot_be_written_at_the_end_fails_the_session_after_its_summary(
    project,
):
    project.makepyfile(
        test_plain="""
        import shutil
        from pathlib import Path

        def test_replaces_the_report_folder_with_a_file():
            shutil.rmtree("reports")
            Path("reports").write_text("not a folder any more")
        """
    )
    (project.path / "reports").mkdir()

    result = project.runpytest("--agent-report=reports/report.json")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "agentctx: ERROR: --agent-report: the report could not be written to "
            "*/reports/report.json (*); the tests' results stand. *",
            "*1 passed*",
        ]
    )
    assert "JSON report written" not in result.stdout.str()


# -- kill -9 -----------------------------------------------------------------------------


def test_a_run_killed_mid_write_keeps_the_old_cassette_and_the_next_run_clears_up(
    project, monkeypatch
):
    project.makepyfile(test_streams=STREAM_TESTS)
    project.runpytest("--agent-record", "-k", "test_whole").assert_outcomes(passed=1)
    cassette = _cassette(project, "test_streams", "test_whole")
    before = cassette.read_bytes()
    monkeypatch.setenv("AGENT_REPLY", "one " + "two " * 5_000)  # a large new recording
    monkeypatch.setenv("AGENT_KILL_AT_RENAME", "1")

    killed = _subprocess(project, "--agent-record", "-k", "test_whole")

    monkeypatch.delenv("AGENT_KILL_AT_RENAME")
    assert killed.ret == -signal.SIGKILL
    assert cassette.read_bytes() == before
    assert "".join(_answers(cassette)) == "one two three four five six"
    [left] = [p for p in cassette.parent.iterdir() if p != cassette]
    assert left.name.startswith(".test_whole.json.")
    assert left.name.endswith(".tmp")
    assert left.stat().st_size > 10 * len(before)  # the whole new cassette, never renamed

    project.runpytest("-k", "test_whole").assert_outcomes(passed=1)  # replays the old one

    assert _debris(project) == []


def test_a_run_killed_writing_a_new_cassette_says_there_is_none_and_leaves_nothing(
    project, monkeypatch
):
    project.makepyfile(test_streams=STREAM_TESTS)
    monkeypatch.setenv("AGENT_KILL_AT_RENAME", "1")

    killed = _subprocess(project, "--agent-record", "-k", "test_whole")

    monkeypatch.delenv("AGENT_KILL_AT_RENAME")
    assert killed.ret == -signal.SIGKILL
    result = project.runpytest("-k", "test_whole")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*Cassette */test_whole.json cannot answer POST *: there is no cassette.",
            '*re-record this test: pytest --agent-record "test_streams.py::test_whole"',
        ]
    )
    assert _debris(project) == []


def test_a_run_killed_between_tests_loses_nothing_and_the_next_run_clears_up(project, monkeypatch):
    project.makepyfile(test_killed=THREE_TESTS)
    project.runpytest("--agent-record").assert_outcomes(passed=3)
    before = {
        test: _cassette(project, "test_killed", test).read_bytes()
        for test in ("test_one", "test_two", "test_three")
    }
    monkeypatch.setenv("AGENT_REPLY", "one, again")
    monkeypatch.setenv("AGENT_KILL", "1")

    killed = _subprocess(project, "--agent-record")

    monkeypatch.delenv("AGENT_KILL")
    assert killed.ret == -signal.SIGKILL
    assert "".join(_answers(_cassette(project, "test_killed", "test_one"))) == "one, again"
    for test in ("test_two", "test_three"):
        assert _cassette(project, "test_killed", test).read_bytes() == before[test]

    project.runpytest("-k", "test_two or test_three").assert_outcomes(passed=2)

    assert _debris(project) == []
