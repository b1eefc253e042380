"""End-to-end tests of the cassettes: record, replay and fail in real pytest runs.

The outer test starts a provider on 127.0.0.1 (``provider``: an OpenAI-compatible chat
completions server whose replies say which ``version`` of it answered) and hands its URL
to the inner tests in ``AGENT_SERVER``; the inner tests talk to it through the real
``openai`` SDK. Nothing goes beyond 127.0.0.1: the one test that aims elsewhere
(192.0.2.1, a documentation address) is refused by the guard before it connects.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
import requests  # noqa: F401  (same)
import yaml  # (imported here: a second import of its C loader breaks it)
from support.http_server import ServerThread
from support.wire import chat_completion

#: The ini of ``agent_pytester`` (tests/conftest.py), for tests that add keys to it.
INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
"""

CLIENT_MODULE = """
import os

import openai


def client(**options):
    options.setdefault("api_key", "sk-e2e-test-key")
    return openai.OpenAI(
        base_url=os.environ["AGENT_SERVER"] + "/v1", max_retries=0, **options
    )


def ask(content, **options):
    with client(**options) as openai_client:
        reply = openai_client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": content}]
        )
    return reply.choices[0].message.content


def ask_streaming(content):
    with client() as openai_client:
        stream = openai_client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": content}], stream=True
        )
        return "".join(chunk.choices[0].delta.content or "" for chunk in stream)
"""


class Provider:
    """An OpenAI-compatible chat completions server on 127.0.0.1 (HTTP/1.0: one connection
    per request, so stopping it never waits on a kept-alive connection).

    It answers ``"<version>: <last user message>"``, as one JSON body or streamed word by
    word, and echoes some request headers back in its response headers and body, as a
    careless server would.
    """

    def __init__(self) -> None:
        self.version = "v1"
        self.hits: list[str] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.hits.append(request["messages"][-1]["content"])
                text = f"{owner.version}: {request['messages'][-1]['content']}"
                echoed = {
                    name: self.headers.get(name, "")
                    for name in ("authorization", "x-api-key", "cookie", "openai-organization")
                }
                query = parse_qs(urlsplit(self.path).query)
                if self.headers.get("x-echo"):
                    text = json.dumps({"headers": echoed, "query": query, "body": request})
                self.send_response(200)
                self.send_header("x-echo-key", echoed["x-api-key"])
                self.send_header("x-echo-authorization", echoed["authorization"])
                if request.get("stream"):
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    for word in text.split(" "):
                        self.wfile.write(_chunk(word + " ") + b"\n\n")
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                body = json.dumps(chat_completion(text)).encode()
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._serving = ServerThread(Handler)
        self.url: str = self._serving.url
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()


def _chunk(text: str) -> bytes:
    chunk = {
        "id": "chatcmpl-e2e",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }
    return b"data: " + json.dumps(chunk).encode()


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[Provider]:
    server = Provider()
    monkeypatch.setenv("AGENT_SERVER", server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tester(agent_pytester: pytest.Pytester, provider: Provider) -> pytest.Pytester:
    """A pytester with the SDK helper module ``cas_client``."""
    agent_pytester.makepyfile(cas_client=CLIENT_MODULE)
    return agent_pytester


def _rewrite(tester: pytest.Pytester, **files: str) -> None:
    """Change test files between runs, dropping their cached bytecode (a file rewritten
    within the same second with the same size would otherwise run from the cache)."""
    shutil.rmtree(tester.path / "__pycache__", ignore_errors=True)
    tester.makepyfile(**files)


def _cassette(tester: pytest.Pytester, relative: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tester.path / "cassettes" / relative).read_text())
    return data


def _asked(tester: pytest.Pytester, relative: str) -> list[tuple[str, str]]:
    """(question, recorded answer) of every interaction of a JSON cassette."""
    return [
        (
            item["request"]["body"]["json"]["messages"][-1]["content"],
            item["response"]["body"]["json"]["choices"][0]["message"]["content"],
        )
        for item in _cassette(tester, relative)["interactions"]
    ]


ONE_QUESTION = """
import pytest
from cas_client import ask

@pytest.mark.agent
def test_paris():
    assert ask("Paris?").endswith(": Paris?")
"""


# -- modes ---------------------------------------------------------------------------


def test_recording_writes_one_cassette_per_test_under_the_module_path(tester, provider):
    tester.makepyfile(test_cas_paris=ONE_QUESTION)

    tester.runpytest("--agent-record").assert_outcomes(passed=1)

    assert _asked(tester, "test_cas_paris/test_paris.json") == [("Paris?", "v1: Paris?")]
    assert provider.hits == ["Paris?"]


def test_replay_is_the_default_and_needs_no_server(tester, provider):
    tester.makepyfile(test_cas_paris=ONE_QUESTION)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    provider.stop()

    result = tester.runpytest()

    result.assert_outcomes(passed=1)
    assert provider.hits == ["Paris?"]


def test_replay_works_with_the_sdk_stream_api(tester, provider):
    tester.makepyfile(
        test_cas_stream="""
        import pytest
        from cas_client import ask_streaming

        @pytest.mark.agent
        def test_stream():
            assert ask_streaming("Sunny in Paris") == "v1: Sunny in Paris "
        """
    )
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    provider.stop()

    tester.runpytest().assert_outcomes(passed=1)

    events = _cassette(tester, "test_cas_stream/test_stream.json")["interactions"][0]
    assert len(events["response"]["body"]["sse"]) == 5


def test_record_rewrites_an_existing_cassette(tester, provider):
    tester.makepyfile(test_cas_paris=ONE_QUESTION)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    provider.version = "v2"

    tester.runpytest("--agent-record").assert_outcomes(passed=1)

    assert _asked(tester, "test_cas_paris/test_paris.json") == [("Paris?", "v2: Paris?")]


def test_record_missing_records_only_tests_without_a_cassette(tester, provider):
    tester.makepyfile(
        test_cas_two="""
        import pytest
        from cas_client import ask

        pytestmark = pytest.mark.agent

        def test_old():
            ask("old?")

        def test_new():
            ask("new?")
        """
    )
    tester.runpytest("--agent-record", "-k", "test_old").assert_outcomes(passed=1)
    provider.version = "v2"

    tester.runpytest("--agent-record=missing").assert_outcomes(passed=2)

    assert _asked(tester, "test_cas_two/test_old.json") == [("old?", "v1: old?")]
    assert _asked(tester, "test_cas_two/test_new.json") == [("new?", "v2: new?")]
    assert provider.hits == ["old?", "new?"]


def test_record_new_appends_the_requests_that_are_not_recorded(tester, provider):
    tester.makepyfile(test_cas_grow=ONE_QUESTION)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    provider.version = "v2"
    _rewrite(
        tester,
        test_cas_grow="""
        import pytest
        from cas_client import ask

        @pytest.mark.agent
        def test_paris():
            assert ask("Paris?") == "v1: Paris?"
            assert ask("Rome?") == "v2: Rome?"
        """,
    )

    tester.runpytest("--agent-record=new").assert_outcomes(passed=1)

    assert _asked(tester, "test_cas_grow/test_paris.json") == [
        ("Paris?", "v1: Paris?"),
        ("Rome?", "v2: Rome?"),
    ]
    assert provider.hits == ["Paris?", "Rome?"]


def test_record_mode_from_the_ini(tester, provider):
    tester.makepyfile(test_cas_paris=ONE_QUESTION)
    tester.makeini(INI + "agent_record_mode = missing\n")

    tester.runpytest().assert_outcomes(passed=1)

    assert _asked(tester, "test_cas_paris/test_paris.json") == [("Paris?", "v1: Paris?")]


def test_unknown_record_mode_is_a_usage_error(tester):
    result = tester.runpytest("--agent-record=sometimes")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*record mode 'sometimes' does not exist; choose one of*"])


# -- failures ------------------------------------------------------------------------


def test_changed_request_fails_with_the_cassette_the_diff_and_the_command(tester, provider):
    tester.makepyfile(test_cas_city=ONE_QUESTION)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    _rewrite(tester, test_cas_city=ONE_QUESTION.replace("Paris?", "Rome?"))

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    cassette = tester.path / "cassettes" / "test_cas_city" / "test_paris.json"
    result.stdout.fnmatch_lines(
        [
            f"E *CassetteMiss: Cassette {cassette} cannot answer POST 127.0.0.1*"
            "/v1/chat/completions: the cassette has no such request.",
            "    Closest recorded request: interaction #0, POST 127.0.0.1*/v1/chat/completions;"
            " 1 field differs: messages[[]0].content",
            '      messages[[]0].content: recorded "Paris?" != now "Rome?"',
            "    If the agent's requests changed on purpose, re-record this test: "
            'pytest --agent-record "test_cas_city.py::test_paris"',
        ]
    )
    assert provider.hits == ["Paris?"]


LONG_PROMPT = """
import os

import pytest
from cas_client import client

WORDS = "You answer questions about the weather, one city at a time, politely. "
TONE = os.environ.get("PROMPT_TONE", "friendly")
PROMPT = WORDS * 35 + f"Answer in a {TONE} tone, in English. " + WORDS * 7

@pytest.mark.agent
def test_prompt():
    with client() as openai_client:
        openai_client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": "Paris?"},
            ],
        )
"""


def _long_prompt_miss(
    tester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> pytest.RunResult:
    """Record LONG_PROMPT, change one word deep in its prompt, replay."""
    tester.makepyfile(test_cas_prompt=LONG_PROMPT)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    monkeypatch.setenv("PROMPT_TONE", "formal")
    result = tester.runpytest(*args)
    result.assert_outcomes(failed=1)
    return result


def _failure(result: pytest.RunResult) -> list[str]:
    """The lines of the failure's section of the output."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "_ test_prompt _" in line)
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("---"))
    return lines[start + 1 : end]


def test_a_word_changed_deep_in_a_long_prompt_shows_in_a_short_failure(
    tester, provider, monkeypatch
):
    result = _long_prompt_miss(tester, monkeypatch)

    cassette = tester.path / "cassettes" / "test_cas_prompt" / "test_prompt.json"
    result.stdout.fnmatch_lines(
        [
            f"E   *CassetteMiss: Cassette {cassette} cannot answer POST 127.0.0.1*"
            "/v1/chat/completions: the cassette has no such request.",
            "    Closest recorded request: interaction #0, POST 127.0.0.1*/v1/chat/completions;"
            " 1 field differs: messages[[]0].content",
            "      messages[[]0].content: first differs at character 2,464"
            " (recorded 2,979 characters, now 2,977):",
            "        recorded: ... time, politely. Answer in a friendly tone, in English. "
            "You answer ...",
            "        now:      ... time, politely. Answer in a formal tone, in English. "
            "You answer ...",
            "    (pytest -vv shows every differing field and the full diff of the bodies)",
            "    If the agent's requests changed on purpose, re-record this test: "
            'pytest --agent-record "test_cas_prompt.py::test_prompt"',
        ]
    )
    failure = _failure(result)
    assert len(failure) <= 10, "\n".join(failure)
    # one closest block in the failure (under CI=true pytest's short summary repeats the
    # whole message, after the failures section)
    failures_section = result.stdout.str().split("short test summary info")[0]
    assert failures_section.count("Closest recorded request") == 1
    assert provider.hits == ["Paris?"]


def test_vv_shows_the_full_diff_of_the_long_prompt(tester, provider, monkeypatch):
    result = _long_prompt_miss(tester, monkeypatch, "-vv")

    words = "You answer questions about the weather, one city at a time, politely. "
    recorded = words * 35 + "Answer in a friendly tone, in English. " + words * 7
    now = recorded.replace("friendly", "formal")
    result.stdout.fnmatch_lines(
        [
            "*Full diff of the request bodies (- recorded, + now):",
            "*  --- recorded",
            "*  +++ now",
            "*  @@ *",
            f'*  -      "content": "{recorded}",',
            f'*  +      "content": "{now}",',
        ]
    )
    # The SDK's error, shown as the cause with -vv, names the miss without comparing (the
    # short summary of -vv repeats the whole message, after the failure's section).
    result.stdout.fnmatch_lines(
        ["E *InternalServerError: Error code: 599 - Cassette * The test fails with CassetteMiss*"]
    )
    assert sum("Closest recorded request" in line for line in _failure(result)) == 1


def test_the_printed_re_record_command_records_that_test(tester, provider):
    tester.makepyfile(test_cas_city=ONE_QUESTION)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    _rewrite(tester, test_cas_city=ONE_QUESTION.replace("Paris?", "Rome?"))

    tester.runpytest("--agent-record", "test_cas_city.py::test_paris").assert_outcomes(passed=1)

    assert _asked(tester, "test_cas_city/test_paris.json") == [("Rome?", "v1: Rome?")]
    tester.runpytest().assert_outcomes(passed=1)


def test_unused_recordings_fail_the_test_as_stale(tester):
    tester.makepyfile(
        test_cas_stale="""
        import pytest
        from cas_client import ask

        @pytest.mark.agent
        def test_fewer():
            ask("one?")
            ask("two?")
        """
    )
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    _rewrite(
        tester,
        test_cas_stale="""
        import pytest
        from cas_client import ask

        @pytest.mark.agent
        def test_fewer():
            ask("one?")
        """,
    )

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *StaleCassette: Cassette *test_fewer.json: 1 of 2 recorded interactions were "
            "never used; the agent no longer sends them:",
            "      #1: POST 127.0.0.1*/v1/chat/completions (model call 1 of its conversation, "
            "after user: two?)",
            '    The cassette is stale. Re-record this test: pytest --agent-record "*"',
        ]
    )


STALE_SETUP = """
import pytest
from cas_client import ask

@pytest.mark.agent{options}
def test_fewer():
    ask("one?")
    {second}
"""


@pytest.mark.parametrize(
    ("options", "ini"),
    [("(allow_unused=True)", ""), ("", "agent_allow_unused = true\n")],
    ids=["marker", "ini"],
)
def test_unused_recordings_are_allowed_on_request(tester, options, ini):
    tester.makepyfile(test_cas_stale=STALE_SETUP.format(options="", second='ask("two?")'))
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    _rewrite(tester, test_cas_stale=STALE_SETUP.format(options=options, second="pass"))
    tester.makeini(INI + ini)

    tester.runpytest().assert_outcomes(passed=1)


def test_a_failing_recording_keeps_the_old_cassette(tester, provider):
    tester.makepyfile(test_cas_keep=ONE_QUESTION)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    before = (tester.path / "cassettes" / "test_cas_keep" / "test_paris.json").read_bytes()
    provider.version = "v2"
    _rewrite(tester, test_cas_keep=ONE_QUESTION.replace('.endswith(": Paris?")', ' == "v1"'))

    tester.runpytest("--agent-record").assert_outcomes(failed=1)

    after = (tester.path / "cassettes" / "test_cas_keep" / "test_paris.json").read_bytes()
    assert after == before


def test_a_failing_recording_is_saved_with_record_failing(tester, provider):
    tester.makepyfile(test_cas_keep=ONE_QUESTION)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    provider.version = "v2"
    _rewrite(tester, test_cas_keep=ONE_QUESTION.replace('.endswith(": Paris?")', ' == "v1"'))

    tester.runpytest("--agent-record", "--agent-record-failing").assert_outcomes(failed=1)

    assert _asked(tester, "test_cas_keep/test_paris.json") == [("Paris?", "v2: Paris?")]


def test_a_re_recorded_test_that_sends_nothing_no_longer_fails_as_stale(tester):
    tester.makepyfile(test_cas_quiet=ONE_QUESTION)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    _rewrite(
        tester,
        test_cas_quiet="""
        import pytest

        @pytest.mark.agent
        def test_paris():
            pass
        """,
    )
    tester.runpytest().assert_outcomes(failed=1)

    tester.runpytest("--agent-record").assert_outcomes(passed=1)

    tester.runpytest().assert_outcomes(passed=1)


# -- which tests get a cassette, and where -------------------------------------------


def test_tests_sharing_a_cassette_record_into_one_file(tester, provider):
    tester.makepyfile(
        test_cas_shared="""
        import pytest
        from cas_client import ask

        @pytest.mark.agent(cassette="shared")
        def test_one():
            ask("one?")

        @pytest.mark.agent(cassette="shared")
        def test_two():
            ask("two?")
        """
    )

    tester.runpytest("--agent-record").assert_outcomes(passed=2)
    provider.stop()
    tester.runpytest().assert_outcomes(passed=2)

    assert [q for q, _ in _asked(tester, "shared.json")] == ["one?", "two?"]
    assert sorted(p.name for p in (tester.path / "cassettes").iterdir()) == ["shared.json"]


def test_missing_mode_adds_to_a_shared_cassette_recorded_by_an_earlier_test(tester, provider):
    tester.makepyfile(
        test_cas_shared="""
        import pytest
        from cas_client import ask

        pytestmark = pytest.mark.agent(cassette="shared")

        def test_one():
            ask("one?")

        def test_two():
            ask("two?")
        """
    )

    tester.runpytest("--agent-record=missing").assert_outcomes(passed=2)

    assert [q for q, _ in _asked(tester, "shared.json")] == ["one?", "two?"]


def test_marker_on_a_class_and_on_a_module_make_agent_tests(tester):
    tester.makepyfile(
        test_cas_marked="""
        import pytest
        from cas_client import ask

        pytestmark = pytest.mark.agent

        def test_module_level():
            ask("module?")

        class TestWeather:
            def test_in_class(self):
                ask("class?")
        """,
        test_cas_class="""
        import pytest
        from cas_client import ask

        @pytest.mark.agent
        class TestOnly:
            def test_marked_class(self):
                ask("marked class?")

        def test_unmarked():
            ask("unmarked?")
        """,
    )

    tester.runpytest("--agent-record").assert_outcomes(passed=4)

    written = sorted(
        str(p.relative_to(tester.path / "cassettes"))
        for p in (tester.path / "cassettes").rglob("*.json")
    )
    assert written == [
        "test_cas_class/TestOnly.test_marked_class.json",
        "test_cas_marked/TestWeather.test_in_class.json",
        "test_cas_marked/test_module_level.json",
    ]


def test_agent_all_tests_gives_every_test_a_cassette(tester):
    tester.makepyfile(
        test_cas_plain="""
        from cas_client import ask

        def test_plain():
            ask("plain?")
        """
    )
    tester.makeini(INI + "agent_all_tests = true\n")

    tester.runpytest("--agent-record").assert_outcomes(passed=1)

    assert _asked(tester, "test_cas_plain/test_plain.json") == [("plain?", "v1: plain?")]


def test_a_test_with_fake_llm_gets_no_cassette(tester, provider):
    tester.makepyfile(
        test_cas_fake="""
        import pytest
        from cas_client import ask

        @pytest.mark.agent
        def test_scripted(fake_llm):
            fake_llm.reply("Scripted.")
            assert ask("Paris?") == "Scripted."
        """
    )

    tester.runpytest("--agent-record").assert_outcomes(passed=1)

    assert not (tester.path / "cassettes").exists()
    assert provider.hits == []


def test_agent_cassette_fixture_shows_the_tests_interactions(tester):
    tester.makepyfile(
        test_cas_fixture="""
        from cas_client import ask

        def test_inspect(agent_cassette):
            ask("Paris?")
            assert agent_cassette.path.name == "test_inspect.json"
            assert [i.response_body["json"]["choices"][0]["message"]["content"]
                    for i in agent_cassette.interactions] == ["v1: Paris?"]
        """
    )

    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    tester.runpytest().assert_outcomes(passed=1)


def test_cassette_dir_option_moves_the_cassettes(tester):
    tester.makepyfile(test_cas_paris=ONE_QUESTION)

    tester.runpytest("--agent-record", "--agent-cassette-dir=tapes/llm").assert_outcomes(passed=1)

    assert (tester.path / "tapes" / "llm" / "test_cas_paris" / "test_paris.json").is_file()
    assert not (tester.path / "cassettes").exists()
    tester.runpytest("--agent-cassette-dir=tapes/llm").assert_outcomes(passed=1)


def test_yaml_format_writes_and_replays_yaml_cassettes(tester, provider):
    tester.makepyfile(test_cas_paris=ONE_QUESTION)
    tester.makeini(INI + "agent_cassette_format = yaml\n")

    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    provider.stop()
    tester.runpytest().assert_outcomes(passed=1)

    text = (tester.path / "cassettes" / "test_cas_paris" / "test_paris.yaml").read_text()
    assert text.startswith("cassette: pytest-agentctx\n")
    assert "content: 'v1: Paris?'" in text


#: A chat completion and a streamed one through httpx, the client vcrpy also patches.
HTTPX_QUESTIONS = """
import json
import os

import httpx
import pytest

URL = os.environ["AGENT_SERVER"] + "/v1/chat/completions?api-version=1"


def body(content, stream=False):
    return {"model": "gpt-4o-mini", "stream": stream,
            "messages": [{"role": "user", "content": content}]}


def ask(client):
    return client.post(URL, json=body("Paris?")).json()["choices"][0]["message"]["content"]


def ask_streaming(client):
    with client.stream("POST", URL, json=body("Rome?", stream=True)) as response:
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    return "".join(
        json.loads(e)["choices"][0]["delta"]["content"] for e in events if e != "[DONE]"
    )


@pytest.mark.agent
def test_paris():
    with httpx.Client(headers={"authorization": "Bearer sk-e2e-test-key"}) as client:
        assert (ask(client), ask_streaming(client)) == ("v1: Paris?", "v1: Rome? ")
"""


def test_vcr_format_writes_cassettes_vcrpy_replays(tester, provider):
    import httpx
    import vcr

    tester.makepyfile(test_cas_vcr=HTTPX_QUESTIONS)
    tester.makeini(INI + "agent_cassette_format = vcr\n")
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    provider.stop()
    path = tester.path / "cassettes" / "test_cas_vcr" / "test_paris.yaml"
    written = yaml.safe_load(path.read_text())

    tester.runpytest().assert_outcomes(passed=1)  # this package replays it
    module = tester.path / "test_cas_vcr.py"
    namespace: dict[str, Any] = {}
    exec(compile(module.read_text(), str(module), "exec"), namespace)
    with vcr.VCR().use_cassette(str(path), record_mode="none"), httpx.Client() as client:
        answers = (namespace["ask"](client), namespace["ask_streaming"](client))

    assert answers == ("v1: Paris?", "v1: Rome? ")
    assert (written["version"], [i["request"]["method"] for i in written["interactions"]]) == (
        1,
        ["POST", "POST"],
    )
    assert "sk-e2e-test-key" not in path.read_text()


#: A test whose client reads its key from the environment, as the SDKs do by default.
KEY_FROM_ENVIRONMENT = """
import os

import openai
import pytest


@pytest.mark.agent
def test_paris():
    with openai.OpenAI(base_url=os.environ["AGENT_SERVER"] + "/v1", max_retries=0) as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Paris?"}]
        )
    assert reply.choices[0].message.content == "v1: Paris?"
    assert os.environ["OPENAI_API_KEY"] == os.environ.get("EXPECTED_KEY", "sk-agentctx-fake")
"""


def test_a_replay_needs_no_api_key_and_the_placeholder_goes_away(tester, provider, monkeypatch):
    tester.makepyfile(test_cas_keys=KEY_FROM_ENVIRONMENT)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-key-for-recording-0123456789")
    monkeypatch.setenv("EXPECTED_KEY", "sk-real-key-for-recording-0123456789")
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("EXPECTED_KEY")
    provider.stop()

    tester.runpytest().assert_outcomes(passed=1)

    assert "OPENAI_API_KEY" not in os.environ
    cassette = (tester.path / "cassettes" / "test_cas_keys" / "test_paris.json").read_text()
    assert "sk-real-key" not in cassette
    assert "agentctx-fake" not in cassette


def _add_ini_line(tester: pytest.Pytester, line: str) -> None:
    ini = tester.path / "tox.ini"
    ini.write_text(f"{ini.read_text()}\n{line}\n")


#: A replayed test that reports which provider keys it found set.
KEYS_SEEN = """
import os

import pytest


@pytest.mark.agent
def test_keys():
    print("seen:", sorted(n for n in ("OPENAI_API_KEY", "GEMINI_API_KEY") if os.environ.get(n)))
"""


def test_with_placeholders_off_a_replay_sets_no_key(tester, monkeypatch):
    tester.makepyfile(test_cas_seen=KEYS_SEEN)
    _add_ini_line(tester, "agent_placeholder_keys = false")
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)

    result = tester.runpytest("-s")

    result.assert_outcomes(passed=1)
    assert "seen: []" in result.stdout.str()


def test_with_placeholders_off_fake_llm_sets_no_key(tester, monkeypatch):
    marked = "@pytest.mark.agent\ndef test_keys():"
    with_fake = KEYS_SEEN.replace(marked, "def test_keys(fake_llm):")
    assert with_fake != KEYS_SEEN
    tester.makepyfile(test_cas_seen=with_fake)
    _add_ini_line(tester, "agent_placeholder_keys = false")
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)

    result = tester.runpytest("-s")

    result.assert_outcomes(passed=1)
    assert "seen: []" in result.stdout.str()


def test_a_replay_sets_no_gemini_placeholder_beside_a_google_api_key(tester, monkeypatch):
    tester.makepyfile(test_cas_seen=KEYS_SEEN)
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "users-google-key")

    result = tester.runpytest("-s")

    result.assert_outcomes(passed=1)
    assert "seen: ['OPENAI_API_KEY']" in result.stdout.str()


def test_a_bad_placeholder_keys_value_is_a_usage_error_naming_it(tester):
    tester.makepyfile(test_cas_seen=KEYS_SEEN)
    _add_ini_line(tester, "agent_placeholder_keys = maybe")

    result = tester.runpytest()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agent_placeholder_keys*expected true or false*"])


def test_recording_without_an_api_key_gets_no_placeholder(tester, monkeypatch):
    tester.makepyfile(test_cas_keys=KEY_FROM_ENVIRONMENT)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    result = tester.runpytest("--agent-record")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*OpenAIError*api_key*"])
    assert not (tester.path / "cassettes" / "test_cas_keys" / "test_paris.json").exists()


# -- offline -------------------------------------------------------------------------


def test_replay_refuses_connections_the_cassette_does_not_see(tester):
    # urllib.request (the standard library's client) is not recorded: its connection
    # meets the guard. requests and urllib3 are answered by the cassette (test_clients_e2e).
    tester.makepyfile(
        test_cas_requests="""
        import urllib.request

        import pytest

        @pytest.mark.agent
        def test_outside():
            urllib.request.urlopen("http://192.0.2.1/v1/models", timeout=2)
        """
    )

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *NetworkBlocked: pytest-agentctx blocked a connection to 192.0.2.1:80: agent "
            "tests replay offline (replaying test_outside.json).*"
        ]
    )


def test_a_refused_connection_fails_the_test_even_when_caught(tester):
    tester.makepyfile(
        test_cas_requests="""
        import urllib.request

        import pytest

        @pytest.mark.agent
        def test_outside():
            try:
                urllib.request.urlopen("http://192.0.2.1/v1/models", timeout=2)
            except OSError:
                pass
        """
    )

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E *NetworkBlocked: *192.0.2.1:80*"])


# -- parallel recording --------------------------------------------------------------


def test_eight_tests_recording_into_one_cassette_under_xdist_keep_every_interaction(
    tester, provider
):
    tester.makepyfile(
        test_cas_parallel="""
        import pytest
        from cas_client import ask

        @pytest.mark.agent(cassette="parallel")
        @pytest.mark.parametrize("n", range(8))
        def test_ask(n):
            assert ask(f"question {n}?") == f"v1: question {n}?"
        """
    )

    tester.runpytest("-n", "2", "--agent-record").assert_outcomes(passed=8)
    provider.stop()
    tester.runpytest("-n", "2").assert_outcomes(passed=8)

    assert sorted(q for q, _ in _asked(tester, "parallel.json")) == [
        f"question {n}?" for n in range(8)
    ]


# -- secrets -------------------------------------------------------------------------

CANARIES = {
    "OPENAI_API_KEY": "sk-canary-env-0001-openai-key",
    "CANARY_X_API_KEY": "canary-0002-x-api-key",
    "CANARY_API_KEY_HEADER": "canary-0003-api-key-header",
    "CANARY_ORGANIZATION": "org-canary-0004-organization",
    "CANARY_PROJECT": "proj_canary-0005-project",
    "CANARY_ANTHROPIC_ORG": "canary-0006-anthropic-org-id",
    "CANARY_COOKIE": "canary-0007-session-cookie",
    "CANARY_QUERY_KEY": "canary-0008-query-key",
}


def test_no_canary_secret_reaches_any_written_file(tester, provider, monkeypatch):
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    tester.makepyfile(
        test_cas_secrets="""
        import json
        import os

        import pytest
        from cas_client import client

        @pytest.mark.agent
        def test_secrets():
            env = os.environ
            with client(
                api_key=env["OPENAI_API_KEY"],
                organization=env["CANARY_ORGANIZATION"],
                project=env["CANARY_PROJECT"],
                default_headers={
                    "x-api-key": env["CANARY_X_API_KEY"],
                    "api-key": env["CANARY_API_KEY_HEADER"],
                    "anthropic-organization-id": env["CANARY_ANTHROPIC_ORG"],
                    "cookie": "session=" + env["CANARY_COOKIE"],
                    "x-echo": "1",
                },
                default_query={"api_key": env["CANARY_QUERY_KEY"]},
            ) as openai_client:
                reply = openai_client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[{"role": "user", "content": "my key: " + env["OPENAI_API_KEY"]}],
                )
            echoed = json.loads(reply.choices[0].message.content)
            assert echoed["headers"]["x-api-key"] == env["CANARY_X_API_KEY"] or (
                echoed["headers"]["x-api-key"] == "REDACTED"
            )
        """
    )

    tester.runpytest("--agent-record", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    tester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)

    written = [p for p in tester.path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" for p in written)
    leaks = {
        f"{path.relative_to(tester.path)}: {name}"
        for path in written
        for name, value in CANARIES.items()
        if value.encode() in path.read_bytes()
    }
    assert leaks == set()
    cassette = (tester.path / "cassettes" / "test_cas_secrets" / "test_secrets.json").read_text()
    assert cassette.count("REDACTED") >= len(CANARIES)


# -- the command line ----------------------------------------------------------------


def test_help_lists_the_cassette_options_and_ini_keys(agent_pytester: pytest.Pytester) -> None:
    result = agent_pytester.runpytest("--help")

    result.stdout.fnmatch_lines(
        [
            "*--agent-record=[[]MODE[]]*",
            "*--agent-cassette-dir=DIR*",
            "*--agent-record-failing*",
            "*agent_cassette_dir (string):*",
            "*agent_record_mode (string):*",
            "*agent_all_tests (bool):*",
            "*agent_allow_unused (bool):*",
            "*agent_cassette_format (string):*",
        ]
    )


def test_record_flag_before_a_path_records_that_path(tester: pytest.Pytester, provider) -> None:
    tester.makepyfile(test_cas_paris=ONE_QUESTION)

    tester.runpytest("--agent-record", "test_cas_paris.py").assert_outcomes(passed=1)

    assert Path(tester.path / "cassettes" / "test_cas_paris" / "test_paris.json").is_file()
