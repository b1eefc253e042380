"""A test's HTTPS server on 127.0.0.1, with a certificate authority made for the test.

:func:`make_certificates` writes a CA (``ca.pem``) and a server certificate it signed for
``127.0.0.1`` (``server.pem``, ``server-key.pem``) with ``cryptography``; nothing trusts the
CA unless a client is told to (``verify=``, ``SSL_CERT_FILE``). :class:`TLSServerThread` is
:class:`~support.http_server.ServerThread` speaking TLS with that certificate; it answers
every ``GET`` and ``POST`` with a small JSON chat completion, so the openai SDK can use it::

    certificates = make_certificates(tmp_path)
    with TLSServerThread(certificates) as server:
        httpx2.Client(verify=ssl.create_default_context(cafile=certificates.ca)).get(server.url)
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from support.http_server import ServerThread

#: The body every request gets: an OpenAI chat completion.
COMPLETION = {
    "id": "chatcmpl-tls",
    "object": "chat.completion",
    "created": 1735689600,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello over TLS."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
}


@dataclass(frozen=True)
class Certificates:
    """The files :func:`make_certificates` wrote."""

    ca: Path
    server_cert: Path
    server_key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_certificates(folder: Path) -> Certificates:
    """A CA and a certificate for 127.0.0.1 signed by it, written into ``folder``."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("agentctx test CA"))
        .issuer_name(_name("agentctx test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    certificates = Certificates(
        ca=folder / "ca.pem",
        server_cert=folder / "server.pem",
        server_key=folder / "server-key.pem",
    )
    certificates.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    certificates.server_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    certificates.server_key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certificates


class CompletionHandler(BaseHTTPRequestHandler):
    """Answers every request with :data:`COMPLETION`."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._answer()

    def _answer(self) -> None:
        body = json.dumps(COMPLETION).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class TLSServerThread(ServerThread):  # type: ignore[misc]  # (support.* is untyped to mypy)
    """:class:`ServerThread` over TLS, with the server certificate of ``certificates``.

    A client that does not trust the CA fails its handshake; the server drops that
    connection and goes on serving."""

    def __init__(
        self,
        certificates: Certificates,
        handler: type[BaseHTTPRequestHandler] = CompletionHandler,
    ) -> None:
        super().__init__(handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificates.server_cert, certificates.server_key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.port}"
