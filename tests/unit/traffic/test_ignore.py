"""The entries of ``agent_ignore_hosts`` / ``ignore_hosts``: how they are checked and which
requests they match (:mod:`pytest_agentctx.traffic.ignore`)."""

from __future__ import annotations

import pytest

from pytest_agentctx.traffic import ignore


def rule(entry: str) -> ignore.IgnoreRule:
    (parsed,) = ignore.parse([entry])
    return parsed


@pytest.mark.parametrize(
    ("entry", "host", "path"),
    [
        ("huggingface.co", "huggingface.co", "/api/models/gpt2"),
        ("HuggingFace.CO", "huggingface.co", "/"),
        ("huggingface.co", "HUGGINGFACE.co", "/"),
        ("localhost", "localhost", "/v1/chat"),
        ("127.0.0.1", "127.0.0.1", "/"),
        ("::1", "::1", "/"),
        ("[::1]", "::1", "/"),
        ("0:0:0:0:0:0:0:1", "::1", "/"),
        ("0.0.0.0", "0.0.0.0", "/"),
        ("*.example.com", "api.example.com", "/"),
        ("*.example.com", "a.b.example.com", "/"),
        ("api.example.com/v1/models", "api.example.com", "/v1/models"),
        ("api.example.com/v1/models", "api.example.com", "/v1/models/gpt-4o"),
        ("api.example.com/v1/models/", "api.example.com", "/v1/models/gpt-4o"),
        ("api.example.com/", "api.example.com", "/anything"),
        ("[::1]/health", "::1", "/health"),
    ],
)
def test_an_entry_matches(entry: str, host: str, path: str) -> None:
    assert rule(entry).matches(host, path)


@pytest.mark.parametrize(
    ("entry", "host", "path"),
    [
        ("huggingface.co", "cdn.huggingface.co", "/"),
        ("huggingface.co", "huggingface.com", "/"),
        ("*.example.com", "example.com", "/"),
        ("*.example.com", "example.com.evil.test", "/"),
        ("*.example.com", "notexample.com", "/"),
        ("127.0.0.1", "localhost", "/"),
        ("localhost", "127.0.0.1", "/"),
        ("api.example.com/v1/models", "api.example.com", "/v1/modelsx"),
        ("api.example.com/v1/models", "api.example.com", "/v1"),
        ("api.example.com/v1/models", "api.example.com", "/v2/models"),
    ],
)
def test_an_entry_does_not_match(entry: str, host: str, path: str) -> None:
    assert not rule(entry).matches(host, path)


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("huggingface.co cdn.huggingface.co", "has spaces"),
        (
            "https://huggingface.co/api",
            "is a URL: give the host and a path without the scheme, e.g. 'huggingface.co/api'",
        ),
        (
            "localhost:8080",
            "has a port: ports are not compared, give the host alone, e.g. 'localhost'",
        ),
        ("[::1]:8080", "has a port: ports are not compared, give the host alone, e.g. '[::1]'"),
        (
            "api.example.com/v1?x=1",
            "has a query or a fragment: give a path prefix only, e.g. 'api.example.com/v1'",
        ),
        ("/v1/models", "has no host before its path"),
        ("api.*.example.com", "has a wildcard other than a leading '*.'"),
        ("*example.com", "has a wildcard other than a leading '*.'"),
        ("[example.com]", "has brackets around 'example.com'"),
        (7, "is int 7, not a string"),
    ],
)
def test_a_wrong_entry_says_why_and_gives_a_right_one(entry: object, problem: str) -> None:
    found = ignore.entry_problem(entry)

    assert (found or "").startswith(problem), found


@pytest.mark.parametrize(
    "entry",
    ["huggingface.co", "*.example.com", "127.0.0.1", "::1", "[::1]", "0.0.0.0", "a.b/c/d"],
)
def test_a_right_entry_has_no_problem(entry: str) -> None:
    assert ignore.entry_problem(entry) is None


def test_parse_refuses_a_wrong_entry_naming_it() -> None:
    with pytest.raises(ValueError, match="'localhost:80' has a port"):
        ignore.parse(["huggingface.co", "localhost:80"])


def test_the_session_entries_apply_until_restored() -> None:
    before = ignore.use_session(["huggingface.co"])
    try:
        assert ignore.matching("huggingface.co", "/x") == rule("huggingface.co")
    finally:
        ignore.restore_session(before)

    assert ignore.matching("huggingface.co", "/x") is None


def test_a_tests_entries_apply_while_it_runs() -> None:
    with ignore.during_test("tests/test_a.py::test_a", ["models.example/v1"]):
        found = ignore.matching("models.example", "/v1/info")

    assert getattr(found, "source", None) == ignore.TEST_SOURCE
    assert ignore.matching("models.example", "/v1/info") is None


def test_a_request_not_sent_is_the_running_tests() -> None:
    with ignore.during_test("tests/test_a.py::test_a"):
        ignore.note_not_sent("GET https://models.example/v1")
    ignore.note_not_sent("GET https://models.example/v2")

    assert ignore.take_not_sent("tests/test_a.py::test_a") == [
        ignore.NotSent("tests/test_a.py::test_a", "GET https://models.example/v1")
    ]
    assert ignore.take_not_sent() == [ignore.NotSent("", "GET https://models.example/v2")]
    assert ignore.take_not_sent() == []
