"""Unit tests of the migration period (``agent_migration_until``): the date read from the
ini (:func:`migration_period`), and what a passing test's cassette lets pass while it
runs and fails on once it ended (:meth:`Cassette.check`)."""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path

import httpx2
import openai
import pytest
from cassette_support import TLS

from pytest_agentctx.traffic.cassettes import Cassette, Interaction
from pytest_agentctx.traffic.cassettes.options import CassetteSettings, migration_period
from pytest_agentctx.traffic.cassettes.store import write_cassette
from pytest_agentctx.traffic.errors import CassetteConfigError, CassetteMiss, StaleCassette

DAY = dt.date(2026, 6, 30)
URL = "http://127.0.0.1:9/v1/chat/completions"


def test_no_date_is_no_period():
    assert migration_period("", today=DAY) == ("", False)


@pytest.mark.parametrize(
    ("value", "running"),
    [("2026-07-01", True), ("2026-06-30", True), ("2026-06-29", False)],
    ids=["before", "on the day", "after"],
)
def test_the_period_runs_up_to_its_last_day_included(value, running):
    assert migration_period(value, today=DAY) == (value, running)


@pytest.mark.parametrize("value", ["31/12/2026", "20261231", "2026-02-30", "soon", "2026-1-5"])
def test_a_value_that_is_not_a_date_is_refused_with_a_right_one(value):
    with pytest.raises(CassetteConfigError) as caught:
        migration_period(value, today=DAY)

    assert str(caught.value) == (
        f"agent_migration_until = {value!r} is not a date; expected YYYY-MM-DD (the last day "
        "unused recordings and caught misses do not fail tests), e.g. agent_migration_until "
        "= 2026-12-31. Fix it in your pytest ini file."
    )


def test_the_session_settings_carry_the_period():
    settings = CassetteSettings.build(
        rootpath=Path("/project"),
        directory="cassettes",
        cli_mode=None,
        ini_mode="none",
        all_tests=False,
        allow_unused=False,
        allowed_hosts=(),
        ignore_fields=(),
        cassette_format="json",
        secret_env=(),
        record_failing=False,
        run_id="",
        migration_until=" 2026-07-01 ",
        today=DAY,
    )

    assert (settings.migration_until, settings.migrating) == ("2026-07-01", True)


def _interaction(content: str) -> Interaction:
    return Interaction(
        method="POST",
        url=URL,
        request_headers={"content-type": "application/json"},
        request_body={"json": {"model": "gpt-4o-mini", "messages": [{"content": content}]}},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": {"id": content}},
    )


def _cassette(path: Path, *, running: bool) -> Cassette:
    write_cassette(path, [_interaction("Hi"), _interaction("Bye")])
    return Cassette(
        path, test_id="tests/test_a.py::test_b", migration_until="2026-06-30", migrating=running
    )


def test_unused_recordings_are_counted_not_failed_on_while_the_period_runs(path):
    cassette = _cassette(path, running=True)

    cassette.check()

    assert (cassette.eased_unused, cassette.eased_misses) == (2, 0)


def test_unused_recordings_fail_once_the_period_ended_saying_so(path):
    cassette = _cassette(path, running=False)

    with pytest.raises(StaleCassette) as caught:
        cassette.check()

    assert str(caught.value).splitlines()[-1] == (
        "The migration period of agent_migration_until ended on 2026-06-30, so this fails "
        "again: drop the unused recordings (pytest --agent-report=agentctx-report.json, then "
        "pytest-agentctx cassettes prune agentctx-report.json), or move agent_migration_until "
        "to a later date in your pytest ini file."
    )


async def _miss(cassette: Cassette) -> None:
    """A request the cassette has no recording for, whose error the code catches."""
    cassette.start()
    try:
        async with openai.AsyncOpenAI(
            api_key="sk-unit-test-key-000",
            base_url="http://127.0.0.1:9/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(verify=TLS, trust_env=False),
        ) as client:
            with contextlib.suppress(openai.InternalServerError):
                await client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "Other"}]
                )
    finally:
        cassette.stop()


async def test_a_caught_miss_is_counted_not_failed_on_while_the_period_runs(path):
    cassette = _cassette(path, running=True)
    await _miss(cassette)

    cassette.check()

    assert (cassette.eased_misses, cassette.eased_unused) == (1, 0)


async def test_a_caught_miss_fails_once_the_period_ended_saying_so(path):
    cassette = _cassette(path, running=False)
    await _miss(cassette)

    with pytest.raises(CassetteMiss) as caught:
        cassette.check()

    assert str(caught.value).splitlines()[-1] == (
        "The migration period of agent_migration_until ended on 2026-06-30, so this fails "
        'again: re-record the test (pytest --agent-record "tests/test_a.py::test_b"), or move '
        "agent_migration_until to a later date in your pytest ini file."
    )


def test_without_a_period_the_failure_says_nothing_of_one(path):
    write_cassette(path, [_interaction("Hi")])
    cassette = Cassette(path, test_id="tests/test_a.py::test_b")

    with pytest.raises(StaleCassette) as caught:
        cassette.check()

    assert "agent_migration_until" not in str(caught.value)
