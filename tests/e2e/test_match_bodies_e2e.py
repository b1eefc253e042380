"""End to end: suites whose requests are not JSON replay from vcrpy cassettes, through a
custom matcher ported from vcrpy (``match_on`` of ``agent_cassette_config``) or a body
hook for their kind of body: a multipart upload made with requests and with httpx (whose
random boundary differs from the recorded one; matched part by part without either too),
a form body, a text body. A miss on such a body says what differs; an unknown matcher name
is a loud error.

The cassettes are vcrpy's YAML, as pytest-recording wrote them, with the bytes each client
sends (its boundary then); nothing leaves the process.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import requests
import yaml

URL = "https://files.example/v1/upload"
FILES = {"file": ("notes.txt", b"hello", "text/plain")}
DATA = {"purpose": "assistants"}

CONFTEST_MATCHER = '''
import pytest


def same_upload(r1, r2):
    """vcrpy matcher: multipart bodies equal but for their random boundary."""

    def normalised(request):
        boundary = request.headers["Content-Type"].split("boundary=")[1]
        return request.body.replace(boundary.encode(), b"BOUNDARY")

    assert normalised(r1) == normalised(r2), "the uploads differ"


@pytest.fixture
def agent_cassette_config():
    return {"match_on": ["method", "uri", same_upload]}
'''

UPLOADS = f"""
import httpx
import requests

URL = {URL!r}
FILES = {FILES!r}
DATA = {DATA!r}


def test_requests():
    response = requests.post(URL, files=FILES, data=DATA)
    assert response.json() == {{"id": "file-requests"}}


def test_httpx():
    with httpx.Client() as client:
        response = client.post(URL, files=FILES, data=DATA)
    assert response.json() == {{"id": "file-httpx"}}
"""


def _cassette(
    tester: pytest.Pytester, test: str, body: bytes, content_type: str, answer: dict[str, Any]
) -> None:
    """A vcrpy cassette of one POST to :data:`URL`, where the yaml format finds it."""
    document = {
        "interactions": [
            {
                "request": {
                    "body": body.decode(),
                    "headers": {"Content-Type": [content_type]},
                    "method": "POST",
                    "uri": URL,
                },
                "response": {
                    "body": {"string": json.dumps(answer)},
                    "headers": {"Content-Type": ["application/json"]},
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ],
        "version": 1,
    }
    path = tester.path / "cassettes" / test
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))


def _uploads(tester: pytest.Pytester) -> None:
    """The two uploads' cassettes, with the bytes requests and httpx sent when recorded."""
    sent = requests.Request("POST", URL, files=FILES, data=DATA).prepare()
    assert isinstance(sent.body, bytes)
    _cassette(
        tester,
        "test_uploads/test_requests.yaml",
        sent.body,
        str(sent.headers["Content-Type"]),
        {"id": "file-requests"},
    )
    built = httpx.Request("POST", URL, files=FILES, data=DATA)
    _cassette(
        tester,
        "test_uploads/test_httpx.yaml",
        built.read(),
        built.headers["Content-Type"],
        {"id": "file-httpx"},
    )


@pytest.fixture
def tester(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    # the ini agent_pytester wrote (importing tests.conftest would make the repository's
    # tests folder a package for the inner runs of later tests)
    ini = (agent_pytester.path / "tox.ini").read_text(encoding="utf-8")
    agent_pytester.makeini(
        ini.rstrip("\n") + "\nagent_all_tests = true\nagent_cassette_format = yaml\n"
    )
    return agent_pytester


def test_a_custom_vcrpy_matcher_replays_multipart_uploads_of_requests_and_httpx(
    tester: pytest.Pytester,
) -> None:
    _uploads(tester)
    tester.makeconftest(CONFTEST_MATCHER)
    tester.makepyfile(test_uploads=UPLOADS)

    result = tester.runpytest()

    result.assert_outcomes(passed=2)


def test_a_multipart_body_hook_replays_uploads_of_requests_and_httpx(
    tester: pytest.Pytester,
) -> None:
    _uploads(tester)
    tester.makeconftest(
        """
        import pytest


        def by_part(parts):
            return [(part["name"], part["filename"], part["content"]) for part in parts]


        @pytest.fixture
        def agent_cassette_config():
            return {"body_hook": {"multipart/form-data": by_part}}
        """
    )
    tester.makepyfile(test_uploads=UPLOADS)

    result = tester.runpytest()

    result.assert_outcomes(passed=2)


def test_uploads_replay_from_vcrpy_cassettes_without_a_matcher_or_hook(
    tester: pytest.Pytester,
) -> None:
    _uploads(tester)
    tester.makepyfile(test_uploads=UPLOADS)

    result = tester.runpytest()

    result.assert_outcomes(passed=2)


def test_a_form_body_replays_through_a_form_hook(tester: pytest.Pytester) -> None:
    _cassette(
        tester,
        "test_form/test_search.yaml",
        b"q=paris&nonce=3f2b9c",
        "application/x-www-form-urlencoded",
        {"hits": 3},
    )
    tester.makeconftest(
        """
        import pytest


        def without_nonce(fields):
            return {name: values for name, values in fields.items() if name != "nonce"}


        @pytest.fixture
        def agent_cassette_config():
            return {"body_hook": {"form": without_nonce}}
        """
    )
    tester.makepyfile(
        test_form=f"""
        import uuid

        import requests


        def test_search():
            response = requests.post({URL!r}, data={{"q": "paris", "nonce": uuid.uuid4().hex}})
            assert response.json() == {{"hits": 3}}
        """
    )

    result = tester.runpytest()

    result.assert_outcomes(passed=1)


def test_a_custom_matcher_that_compares_one_form_field_replays(tester: pytest.Pytester) -> None:
    for test in ("test_search", "test_another_question_misses"):
        _cassette(
            tester,
            f"test_form/{test}.yaml",
            b"q=paris&nonce=3f2b9c",
            "application/x-www-form-urlencoded",
            {"hits": 3},
        )
    tester.makeconftest(
        """
        from urllib.parse import parse_qs

        import pytest


        def same_question(r1, r2):
            return parse_qs(r1.body.decode())["q"] == parse_qs(r2.body.decode())["q"]


        @pytest.fixture
        def agent_cassette_config():
            return {"match_on": ["method", "path", same_question]}
        """
    )
    tester.makepyfile(
        test_form=f"""
        import uuid

        import httpx


        def test_search():
            response = httpx.post({URL!r}, data={{"q": "paris", "nonce": uuid.uuid4().hex}})
            assert response.json() == {{"hits": 3}}


        def test_another_question_misses():
            response = httpx.post({URL!r}, data={{"q": "rome", "nonce": "1"}})
            assert response.status_code == 599
        """
    )

    result = tester.runpytest()

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*cannot answer POST files.example/v1/upload*: no recording the test may replay "
            "matches it on match_on (method, path, same_question).",
            "*Closest recorded request: interaction #0, POST files.example/v1/upload; matcher "
            "same_question refuses it",
            "*same_question: it returned False",
            "*re-record this test: pytest --agent-record*; if the matchers should accept this "
            "request, change match_on in agent_cassette_config",
        ]
    )


def test_a_text_body_replays_through_a_text_hook(tester: pytest.Pytester) -> None:
    _cassette(
        tester,
        "test_text/test_report.yaml",
        b"Daily report of 2025-03-14: all green",
        "text/plain",
        {"ok": True},
    )
    tester.makeconftest(
        """
        import re

        import pytest

        DATE = re.compile(r"\\d{4}-\\d{2}-\\d{2}")


        @pytest.fixture
        def agent_cassette_config():
            return {"body_hook": {"text/*": lambda text: DATE.sub("<date>", text)}}
        """
    )
    tester.makepyfile(
        test_text=f"""
        import datetime

        import httpx


        def test_report():
            text = f"Daily report of {{datetime.date.today()}}: all green"
            response = httpx.post({URL!r}, content=text, headers={{"content-type": "text/plain"}})
            assert response.json() == {{"ok": True}}
        """
    )

    result = tester.runpytest()

    result.assert_outcomes(passed=1)


def test_an_unknown_matcher_name_fails_the_test_listing_the_builtin_names(
    tester: pytest.Pytester,
) -> None:
    tester.makeconftest(
        """
        import pytest


        @pytest.fixture
        def agent_cassette_config():
            return {"match_on": ["method", "json_body"]}
        """
    )
    tester.makepyfile(test_name="def test_nothing():\n    pass\n")

    result = tester.runpytest()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*CassetteConfigError: test_name.py::test_nothing: agent_cassette_config match_on "
            "names 'json_body', which is no matcher*; vcrpy's built-in matchers are method, "
            "uri, url, scheme, host, port, path, query, headers, raw_body, body. Put the "
            "matcher function itself in match_on*"
        ]
    )
