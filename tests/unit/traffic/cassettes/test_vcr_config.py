"""Unit tests of pytest_agentctx.traffic.cassettes.vcr_config: a project's vcr_config
translated into this package's options."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_agentctx.traffic.cassettes.defaults import RecordMode
from pytest_agentctx.traffic.cassettes.vcr_config import (
    LOCALHOST,
    RequestFilters,
    VcrOptions,
    check_hooks,
    merge_vcr_kwargs,
    regex_host,
    translate_vcr_config,
    vcr_record_mode,
)
from pytest_agentctx.traffic.errors import CassetteConfigError

WHERE = "tests/test_x.py::test_x"


def translate(config: dict[str, object], **matchers: object) -> VcrOptions:
    return translate_vcr_config(config, matchers=matchers, where=WHERE)  # type: ignore[arg-type]


def test_an_empty_config_asks_nothing():
    assert translate({}) == VcrOptions()


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("none", RecordMode.NONE),
        ("once", RecordMode.MISSING),
        ("new_episodes", RecordMode.NEW),
        ("all", RecordMode.REWRITE),
        ("rewrite", RecordMode.REWRITE),
    ],
)
def test_record_modes_map_to_the_packages(mode, expected):
    assert translate({"record_mode": mode}).record_mode is expected


def test_vcrpys_record_mode_enum_is_read_by_its_value():
    assert vcr_record_mode(SimpleNamespace(value="once"), where=WHERE) is RecordMode.MISSING


def test_a_bad_record_mode_names_the_choices():
    with pytest.raises(CassetteConfigError, match="record_mode 'sometimes' is not one of"):
        translate({"record_mode": "sometimes"})


def test_builtin_matchers_stay_names_and_registered_ones_become_their_functions():
    def same_question(request: object, recorded: object) -> None:
        return None

    options = translate(
        {"match_on": ["method", "path", "same_question"]}, same_question=same_question
    )

    assert options.config["match_on"] == ("method", "path", same_question)


def test_additional_matchers_are_appended_to_vcrpys_default():
    options = translate({"additional_matchers": ["body"]})

    assert options.config["match_on"] == (
        "method",
        "scheme",
        "host",
        "port",
        "path",
        "query",
        "body",
    )


def test_an_unknown_matcher_says_how_to_register_it():
    with pytest.raises(CassetteConfigError, match=r"vcr.register_matcher\('mine', function\)"):
        translate({"match_on": ["method", "mine"]})


def test_ignore_localhost_adds_the_loopback_names_to_ignore_hosts():
    options = translate({"ignore_hosts": ["telemetry.example.com"], "ignore_localhost": True})

    assert options.config["ignore_hosts"] == ("telemetry.example.com", *LOCALHOST)


def test_ignore_localhost_false_ignores_nothing():
    assert "ignore_hosts" not in translate({"ignore_localhost": False}).config


def test_cassette_library_dir_is_the_cassettes_folder():
    assert translate({"cassette_library_dir": "fixtures/vcr"}).library_dir == Path("fixtures/vcr")


def test_filters_become_request_filters():
    options = translate(
        {
            "filter_headers": ["authorization", ("x-team", "DUMMY")],
            "filter_query_parameters": ["key"],
            "filter_post_data_parameters": [("password", "X")],
        }
    )

    assert options.filters == RequestFilters(
        headers=(("authorization", None), ("x-team", "DUMMY")),
        query=(("key", None),),
        post=(("password", "X"),),
    )


def test_a_filter_with_a_function_as_replacement_is_refused():
    with pytest.raises(CassetteConfigError, match="a function as replacement is not run"):
        translate({"filter_headers": [("x-team", lambda *args: "X")]})


def test_filter_sensitive_data_values_are_redacted():
    options = translate({"filter_sensitive_data": [("<TOKEN>", "token-0123456789")]})

    assert options.config["redact_values"] == ("token-0123456789",)


def test_a_short_sensitive_value_is_refused_without_showing_it():
    with pytest.raises(CassetteConfigError, match="not shown") as caught:
        translate({"filter_sensitive_data": [("<PIN>", "1234")]})

    assert "1234" not in str(caught.value)


@pytest.mark.parametrize(
    "config",
    [
        {"decode_compressed_response": True},
        {"serializer": "yaml"},
        {"record_on_exception": False},
        {"allow_playback_repeats": False},
        {"drop_unused_requests": False},
        {"filter_nested_post_data_parameters": False},
    ],
)
def test_keys_already_so_are_accepted(config):
    assert translate(config) == VcrOptions()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"serializer": "json"}, "serializer='json'; expected 'yaml'"),
        ({"allow_playback_repeats": True}, "allow_playback_repeats=True; expected False"),
        ({"drop_unused_requests": True}, "drop_unused_requests=True; expected False"),
        ({"inject_cassette": True}, "inject_cassette=True; expected False"),
        ({"path_transformer": str}, "path_transformer=.* cannot be honoured"),
        ({"custom_patches": ()}, "custom_patches=.* cannot be honoured"),
        ({"persister": object}, "persister=.* cannot be honoured"),
        ({"match_onn": ["method"]}, r"unknown key 'match_onn' \(did you mean match_on\?\)"),
    ],
)
def test_what_cannot_be_honoured_is_refused_naming_the_key(config, message):
    with pytest.raises(CassetteConfigError, match=message):
        translate(config)


def test_a_config_that_is_no_dict_is_refused():
    with pytest.raises(CassetteConfigError, match="vcr_config returned list"):
        translate_vcr_config([], matchers={}, where=WHERE)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pattern", "host"),
    [
        ("localhost", "localhost"),
        (r"127\.0\.0\.1", "127.0.0.1"),
        (r"^api\.example\.com$", "api.example.com"),
        (r".*\.example\.com", "*.example.com"),
        ("api.example.com", "api.example.com"),
        ("a[0-9]+", None),
        ("api|web", None),
        ("host:8080", None),
    ],
)
def test_plain_host_regexes_map_to_hosts(pattern, host):
    assert regex_host(pattern) == host


def test_allowed_hosts_map_what_maps():
    assert translate({"allowed_hosts": ["localhost", r".*\.internal"]}).allowed_hosts == (
        "localhost",
        "*.internal",
    )


def test_an_allowed_hosts_regex_that_names_no_host_is_refused():
    with pytest.raises(CassetteConfigError, match=r"allowed_hosts holds 'a\[0-9\]\+'"):
        translate({"allowed_hosts": ["a[0-9]+"]})


def test_the_markers_kwargs_are_merged_over_the_config_the_closest_winning():
    merged = merge_vcr_kwargs(
        {"record_mode": "none", "match_on": ["method"]},
        [{"record_mode": "once"}, {"record_mode": "all", "filter_headers": ["a"]}],
    )

    assert merged == {"record_mode": "once", "match_on": ["method"], "filter_headers": ["a"]}


def test_a_hook_that_returns_its_argument_unchanged_is_accepted():
    options = translate(
        {"before_record_request": lambda request: request, "before_record_response": [lambda r: r]}
    )

    check_hooks(options.hooks, where=WHERE)

    assert [key for key, _ in options.hooks] == ["before_record_request", "before_record_response"]


def test_a_hook_that_drops_the_request_is_refused():
    options = translate({"before_record_request": lambda request: None})

    with pytest.raises(CassetteConfigError, match=r"before_record_request=.* changes what it gets"):
        check_hooks(options.hooks, where=WHERE)


def test_a_hook_that_scrubs_in_place_is_refused():
    def scrub(response: dict[str, object]) -> dict[str, object]:
        response["headers"] = {}
        return response

    options = translate({"before_record_response": scrub})

    with pytest.raises(CassetteConfigError, match="redact_values"):
        check_hooks(options.hooks, where=WHERE)
