"""Simulated users' transcripts in a test's record, its JUnit properties and the HTML page."""

from __future__ import annotations

from typing import Any

from pytest_agentctx.redaction.redactor import Redactor
from pytest_agentctx.reports.html_transcripts import transcripts_html
from pytest_agentctx.reports.record import build_record, junit_properties
from pytest_agentctx.reports.schema import TranscriptEntry


def transcript(**fields: Any) -> TranscriptEntry:
    entry: TranscriptEntry = {
        "persona": "a customer",
        "goal": "a refund",
        "messages": [
            {"role": "user", "content": "Refund order 42."},
            {"role": "assistant", "content": "Done."},
        ],
        "turns": 1,
        "stopped_because": "done",
        "done_reason": "refunded",
    }
    return {**entry, **fields}  # type: ignore[typeddict-item]


def test_the_record_keeps_the_transcripts_in_order() -> None:
    first, second = transcript(), transcript(persona="a reseller")

    record = build_record(runs=(), transcripts=[first, second])

    assert record["transcripts"] == [first, second]


def test_a_record_without_transcripts_has_no_entry() -> None:
    assert "transcripts" not in build_record(runs=())


def test_the_redactor_scrubs_the_transcripts() -> None:
    secret = "sk-live-0123456789abcdef0123456789"
    said = transcript(messages=[{"role": "user", "content": f"my key is {secret}"}])

    record = build_record(runs=(), transcripts=[said], redactor=Redactor(extra_values=[secret]))

    assert secret not in str(record["transcripts"])


def test_each_transcript_is_a_junit_property() -> None:
    record = build_record(
        runs=(),
        cassette={"status": "replayed"},  # type: ignore[arg-type]
        transcripts=[transcript()],
    )

    assert ("agentctx.transcript", "a customer: 1 turn(s), stopped: done (refunded)") in (
        junit_properties(dict(record))
    )


def test_the_page_shows_each_message_escaped_with_its_speaker() -> None:
    page = transcripts_html([transcript(messages=[{"role": "assistant", "content": "<b>x</b>"}])])

    assert "<b>agent</b>: <pre>&lt;b&gt;x&lt;/b&gt;</pre>" in page
    assert "a customer" in page


def test_a_test_without_transcripts_adds_nothing_to_the_page() -> None:
    assert transcripts_html([]) == ""
