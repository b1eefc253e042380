"""Unit tests of pytest_agentctx.traffic.cassettes.options and .per_test: session and per-test
cassette options."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_agentctx.exceptions import UsageError
from pytest_agentctx.redaction.names import digest
from pytest_agentctx.redaction.redactor import Redactor
from pytest_agentctx.traffic.cassettes import DEFAULT_IGNORED_FIELDS, RecordMode
from pytest_agentctx.traffic.cassettes.options import (
    CassetteSettings,
    is_agent_test,
    normalise_record_args,
    parse_mode,
)
from pytest_agentctx.traffic.cassettes.per_test import (
    TestOptions,
    build_cassette,
    cassette_config,
    cassette_path,
    marker_options,
)
from pytest_agentctx.traffic.errors import CassetteConfigError, CassetteError

ROOT = Path("/project")


def _settings(**overrides: Any) -> CassetteSettings:
    options: dict[str, Any] = {
        "rootpath": ROOT,
        "directory": "cassettes",
        "cli_mode": None,
        "ini_mode": "none",
        "all_tests": False,
        "allow_unused": False,
        "allowed_hosts": [],
        "ignore_fields": [],
        "cassette_format": "json",
        "secret_env": [],
        "record_failing": False,
        "run_id": "run-1",
    }
    options.update(overrides)
    return CassetteSettings.build(**options)


def _path(settings: CassetteSettings, **overrides: Any) -> Path:
    options: dict[str, Any] = {
        "rootpath": ROOT,
        "module_path": ROOT / "tests" / "agents" / "test_weather.py",
        "test_name": "test_paris",
        "class_name": None,
        "override": None,
    }
    options.update(overrides)
    return cassette_path(settings, **options)


# -- parse_mode ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mode"),
    [("none", RecordMode.NONE), ("rewrite", RecordMode.REWRITE), (" Missing ", RecordMode.MISSING),
     ("NEW", RecordMode.NEW)],
)  # fmt: skip
def test_parse_mode_reads_every_mode(text, mode):
    assert parse_mode(text, where="--agent-record") is mode


def test_unknown_mode_names_where_it_came_from_and_the_choices():
    with pytest.raises(CassetteError) as caught:
        parse_mode("all", where="--agent-record")

    assert str(caught.value) == (
        "--agent-record: record mode 'all' does not exist; choose one of none, rewrite, "
        "missing, new, judge (e.g. pytest --agent-record=missing)."
    )


# -- CassetteSettings ----------------------------------------------------------------


def test_default_settings_replay_json_cassettes_under_the_rootdir():
    match _settings():
        case CassetteSettings(
            directory=Path(parts=("/", "project", "cassettes")),
            mode=RecordMode.NONE,
            mode_from_command_line=False,
            extension=".json",
            ignore_fields=fields,
        ):
            assert fields == DEFAULT_IGNORED_FIELDS
        case other:
            raise AssertionError(other)


def test_absolute_cassette_dir_is_kept():
    assert _settings(directory="/elsewhere/tapes").directory == Path("/elsewhere/tapes")


def test_command_line_mode_wins_over_the_ini():
    settings = _settings(cli_mode="missing", ini_mode="new")

    assert (settings.mode, settings.mode_from_command_line) == (RecordMode.MISSING, True)


def test_ini_mode_applies_without_the_command_line():
    assert _settings(ini_mode="new").mode is RecordMode.NEW


def test_unknown_ini_mode_is_an_error_naming_the_ini_key():
    with pytest.raises(CassetteError, match=r"^agent_record_mode: record mode 'sometimes'"):
        _settings(ini_mode="sometimes")


def test_a_setting_that_cannot_work_is_a_usage_error_of_the_cassettes():
    with pytest.raises(UsageError) as caught:
        _settings(ini_mode="sometimes")

    assert type(caught.value) is CassetteConfigError


def test_yaml_format_gives_yaml_cassettes():
    assert _settings(cassette_format=" YAML ").extension == ".yaml"


def test_unknown_format_is_an_error():
    with pytest.raises(
        CassetteError, match=r"agent_cassette_format = 'toml'; expected json, yaml or vcr"
    ):
        _settings(cassette_format="toml")


def test_empty_cassette_dir_is_an_error():
    with pytest.raises(CassetteError, match=r"^agent_cassette_dir = ''; expected a folder"):
        _settings(directory="")


@pytest.mark.parametrize(
    ("host", "problem"),
    [("https://api.test/v1", "is a URL or has a path"), ("api.test:443", "has a port")],
)  # fmt: skip
def test_ini_allowed_hosts_that_can_never_match_are_errors(host, problem):
    with pytest.raises(
        CassetteError, match=rf"^agent_allowed_hosts: '{re.escape(host)}' {problem}"
    ):
        _settings(allowed_hosts=[host])


def test_ini_ignore_hosts_are_kept_as_given():
    settings = _settings(ignore_hosts=["huggingface.co", " *.example.com ", "[::1]/health"])

    assert settings.ignore_hosts == ("huggingface.co", "*.example.com", "[::1]/health")


def test_a_wrong_ini_ignore_host_is_an_error_naming_it_and_a_right_one():
    with pytest.raises(CassetteError) as caught:
        _settings(ignore_hosts=["huggingface.co", "localhost:8080"])

    assert str(caught.value) == (
        "agent_ignore_hosts: 'localhost:8080' has a port: ports are not compared, give the "
        "host alone, e.g. 'localhost'; expected one entry per line: a host name, a "
        "*.wildcard, an address, or one of these and a path prefix, e.g. huggingface.co or "
        "api.example.com/v1/models. Fix it in your pytest ini file."
    )


def test_the_markers_ignore_hosts_are_the_tests_own():
    options = TestOptions.resolve(
        _settings(ignore_hosts=["ini.test"]),
        {"ignore_hosts": ["models.test/v1/info"]},
        where="t.py::test",
    )

    assert options.ignore_hosts == ("models.test/v1/info",)


def test_a_wrong_ignore_host_in_agent_cassette_config_is_refused():
    with pytest.raises(CassetteError) as caught:
        cassette_config({"ignore_hosts": ["https://models.test"]}, where="t.py::test")

    assert str(caught.value).startswith(
        "t.py::test: agent_cassette_config ignore_hosts=['https://models.test'] holds "
        "'https://models.test', which is a URL: give the host and a path without the scheme, "
        "e.g. 'models.test'; expected a list or tuple of hosts"
    )


def test_ini_secret_env_line_with_a_value_is_an_error_that_does_not_show_it():
    with pytest.raises(CassetteError) as caught:
        _settings(secret_env=["MY_TOKEN=tok-0123456789"])

    assert str(caught.value).startswith(
        "agent_secret_env: 'MY_TOKEN=...' is not the name of an environment variable;"
    )
    assert "tok-0123456789" not in str(caught.value)


def test_ini_secret_env_names_are_kept():
    assert _settings(secret_env=["MY_TOKEN", "OTHER"]).secret_env == ("MY_TOKEN", "OTHER")


def test_ini_ignore_fields_add_to_the_defaults():
    assert _settings(ignore_fields=["seed"]).ignore_fields == (*DEFAULT_IGNORED_FIELDS, "seed")


# -- TestOptions ---------------------------------------------------------------------


def test_marker_options_are_read():
    options = TestOptions.resolve(
        _settings(allowed_hosts=["ini.test"]),
        {"cassette": "shared", "allow_unused": True, "allowed_hosts": ["api.test"],
         "match_ignore": ("seed",)},
        where="t.py::test",
    )  # fmt: skip

    match options:
        case TestOptions(
            cassette="shared",
            allow_unused=True,
            mode=RecordMode.NONE,
            allowed_hosts=("ini.test", "api.test"),
            ignore_fields=(*_, "seed"),
        ):
            pass
        case other:
            raise AssertionError(other)


def test_misspelt_marker_option_is_refused_with_the_close_match_and_the_options():
    with pytest.raises(CassetteError) as caught:
        TestOptions.resolve(_settings(), {"cassete": "shared"}, where="t.py::test")

    assert str(caught.value) == (
        "t.py::test: @pytest.mark.agent has no option 'cassete' (did you mean cassette?); its "
        "options are cassette, allow_unused, record_mode, allowed_hosts, match_ignore, "
        "ignore_hosts, e.g. @pytest.mark.agent(cassette='weather_shared'). Fix the marker."
    )


def test_unknown_marker_option_without_a_close_match_lists_the_options():
    with pytest.raises(CassetteError) as caught:
        TestOptions.resolve(_settings(), {"note": 1}, where="t.py::test")

    assert "did you mean" not in str(caught.value)
    assert "has no option 'note'; its options are cassette, allow_unused," in str(caught.value)


def test_marker_options_merge_with_the_closest_marker_winning():
    # as item.iter_markers gives them: the test's own marker first, then its class's, ...
    markers: list[tuple[tuple[object, ...], dict[str, object]]] = [
        ((), {"cassette": "mine"}),
        ((), {"cassette": "module", "allow_unused": True}),
    ]

    assert marker_options(markers, where="t.py::test") == {
        "cassette": "mine",
        "allow_unused": True,
    }


def test_marker_positional_arguments_are_refused():
    with pytest.raises(CassetteError) as caught:
        marker_options([(("shared",), {})], where="t.py::test")

    assert str(caught.value) == (
        "t.py::test: @pytest.mark.agent('shared') has positional arguments; the marker takes "
        "named options only (cassette, allow_unused, record_mode, allowed_hosts, "
        "match_ignore, ignore_hosts), e.g. @pytest.mark.agent(cassette='weather_shared'). "
        "Name the option in the marker."
    )


def test_marker_options_of_none_are_unset():
    options = TestOptions.resolve(
        _settings(allow_unused=True, allowed_hosts=["ini.test"]),
        dict.fromkeys(("cassette", "allow_unused", "record_mode", "allowed_hosts",
                       "match_ignore")),
        where="t",
    )  # fmt: skip

    assert options == TestOptions.resolve(
        _settings(allow_unused=True, allowed_hosts=["ini.test"]), {}, where="t"
    )


@pytest.mark.parametrize(("value", "kind"), [("no", "a str"), (0, "an int"), (1, "an int")])
def test_marker_allow_unused_must_be_a_bool(value, kind):
    with pytest.raises(CassetteError) as caught:
        TestOptions.resolve(_settings(), {"allow_unused": value}, where="t.py::test")

    assert str(caught.value) == (
        f"t.py::test: @pytest.mark.agent(allow_unused={value!r}) is {kind}; "
        "expected True or False, e.g. @pytest.mark.agent(allow_unused=True). Fix the marker."
    )


def test_marker_record_mode_must_be_a_string():
    with pytest.raises(CassetteError, match=r"record_mode=1\) is an int; expected one of none,"):
        TestOptions.resolve(_settings(), {"record_mode": 1}, where="t")


def test_marker_record_mode_is_checked_also_when_the_command_line_wins():
    with pytest.raises(CassetteError, match=r"^t: record mode 'sometimes' does not exist"):
        TestOptions.resolve(_settings(cli_mode="rewrite"), {"record_mode": "sometimes"}, where="t")


def test_ini_allow_unused_applies_without_a_marker():
    assert TestOptions.resolve(_settings(allow_unused=True), {}, where="t").allow_unused


def test_marker_record_mode_applies_without_the_command_line():
    options = TestOptions.resolve(_settings(), {"record_mode": "new"}, where="t")

    assert options.mode is RecordMode.NEW


def test_command_line_mode_wins_over_the_marker():
    options = TestOptions.resolve(_settings(cli_mode="rewrite"), {"record_mode": "new"}, where="t")

    assert options.mode is RecordMode.REWRITE


def test_marker_with_an_unknown_record_mode_names_the_test():
    with pytest.raises(CassetteError, match=r"^t\.py::test: record mode 'x'"):
        TestOptions.resolve(_settings(), {"record_mode": "x"}, where="t.py::test")


@pytest.mark.parametrize("value", ["", "  ", 3, ["a"]])
def test_marker_cassette_must_be_a_name(value):
    with pytest.raises(
        CassetteError,
        match=r"^t: @pytest.mark.agent\(cassette=.*; expected a file name .*or a path, e\.g\. "
        r"@pytest.mark.agent\(cassette='weather_shared'\)",
    ):
        TestOptions.resolve(_settings(), {"cassette": value}, where="t")


@pytest.mark.parametrize("name", ["allowed_hosts", "match_ignore"])
def test_marker_lists_must_not_be_a_string(name):
    with pytest.raises(CassetteError) as caught:
        TestOptions.resolve(_settings(), {name: "api.test"}, where="t.py::test")

    assert str(caught.value).startswith(
        f"t.py::test: @pytest.mark.agent({name}='api.test') is a str; expected a list or tuple"
    )
    assert str(caught.value).endswith(". Fix the marker.")


@pytest.mark.parametrize(
    ("value", "problem"),
    [({"api.test"}, "is a set"), (["api.test", 3], "holds 3, an int"),
     (["api.test", " "], "holds an empty string")],
)  # fmt: skip
@pytest.mark.parametrize("name", ["allowed_hosts", "match_ignore"])
def test_marker_lists_must_be_lists_of_non_empty_strings(name, value, problem):
    with pytest.raises(CassetteError, match=rf"\({name}=.*\) {problem}; expected a list or tuple"):
        TestOptions.resolve(_settings(), {name: value}, where="t")


@pytest.mark.parametrize(
    ("host", "problem"),
    [("https://api.test/v1", "is a URL or has a path"), ("api.test:443", "has a port"),
     ("a.test b.test", "has spaces")],
)  # fmt: skip
def test_marker_allowed_hosts_that_can_never_match_are_refused(host, problem):
    with pytest.raises(CassetteError, match=rf"holds '{re.escape(host)}', which {problem}"):
        TestOptions.resolve(_settings(), {"allowed_hosts": [host]}, where="t")


def test_marker_allowed_hosts_take_names_wildcards_and_addresses():
    hosts = ["api.test", "*.internal.test", "192.0.2.1", "2001:db8::1"]

    assert TestOptions.resolve(_settings(), {"allowed_hosts": hosts}, where="t").allowed_hosts == (
        tuple(hosts)
    )


# -- cassette_path -------------------------------------------------------------------


def test_cassette_path_mirrors_the_test_module():
    assert _path(_settings()) == ROOT / "cassettes/tests/agents/test_weather/test_paris.json"


def test_cassette_path_names_the_class():
    path = _path(_settings(), class_name="TestWeather")

    assert path.name == "TestWeather.test_paris.json"


def test_cassette_path_keeps_parameters_and_replaces_unsafe_characters():
    path = _path(_settings(), test_name="test_city[Paris/France-1 2]")

    assert path.name == f"test_city[Paris_France-1_2]~{digest('test_city[Paris/France-1 2]')}.json"


def test_cassette_path_of_a_name_that_loses_nothing_is_the_name():
    path = _path(_settings(), test_name="test_city[Paris_France-1.5,x=y+z]")

    assert path.name == "test_city[Paris_France-1.5,x=y+z].json"


def test_cassette_paths_of_names_differing_in_punctuation_differ():
    first = _path(_settings(), test_name="test_ask[is it safe?]")
    second = _path(_settings(), test_name="test_ask[is it safe!]")

    assert first != second


def test_cassette_path_holds_no_secret_the_redactor_knows():
    redactor = Redactor(env=(), extra_values=("tenant-7f3a9c",))

    path = _path(_settings(), test_name="test_key[tenant-7f3a9c]", redact=redactor.text)

    assert path.name == f"test_key[REDACTED]~{digest('test_key[tenant-7f3a9c]')}.json"


def test_cassette_path_has_the_yaml_extension_in_yaml_format():
    assert _path(_settings(cassette_format="yaml")).suffix == ".yaml"


def test_cassette_path_of_a_module_outside_the_rootdir_uses_its_name():
    path = _path(_settings(), module_path=Path("/elsewhere/test_x.py"))

    assert path == ROOT / "cassettes/test_x/test_paris.json"


def test_shared_cassette_is_relative_to_the_cassette_dir():
    assert _path(_settings(), override="shared/weather") == ROOT / "cassettes/shared/weather.json"


def test_shared_cassette_keeps_its_own_extension():
    assert _path(_settings(), override="legacy.yaml") == ROOT / "cassettes/legacy.yaml"


def test_shared_cassette_may_be_an_absolute_path():
    assert _path(_settings(), override="/tapes/one.json") == Path("/tapes/one.json")


def test_config_directory_keeps_cassettes_in_that_folder_by_module():
    path = _path(_settings(), directory=Path("/project/examples/shop/cassettes"))

    assert path == Path("/project/examples/shop/cassettes/test_weather/test_paris.json")


def test_relative_config_directory_is_relative_to_the_rootdir():
    path = _path(_settings(), directory=Path("examples/shop/cassettes"))

    assert path == ROOT / "examples/shop/cassettes/test_weather/test_paris.json"


# -- cassette_config ---------------------------------------------------------------------


def test_cassette_config_reads_the_directory_as_a_path():
    assert cassette_config({"directory": "tapes"}, where="t.py::test") == {
        "directory": Path("tapes")
    }


def test_cassette_config_refuses_unknown_keys_naming_them_and_the_known_ones():
    with pytest.raises(CassetteError) as caught:
        cassette_config({"match_ignored": ["a"]}, where="t.py::test")

    assert str(caught.value) == (
        "t.py::test: agent_cassette_config has unknown keys ['match_ignored'] (did you mean "
        "match_ignore?); the known keys are match_ignore, body_hook, allowed_hosts, "
        "redact_values, directory, ignore_hosts, match_on, e.g. {'match_ignore': "
        "['metadata.run_id']}. Fix the spelling in the fixture."
    )


def test_cassette_config_gives_its_lists_as_tuples_and_drops_none():
    def hook(body):
        return body

    config = cassette_config(
        {"match_ignore": ["seed"], "allowed_hosts": ("api.test",),
         "redact_values": ["tenant-7f3a9c"], "body_hook": hook, "directory": None},
        where="t",
    )  # fmt: skip

    assert config == {
        "match_ignore": ("seed",),
        "allowed_hosts": ("api.test",),
        "redact_values": ("tenant-7f3a9c",),
        "body_hook": hook,
    }


def test_cassette_config_redact_values_as_a_string_is_refused_without_showing_it():
    with pytest.raises(CassetteError) as caught:
        cassette_config({"redact_values": "sk-live-0123456789"}, where="t.py::test")

    assert str(caught.value) == (
        "t.py::test: agent_cassette_config redact_values=<not shown> is a str of 18 "
        "characters; expected a list or tuple of the secret strings, each of 8 or more "
        "characters, e.g. {'redact_values': ['tenant-7f3a9c']}. Fix what the "
        "agent_cassette_config fixture returns."
    )


def test_cassette_config_redact_values_too_short_to_be_redacted_are_refused():
    with pytest.raises(CassetteError) as caught:
        cassette_config({"redact_values": ["tenant-7f3a9c", "acme1"]}, where="t")

    assert "acme1" not in str(caught.value)
    assert "holds a value of 5 characters (not shown); values shorter than 8 characters " in (
        str(caught.value)
    )


@pytest.mark.parametrize("value", [[b"secret-0123456"], ["secret-0123456", None], [""]])
def test_cassette_config_redact_values_must_be_strings(value):
    with pytest.raises(CassetteError) as caught:
        cassette_config({"redact_values": value}, where="t")

    assert "secret-0123456" not in str(caught.value)
    assert "redact_values=<not shown> holds " in str(caught.value)


@pytest.mark.parametrize("name", ["allowed_hosts", "match_ignore"])
def test_cassette_config_lists_must_not_be_a_string(name):
    with pytest.raises(CassetteError) as caught:
        cassette_config({name: "api.test"}, where="t.py::test")

    assert str(caught.value).startswith(
        f"t.py::test: agent_cassette_config {name}='api.test' is a str; expected a list or "
        "tuple of "
    )
    assert f"e.g. {{'{name}': [" in str(caught.value)


def test_cassette_config_allowed_hosts_that_can_never_match_are_refused():
    with pytest.raises(CassetteError, match=r"holds 'http://api\.test', which is a URL"):
        cassette_config({"allowed_hosts": ["http://api.test"]}, where="t")


@pytest.mark.parametrize(
    ("hook", "kind"), [("normalise", "a str"), (3, "an int"), (["a"], "a list")]
)
def test_cassette_config_body_hook_must_be_callable(hook, kind):
    with pytest.raises(CassetteError) as caught:
        cassette_config({"body_hook": hook}, where="t.py::test")

    assert str(caught.value) == (
        f"t.py::test: agent_cassette_config body_hook={hook!r} is {kind}, "
        "not callable; expected a function that takes a JSON request body and returns a "
        "normalised copy (or None), or a dict of media types ('multipart/form-data', "
        "'text/*', '*/*') or body kinds (json, form, multipart, text, bytes) to such "
        "functions, e.g. {'body_hook': without_dates}. Fix what the agent_cassette_config "
        "fixture returns."
    )


def test_cassette_config_must_be_a_dict():
    with pytest.raises(CassetteError, match=r"returned list \[\].*expected a dict"):
        cassette_config([], where="t.py::test")


@pytest.mark.parametrize("directory", ["", 3])
def test_cassette_config_directory_must_be_a_folder_path(directory):
    with pytest.raises(CassetteError, match=r"^t.py::test: .*directory=.*expected a folder path"):
        cassette_config({"directory": directory}, where="t.py::test")


@pytest.mark.parametrize(
    ("fixtures", "marked", "all_tests", "expected"),
    [
        (["agent_runtime"], False, False, True),
        (["tmp_path"], True, False, True),
        (["tmp_path"], False, True, True),
        (["tmp_path"], False, False, False),
        (["agent_context", "fake_llm"], True, True, False),
    ],
)
def test_is_agent_test_by_fixture_marker_or_ini_but_never_with_fake_llm(
    fixtures: list[str], marked: bool, all_tests: bool, expected: bool
) -> None:
    settings = _settings(all_tests=all_tests)

    assert is_agent_test(fixtures, marked=marked, settings=settings) is expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--agent-record", "tests/x.py"], ["--agent-record=rewrite", "tests/x.py"]),
        (["--agent-record", "missing", "tests/x.py"], ["--agent-record", "missing", "tests/x.py"]),
        (["--agent-record", "-q"], ["--agent-record", "-q"]),
        (["tests/x.py", "--agent-record"], ["tests/x.py", "--agent-record"]),
    ],
)
def test_normalise_record_args_reads_a_following_path_as_a_test(
    args: list[str], expected: list[str]
) -> None:
    normalise_record_args(args)

    assert args == expected


def test_build_cassette_guards_the_network_only_while_replaying(tmp_path: Path) -> None:
    settings = _settings()
    path = tmp_path / "test_x.json"
    replaying = TestOptions.resolve(settings, {}, where="test_x")
    recording = replaying.with_mode(RecordMode.REWRITE)

    built = [
        build_cassette(path, settings=settings, options=options, config={}, test_id="test_x")
        for options in (replaying, recording)
    ]

    match [(cassette.mode, guard is not None) for cassette, guard in built]:
        case [(RecordMode.NONE, True), (RecordMode.REWRITE, False)]:
            pass
        case other:
            pytest.fail(f"unexpected cassettes and guards: {other}")
