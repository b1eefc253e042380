"""End-to-end tests of a test's scope ending with the test: work a test leaves running (an
asyncio task on a session-wide loop or on a loop in a background thread, a thread) that
sends a request after the test ended is refused, never recorded into the next test's
cassette, and the refusal fails the session (serially and under ``-n 2``).

The inner tests talk to a chat completions server on 127.0.0.1 (``support.chat_server``)
through the real ``openai`` SDK. The first test leaves its work waiting on a signal the
second test gives, so the late request is made while the second test runs, every time.
The inner runs are subprocesses: a thread the inner session leaves running must not
outlive it in this process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
from support.chat_server import ChatServer

CLIENT_MODULE = """
import os

import openai


def client():
    return openai.OpenAI(
        base_url=os.environ["AGENT_SERVER"] + "/v1", api_key="sk-e2e-test-key", max_retries=0
    )


def async_client():
    return openai.AsyncOpenAI(
        base_url=os.environ["AGENT_SERVER"] + "/v1", api_key="sk-e2e-test-key", max_retries=0
    )


def ask(content):
    with client() as sdk:
        reply = sdk.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": content}]
        )
    return reply.choices[0].message.content


async def ask_async(content):
    async with async_client() as sdk:
        reply = await sdk.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": content}]
        )
    return reply.choices[0].message.content
"""

#: What the session-loop cases share: a task that asks once the signal is given.
LEFTOVER_TASK = """
import asyncio

import pytest
from late_client import ask_async

SIGNAL = []
OUTCOME = []


async def leftover():
    while not SIGNAL:
        await asyncio.sleep(0.01)
    try:
        OUTCOME.append(await ask_async("late question"))
    except Exception as exc:
        OUTCOME.append(exc)
"""

#: A test leaves a task pending on the session's event loop; it asks when the next test
#: sets the signal. The next test then asks its own question.
SESSION_LOOP_TASK = (
    LEFTOVER_TASK
    + """

@pytest.mark.agent
@pytest.mark.asyncio(loop_scope="session")
async def test_first():
    SIGNAL.clear()
    asyncio.get_running_loop().create_task(leftover())
    assert await ask_async("first question") == "v1: first question"


@pytest.mark.agent
@pytest.mark.asyncio(loop_scope="session")
async def test_second():
    SIGNAL.append(True)
    for _ in range(3000):
        if OUTCOME:
            break
        await asyncio.sleep(0.01)
    assert "did not send" in repr(OUTCOME[0].__cause__ or OUTCOME[0])
    assert await ask_async("second question") == "v1: second question"
"""
)

#: The same with a thread the first test leaves running.
THREAD = """
import threading

import pytest
from late_client import ask

SIGNAL = threading.Event()
OUTCOME = []
THREADS = []


def leftover():
    SIGNAL.wait(30)
    try:
        OUTCOME.append(ask("late question"))
    except Exception as exc:
        OUTCOME.append(exc)


@pytest.mark.agent
def test_first():
    thread = threading.Thread(target=leftover, daemon=True)
    THREADS.append(thread)
    thread.start()
    assert ask("first question") == "v1: first question"


@pytest.mark.agent
def test_second():
    if THREADS:  # not when it runs alone
        SIGNAL.set()
        THREADS[0].join(30)
        assert "did not send" in repr(OUTCOME[0].__cause__ or OUTCOME[0])
    assert ask("second question") == "v1: second question"
"""

#: The same with a task on a loop that a session fixture runs in a background thread.
BACKGROUND_LOOP = """
import asyncio
import threading

import pytest
from late_client import ask, ask_async

SIGNAL = threading.Event()
OUTCOME = []
FUTURES = []


@pytest.fixture(scope="session")
def loop():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(30)


async def leftover():
    while not SIGNAL.is_set():
        await asyncio.sleep(0.01)
    try:
        OUTCOME.append(await ask_async("late question"))
    except Exception as exc:
        OUTCOME.append(exc)


@pytest.mark.agent
def test_first(loop):
    FUTURES.append(asyncio.run_coroutine_threadsafe(leftover(), loop))
    assert ask("first question") == "v1: first question"


@pytest.mark.agent
def test_second(loop):
    SIGNAL.set()
    FUTURES[0].result(30)
    assert "did not send" in repr(OUTCOME[0].__cause__ or OUTCOME[0])
    assert ask("second question") == "v1: second question"
"""

CASES = {
    "session_loop_task": SESSION_LOOP_TASK,
    "thread": THREAD,
    "background_loop": BACKGROUND_LOOP,
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    chat = ChatServer()
    monkeypatch.setenv("AGENT_SERVER", chat.url)
    try:
        yield chat
    finally:
        chat.stop()


@pytest.fixture
def tester(agent_pytester: pytest.Pytester, server: ChatServer) -> pytest.Pytester:
    agent_pytester.makepyfile(late_client=CLIENT_MODULE)
    return agent_pytester


def _questions(path: Path) -> list[str]:
    """The questions recorded in the JSON cassette at ``path``."""
    interactions = json.loads(path.read_text())["interactions"]
    return [i["request"]["body"]["json"]["messages"][-1]["content"] for i in interactions]


def _check(tester: pytest.Pytester, server: ChatServer, result: pytest.RunResult) -> None:
    """The late request was refused (never sent, never recorded), each test recorded only
    its own question, and the session failed, naming the test whose work sent it."""
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    assert "agentctx: late requests refused" in output
    assert "test_late.py::test_first" in output.split("agentctx: late requests refused")[1]
    assert "late question" not in server.hits
    folder = tester.path / "cassettes" / "test_late"
    assert _questions(folder / "test_first.json") == ["first question"]
    assert _questions(folder / "test_second.json") == ["second question"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_late_request_is_refused_and_fails_the_session(tester, server, case):
    tester.makepyfile(test_late=CASES[case])

    result = tester.runpytest_subprocess("--agent-record", timeout=180)

    _check(tester, server, result)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_late_request_is_refused_and_fails_the_session_under_xdist(tester, server, case):
    tester.makepyfile(test_late=CASES[case])

    result = tester.runpytest_subprocess(
        "--agent-record", "-n", "2", "--dist", "loadfile", timeout=180
    )

    _check(tester, server, result)


#: A module fixture stops the thread the test left running: the thread's request comes in
#: the test's own teardown, after its cassette stopped.
TEARDOWN = """
import threading

import pytest
from late_client import ask

SIGNAL = threading.Event()
OUTCOME = []
THREADS = []


@pytest.fixture(scope="module")
def workers():
    yield THREADS
    SIGNAL.set()
    for thread in THREADS:
        thread.join(30)


def leftover():
    SIGNAL.wait(30)
    try:
        OUTCOME.append(ask("late question"))
    except Exception as exc:
        OUTCOME.append(exc)


@pytest.mark.agent
def test_only(workers):
    thread = threading.Thread(target=leftover, daemon=True)
    workers.append(thread)
    thread.start()
    assert ask("first question") == "v1: first question"
"""


def test_a_late_request_in_the_tests_own_teardown_fails_that_teardown(tester, server):
    tester.makepyfile(test_late=TEARDOWN)

    result = tester.runpytest_subprocess("--agent-record", timeout=180)

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_only*",
            "*did not send POST http://127.0.0.1:*/v1/chat/completions: it was made by work "
            "that test test_late.py::test_only (Cassette *) started*",
        ]
    )
    assert "late question" not in server.hits
    folder = tester.path / "cassettes" / "test_late"
    assert _questions(folder / "test_only.json") == ["first question"]


def test_the_second_test_replays_alone_after_a_late_request(tester, server):
    tester.makepyfile(test_late=THREAD)
    tester.runpytest_subprocess("--agent-record", timeout=180)
    server.stop()

    alone = tester.runpytest_subprocess("test_late.py::test_second", timeout=180)

    # it replays its own recording, all of it: the late question was never in its cassette
    alone.assert_outcomes(passed=1)
    assert alone.ret == pytest.ExitCode.OK


#: The first test leaves a task pending on the session's loop; the next test is a plain one
#: (no cassette, no fake model): the transports stay patched for the rest of the session,
#: so the task's request is refused there too, not sent.
SESSION_LOOP_TASK_THEN_PLAIN = (
    LEFTOVER_TASK
    + """

@pytest.mark.agent
@pytest.mark.asyncio(loop_scope="session")
async def test_first():
    asyncio.get_running_loop().create_task(leftover())
    assert await ask_async("first question") == "v1: first question"


@pytest.mark.asyncio(loop_scope="session")
async def test_plain():
    SIGNAL.append(True)
    for _ in range(3000):
        if OUTCOME:
            break
        await asyncio.sleep(0.01)
    assert "did not send" in repr(OUTCOME[0].__cause__ or OUTCOME[0])
"""
)


def test_a_late_request_made_while_a_plain_test_runs_is_refused(tester, server):
    tester.makepyfile(test_late=SESSION_LOOP_TASK_THEN_PLAIN)

    result = tester.runpytest_subprocess("--agent-record", timeout=180)

    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "test_late.py::test_first" in result.stdout.str().split("late requests refused")[1]
    assert server.hits == ["first question"]
