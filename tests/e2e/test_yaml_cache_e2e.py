"""End to end: a vcrpy YAML cassette replayed by pytest is kept, converted, in pytest's cache
folder, and the next run (a new process) reads that instead of the YAML.

Each run is a subprocess (``runpytest_subprocess``): an in-process run would find the
cassette already parsed in this process's memory and never look at the cache."""

from __future__ import annotations

import pytest

#: A vcrpy cassette as pytest-recording writes one, its secret header filtered.
VCR_CASSETTE = """\
interactions:
- request:
    body: '{"messages": [{"role": "user", "content": "Weather in Paris?"}], "model": "gpt-4o-mini"}'
    headers:
      authorization:
      - REDACTED
      content-type:
      - application/json
    method: POST
    uri: http://127.0.0.1:9/v1/chat/completions
  response:
    body:
      string: '{"id": "chatcmpl-1", "choices": [{"index": 0, "message": {"role": "assistant",
        "content": "Sunny in Paris."}}]}'
    headers:
      content-type:
      - application/json
    status:
      code: 200
      message: OK
version: 1
"""

TEST_MODULE = """
import httpx
import pytest


@pytest.mark.agent(cassette="legacy/test_paris.yaml")
def test_paris(agent_cassette):
    with httpx.Client() as client:
        reply = client.post(
            "http://127.0.0.1:9/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "Weather in Paris?"}],
                  "model": "gpt-4o-mini"},
        )
    assert reply.json()["choices"][0]["message"]["content"] == "Sunny in Paris."
    assert agent_cassette.replayed == 1
"""

#: With NO_YAML set, reading a cassette from its text fails the run: the cassette must come
#: from the cache.
CONFTEST = """
import os


def pytest_configure(config):
    if os.environ.get("NO_YAML"):
        from pytest_agentctx.traffic.cassettes import store

        def refused(text, path):
            raise AssertionError(f"{path} was parsed again")

        store.parse_cassette = refused
"""


@pytest.fixture
def project(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    legacy = agent_pytester.path / "cassettes" / "legacy" / "test_paris.yaml"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(VCR_CASSETTE)
    agent_pytester.makepyfile(test_legacy=TEST_MODULE)
    agent_pytester.makeconftest(CONFTEST)
    return agent_pytester


def _entries(project: pytest.Pytester) -> list[str]:
    folder = project.path / ".pytest_cache" / "d" / "agentctx-cassettes"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_the_next_run_reads_a_vcr_cassette_from_pytest_s_cache(project, monkeypatch):
    project.runpytest_subprocess(timeout=120).assert_outcomes(passed=1)
    monkeypatch.setenv("NO_YAML", "1")

    result = project.runpytest_subprocess(timeout=120)

    result.assert_outcomes(passed=1)
    assert len(_entries(project)) == 1


def test_the_cache_is_in_pytest_s_cache_folder_which_git_ignores(project):
    project.runpytest_subprocess(timeout=120).assert_outcomes(passed=1)

    assert (project.path / ".pytest_cache" / ".gitignore").read_text().strip().endswith("*")
    assert sorted(p.name for p in project.path.iterdir() if p.name.startswith(".")) == [
        ".pytest_cache"
    ]


def test_without_pytest_s_cache_nothing_is_cached(project):
    project.runpytest_subprocess("-p", "no:cacheprovider", timeout=120).assert_outcomes(passed=1)

    assert not (project.path / ".pytest_cache").exists()


def test_an_edited_cassette_is_read_from_its_yaml_again(project, monkeypatch):
    project.runpytest_subprocess(timeout=120).assert_outcomes(passed=1)
    legacy = project.path / "cassettes" / "legacy" / "test_paris.yaml"
    legacy.write_text(VCR_CASSETTE.replace("Sunny in Paris.", "Rainy in Paris."))
    monkeypatch.setenv("NO_YAML", "1")

    result = project.runpytest_subprocess(timeout=120)

    result.assert_outcomes(errors=1)  # the cassette is loaded when the test is set up
    result.stdout.fnmatch_lines(["*test_paris.yaml was parsed again*"])


def test_a_cassette_that_kept_its_authorization_is_read_from_the_cache(project, monkeypatch):
    legacy = project.path / "cassettes" / "legacy" / "test_paris.yaml"
    legacy.write_text(VCR_CASSETTE.replace("REDACTED", "Bearer sk-proj-kept-by-vcrpy-0123456789"))
    project.runpytest_subprocess(timeout=120).assert_outcomes(passed=1)
    monkeypatch.setenv("NO_YAML", "1")

    result = project.runpytest_subprocess(timeout=120)

    result.assert_outcomes(passed=1)
    folder = project.path / ".pytest_cache" / "d" / "agentctx-cassettes"
    assert [b"sk-proj-kept" in p.read_bytes() for p in folder.iterdir()] == [False]


def test_a_cassette_converted_to_json_is_replayed_with_no_cache_entry(project):
    from pytest_agentctx.traffic.cassettes.vcr import convert_vcr_yaml

    assert convert_vcr_yaml(project.path / "cassettes" / "legacy" / "test_paris.yaml")

    project.runpytest_subprocess(timeout=120).assert_outcomes(passed=1)

    assert _entries(project) == []
