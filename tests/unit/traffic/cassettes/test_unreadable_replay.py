"""A replayed response its client cannot read (:func:`misses.unreadable_message`): found
once per response, found again when the response changes, and the record command made
only for the message."""

from __future__ import annotations

from pathlib import Path

from pytest_agentctx.traffic.cassettes.defaults import RecordMode
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.matcher import RequestKey
from pytest_agentctx.traffic.cassettes.misses import unreadable_message
from pytest_agentctx.traffic.cassettes.replay import Replays

PATH = Path("cassettes/t.json")


def _replays(text: str) -> Replays:
    interaction = Interaction(
        method="POST",
        url="https://api.example.com/v1/chat",
        request_headers={},
        request_body=None,
        status=200,
        response_headers={"Content-Type": "application/json"},
        response_body={"text": text},
    )
    key = RequestKey("POST", "api.example.com", "/v1/chat", (), "")
    return Replays([interaction], [key], test_id="", shared=False, mode=RecordMode.NONE)


def test_a_response_that_is_not_the_json_it_says_names_the_command():
    message = unreadable_message(_replays("<html>"), 0, path=PATH, command=lambda: "rec")

    assert message is not None
    assert "interaction #0" in message
    assert "(rec)" in message


def test_a_readable_response_never_makes_the_command():
    def command() -> str:
        raise AssertionError("made for a readable response")

    assert unreadable_message(_replays('{"ok": true}'), 0, path=PATH, command=command) is None


def test_a_response_edited_after_it_was_read_is_looked_at_again():
    replays = _replays('{"ok": true}')
    unreadable_message(replays, 0, path=PATH, command=lambda: "rec")

    replays.loaded[0].response_body = {"text": "<html>"}

    assert unreadable_message(replays, 0, path=PATH, command=lambda: "rec") is not None


def test_a_response_replayed_by_another_cassette_is_found_unreadable_again():
    first = _replays("<html>")
    unreadable_message(first, 0, path=PATH, command=lambda: "rec")
    again = Replays(first.loaded, first.keys, test_id="", shared=False, mode=RecordMode.NONE)

    message = unreadable_message(again, 0, path=Path("other.json"), command=lambda: "rec")

    assert message is not None
    assert "other.json" in message


def test_a_response_whose_status_changed_is_looked_at_again():
    replays = _replays("<html>")
    unreadable_message(replays, 0, path=PATH, command=lambda: "rec")

    replays.loaded[0].status = 500

    assert unreadable_message(replays, 0, path=PATH, command=lambda: "rec") is None
