"""Unit tests of the header helpers of pytest_agentctx.traffic.transport.wire: a client's
``str`` or ``bytes`` header names and values as wire bytes and as text."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from pytest_agentctx.traffic.transport.wire import header_bytes, header_text, raw_headers


def test_bytes_are_kept_as_they_are():
    assert header_bytes(b"Boto3/1.44.8") == b"Boto3/1.44.8"


def test_text_is_encoded_as_latin1_by_default():
    assert header_bytes("café") == b"caf\xe9"


def test_text_is_encoded_in_the_clients_own_encoding():
    assert header_bytes("café", "utf-8") == "café".encode()


def test_bytes_are_read_as_latin1():
    assert header_text(b"caf\xe9") == "café"


def test_a_mapping_and_pairs_give_the_same_byte_pairs_in_order():
    given_pairs: list[tuple[str | bytes, str | bytes]] = [
        (b"User-Agent", b"Boto3"),
        ("X-Amz-Date", b"20260101T000000Z"),
        ("A", "b"),
    ]

    assert (
        raw_headers(dict(given_pairs))
        == raw_headers(given_pairs)
        == [
            (b"User-Agent", b"Boto3"),
            (b"X-Amz-Date", b"20260101T000000Z"),
            (b"A", b"b"),
        ]
    )


def test_no_headers_are_no_pairs():
    assert raw_headers(None) == raw_headers({}) == []


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.binary(max_size=40))
def test_any_bytes_read_as_text_go_back_to_the_same_bytes(value: bytes) -> None:
    assert header_bytes(header_text(value)) == value
