"""Unit tests of pytest_agentctx.redaction.shapes: AWS credentials found by their shape."""

from __future__ import annotations

import pytest

from pytest_agentctx.redaction import redactor, shapes

KEY_ID = "AKIAIOSFODNN7EXAMPLE"
SCOPE = "20260101/us-east-1/s3/aws4_request"


@pytest.mark.parametrize("prefix", ["AKIA", "ASIA"])
def test_an_access_key_id_is_replaced(prefix):
    assert shapes.scrub(f"id={prefix}IOSFODNN7EXAMPLE;") == "id=REDACTED;"


def test_a_longer_run_of_capitals_is_no_access_key_id():
    text = "AKIAIOSFODNN7EXAMPLEX and XAKIAIOSFODNN7EXAMPLE"

    assert shapes.scrub(text) == text


def test_the_key_id_of_a_credential_scope_is_replaced_whatever_it_looks_like():
    header = f"AWS4-HMAC-SHA256 Credential=testing/{SCOPE}, SignedHeaders=host, Signature=ab"

    assert shapes.scrub(header) == header.replace("testing", "REDACTED")


def test_a_percent_encoded_credential_of_a_presigned_url_is_replaced():
    url = f"https://b.s3.amazonaws.com/k?X-Amz-Credential={KEY_ID}%2F20260101%2Fus-east-1"

    assert shapes.scrub(url) == url.replace(KEY_ID, "REDACTED")


def test_in_bytes_a_key_id_is_overwritten_by_as_many_bytes():
    raw = b"\x00\x01" + KEY_ID.encode() + b"\xff"

    assert shapes.scrub_bytes(raw) == b"\x00\x01REDACTEDREDACTEDREDA\xff"


def test_a_text_without_a_marker_is_given_back_as_it_is():
    text = "no credentials here"

    assert shapes.scrub(text) is text


def test_the_key_id_of_a_sigv4_authorization_is_read():
    header = f"AWS4-HMAC-SHA256 Credential={KEY_ID}/{SCOPE}, SignedHeaders=host, Signature=ab"

    assert shapes.key_id(header) == KEY_ID


def test_another_authorization_has_no_key_id():
    assert shapes.key_id("Bearer Credential=abc/def") is None


def test_the_placeholder_is_the_redactors():
    assert shapes.REDACTED == redactor.REDACTED
