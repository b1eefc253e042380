"""Unit tests of the lazy TLS set-up of replaying tests (pytest_agentctx/traffic/lazy_tls.py).

Each TLS behaviour is checked against an HTTPS server on 127.0.0.1 whose certificate
authority the test makes (tests/support/tls_server.py): a client that trusts it (through
``SSL_CERT_FILE``, or a context of its own) connects, one that does not is refused.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import openai
import pytest
from support.tls_server import Certificates, TLSServerThread, make_certificates

from pytest_agentctx.traffic import lazy_tls
from pytest_agentctx.traffic.transport import Interceptor


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every call of ``ssl.SSLContext.load_verify_locations`` (certificates loaded)."""
    calls: list[object] = []
    original = ssl.SSLContext.load_verify_locations

    def spy(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        calls.append(args or kwargs)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", spy)
    return calls


@pytest.fixture
def certificates(tmp_path: Path) -> Certificates:
    return make_certificates(tmp_path)


@pytest.fixture
def server(certificates: Certificates) -> Iterator[TLSServerThread]:
    with TLSServerThread(certificates) as running:
        yield running


@pytest.fixture
def no_cert_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


def _passing(request: object) -> None:
    return None


# -- nothing built until used ----------------------------------------------------------------


def test_a_client_built_while_installed_loads_no_certificates(loads, no_cert_env):
    with lazy_tls.installed():
        httpx2.Client()
        httpx2.AsyncClient()
        openai.OpenAI(api_key="sk-test")

    assert loads == []


def test_a_client_built_outside_loads_its_certificates(loads, no_cert_env):
    httpx2.Client()

    assert len(loads) == 1


def test_clients_of_one_configuration_share_one_lazy_context(no_cert_env):
    with lazy_tls.installed():
        first = httpx2.Client()._transport._pool._ssl_context  # type: ignore[attr-defined]
        second = httpx2.AsyncClient()._transport._pool._ssl_context  # type: ignore[attr-defined]
        unverified = httpx2.Client(verify=False)._transport._pool._ssl_context  # type: ignore[attr-defined]

    assert isinstance(first, lazy_tls.LazySSLContext)
    assert first is second
    assert unverified is not first


def test_httpx_clients_get_a_lazy_context_too(loads, no_cert_env):
    with lazy_tls.installed():
        context = httpx.Client()._transport._pool._ssl_context  # type: ignore[attr-defined]

    assert isinstance(context, lazy_tls.LazySSLContext)
    assert loads == []


def test_the_patch_is_gone_when_no_longer_installed(no_cert_env):
    with lazy_tls.installed(), lazy_tls.installed():
        pass

    context = httpx2.Client()._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert type(context) is ssl.SSLContext


# -- the user's own settings are built at once, as before ----------------------------------


def test_a_context_the_user_passes_is_used_as_it_is():
    own = ssl.create_default_context()

    with lazy_tls.installed():
        client = httpx2.Client(verify=own)

    assert client._transport._pool._ssl_context is own  # type: ignore[attr-defined]


def test_a_ca_bundle_path_is_loaded_at_once_with_its_warning(loads, certificates):
    with lazy_tls.installed(), pytest.warns(DeprecationWarning, match="verify=<str>"):
        client = httpx2.Client(verify=str(certificates.ca))

    assert type(client._transport._pool._ssl_context) is ssl.SSLContext  # type: ignore[attr-defined]
    assert len(loads) == 1


def test_a_client_certificate_is_loaded_at_once(certificates, no_cert_env):
    cert = (str(certificates.server_cert), str(certificates.server_key))

    with lazy_tls.installed(), pytest.warns(DeprecationWarning, match="cert="):
        client = httpx2.Client(cert=cert)

    context = client._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert type(context) is ssl.SSLContext


# -- built on first real use, with the arguments and environment it was made with -----------


def test_the_built_context_is_the_one_the_library_builds(no_cert_env):
    with lazy_tls.installed():
        lazy = httpx2.Client()._transport._pool._ssl_context  # type: ignore[attr-defined]
    eager = httpx2.create_ssl_context()

    built = lazy.resolve()

    assert type(built) is type(eager)
    assert built.verify_mode == eager.verify_mode == ssl.CERT_REQUIRED
    assert built.cert_store_stats() == eager.cert_store_stats()


def test_an_unverified_lazy_context_stays_unverified(no_cert_env):
    with lazy_tls.installed():
        lazy = httpx2.Client(verify=False)._transport._pool._ssl_context  # type: ignore[attr-defined]

    assert lazy.verify_mode == ssl.CERT_NONE
    assert lazy.check_hostname is False


def test_a_request_to_the_network_gets_the_real_context(server, certificates, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates.ca))
    with Interceptor(_passing), lazy_tls.installed(), httpx2.Client() as client:
        response = client.get(server.url)

    assert response.status_code == 200
    assert type(client._transport._pool._ssl_context) is ssl.SSLContext  # type: ignore[attr-defined]


async def test_an_async_request_to_the_network_gets_the_real_context(
    server, certificates, monkeypatch
):
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates.ca))
    with Interceptor(_passing), lazy_tls.installed():
        async with httpx2.AsyncClient() as client:
            response = await client.get(server.url)

    assert response.status_code == 200


def test_a_request_to_an_untrusted_server_is_refused(server, no_cert_env):
    with Interceptor(_passing), lazy_tls.installed():
        client = httpx2.Client()
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            client.get(server.url)


def test_trust_env_false_ignores_ssl_cert_file(server, certificates, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates.ca))
    with Interceptor(_passing), lazy_tls.installed():
        client = httpx2.Client(trust_env=False)
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            client.get(server.url)


def test_the_environment_of_construction_is_the_one_used(server, certificates, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates.ca))
    with Interceptor(_passing), lazy_tls.installed(), httpx2.Client() as client:
        monkeypatch.delenv("SSL_CERT_FILE")
        response = client.get(server.url)

    assert response.status_code == 200


def test_ssl_cert_dir_is_kept_for_first_use(server, certificates, monkeypatch, tmp_path):
    folder = tmp_path / "certs"
    folder.mkdir()
    # OpenSSL looks certificates up by subject hash in a directory: link the CA there.
    (folder / f"{_subject_hash(certificates.ca)}.0").write_bytes(certificates.ca.read_bytes())
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.setenv("SSL_CERT_DIR", str(folder))
    with Interceptor(_passing), lazy_tls.installed(), httpx2.Client() as client:
        response = client.get(server.url)

    assert response.status_code == 200


def test_a_client_used_after_the_test_builds_its_context_when_used(
    server, certificates, monkeypatch
):
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates.ca))
    with lazy_tls.installed():
        client = httpx2.Client()

    with client:
        response = client.get(server.url)  # no interceptor: httpcore2 reads the lazy context

    assert response.status_code == 200


def test_a_request_another_handler_answers_builds_nothing(loads, no_cert_env):
    def answer(request: object) -> httpx2.Response:
        return httpx2.Response(200, json={})

    with Interceptor(answer), lazy_tls.installed():
        client = httpx2.Client()
        client.get("https://api.openai.com/v1/models")

    assert loads == []
    assert not client._transport._pool._ssl_context.built  # type: ignore[attr-defined]


def _subject_hash(ca: Path) -> str:
    """OpenSSL's subject hash of the certificate in ``ca`` (its name in a CA directory)."""
    import subprocess

    done = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(ca)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()
