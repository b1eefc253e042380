"""End-to-end tests of the checks of the plugin's options in real pytest runs.

A bad option of the ``agent`` marker or a bad ``agent_cassette_config`` value is an error
of each test it applies to (naming the test, the option, the value and a right one), while
the other tests of the session still run; replaying or recording makes no difference. A bad
ini option is a usage error naming the option. The provider is a ``LoopbackProvider`` on
127.0.0.1 that the outer test starts: nothing goes beyond this machine.
"""

from __future__ import annotations

from collections.abc import Iterator

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest

from pytest_agentctx import LoopbackProvider

#: Both ways a session reads a test's options: replaying (the default) and recording.
MODES = [pytest.param([], id="replay"), pytest.param(["--agent-record"], id="record")]

#: A secret the inner test sends to the provider, and asks the cassette to redact.
SECRET = "sk-live-0123456789abcdef"

#: What the list options hold, and an example of each, as the errors say them.
LISTS = {
    "allowed_hosts": "a list or tuple of hosts (names, *.wildcards or addresses, without "
    "scheme, path or port)",
    "match_ignore": "a list or tuple of dotted body paths (non-empty strings)",
}
EXAMPLES = {
    "allowed_hosts": "['api.example.com', '*.internal.example']",
    "match_ignore": "['metadata.run_id']",
}

#: A test that does not use the plugin: it passes whatever the bad option of its neighbour.
PLAIN = """

def test_plain():
    pass
"""

#: An agent test whose cassette options come from ``agent_cassette_config``, returning
#: CONFIG, and which asks the provider at AGENT_SERVER a question holding the secret.
CONFIGURED = (
    f"""
import os

import openai
import pytest

SECRET = "{SECRET}"


@pytest.fixture
def agent_cassette_config():
    def without_dates(body):
        return body

    return CONFIG


def test_ask(agent_cassette):
    with openai.OpenAI(
        base_url=os.environ["AGENT_SERVER"], api_key="sk-test", max_retries=0
    ) as client:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{{"role": "user", "content": "Tenant " + SECRET}}]
        )
"""
    + PLAIN
)


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackProvider]:
    """A loopback provider with two scripted replies; its URL in ``AGENT_SERVER``."""
    with LoopbackProvider() as running:
        running.reply("Done.").reply("Done.")  # recorded once, and once more
        monkeypatch.setenv("AGENT_SERVER", running.openai_base_url)
        yield running


def _configured(
    pytester: pytest.Pytester, config: str, *, module: str = "test_inner_config"
) -> None:
    """Write the module ``CONFIGURED`` with its fixture returning ``config``."""
    pytester.makepyfile(**{module: CONFIGURED.replace("CONFIG", config, 1)})


def _written(pytester: pytest.Pytester) -> list[str]:
    """Every file under the inner project's cassette folder."""
    folder = pytester.path / "cassettes"
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


# -- the agent marker ----------------------------------------------------------------


@pytest.mark.parametrize("args", MODES)
def test_a_misspelt_marker_option_fails_the_test_with_the_close_match(
    agent_pytester: pytest.Pytester, args: list[str]
) -> None:
    agent_pytester.makepyfile(
        test_inner_marker="""
import pytest


@pytest.mark.agent(cassete="shared")
def test_misspelt():
    pass
"""
        + PLAIN
    )

    result = agent_pytester.runpytest(*args)

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_misspelt*",
            "CassetteConfigError: test_inner_marker.py::test_misspelt: @pytest.mark.agent has no "
            "option 'cassete' (did you mean cassette?); its options are cassette, "
            "allow_unused, record_mode, allowed_hosts, match_ignore, ignore_hosts, e.g. "
            "@pytest.mark.agent(cassette='weather_shared'). Fix the marker.",
        ]
    )
    assert _written(agent_pytester) == []


def test_a_misspelt_option_in_a_module_marker_fails_each_test_of_the_module(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(
        test_inner_module="""
import pytest

pytestmark = pytest.mark.agent(allow_unsed=True)


def test_one():
    pass


def test_two():
    pass
"""
    )

    result = agent_pytester.runpytest()

    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*test_inner_module.py::test_one: @pytest.mark.agent has no option 'allow_unsed' "
            "(did you mean allow_unused?)*",
            "*test_inner_module.py::test_two: @pytest.mark.agent has no option 'allow_unsed' "
            "(did you mean allow_unused?)*",
        ]
    )


@pytest.mark.parametrize("args", MODES)
def test_a_positional_marker_argument_fails_the_test(
    agent_pytester: pytest.Pytester, args: list[str]
) -> None:
    agent_pytester.makepyfile(
        test_inner_positional="""
import pytest


@pytest.mark.agent("shared")
def test_positional():
    pass
"""
        + PLAIN
    )

    result = agent_pytester.runpytest(*args)

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "CassetteConfigError: test_inner_positional.py::test_positional: "
            "@pytest.mark.agent('shared') has positional arguments; the marker takes named "
            "options only (*), e.g. @pytest.mark.agent(cassette='weather_shared'). Name the "
            "option in the marker."
        ]
    )


@pytest.mark.parametrize("args", MODES)
def test_a_marker_list_given_as_a_string_fails_the_test(
    agent_pytester: pytest.Pytester, args: list[str]
) -> None:
    agent_pytester.makepyfile(
        test_inner_list="""
import pytest


@pytest.mark.agent(allowed_hosts="api.example.com")
def test_allowed_hosts():
    pass


@pytest.mark.agent(match_ignore="api.example.com")
def test_match_ignore():
    pass
"""
        + PLAIN
    )

    result = agent_pytester.runpytest(*args)

    result.assert_outcomes(passed=1, errors=2)
    for name in ("allowed_hosts", "match_ignore"):
        assert (
            f"CassetteConfigError: test_inner_list.py::test_{name}: @pytest.mark.agent({name}="
            f"'api.example.com') is a str; expected {LISTS[name]}, e.g. "
            f"@pytest.mark.agent({name}={EXAMPLES[name]}). Fix the marker."
        ) in result.outlines


# -- agent_cassette_config -------------------------------------------------------------


@pytest.mark.parametrize("args", MODES)
def test_redact_values_given_as_a_string_fails_and_writes_no_cassette(
    agent_pytester: pytest.Pytester, provider: LoopbackProvider, args: list[str]
) -> None:
    _configured(agent_pytester, '{"redact_values": SECRET}')

    result = agent_pytester.runpytest(*args)

    result.assert_outcomes(passed=1, errors=1)
    assert (
        "CassetteConfigError: test_inner_config.py::test_ask: agent_cassette_config "
        "redact_values=<not shown> is a str of 24 characters; expected a list or tuple of "
        "the secret strings, each of 8 or more characters, e.g. {'redact_values': "
        "['tenant-7f3a9c']}. Fix what the agent_cassette_config fixture returns."
    ) in result.outlines
    assert SECRET not in result.stdout.str()
    assert _written(agent_pytester) == []
    assert provider.exchanges == []  # the test never ran: nothing to record


@pytest.mark.parametrize("args", MODES)
def test_redact_values_in_a_list_redact_the_secret(
    agent_pytester: pytest.Pytester, provider: LoopbackProvider, args: list[str]
) -> None:
    _configured(agent_pytester, '{"redact_values": [SECRET]}')
    agent_pytester.runpytest("--agent-record").assert_outcomes(passed=2)

    result = agent_pytester.runpytest(*args)

    result.assert_outcomes(passed=2)
    [cassette] = _written(agent_pytester)
    text = (agent_pytester.path / "cassettes" / cassette).read_text()
    assert SECRET not in text
    assert "Tenant REDACTED" in text


@pytest.mark.parametrize("args", MODES)
def test_a_body_hook_that_is_not_callable_fails_the_test(
    agent_pytester: pytest.Pytester, provider: LoopbackProvider, args: list[str]
) -> None:
    _configured(agent_pytester, '{"body_hook": "without_dates"}')

    result = agent_pytester.runpytest(*args)

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "CassetteConfigError: test_inner_config.py::test_ask: agent_cassette_config "
            "body_hook='without_dates' is a str, not callable; expected a function that takes "
            "a JSON request body and returns a normalised copy (or None), or a dict of media "
            "types ('multipart/form-data', 'text/*', '*/*') or body kinds (json, form, "
            "multipart, text, bytes) to such functions, e.g. {'body_hook': without_dates}. Fix "
            "what the agent_cassette_config fixture returns."
        ]
    )
    assert _written(agent_pytester) == []


@pytest.mark.parametrize("args", MODES)
def test_a_config_list_given_as_a_string_fails_the_test(
    agent_pytester: pytest.Pytester, provider: LoopbackProvider, args: list[str]
) -> None:
    for name in ("allowed_hosts", "match_ignore"):
        _configured(agent_pytester, f'{{"{name}": "api.example.com"}}', module=f"test_{name}")

    result = agent_pytester.runpytest(*args)

    result.assert_outcomes(passed=2, errors=2)
    for name in ("allowed_hosts", "match_ignore"):
        assert (
            f"CassetteConfigError: test_{name}.py::test_ask: agent_cassette_config {name}="
            f"'api.example.com' is a str; expected {LISTS[name]}, e.g. "
            f"{{'{name}': {EXAMPLES[name]}}}. Fix what the agent_cassette_config fixture "
            "returns."
        ) in result.outlines
    assert _written(agent_pytester) == []


def test_a_misspelt_config_key_fails_the_test_with_the_close_match(
    agent_pytester: pytest.Pytester, provider: LoopbackProvider
) -> None:
    _configured(agent_pytester, '{"redact_value": [SECRET]}')

    result = agent_pytester.runpytest("--agent-record")

    result.assert_outcomes(passed=1, errors=1)
    assert (
        "CassetteConfigError: test_inner_config.py::test_ask: agent_cassette_config has unknown "
        "keys ['redact_value'] (did you mean redact_values?); the known keys are match_ignore, "
        "body_hook, allowed_hosts, redact_values, directory, ignore_hosts, match_on, e.g. "
        "{'redact_values': "
        "['tenant-7f3a9c']}. Fix the spelling in the fixture."
    ) in result.outlines
    assert _written(agent_pytester) == []


# -- ini options ---------------------------------------------------------------------

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
"""


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("agent_allow_unused = maybe",
         "agent_allow_unused: invalid truth value 'maybe'; expected true or false, e.g. "
         "agent_allow_unused = true. Fix it in your pytest ini file."),
        ("agent_clock_step = nan",
         "agent_clock_step = 'nan' is not a number of seconds; set it to e.g. 1 or 0.5 *"),
        ("agent_clock_step = inf",
         "agent_clock_step = 'inf' is not a number of seconds; set it to e.g. 1 or 0.5 *"),
        ("agent_cassette_dir =",
         "agent_cassette_dir = ''; expected a folder (relative to the rootdir, or absolute), "
         "e.g. agent_cassette_dir = cassettes. *"),
        ("agent_allowed_hosts = https://api.example.com/v1",
         "agent_allowed_hosts: 'https://api.example.com/v1' is a URL or has a path: give the "
         "host name only; expected one host per line *"),
        ("agent_secret_env = MY_TOKEN=tok-0123456789",
         "agent_secret_env: 'MY_TOKEN=...' is not the name of an environment variable; "
         "expected one name per line, e.g. agent_secret_env = MY_SERVICE_TOKEN *"),
        ("agent_baseline_tokens = -5",
         "--agent-baseline-tokens / agent_baseline_tokens = '-5': tokens tolerance -5.0%: "
         "expected a percentage of 0 or more, e.g. 10 (or ignore). Fix the option *"),
        ("agent_baseline_iterations = -1",
         "--agent-baseline-iterations / agent_baseline_iterations = '-1': iterations "
         "tolerance -1: expected a count of 0 or more, e.g. 0 or 1 (or ignore). *"),
    ],
)  # fmt: skip
def test_a_bad_ini_option_is_a_usage_error_naming_it(
    agent_pytester: pytest.Pytester, line: str, message: str
) -> None:
    agent_pytester.makeini(INI + line + "\n")
    agent_pytester.makepyfile(test_inner_ini=PLAIN)

    result = agent_pytester.runpytest()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: " + message])
    assert "tok-0123456789" not in result.stderr.str()
