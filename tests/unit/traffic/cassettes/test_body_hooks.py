"""Unit tests of matching bodies of every kind: body hooks for JSON, form, multipart, text
and binary bodies (pytest_agentctx.traffic.cassettes.matcher's ``BodyHooks``), what a miss
on such a body says, and a cassette matched on vcrpy's ``match_on``.

The cassette tests replay requests sent with httpx2 to ``http://127.0.0.1:9`` (the discard
port: a request the cassette did not answer would fail to connect).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from pytest_agentctx.traffic.cassettes import Cassette, Interaction
from pytest_agentctx.traffic.cassettes.bodykinds import body_kind, parse_form
from pytest_agentctx.traffic.cassettes.matcher import NO_JSON, BodyHooks, make_key, parse_json
from pytest_agentctx.traffic.cassettes.multipart import hook_parts
from pytest_agentctx.traffic.cassettes.store import write_cassette
from pytest_agentctx.traffic.errors import CassetteConfigError

URL = "http://127.0.0.1:9/v1/files"
MULTIPART = "multipart/form-data; boundary={}"


def _multipart(boundary: str, content: str = "hello", filename: str = "a.txt") -> bytes:
    return (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="purpose"\r\n\r\n'
        "assistants\r\n"
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: text/plain\r\n\r\n"
        f"{content}\r\n"
        f"--{boundary}--\r\n"
    ).encode()


def _key(raw: bytes, content_type: str, hook: Any = None) -> str:
    return make_key(
        "POST", URL, parse_json(raw), raw, ignored=[], hook=hook, content_type=content_type
    ).body


# -- kinds and what a hook is given --------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "content_type", "kind"),
    [
        (b'{"a": 1}', "text/plain", "json"),
        (b"a=1&b=2", "application/x-www-form-urlencoded", "form"),
        (_multipart("x"), MULTIPART.format("x"), "multipart"),
        (_multipart("x"), "", "multipart"),
        (b"a=1&b=2", "", "text"),
        (b"\xff\x00", "application/octet-stream", "bytes"),
    ],
)
def test_a_body_is_of_the_kind_its_content_and_content_type_say(
    raw: bytes, content_type: str, kind: str
) -> None:
    assert body_kind(raw, content_type, is_json=parse_json(raw) is not NO_JSON) == kind


def test_a_form_body_is_given_as_its_fields_each_with_its_values() -> None:
    assert parse_form(b"a=1&b=two+words&a=3&c=") == {"a": ["1", "3"], "b": ["two words"], "c": [""]}


def test_a_multipart_body_is_given_as_its_parts_without_the_boundary() -> None:
    assert hook_parts(_multipart("x1"), MULTIPART.format("x1")) == [
        {
            "name": "purpose",
            "filename": None,
            "headers": {"content-disposition": 'form-data; name="purpose"'},
            "content": "assistants",
        },
        {
            "name": "file",
            "filename": "a.txt",
            "headers": {
                "content-disposition": 'form-data; name="file"; filename="a.txt"',
                "content-type": "text/plain",
            },
            "content": "hello",
        },
    ]


def test_the_binary_content_of_a_part_is_given_as_bytes() -> None:
    raw = b'--b\r\nContent-Disposition: form-data; name="f"\r\n\r\n\xff\x00\r\n--b--\r\n'

    assert hook_parts(raw, MULTIPART.format("b"))[0]["content"] == b"\xff\x00"


@pytest.mark.parametrize(
    ("table", "kind", "content_type", "picked"),
    [
        ({"text/csv": "exact", "text/*": "major", "text": "kind"}, "text", "text/csv", "exact"),
        ({"text/*": "major", "text": "kind"}, "text", "text/csv; charset=utf-8", "major"),
        ({"text": "kind", "*/*": "any"}, "text", "text/csv", "kind"),
        ({"*/*": "any"}, "bytes", "image/png", "any"),
        ({"form": "kind"}, "multipart", "multipart/form-data", None),
    ],
)
def test_a_mapping_picks_the_hook_of_the_media_type_then_major_type_then_kind_then_any(
    table: dict[str, str], kind: str, content_type: str, picked: str | None
) -> None:
    def answer(value: str) -> Any:
        return lambda body: value

    hooks = BodyHooks({name: answer(value) for name, value in table.items()})

    hook = hooks.pick(kind, content_type)

    assert (hook(None) if hook is not None else None) == picked


# -- keys ----------------------------------------------------------------------------


def _parts(parts: list[dict[str, object]]) -> list[dict[str, object]]:
    return parts


def test_a_multipart_hook_matches_bodies_whose_boundaries_differ() -> None:
    hooks = {"multipart": _parts}

    assert _key(_multipart("aaa"), MULTIPART.format("aaa"), hooks) == _key(
        _multipart("bbb"), MULTIPART.format("bbb"), hooks
    )


def test_multipart_bodies_whose_boundaries_differ_match_without_a_hook() -> None:
    assert _key(_multipart("aaa"), MULTIPART.format("aaa")) == _key(
        _multipart("bbb"), MULTIPART.format("bbb")
    )


def test_a_form_hook_matches_on_what_it_keeps() -> None:
    def without_nonce(fields: dict[str, list[str]]) -> dict[str, list[str]]:
        return {name: values for name, values in fields.items() if name != "nonce"}

    kind = "application/x-www-form-urlencoded"
    hooks = {kind: without_nonce}

    assert _key(b"q=paris&nonce=1", kind, hooks) == _key(b"nonce=2&q=paris", kind, hooks)
    assert _key(b"q=paris&nonce=1", kind, hooks) != _key(b"q=rome&nonce=1", kind, hooks)


def test_a_text_hook_is_given_the_text() -> None:
    hooks = {"text/*": str.lower}

    assert _key(b"Hello", "text/plain", hooks) == _key(b"HELLO", "text/plain", hooks)


def test_a_bytes_hook_is_given_the_bytes() -> None:
    hooks = {"bytes": lambda raw: raw[:2]}

    assert _key(b"\xff\x00\x01", "", hooks) == _key(b"\xff\x00\x02", "", hooks)


def test_a_function_as_the_hook_is_given_json_bodies_only_as_always() -> None:
    seen: list[object] = []

    def hook(body: object) -> object:
        seen.append(body)
        return body

    _key(b"plain text", "text/plain", hook)
    _key(b'{"a": 1}', "application/json", hook)

    assert seen == [{"a": 1}]


def test_a_hook_that_returns_what_cannot_be_compared_is_an_error_naming_it() -> None:
    def as_set(text: str) -> object:
        return {text}

    with pytest.raises(CassetteConfigError, match=r"body_hook .*as_set returned set for a text"):
        _key(b"hello", "text/plain", {"text": as_set})


# -- a cassette's misses -------------------------------------------------------------


def _recorded(raw: bytes, content_type: str) -> Interaction:
    return Interaction(
        method="POST",
        url=URL,
        request_headers={"content-type": content_type},
        request_body={"text": raw.decode()}
        if not raw.startswith(b"\xff")
        else {"base64": base64.b64encode(raw).decode()},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": {"id": "file-1"}},
    )


@contextmanager
def _running(cassette: Cassette) -> Iterator[httpx2.Client]:
    cassette.start()
    try:
        with httpx2.Client(trust_env=False) as client:
            yield client
    finally:
        cassette.stop()


def _send(
    path: Path,
    recorded: Interaction,
    raw: bytes,
    content_type: str,
    **options: Any,
) -> tuple[Cassette, int]:
    write_cassette(path, [recorded])
    cassette = Cassette(path, test_id="tests/test_files.py::test_upload", **options)
    with _running(cassette) as client:
        status = client.post(URL, content=raw, headers={"content-type": content_type}).status_code
    return cassette, status


def _miss_lines(cassette: Cassette) -> list[str]:
    return cassette.miss_message(cassette.misses[0]).splitlines()[1:-1]


def test_a_multipart_upload_replays_through_a_multipart_hook(path: Path) -> None:
    recorded = _recorded(_multipart("aaa"), MULTIPART.format("aaa"))

    cassette, status = _send(
        path, recorded, _multipart("bbb"), MULTIPART.format("bbb"), body_hook={"multipart": _parts}
    )

    assert (status, cassette.replayed) == (200, 1)


def test_a_multipart_upload_with_another_boundary_replays_without_a_hook(path: Path) -> None:
    recorded = _recorded(_multipart("aaa"), MULTIPART.format("aaa"))

    cassette, status = _send(path, recorded, _multipart("bbb"), MULTIPART.format("bbb"))

    assert (status, cassette.replayed) == (200, 1)


def test_a_miss_on_multipart_bodies_names_the_part_that_differs(path: Path) -> None:
    recorded = _recorded(_multipart("aaa"), MULTIPART.format("aaa"))

    cassette, _ = _send(path, recorded, _multipart("aaa", content="bye"), MULTIPART.format("aaa"))

    assert _miss_lines(cassette) == [
        "Closest recorded request: interaction #0, POST 127.0.0.1/v1/files; 1 field differs: "
        'part "file".text',
        '  part "file".text: recorded "hello" != now "bye"',
    ]


def test_a_miss_on_form_bodies_names_the_fields_that_differ(path: Path) -> None:
    kind = "application/x-www-form-urlencoded"

    cassette, _ = _send(path, _recorded(b"q=paris&n=1", kind), b"q=rome&n=1", kind)

    assert _miss_lines(cassette) == [
        "Closest recorded request: interaction #0, POST 127.0.0.1/v1/files; 1 field differs: q[0]",
        '  q[0]: recorded "paris" != now "rome"',
    ]


def test_a_miss_on_form_bodies_with_the_same_fields_in_another_order_shows_the_bytes(
    path: Path,
) -> None:
    kind = "application/x-www-form-urlencoded"

    cassette, _ = _send(path, _recorded(b"q=paris&n=1", kind), b"n=1&q=paris", kind)

    assert _miss_lines(cassette)[1] == (
        "  (form body bytes): recorded 11 bytes != now 11 bytes (they first differ at byte "
        "offset 0)"
    )


def test_a_miss_on_text_bodies_shows_the_text_that_differs(path: Path) -> None:
    recorded = _recorded(b"Weather in Paris", "text/plain")

    cassette, _ = _send(path, recorded, b"Weather in Rome", "text/plain")

    assert _miss_lines(cassette)[1] == (
        "  (body text): recorded Weather in Paris != now Weather in Rome"
    )


def test_a_miss_on_binary_bodies_gives_their_sizes_and_first_differing_offset(
    path: Path,
) -> None:
    kind = "application/octet-stream"

    cassette, _ = _send(path, _recorded(b"\xff\x00\x01\x02", kind), b"\xff\x00\x09", kind)

    assert _miss_lines(cassette)[1] == (
        "  (body bytes): recorded 4 bytes != now 3 bytes (they first differ at byte offset 2)"
    )


# -- a cassette matched on match_on --------------------------------------------------


def _resolved(*items: object) -> Any:
    from pytest_agentctx.traffic.cassettes.vcr_matchers import resolve

    return resolve(items)


def test_match_on_answers_with_the_first_unused_recording_its_matchers_accept(
    path: Path,
) -> None:
    recorded = [
        Interaction(
            method="POST",
            url=URL,
            request_headers={"content-type": "text/plain"},
            request_body={"text": text},
            status=200,
            response_headers={"content-type": "text/plain"},
            response_body={"text": answer},
        )
        for text, answer in [("a", "first"), ("b", "second"), ("c", "third")]
    ]
    write_cassette(path, recorded)
    cassette = Cassette(path, match_on=_resolved("method", "path"))

    with _running(cassette) as client:
        answers = [client.post(URL, content=b"z").text for _ in range(3)]

    assert answers == ["first", "second", "third"]


def test_match_on_with_a_custom_matcher_replaces_the_body_comparison(path: Path) -> None:
    def same_purpose(r1: Any, r2: Any) -> bool:
        return b'name="purpose"' in (r1.body or b"") and b'name="purpose"' in (r2.body or b"")

    recorded = _recorded(_multipart("aaa"), MULTIPART.format("aaa"))

    cassette, status = _send(
        path,
        recorded,
        _multipart("bbb", content="other"),
        MULTIPART.format("bbb"),
        match_on=_resolved("method", "uri", same_purpose),
    )

    assert (status, cassette.replayed) == (200, 1)


def test_a_miss_on_match_on_names_the_matcher_that_refused_and_the_values(path: Path) -> None:
    def never(r1: Any, r2: Any) -> bool:
        return False

    cassette, status = _send(
        path,
        _recorded(b"hello", "text/plain"),
        b"hello!",
        "text/plain",
        match_on=_resolved("method", "body", never),
    )

    assert status == 599
    assert cassette.miss_message(cassette.misses[0]).splitlines() == [
        f"Cassette {path} cannot answer POST 127.0.0.1/v1/files: no recording the test may "
        "replay matches it on match_on (method, body, never).",
        "Closest recorded request: interaction #0, POST 127.0.0.1/v1/files; 2 of 3 matchers "
        "refuse it: body, never",
        "  body: the bodies differ:",
        "    --- recorded",
        "    +++ now",
        "    @@ -1 +1 @@",
        "    -hello",
        "    +hello!",
        "  never: it returned False",
        "If the agent's requests changed on purpose, re-record this test: pytest "
        '--agent-record "tests/test_files.py::test_upload"; if the matchers should accept this '
        "request, change match_on in agent_cassette_config",
    ]


def test_a_second_identical_request_on_match_on_misses_once_the_recording_is_used(
    path: Path,
) -> None:
    write_cassette(path, [_recorded(b"hello", "text/plain")])
    cassette = Cassette(path, match_on=_resolved("method", "path"))

    with _running(cassette) as client:
        statuses = [client.post(URL, content=b"hello").status_code for _ in range(2)]

    assert statuses == [200, 599]
    assert cassette.misses[0].reason == (
        "the recordings that match it on match_on (method, path) were all used already"
    )


def test_match_on_matchers_see_the_headers_a_recording_stores(path: Path) -> None:
    seen: list[dict[str, str]] = []

    def spy(r1: Any, r2: Any) -> None:
        seen.append(dict(r1.headers))

    write_cassette(path, [_recorded(b"hello", "text/plain")])
    cassette = Cassette(path, match_on=_resolved(spy))
    with _running(cassette) as client:
        client.post(URL, content=b"hello", headers={"content-type": "text/plain", "x-a": "1"})

    assert seen == [{"accept": "*/*", "content-type": "text/plain", "x-a": "1"}]
