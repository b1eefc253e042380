"""Unit tests for pytest_agentctx.redaction.active and pytest_agentctx.context.scrub: the
session's secrets, scrubbing values, lines and pytest reports."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from pytest_agentctx import AgentContext, Message
from pytest_agentctx.context._seq import FrozenDict, Seq
from pytest_agentctx.context.scrub import redact
from pytest_agentctx.redaction.active import SessionSecrets
from pytest_agentctx.redaction.output import redact_lines, redact_report, redacted_note
from pytest_agentctx.traffic.cassettes import Redactor

SECRET = "sk-unit-redaction-7b3e9a"
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _redactor(*secrets: str) -> Redactor:
    return Redactor(env=(), extra_values=secrets or (SECRET,))


# -- the session's secrets ---------------------------------------------------------------


def test_the_session_redactor_knows_the_secret_environment_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACME_TOKEN", SECRET)

    secrets = SessionSecrets(["ACME_TOKEN"])

    assert secrets.redactor.text(f"token {SECRET}") == "token REDACTED"


def test_a_test_redactor_knows_its_own_values_and_the_sessions() -> None:
    secrets = SessionSecrets()
    other = "tenant-4f2a9c0d"

    redactor = secrets.for_test([other])

    assert redactor.text(f"{other}") == "REDACTED"
    assert secrets.redactor.text(other) == other


def test_what_a_test_learned_from_traffic_is_redacted_in_later_tests() -> None:
    secrets = SessionSecrets()
    first = secrets.for_test(["own-value-0001"])
    first.learn([("Authorization", f"Bearer {SECRET}")])

    secrets.absorb(first, ["own-value-0001"])

    assert secrets.learned == (f"Bearer {SECRET}", SECRET)
    assert secrets.for_test().text(SECRET) == "REDACTED"
    assert secrets.redactor.text(SECRET) == "REDACTED"
    assert secrets.redactor.text("own-value-0001") == "own-value-0001"


def test_environment_values_are_not_taken_for_learned_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACME_TOKEN", SECRET)
    secrets = SessionSecrets(["ACME_TOKEN"])

    secrets.absorb(secrets.for_test())

    assert secrets.learned == ()


# -- values ------------------------------------------------------------------------------


def test_a_value_without_secrets_is_returned_as_it_is() -> None:
    ctx = AgentContext.new("Weather in Paris?", at=T0).with_iteration_metadata({"a": [1, "b"]})

    assert redact(ctx, _redactor()) is ctx


def test_strings_keys_and_nested_containers_are_scrubbed() -> None:
    value = {SECRET: [f"a {SECRET}", (SECRET, 3)], "set": {SECRET}, "n": None}

    assert redact(value, _redactor()) == {
        "REDACTED": ["a REDACTED", ("REDACTED", 3)],
        "set": {"REDACTED"},
        "n": None,
    }


def test_the_contexts_own_containers_keep_their_types() -> None:
    ctx = AgentContext.new(f"key {SECRET}", at=T0).with_iteration_metadata({"auth": SECRET})

    scrubbed = redact(ctx, _redactor())

    assert type(scrubbed.iterations) is Seq
    assert type(scrubbed.iterations[0].metadata) is FrozenDict
    assert scrubbed.iterations[0].messages[0] == Message(role="user", content="key REDACTED")
    assert scrubbed.iterations[0].metadata == {"auth": "REDACTED"}
    assert ctx.iterations[0].messages[0].content == f"key {SECRET}"  # the original is kept


@dataclass(frozen=True)
class _Note:
    text: str
    size: int


def test_a_dataclass_is_copied_with_its_strings_scrubbed() -> None:
    note = _Note(f"see {SECRET}", 2)

    assert redact(note, _redactor()) == _Note("see REDACTED", 2)
    assert note.text == f"see {SECRET}"


def test_without_secret_values_nothing_is_walked() -> None:
    value = {"a": f"{SECRET}"}

    assert redact(value, Redactor(env=())) is value


# -- printed lines -----------------------------------------------------------------------


def test_lines_with_a_secret_are_scrubbed_and_say_so() -> None:
    lines = ["1 mismatch:", f"  content: '{SECRET}' != 'x'"]

    assert redact_lines(lines, _redactor()) == [
        "1 mismatch:",
        "  content: 'REDACTED' != 'x'",
        redacted_note(),
    ]


def test_lines_without_a_secret_are_left_as_they_are() -> None:
    lines = ["1 mismatch:", "  content: 'a' != 'b'"]

    assert redact_lines(lines, _redactor()) == lines


# -- pytest reports ----------------------------------------------------------------------


def _failure_report(message: str, sections: list[tuple[str, str]]) -> pytest.TestReport:
    try:
        raise AssertionError(message)
    except AssertionError:
        info = pytest.ExceptionInfo.from_current()
    return pytest.TestReport(
        "test_x.py::test_x",
        ("test_x.py", 1, "test_x"),
        {},
        "failed",
        info.getrepr(showlocals=True),
        "call",
        sections,
    )


def test_a_reports_failure_text_and_output_are_scrubbed() -> None:
    report = _failure_report(f"reply was {SECRET}", [("Captured stdout call", f"{SECRET}\n")])

    redact_report(report, _redactor())

    assert SECRET not in str(report.longrepr)
    assert "reply was REDACTED" in str(report.longrepr)
    assert report.sections == [("Captured stdout call", "REDACTED\n")]
    assert report.outcome == "failed"
    crash = getattr(report.longrepr, "reprcrash", None)
    assert crash is not None
    assert crash.message == "AssertionError: reply was REDACTED"


def test_a_text_failure_is_scrubbed() -> None:
    report = pytest.TestReport(
        "test_x.py::test_x", ("test_x.py", 1, "test_x"), {}, "failed", f"E {SECRET}", "call"
    )

    redact_report(report, _redactor())

    assert report.longrepr == "E REDACTED"
