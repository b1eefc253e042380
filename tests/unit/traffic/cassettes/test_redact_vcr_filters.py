"""Unit tests of vcrpy's request filters in the cassette's Redactor (use_filters) and in
the match keys: removed or replaced as vcrpy does, values never stored."""

from __future__ import annotations

import httpx

from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.keys import RequestKeys
from pytest_agentctx.traffic.cassettes.matcher import NO_JSON
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.cassettes.vcr_config import RequestFilters


def _redactor(**filters: tuple[tuple[str, str | None], ...]) -> Redactor:
    redactor = Redactor(env=())
    redactor.use_filters(RequestFilters(**filters))
    return redactor


def test_a_filtered_header_is_redacted_and_its_value_learned():
    redactor = _redactor(headers=(("x-team", None),))
    redactor.learn([("X-Team", "team-token-0123456789")])

    assert redactor.header_items([("X-Team", "team-token-0123456789")]) == [("X-Team", "REDACTED")]
    assert redactor.text("echo team-token-0123456789") == "echo REDACTED"


def test_a_filtered_query_parameter_is_removed_as_vcrpy_removes_it():
    redactor = _redactor(query=(("team", None),))

    assert (
        redactor.url("https://api.example.com/v1?team=abc&q=1") == "https://api.example.com/v1?q=1"
    )


def test_a_filtered_query_parameter_with_a_replacement_is_replaced():
    redactor = _redactor(query=(("team", "DUMMY"),))

    assert (
        redactor.url("https://api.example.com/v1?team=abc")
        == "https://api.example.com/v1?team=DUMMY"
    )


def test_a_filtered_query_value_is_learned_as_a_secret():
    redactor = _redactor(query=(("team", None),))
    redactor.learn([], "https://api.example.com/v1?team=team-0123456789")

    assert redactor.text("team-0123456789") == "REDACTED"


def test_a_filtered_json_post_parameter_is_removed_or_replaced_and_learned():
    redactor = _redactor(post=(("password", None), ("user", "U")))

    body, _ = redactor.filter_post(
        "POST", {"password": "hunter2-hunter2", "user": "ann", "q": 1}, b""
    )

    assert body == {"user": "U", "q": 1}
    assert redactor.text("hunter2-hunter2") == "REDACTED"


def test_a_filtered_form_post_parameter_is_removed():
    redactor = _redactor(post=(("password", None),))

    _, raw = redactor.filter_post("POST", NO_JSON, b"user=ann&password=hunter2-hunter2")

    assert raw == b"user=ann"


def test_post_filters_leave_other_methods_alone():
    redactor = _redactor(post=(("password", None),))

    assert redactor.filter_post("GET", {"password": "x"}, b"") == ({"password": "x"}, b"")


def test_a_recording_vcrpy_filtered_matches_the_live_request():
    keys = RequestKeys(_redactor(query=(("team", None),), post=(("password", None),)), (), None)

    recorded = Interaction(
        method="POST",
        url="https://api.example.com/v1?q=1",
        request_headers={},
        request_body={"json": {"user": "ann"}},
        status=200,
        response_headers={},
        response_body=None,
    )

    live = httpx.Request(
        "POST",
        "https://api.example.com/v1?team=t-0123456789&q=1",
        json={"user": "ann", "password": "hunter2-hunter2"},
    )

    key, url, body, _ = keys.of_request(live)

    assert key == keys.of_interaction(recorded)
    assert "t-0123456789" not in url
    assert body == {"user": "ann"}
