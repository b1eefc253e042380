"""Unit tests of the cassette redactor on AWS traffic: the credentials of the environment,
learned from a SigV4 request or known by their shape never reach a cassette, and SigV4's
headers are never stored nor compared."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV, REDACTED
from pytest_agentctx.traffic.cassettes import Cassette, Interaction, write_cassette
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.cassettes.unstored import (
    SIGV4_REQUEST_HEADERS,
    unstored_request_header,
    unstored_response_header,
)
from pytest_agentctx.traffic.cassettes.vcr_matchers import resolve

KEY_ID = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEFakeSessionToken0123456789"
AUTHORIZATION = (
    "AWS4-HMAC-SHA256 Credential=fake-key-id-123/20260101/us-east-1/s3/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=0f0e0d0c0b0a"
)


@pytest.fixture
def no_secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DEFAULT_SECRET_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("AWS_ACCESS_KEY_ID", KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ("AWS_SESSION_TOKEN", SESSION_TOKEN),
    ],
)
def test_an_aws_credential_of_the_environment_is_redacted_in_a_body(
    name, value, no_secret_env, monkeypatch
):
    monkeypatch.setenv(name, value)

    redacted = Redactor(by_name=False).body({"text": f"<Value>{value}</Value>"})

    assert redacted == {"text": f"<Value>{REDACTED}</Value>"}


def test_the_key_id_of_a_sigv4_request_is_learned_and_redacted_everywhere(no_secret_env):
    redactor = Redactor()

    redactor.learn([("Authorization", AUTHORIZATION)])

    assert redactor.text("echoed: fake-key-id-123.") == f"echoed: {REDACTED}."


def test_a_sigv4_signature_is_not_learned_as_a_secret():
    redactor = Redactor(env=(), by_name=False)

    redactor.learn([("Authorization", AUTHORIZATION)])

    assert redactor.secret_values == ("fake-key-id-123",)


def test_an_access_key_id_in_a_json_body_is_redacted_with_no_secret_known(no_secret_env):
    body = {"json": {"Credentials": {"AccessKeyId": KEY_ID, "Expiration": "2026"}}}

    redacted = Redactor().body(body, raw=b'{"Credentials":{"AccessKeyId":"%s"}}' % KEY_ID.encode())

    assert redacted == {"json": {"Credentials": {"AccessKeyId": REDACTED, "Expiration": "2026"}}}


def test_an_access_key_id_in_a_stream_event_is_redacted(no_secret_env):
    body = {"sse": [{"event": "message", "data": {"text": f"key {KEY_ID}"}}]}

    assert Redactor().body(body) == {
        "sse": [{"event": "message", "data": {"text": "key REDACTED"}}]
    }


def test_an_access_key_id_in_a_binary_body_keeps_its_length(no_secret_env):
    redacted = Redactor().body({"base64": _b64(b"\x00" + KEY_ID.encode())})

    assert redacted == {"base64": _b64(b"\x00REDACTEDREDACTEDREDA")}


def test_the_credential_of_a_presigned_url_is_redacted(no_secret_env):
    url = (
        "https://notes.s3.amazonaws.com/a.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Credential={KEY_ID}%2F20260101%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Signature=0f0e0d0c"
    )

    redacted = Redactor().url(url)

    assert KEY_ID not in redacted
    assert "X-Amz-Signature=REDACTED" in redacted


def _presigned(date: str, key_id: str, signature: str) -> str:
    return (
        "https://notes.s3.amazonaws.com/a.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Credential={key_id}%2F{date[:8]}%2Fus-east-1%2Fs3%2Faws4_request"
        f"&X-Amz-Date={date}&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
        f"&X-Amz-Signature={signature}"
    )


def test_a_presigned_url_signed_again_later_is_redacted_alike(no_secret_env):
    first = _presigned("20260101T000000Z", "testing-key-1", "0f0e0d0c")
    again = _presigned("20260102T093000Z", "testing-key-2", "a1b2c3d4")

    assert Redactor().url(first) == Redactor().url(again)


def test_a_presigned_url_keeps_what_does_not_change(no_secret_env):
    redacted = Redactor().url(_presigned("20260101T000000Z", "testing-key-1", "0f0e0d0c"))

    assert "X-Amz-Expires=3600" in redacted
    assert "X-Amz-Date=REDACTED" in redacted


def test_sigv4_headers_signed_anew_match_on_vcrpys_headers_matcher(path: Path) -> None:
    url = "http://127.0.0.1:9/notes/plan.txt"
    recorded = Interaction(
        method="GET",
        url=url,
        request_headers={"accept": "*/*", "x-amz-checksum-mode": "ENABLED"},
        request_body=None,
        status=200,
        response_headers={"content-type": "text/plain"},
        response_body={"text": "buy milk"},
    )
    write_cassette(path, [recorded])
    cassette = Cassette(path, match_on=resolve(["method", "uri", "headers"]))
    signed = {
        "x-amz-checksum-mode": "ENABLED",
        "authorization": AUTHORIZATION,
        "x-amz-date": "20260102T093000Z",
        "amz-sdk-invocation-id": "0f0e0d0c-0b0a-4909-8807-060504030201",
        "amz-sdk-request": "attempt=1; max=3",
    }

    cassette.start()
    try:
        with httpx2.Client(trust_env=False) as client:
            reply = client.get(url, headers=signed)
    finally:
        cassette.stop()

    assert reply.text == "buy milk"


@pytest.mark.parametrize("name", sorted(SIGV4_REQUEST_HEADERS))
def test_a_sigv4_header_is_never_stored(name):
    assert unstored_request_header(name.title(), "20260101T000000Z")


def test_a_sigv4_authorization_is_never_stored():
    assert unstored_request_header("Authorization", AUTHORIZATION)


def test_another_authorization_is_stored_redacted():
    assert not unstored_request_header("Authorization", "Bearer sk-123456789")


def test_the_content_length_of_a_head_response_is_stored():
    assert not unstored_response_header("content-length", "HEAD")


def test_the_content_length_of_another_response_is_not_stored():
    assert unstored_response_header("content-length", "GET")


def _b64(raw: bytes) -> str:
    import base64

    return base64.b64encode(raw).decode()


def _signed(key_id: str, date: str, invocation: str) -> httpx2.Request:
    authorization = (
        f"AWS4-HMAC-SHA256 Credential={key_id}/20260101/us-east-1/bedrock/aws4_request, "
        f"SignedHeaders=host;x-amz-date, Signature={invocation}0f0e"
    )
    headers = {"Authorization": authorization, "X-Amz-Date": date}
    return httpx2.Request(
        "POST",
        "https://bedrock.example/model/m/converse",
        headers={**headers, "amz-sdk-invocation-id": invocation},
        content=b"{}",
    )


def test_a_request_signed_anew_with_the_same_key_is_not_read_again(
    no_secret_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from pytest_agentctx.redaction import shapes

    keys = Cassette(tmp_path / "c.json")._keys
    keys.redacted_request(_signed("fake-key-id-123", "20260101T000000Z", "a1"))
    read: list[str] = []
    key_id = shapes.key_id

    def reading(value: str) -> str | None:
        read.append(value)
        return key_id(value)

    monkeypatch.setattr(shapes, "key_id", reading)

    keys.redacted_request(_signed("fake-key-id-123", "20260101T000001Z", "b2"))
    keys.redacted_request(_signed("fake-key-id-456", "20260101T000002Z", "c3"))

    assert [value.split("/")[0] for value in read] == [
        "AWS4-HMAC-SHA256 Credential=fake-key-id-456"
    ]
    assert keys.redactor.text("fake-key-id-456") == REDACTED
