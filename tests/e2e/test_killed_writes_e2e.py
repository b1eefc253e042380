"""End-to-end test: what a run killed in the middle of a cassette write leaves (a temporary
file beside the cassette) is gone when the next run starts its first agent test, in every
folder of the cassette directory, not only in those the next run loads a cassette from.

The inner runs are real pytest processes; the killed one gets ``SIGKILL`` from its own
conftest once the new cassette is written in full to its temporary file, just before the
rename (the widest window a kill can hit). The provider is a :class:`LoopbackProvider` the
inner run starts on 127.0.0.1.
"""

from __future__ import annotations

import signal
import tempfile

import pytest

CONFTEST = """
import os
import signal

import pytest
from pytest_agentctx import LoopbackProvider

_replace = os.replace


def _renaming(source, target, *args, **kwargs):
    if os.environ.get("AGENT_KILL_AT_RENAME") and str(target).endswith(".json"):
        os.kill(os.getpid(), signal.SIGKILL)  # the temporary file is whole
    return _replace(source, target, *args, **kwargs)


os.replace = _renaming


@pytest.fixture(scope="session")
def provider():
    with LoopbackProvider() as running:
        for _ in range(5):
            running.reply(os.environ.get("AGENT_REPLY", "Sunny in Paris."))
        yield running
"""

ASK = """
import openai
import pytest


@pytest.mark.agent
def test_{name}(provider):
    with openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test", max_retries=0) as c:
        reply = c.chat.completions.create(
            model="gpt-4o-mini", messages=[{{"role": "user", "content": "Weather?"}}]
        )
    assert reply.choices[0].message.content.startswith("Sunny")
"""


@pytest.fixture
def project(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    agent_pytester.makeconftest(CONFTEST)
    agent_pytester.makepyfile(test_first=ASK.format(name="first"))
    agent_pytester.makepyfile(test_second=ASK.format(name="second"))
    system_tmp = agent_pytester.path / "system-tmp"  # the plugin's locks and run markers
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    return agent_pytester


def _run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=120)


def test_the_next_run_clears_a_killed_write_beside_a_cassette_it_does_not_load(
    project, monkeypatch
):
    _run(project, "--agent-record").assert_outcomes(passed=2)
    first = project.path / "cassettes" / "test_first" / "test_first.json"
    before = first.read_bytes()
    monkeypatch.setenv("AGENT_REPLY", "Sunny in Paris, " + "and warm " * 2_000)
    monkeypatch.setenv("AGENT_KILL_AT_RENAME", "1")

    killed = _run(project, "--agent-record", "test_first.py")

    monkeypatch.delenv("AGENT_KILL_AT_RENAME")
    assert killed.ret == -signal.SIGKILL
    [left] = [path for path in first.parent.iterdir() if path != first]
    assert left.name.startswith(".test_first.json.")
    assert left.name.endswith(".tmp")

    _run(project, "test_second.py").assert_outcomes(passed=1)  # loads test_second/ only

    assert sorted(path.name for path in first.parent.iterdir()) == ["test_first.json"]
    assert first.read_bytes() == before
    _run(project, "test_first.py").assert_outcomes(passed=1)  # the old recording replays
