"""Unit tests of multipart uploads (pytest_agentctx.traffic.cassettes.multipart): matched part
by part whatever their boundary, stored part by part, redacted part by part, and a miss that
names the part that differs.

Laws (hypothesis, derandomized): the match key of a multipart body does not depend on its
boundary, nor on the order or case of the headers in a part, nor, in a form, on the order
of parts of different names; a stored body gives back its bytes; a secret in a text part
is redacted however the parts around it are split.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import requests
from hypothesis import given, settings, strategies as st

from pytest_agentctx.traffic.cassettes import Cassette, Interaction, RecordMode
from pytest_agentctx.traffic.cassettes.body import body_bytes
from pytest_agentctx.traffic.cassettes.diffs import MISSING, FieldDiff, body_diffs
from pytest_agentctx.traffic.cassettes.fileformat import read_body
from pytest_agentctx.traffic.cassettes.keys import RequestKeys
from pytest_agentctx.traffic.cassettes.matcher import NO_JSON, compared, make_key, parse_json
from pytest_agentctx.traffic.cassettes.multipart import (
    check_stored,
    multipart_bytes,
    split_parts,
    stored_multipart,
)
from pytest_agentctx.traffic.cassettes.redact import REDACTED, Redactor
from pytest_agentctx.traffic.cassettes.store import load_cassette, write_cassette

LAWS = settings(max_examples=60, deadline=None, derandomize=True, database=None)
URL = "http://127.0.0.1:9/v1/files"
FORM = "multipart/form-data; boundary={}"
SECRET = "sk-upload-secret-4f1d-never-stored"


@dataclass(frozen=True)
class Field:
    """One part to build: its name, file name and content type (``None``: absent), its
    content."""

    name: str
    content: bytes
    filename: str | None = None
    content_type: str | None = None

    def headers(self) -> list[tuple[str, str]]:
        disposition = f'form-data; name="{self.name}"'
        if self.filename is not None:
            disposition += f'; filename="{self.filename}"'
        out = [("Content-Disposition", disposition)]
        if self.content_type is not None:
            out.append(("Content-Type", self.content_type))
        return out


def build(
    fields: list[Field], boundary: str, *, reverse_headers: bool = False, lower: bool = False
) -> bytes:
    """A multipart body of ``fields``, framed as httpx and requests frame it."""
    out = b""
    for field in fields:
        headers = field.headers()[::-1] if reverse_headers else field.headers()
        head = "\r\n".join(f"{name.lower() if lower else name}: {v}" for name, v in headers)
        out += f"--{boundary}\r\n{head}\r\n\r\n".encode() + field.content + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


UPLOAD = [
    Field("purpose", b"assistants"),
    Field("file", b"hello", "notes.txt", "text/plain"),
]


def _key(raw: bytes, content_type: str) -> str:
    return make_key("POST", URL, parse_json(raw), raw, ignored=[], content_type=content_type).body


# -- reading the parts -----------------------------------------------------------------


def test_the_parts_of_an_httpx_upload_are_read_with_their_name_file_name_and_type() -> None:
    request = httpx.Request("POST", URL, files={"file": ("a.txt", b"hi", "text/plain")})

    parts = split_parts(request.read(), request.headers["content-type"])

    assert [(p.name, p.filename, p.content_type, p.content) for p in parts or []] == [
        ("file", "a.txt", "text/plain", b"hi")
    ]


def test_a_quoted_file_name_with_a_semicolon_is_read_whole() -> None:
    raw = build([Field("file", b"x", 'a;b \\"c\\".txt')], "b1")

    parts = split_parts(raw, FORM.format("b1"))

    assert parts is not None
    assert parts[0].filename == 'a;b "c".txt'


def test_a_body_whose_boundary_it_does_not_hold_is_no_multipart_body() -> None:
    assert split_parts(b"just bytes", FORM.format("b1")) is None


def test_a_body_without_a_content_type_is_multipart_when_its_first_line_is_closed() -> None:
    raw = build(UPLOAD, "b1")

    assert _key(raw, "") == _key(build(UPLOAD, "b2"), FORM.format("b2"))


# -- keys --------------------------------------------------------------------------------

BOUNDARIES = st.text("0123456789abcdefABCDEF-_'()+,./:=?", min_size=1, max_size=70).filter(
    lambda b: not b.endswith(" ")
)
NAMES = st.text("abcdefghijklmnopqrstuvwxyz_[]0123456789", min_size=1, max_size=10)
CONTENTS = st.binary(max_size=40).filter(lambda c: b"--" not in c and b"\r" not in c)


@st.composite
def fields(draw: st.DrawFn) -> Field:
    return Field(
        draw(NAMES),
        draw(CONTENTS),
        draw(st.none() | st.sampled_from(["a.txt", "b.bin", "x y.wav"])),
        draw(st.none() | st.sampled_from(["text/plain", "application/octet-stream"])),
    )


@LAWS
@given(st.lists(fields(), min_size=1, max_size=5), BOUNDARIES, BOUNDARIES)
def test_law_the_key_of_an_upload_does_not_depend_on_its_boundary(
    parts: list[Field], first: str, second: str
) -> None:
    assert _key(build(parts, first), FORM.format(first)) == _key(
        build(parts, second), FORM.format(second)
    )


@LAWS
@given(st.lists(fields(), min_size=1, max_size=5), st.booleans(), st.booleans())
def test_law_the_key_of_an_upload_does_not_depend_on_its_parts_header_order_or_case(
    parts: list[Field], reverse: bool, lower: bool
) -> None:
    assert _key(build(parts, "b1"), FORM.format("b1")) == _key(
        build(parts, "b1", reverse_headers=reverse, lower=lower), FORM.format("b1")
    )


@LAWS
@given(st.lists(fields(), min_size=2, max_size=5, unique_by=lambda f: f.name), st.randoms())
def test_law_the_key_of_a_form_does_not_depend_on_the_order_of_its_fields(
    parts: list[Field], random: Any
) -> None:
    shuffled = list(parts)
    random.shuffle(shuffled)

    assert _key(build(parts, "b1"), FORM.format("b1")) == _key(
        build(shuffled, "b1"), FORM.format("b1")
    )


def test_parts_of_one_name_keep_their_order_in_a_form() -> None:
    tags = [Field("tag", b"a"), Field("tag", b"b")]

    assert _key(build(tags, "b1"), FORM.format("b1")) != _key(
        build(tags[::-1], "b1"), FORM.format("b1")
    )


def test_the_parts_of_a_related_body_keep_their_order() -> None:
    related = "multipart/related; boundary=b1"
    parts = [Field("metadata", b"{}", None, "application/json"), Field("media", b"\x00\x01")]

    assert _key(build(parts, "b1"), related) != _key(build(parts[::-1], "b1"), related)


@pytest.mark.parametrize(
    "changed",
    [
        Field("file", b"hello!", "notes.txt", "text/plain"),
        Field("file", b"hello", "other.txt", "text/plain"),
        Field("file", b"hello", "notes.txt", "text/markdown"),
        Field("document", b"hello", "notes.txt", "text/plain"),
    ],
    ids=["content", "filename", "content type", "name"],
)
def test_an_upload_whose_file_changed_has_another_key(changed: Field) -> None:
    assert _key(build(UPLOAD, "b1"), FORM.format("b1")) != _key(
        build([UPLOAD[0], changed], "b1"), FORM.format("b1")
    )


def test_a_recording_whose_line_ends_lost_their_cr_still_matches() -> None:
    raw = build(UPLOAD, "b1")

    assert _key(raw.replace(b"\r\n", b"\n"), FORM.format("b1")) == _key(raw, FORM.format("b1"))


def test_the_uploads_of_requests_and_httpx_with_the_same_parts_match() -> None:
    files = {"file": ("notes.txt", b"hello", "text/plain")}
    sent = requests.Request("POST", URL, files=files, data={"purpose": "x"}).prepare()
    built = httpx.Request("POST", URL, files=files, data={"purpose": "x"})

    assert isinstance(sent.body, bytes)
    assert _key(sent.body, str(sent.headers["Content-Type"])) == _key(
        built.read(), built.headers["content-type"]
    )


# -- the stored form ---------------------------------------------------------------------


@LAWS
@given(st.lists(fields(), min_size=1, max_size=5), BOUNDARIES)
def test_law_a_stored_upload_gives_back_its_bytes(parts: list[Field], boundary: str) -> None:
    raw = build(parts, boundary)

    stored = stored_multipart(raw, FORM.format(boundary))

    assert stored is not None
    assert multipart_bytes(stored) == raw


def test_an_upload_is_stored_readably_part_by_part() -> None:
    raw = build([UPLOAD[0], Field("file", b"\x00\xff", "a.bin", "audio/wav")], "b1")

    assert stored_multipart(raw, FORM.format("b1")) == {
        "boundary": "b1",
        "parts": [
            {"headers": ['Content-Disposition: form-data; name="purpose"'], "text": "assistants"},
            {
                "headers": [
                    'Content-Disposition: form-data; name="file"; filename="a.bin"',
                    "Content-Type: audio/wav",
                ],
                "base64": base64.b64encode(b"\x00\xff").decode(),
            },
        ],
    }


@pytest.mark.parametrize(
    "raw",
    [
        b"preamble\r\n" + build(UPLOAD, "b1"),
        build(UPLOAD, "b1") + b"epilogue",
        build(UPLOAD, "b1").replace(b"\r\n", b"\n"),
    ],
    ids=["preamble", "epilogue", "bare LF"],
)
def test_an_upload_framed_otherwise_is_stored_as_its_bytes(raw: bytes) -> None:
    assert stored_multipart(raw, FORM.format("b1")) is None


def test_a_stored_upload_is_read_back_from_a_file() -> None:
    stored = stored_multipart(build(UPLOAD, "b1"), FORM.format("b1"))

    body = read_body(json.loads(json.dumps({"multipart": stored})))

    assert body_bytes(body) == build(UPLOAD, "b1")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"parts": []}, "not {boundary: str"),
        ({"boundary": "b", "parts": {}}, "parts are not a list"),
        ({"boundary": "b", "parts": [{"headers": []}]}, "part #0 is not"),
        ({"boundary": "b", "parts": [{"headers": "x", "text": ""}]}, "part #0 is not"),
    ],
)
def test_a_malformed_stored_upload_is_refused_saying_what_is_wrong(
    value: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        check_stored(value)


def test_a_stored_upload_is_redacted_part_by_part() -> None:
    raw = build([Field("note", SECRET.encode()), Field("f", b"\x00" + SECRET.encode())], "b1")
    stored = stored_multipart(raw, FORM.format("b1"))

    redacted = Redactor(extra_values=[SECRET]).body({"multipart": stored})

    assert redacted is not None
    assert SECRET not in json.dumps(redacted)
    assert SECRET.encode() not in body_bytes(redacted)
    assert redacted["multipart"]["parts"][0]["text"] == REDACTED


# -- redaction of a live upload -----------------------------------------------------------


@LAWS
@given(
    st.lists(fields(), max_size=3),
    st.lists(fields(), max_size=3),
    st.text("abc xyz", max_size=6),
    st.text("abc xyz", max_size=6),
    BOUNDARIES,
)
def test_law_a_secret_in_a_text_part_is_redacted_however_the_parts_are_split(
    before: list[Field], after: list[Field], head: str, tail: str, boundary: str
) -> None:
    secret_part = Field("note", f"{head}{SECRET}{tail}".encode())
    raw = build([*before, secret_part, *after], boundary)
    keys = RequestKeys(Redactor(extra_values=[SECRET]), [], None)

    redacted = keys.redacted_raw(raw, FORM.format(boundary))

    assert SECRET.encode() not in redacted
    parts = split_parts(redacted, FORM.format(boundary))
    assert parts is not None
    assert len(parts) == len(before) + 1 + len(after)
    assert parts[len(before)].content == f"{head}{REDACTED}{tail}".encode()


def test_a_secret_in_a_text_field_beside_a_binary_file_is_redacted_as_text() -> None:
    # percent-encoded: only the text redactor finds it (the binary one looks for its bytes)
    quoted = SECRET.replace("-", "%2D")
    raw = build([Field("note", quoted.encode()), Field("f", b"\x00\xff", "a.bin")], "b1")
    keys = RequestKeys(Redactor(extra_values=[SECRET]), [], None)

    redacted = keys.redacted_raw(raw, FORM.format("b1"))

    assert quoted.encode() not in redacted
    assert b"\x00\xff" in redacted


# -- what a miss shows --------------------------------------------------------------------


def _diffs(recorded: list[Field], now: list[Field]) -> list[FieldDiff]:
    return body_diffs(
        compared(NO_JSON, build(recorded, "old"), FORM.format("old"), (), None),
        compared(NO_JSON, build(now, "new"), FORM.format("new"), (), None),
    )


def test_a_miss_on_an_upload_with_the_same_parts_shows_no_difference() -> None:
    assert _diffs(UPLOAD, UPLOAD) == []


def test_a_miss_names_a_part_added() -> None:
    assert _diffs(UPLOAD, [*UPLOAD, Field("extra", b"1")]) == [
        FieldDiff('part "extra"', MISSING, {"name": "extra", "text": "1"})
    ]


def test_a_miss_names_a_part_removed() -> None:
    assert _diffs(UPLOAD, UPLOAD[:1]) == [
        FieldDiff(
            'part "file"',
            {
                "name": "file",
                "filename": "notes.txt",
                "content_type": "text/plain",
                "text": "hello",
            },
            MISSING,
        )
    ]


def test_a_miss_names_a_changed_file_name_and_type() -> None:
    now = [UPLOAD[0], Field("file", b"hello", "other.txt", "text/markdown")]

    assert _diffs(UPLOAD, now) == [
        FieldDiff('part "file".filename', "notes.txt", "other.txt"),
        FieldDiff('part "file".content_type', "text/plain", "text/markdown"),
    ]


def test_a_miss_shows_a_changed_text_part_as_text() -> None:
    now = [UPLOAD[0], Field("file", b"hullo", "notes.txt", "text/plain")]

    assert _diffs(UPLOAD, now) == [FieldDiff('part "file".text', "hello", "hullo")]


def test_a_miss_shows_a_changed_binary_part_by_size_and_digest() -> None:
    was = [Field("file", b"\x00\xff\x01", "a.wav", "audio/wav")]
    now = [Field("file", b"\x00\xff\x02\x03", "a.wav", "audio/wav")]

    [diff] = _diffs(was, now)

    assert diff.path == 'part "file".content'
    assert str(diff.recorded).startswith("3 bytes, sha256 ")
    assert str(diff.now).startswith("4 bytes, sha256 ")
    assert str(diff.now).endswith(", first differs at byte offset 2")


def test_a_miss_pairs_the_second_part_of_a_name_with_the_other_second() -> None:
    was = [Field("tag", b"a"), Field("tag", b"b")]
    now = [Field("tag", b"a"), Field("tag", b"c")]

    assert _diffs(was, now) == [FieldDiff('part "tag" #2.text', "b", "c")]


# -- a cassette replaying uploads ---------------------------------------------------------


@contextmanager
def _running(cassette: Cassette) -> Iterator[httpx2.Client]:
    cassette.start()
    try:
        with httpx2.Client(trust_env=False) as client:
            yield client
    finally:
        cassette.stop()


def _recorded(raw: bytes, content_type: str, body: dict[str, Any] | None = None) -> Interaction:
    return Interaction(
        method="POST",
        url=URL,
        request_headers={"content-type": content_type},
        request_body=body or {"base64": base64.b64encode(raw).decode()},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": {"id": "file-1"}},
    )


def _post(path: Path, raw: bytes, content_type: str, **headers: str) -> Cassette:
    cassette = Cassette(path, test_id="tests/test_files.py::test_upload", mode=RecordMode.NONE)
    with _running(cassette) as client:
        client.post(URL, content=raw, headers={"content-type": content_type, **headers})
    return cassette


def test_an_upload_stored_part_by_part_replays_with_a_new_boundary(tmp_path: Path) -> None:
    path = tmp_path / "cassette.json"
    raw = build(UPLOAD, "old")
    stored = stored_multipart(raw, FORM.format("old"))
    write_cassette(path, [_recorded(raw, FORM.format("old"), {"multipart": stored})])

    cassette = _post(path, build(UPLOAD, "new"), FORM.format("new"))

    assert cassette.replayed == 1


def test_a_gzip_compressed_upload_replays_by_its_decoded_parts(tmp_path: Path) -> None:
    path = tmp_path / "cassette.json"
    write_cassette(path, [_recorded(build(UPLOAD, "old"), FORM.format("old"))])

    cassette = _post(
        path,
        gzip.compress(build(UPLOAD, "new")),
        FORM.format("new"),
        **{"content-encoding": "gzip"},
    )

    assert cassette.replayed == 1


def test_a_miss_on_an_upload_names_the_part_and_the_command(tmp_path: Path) -> None:
    path = tmp_path / "cassette.json"
    write_cassette(path, [_recorded(build(UPLOAD, "old"), FORM.format("old"))])
    changed = [UPLOAD[0], Field("file", b"bye", "notes.txt", "text/plain")]

    cassette = _post(path, build(changed, "new"), FORM.format("new"))

    lines = cassette.miss_message(cassette.misses[0]).splitlines()
    assert lines[1:3] == [
        "Closest recorded request: interaction #0, POST 127.0.0.1/v1/files; 1 field differs: "
        'part "file".text',
        '  part "file".text: recorded "hello" != now "bye"',
    ]
    assert lines[-1].startswith("If the agent's requests changed on purpose, re-record")


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_stored_upload_reads_back_byte_for_byte_from_a_cassette_file(
    tmp_path: Path, suffix: str
) -> None:
    raw = build([Field("note", b"line 1\r\nline 2\r\n"), Field("f", b"\x00\xff", "a.bin")], "b1")
    stored = stored_multipart(raw, FORM.format("b1"))
    path = tmp_path / f"cassette{suffix}"
    write_cassette(path, [_recorded(raw, FORM.format("b1"), {"multipart": stored})])

    [interaction] = load_cassette(path)

    assert body_bytes(interaction.request_body) == raw
