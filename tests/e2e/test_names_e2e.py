"""End-to-end tests of the names made from test ids: cassette and snapshot files, and the
ids the reports show.

Two ids that differ only in characters a file name cannot hold get two files; an id with
``:`` gets a snapshot that syrupy relates to its test; a secret in an id (a parametrize
value) is in no file of the project afterwards, while two secrets still give two files.
The outer test serves an OpenAI-compatible chat completions API on 127.0.0.1 that answers
``"<version>: <question>"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
from support.chat_server import ChatServer

CLIENT_MODULE = """
import os

import openai


def ask(content):
    with openai.OpenAI(
        base_url=os.environ["AGENT_SERVER"] + "/v1", api_key="sk-e2e-test-key", max_retries=0
    ) as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": content}]
        )
    return reply.choices[0].message.content
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
    agent_pytester.makepyfile(names_client=CLIENT_MODULE)
    return agent_pytester


def _files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file())


# -- ids that differ only in characters a file name cannot hold --------------------------

PUNCTUATION = """
import pytest
from names_client import ask

@pytest.mark.agent
@pytest.mark.parametrize("question", ["is it safe?", "is it safe!", "is_it_safe_"])
def test_ask(question):
    assert ask(question) == f"v1: {question}"
"""


def test_ids_differing_in_punctuation_get_a_cassette_each(tester, provider):
    tester.makepyfile(test_punct=PUNCTUATION)
    tester.runpytest("--agent-record").assert_outcomes(passed=3)
    provider.stop()

    replayed = tester.runpytest()

    replayed.assert_outcomes(passed=3)
    names = sorted(path.name for path in (tester.path / "cassettes" / "test_punct").iterdir())
    # the id that lost nothing keeps its name; the two others end with their own digest
    assert len(names) == 3
    assert "test_ask[is_it_safe_].json" in names
    assert all(name.startswith("test_ask[is_it_safe_]") for name in names)
    questions = {
        json.loads(path.read_text())["interactions"][0]["request"]["body"]["json"]["messages"][0][
            "content"
        ]
        for path in (tester.path / "cassettes" / "test_punct").iterdir()
    }
    assert questions == {"is it safe?", "is it safe!", "is_it_safe_"}


def test_a_missing_cassette_under_its_former_name_says_how_to_rename_it(tester, provider):
    tester.makepyfile(
        test_former="""
import pytest
from names_client import ask

@pytest.mark.agent
@pytest.mark.parametrize("model", ["openai:gpt-4o-mini"])
def test_ask(model):
    assert ask(model) == f"v1: {model}"
"""
    )
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    folder = tester.path / "cassettes" / "test_former"
    (written,) = folder.iterdir()
    former = folder / "test_ask[openai_gpt-4o-mini].json"
    written.rename(former)  # where an earlier version of the plugin wrote it

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    assert (
        f"there is no cassette ({former.name} beside it is where earlier versions kept this "
        "test's recordings; if no other test's name differs from this one's only in "
        f"characters a file name cannot hold, rename it: git mv '{former}' '{written}')"
    ) in result.stdout.str()


# -- snapshots ---------------------------------------------------------------------------

SNAPSHOT_RUNS = """
from datetime import UTC, datetime

from pytest_agentctx import AgentContext

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def run(answer):
    return AgentContext.new("Which model?", at=T0).add_assistant_message(answer, at=T0)
"""

SNAPSHOTS = """
import pytest
from runs import run

@pytest.mark.parametrize("model", ["openai:gpt-4o-mini", "openai|gpt-4o-mini", "openai gpt"])
async def test_model(agent_snapshot, model):
    assert run(model) == agent_snapshot
"""


@pytest.fixture
def snapshots(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # the inner run must not pass for an xdist worker (syrupy would hand its report on)
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    agent_pytester.makepyfile(runs=SNAPSHOT_RUNS, test_snap=SNAPSHOTS)
    return agent_pytester


def test_snapshots_of_ids_with_a_colon_belong_to_their_test(snapshots):
    written = snapshots.runpytest("--snapshot-update")
    again = snapshots.runpytest()

    written.assert_outcomes(passed=3)
    assert "Can not relate" not in written.stdout.str() + written.stderr.str()
    again.assert_outcomes(passed=3)
    again.stdout.fnmatch_lines(["*3 snapshots passed.*"])
    assert "unused" not in again.stdout.str()
    names = sorted(path.name for path in (snapshots.path / "__snapshots__" / "test_snap").iterdir())
    assert len(names) == 3
    assert "test_model[openai gpt].agentctx" in names  # nothing lost: syrupy's own name


def test_an_updated_run_keeps_the_snapshots_of_ids_with_a_colon(snapshots):
    snapshots.runpytest("--snapshot-update").assert_outcomes(passed=3)
    folder = snapshots.path / "__snapshots__" / "test_snap"
    before = {path.name: path.read_text() for path in folder.iterdir()}

    again = snapshots.runpytest("--snapshot-update")

    again.assert_outcomes(passed=3)
    assert "deleted" not in again.stdout.str()
    assert {path.name: path.read_text() for path in folder.iterdir()} == before


# -- secrets in ids ------------------------------------------------------------------------

SECRET = "sk-proj-namesSECRET0123456789abcdef"
OWN = "tenant-7f3a9c-names"

SECRET_IDS = """
import os

import pytest
from names_client import ask

@pytest.fixture
def agent_cassette_config():
    return {"redact_values": [os.environ["NAMES_TENANT"]]}

@pytest.mark.agent
@pytest.mark.parametrize("key", [os.environ["OPENAI_API_KEY"], os.environ["NAMES_TENANT"]])
def test_keyed(key):
    assert ask("hello").endswith("hello")

@pytest.mark.parametrize("key", [os.environ["OPENAI_API_KEY"]])
def test_plain(key):
    assert key
"""


def test_a_secret_in_a_test_id_is_in_no_file(tester, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("NAMES_TENANT", OWN)
    tester.makepyfile(test_secret_ids=SECRET_IDS)

    result = tester.runpytest(
        "--agent-record",
        "--agent-report=report.json",
        "--agent-report-html=report.html",
        "--junitxml=junit.xml",
    )

    result.assert_outcomes(passed=3)
    cassettes = sorted((tester.path / "cassettes" / "test_secret_ids").iterdir())
    assert len(cassettes) == 2  # two secrets, two files
    report = json.loads((tester.path / "report.json").read_text())
    ids = sorted(test["nodeid"] for test in report["tests"])
    assert len(ids) == 3
    assert all("REDACTED" in nodeid for nodeid in ids)
    assert "agentctx.cassette" in (tester.path / "junit.xml").read_text()
    # each shown id is well formed: JUnit XML names its test case with it, brackets closed
    cases = ElementTree.parse(tester.path / "junit.xml").getroot().iter("testcase")
    names = sorted(case.get("name", "") for case in cases)
    assert names == sorted(nodeid.split("::")[-1] for nodeid in ids)
    assert all(re.fullmatch(r"test_\w+\[REDACTED~[0-9a-f]{8}\]", name) for name in names)
    for path in _files(tester.path):
        data = path.read_bytes()
        assert SECRET.encode() not in data, path
        assert OWN.encode() not in data, path


def test_a_secret_in_a_test_id_stays_out_of_the_files_under_xdist(tester, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("NAMES_TENANT", OWN)
    tester.makepyfile(test_secret_ids=SECRET_IDS)

    result = tester.runpytest_subprocess(
        "-n", "2", "--agent-record", "--agent-report=report.json", "--junitxml=junit.xml"
    )

    result.assert_outcomes(passed=3)
    assert len(list((tester.path / "cassettes" / "test_secret_ids").iterdir())) == 2
    for path in _files(tester.path):
        data = path.read_bytes()
        assert SECRET.encode() not in data, path
        assert OWN.encode() not in data, path
