"""End-to-end tests of the TLS set-up of agent tests: record with the user's, replay without.

The outer test makes a certificate authority and starts an HTTPS server on 127.0.0.1 with a
certificate it signed (tests/support/tls_server.py), and hands its URL to the inner tests in
``AGENT_SERVER`` and the CA's path in ``AGENT_CA``. Nothing trusts the CA unless the inner
test says so (``verify=``, ``SSL_CERT_FILE``). The inner conftest counts the certificate
bundles loaded (``ssl.SSLContext.load_verify_locations``) into ``loads.json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
from support.tls_server import TLSServerThread, make_certificates

CONFTEST = """
import json
import ssl

import pytest


@pytest.fixture(autouse=True)
def count_loads(monkeypatch, request):
    calls = []
    original = ssl.SSLContext.load_verify_locations

    def spy(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", spy)
    yield
    request.config.rootpath.joinpath("loads.json").write_text(json.dumps(len(calls)))
"""

CALLS_TEST = """
import os
import warnings

import httpx2
import openai
import pytest


def make_client():
    if os.environ.get("USE_CA_PATH"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # verify=<str> is deprecated
            http_client = httpx2.Client(verify=os.environ["AGENT_CA"])
        return openai.OpenAI(
            base_url=os.environ["AGENT_SERVER"] + "/v1", max_retries=0, http_client=http_client
        )
    return openai.OpenAI(base_url=os.environ["AGENT_SERVER"] + "/v1", max_retries=0)


@pytest.mark.agent
def test_five_calls():
    client = make_client()
    with client:
        for turn in range(5):
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": f"Turn {turn}"}]
            )
            assert reply.choices[0].message.content == "Hello over TLS."
"""

FAKE_LLM_TEST = """
import os

import httpx2


def test_reaches_the_server(fake_llm):
    with httpx2.Client() as client:
        assert client.get(os.environ["AGENT_SERVER"]).status_code == 200
"""


@pytest.fixture
def tester(
    agent_pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[pytest.Pytester]:
    certificates = make_certificates(tmp_path_factory.mktemp("certificates"))
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("AGENT_CA", str(certificates.ca))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-e2e-test-key")
    agent_pytester.makeconftest(CONFTEST)
    with TLSServerThread(certificates) as server:
        monkeypatch.setenv("AGENT_SERVER", server.url)
        yield agent_pytester


def _loads(tester: pytest.Pytester) -> int:
    return int(json.loads((tester.path / "loads.json").read_text()))


def test_recording_over_tls_with_the_users_ca_bundle_passes(tester, monkeypatch):
    monkeypatch.setenv("USE_CA_PATH", "1")
    tester.makepyfile(test_tls=CALLS_TEST)

    tester.runpytest("--agent-record").assert_outcomes(passed=1)

    cassette = tester.path / "cassettes" / "test_tls" / "test_five_calls.json"
    assert len(json.loads(cassette.read_text())["interactions"]) == 5


def test_recording_over_tls_without_the_users_ca_bundle_is_refused(tester):
    tester.makepyfile(test_tls=CALLS_TEST)

    result = tester.runpytest("--agent-record")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CERTIFICATE_VERIFY_FAILED*"])


def test_recording_trusts_ssl_cert_file(tester, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", _ca(tester))
    tester.makepyfile(test_tls=CALLS_TEST)

    tester.runpytest("--agent-record").assert_outcomes(passed=1)

    assert _loads(tester) >= 1  # the client built its context, from SSL_CERT_FILE


def test_a_replayed_test_loads_no_certificates(tester, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", _ca(tester))
    tester.makepyfile(test_tls=CALLS_TEST)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)

    tester.runpytest().assert_outcomes(passed=1)

    assert _loads(tester) == 0


def test_a_fake_llm_test_reaches_an_https_server_it_trusts(tester, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", _ca(tester))
    tester.makepyfile(test_tls=FAKE_LLM_TEST)

    tester.runpytest().assert_outcomes(passed=1)

    assert _loads(tester) == 1  # built once, on the first real request


def test_a_fake_llm_test_is_refused_by_an_https_server_it_does_not_trust(tester):
    tester.makepyfile(test_tls=FAKE_LLM_TEST)

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CERTIFICATE_VERIFY_FAILED*"])


def _ca(tester: pytest.Pytester) -> str:
    """The path of the CA that signed the server's certificate."""
    return os.environ["AGENT_CA"]
