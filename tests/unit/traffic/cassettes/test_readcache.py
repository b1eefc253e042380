"""Unit tests of pytest_agentctx.traffic.cassettes.readcache: YAML cassettes kept as JSON in
pytest's cache folder, keyed by their content, never holding what the file or the redactor
would not, and never believed when damaged."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from pytest_agentctx.redaction.active import SessionSecrets, set_active
from pytest_agentctx.traffic.cassettes import readcache, store
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.store import dump_cassette, load_cassette


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The cache folder of a session (made when first needed), with the session's secrets
    active, as the plugin sets them; both restored after the test. The key of the entries'
    MACs is made in the test's own folder."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = tmp_path / "pytest-cache" / "d" / readcache.FOLDER_NAME

    def make() -> Path:
        path.mkdir(parents=True, exist_ok=True)
        return path

    previous = readcache.use_folder(make, tmp_path)
    active = set_active(SessionSecrets())
    try:
        yield path
    finally:
        readcache.use_folder(*previous)
        set_active(active)


def _interaction(content: str = "Sunny.", **changes: object) -> Interaction:
    fields: dict[str, object] = {
        "method": "POST",
        "url": "https://api.openai.com/v1/chat/completions",
        "request_headers": {"content-type": "application/json", "authorization": "REDACTED"},
        "request_body": {"json": {"model": "gpt-4o-mini", "temperature": 0.5}},
        "status": 200,
        "response_headers": {"content-type": "application/json"},
        "response_body": {"json": {"id": "c1", "content": content, "refusal": None}},
    }
    fields.update(changes)
    return Interaction(**fields)  # type: ignore[arg-type]


def _write(path: Path, *interactions: Interaction, style: str = "vcr") -> Path:
    path.write_text(dump_cassette(list(interactions), path, style=style), encoding="utf-8")
    return path


def _fresh_read(path: Path) -> list[Interaction]:
    """``load_cassette`` as a new process calls it: nothing parsed in memory yet."""
    store._cache.clear()
    return load_cassette(path)


def _entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_yaml_cassette_read_again_is_read_from_its_entry(tmp_path, folder, parsed):
    path = _write(tmp_path / "c.yaml", _interaction())
    first = _fresh_read(path)

    again = _fresh_read(path)

    assert (again, parsed) == (first, ["c.yaml"])


def test_an_entry_gives_the_interactions_their_origin_in_the_cassette(tmp_path, folder):
    path = _write(tmp_path / "c.yaml", _interaction())
    _fresh_read(path)

    assert [i.origin for i in _fresh_read(path)] == [f"{path}#0"]


@pytest.mark.parametrize("style", ["vcr", "native"])
def test_both_yaml_formats_are_cached(tmp_path, folder, style):
    path = _write(tmp_path / "c.yaml", _interaction(), style=style)

    _fresh_read(path)

    assert len(_entries(folder)) == 1


def test_a_cassette_changed_since_is_read_from_its_yaml(tmp_path, folder, parsed):
    path = _write(tmp_path / "c.yaml", _interaction("Sunny."))
    _fresh_read(path)
    _write(path, _interaction("Rainy."))

    read = _fresh_read(path)

    assert (read[0].response_body, parsed) == (
        {"json": {"id": "c1", "content": "Rainy.", "refusal": None}},
        ["c.yaml", "c.yaml"],
    )


def test_a_cassette_has_one_entry_whatever_its_versions(tmp_path, folder):
    path = _write(tmp_path / "c.yaml", _interaction("Sunny."))
    _fresh_read(path)
    _write(path, _interaction("Rainy."))
    _fresh_read(path)

    assert _entries(folder) == [readcache.entry_path(folder, path).name]


def test_a_json_cassette_is_not_cached(tmp_path, folder):
    path = tmp_path / "c.json"
    path.write_text(dump_cassette([_interaction()], path), encoding="utf-8")

    _fresh_read(path)

    assert not folder.exists()


def test_without_a_cache_folder_nothing_is_written(tmp_path, folder):
    readcache.use_folder(None)
    path = _write(tmp_path / "c.yaml", _interaction())

    _fresh_read(path)

    assert not folder.exists()


def test_a_cassette_outside_the_rootdir_is_not_cached(tmp_path, folder):
    readcache.use_folder(lambda: folder.mkdir(parents=True) or folder, tmp_path / "project")
    path = _write(tmp_path / "c.yaml", _interaction())

    _fresh_read(path)

    assert not folder.exists()


def test_the_least_recently_used_entries_go_beyond_the_limit(tmp_path, folder, monkeypatch):
    monkeypatch.setattr(readcache, "MAX_ENTRIES", 2)
    a, b, c = (_write(tmp_path / f"{name}.yaml", _interaction()) for name in "abc")
    for when, path in enumerate((a, b), start=1):
        _fresh_read(path)
        os.utime(readcache.entry_path(folder, path), ns=(when * 10**9, when * 10**9))
    _fresh_read(a)  # read from its entry: now the most recently used

    _fresh_read(c)

    assert _entries(folder) == sorted(readcache.entry_path(folder, p).name for p in (a, c))


def test_outside_a_session_nothing_is_written(tmp_path, folder):
    set_active(None)
    path = _write(tmp_path / "c.yaml", _interaction())

    _fresh_read(path)

    assert _entries(folder) == []


def _damage_payload(data: bytes) -> bytes:
    return data.replace(b"Sunny.", b"Rainy.")


def _valid_but_not_a_cassette(data: bytes) -> bytes:
    header = json.loads(data.partition(b"\n")[0])
    payload = b'{"cassette": "pytest-agentctx", "version": 99, "interactions": []}'
    header["payload"] = hashlib.sha256(payload).hexdigest()
    return json.dumps(header).encode() + b"\n" + payload


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: b"\x00\xff garbage", id="garbage"),
        pytest.param(_damage_payload, id="edited payload"),
        pytest.param(lambda data: data.replace(b"read-3", b"read-2", 1), id="other reader"),
        pytest.param(lambda data: data.partition(b"\n")[2], id="no header"),
        pytest.param(_valid_but_not_a_cassette, id="not a cassette"),
    ],
)
def test_a_damaged_entry_is_ignored_and_replaced(tmp_path, folder, parsed, damage):
    path = _write(tmp_path / "c.yaml", _interaction("Sunny."))
    expected = _fresh_read(path)
    entry = readcache.entry_path(folder, path)
    entry.write_bytes(damage(entry.read_bytes()))

    read = _fresh_read(path)

    assert (read, parsed, readcache.read_entry(path, path.read_bytes())) == (
        expected,
        ["c.yaml", "c.yaml"],
        expected,
    )


def test_a_cassette_holding_a_secret_value_is_not_cached(tmp_path, folder, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-secret-value-0123456789")
    path = _write(tmp_path / "c.yaml", _interaction("key sk-proj-secret-value-0123456789"))

    _fresh_read(path)

    assert _entries(folder) == []


_BEARER = "Bearer sk-live-0123456789abcdef"


def test_a_secret_header_not_redacted_is_cached_without_its_value(tmp_path, folder):
    headers = {"content-type": "application/json", "authorization": _BEARER}
    path = _write(tmp_path / "c.yaml", _interaction(request_headers=headers))

    _fresh_read(path)

    entry = readcache.entry_path(folder, path).read_bytes()
    assert b"sk-live" not in entry
    assert b'"authorization":"REDACTED"' in entry


def test_a_secret_header_is_read_back_from_the_cassette(tmp_path, folder):
    headers = {"content-type": "application/json", "authorization": _BEARER}
    path = _write(tmp_path / "c.yaml", _interaction(request_headers=headers))
    expected = _fresh_read(path)

    cached = readcache.read_entry(path, path.read_bytes())

    assert cached == expected
    assert [i.request_headers["authorization"] for i in cached or []] == [_BEARER]


def test_a_secret_header_echoed_in_a_body_keeps_the_cassette_out(tmp_path, folder):
    headers = {"content-type": "application/json", "authorization": _BEARER}
    body = {"json": {"echo": _BEARER}}
    path = _write(tmp_path / "c.yaml", _interaction(request_headers=headers, response_body=body))

    _fresh_read(path)

    assert _entries(folder) == []


def test_a_secret_header_written_with_escapes_keeps_the_cassette_out(tmp_path, folder):
    headers = {"content-type": "application/json", "authorization": _BEARER}
    path = _write(tmp_path / "c.yaml", _interaction(request_headers=headers))
    escaped = '"Bearer sk-live-\\x30123456789abcdef"'  # the same value, "0" escaped
    path.write_text(path.read_text(encoding="utf-8").replace(_BEARER, escaped), "utf-8")

    assert _fresh_read(path)[0].request_headers["authorization"] == _BEARER
    assert _entries(folder) == []


def test_an_entry_whose_header_places_are_moved_is_not_believed(tmp_path, folder):
    headers = {"content-type": "application/json", "authorization": _BEARER}
    path = _write(tmp_path / "c.yaml", _interaction(request_headers=headers))
    _fresh_read(path)
    entry = readcache.entry_path(folder, path)
    head, _, payload = entry.read_bytes().partition(b"\n")
    header = json.loads(head)
    header["refs"][0][3][-1][0] += 1  # the place of the token
    entry.write_bytes(json.dumps(header).encode() + b"\n" + payload)

    assert readcache.read_entry(path, path.read_bytes()) is None


def test_a_key_in_a_url_keeps_the_cassette_out(tmp_path, folder):
    url = "https://generativelanguage.googleapis.com/v1/models?key=AIzaSyA-0123456789"
    path = _write(tmp_path / "c.yaml", _interaction(url=url))

    _fresh_read(path)

    assert _entries(folder) == []


def test_a_secret_in_a_binary_body_keeps_the_cassette_out(tmp_path, folder, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-secret-value-0123456789")
    raw = b"\x89PNG\x00" + base64.b64encode(b"sk-proj-secret-value-0123456789")
    body = {"base64": base64.b64encode(raw).decode("ascii")}
    path = _write(tmp_path / "c.yaml", _interaction(response_body=body))

    _fresh_read(path)

    assert _entries(folder) == []


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("2025-01-01", id="date"),
        pytest.param("{1: one}", id="integer key"),
        pytest.param("!!binary aGk=", id="bytes"),
        pytest.param(".nan", id="nan"),
    ],
)
def test_a_value_json_would_change_keeps_the_cassette_out(tmp_path, folder, value):
    path = tmp_path / "c.yaml"
    text = dump_cassette([_interaction()], path, style="native")
    path.write_text(text.replace("content: Sunny.", f"content: {value}"), encoding="utf-8")

    read = _fresh_read(path)

    expected = store.parse_cassette(path.read_text(), path)
    assert (_entries(folder), repr(read)) == ([], repr(expected))  # repr: nan != nan


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(123456789012345678901234567890, id="integer past 64 bits"),
        pytest.param(-(2**63) - 1, id="negative integer past 64 bits"),
        pytest.param("caf\u00e9 \u2603 \U0001f600", id="text past ascii"),
    ],
)
def test_a_value_orjson_cannot_write_or_read_as_json_does_is_cached_exactly(
    tmp_path, folder, value
):
    path = _write(tmp_path / "c.yaml", _interaction(response_body={"json": {"n": value}}))
    _fresh_read(path)

    cached = readcache.read_entry(path, path.read_bytes())

    assert cached is not None
    assert cached[0].response_body == {"json": {"n": value}}
    assert type(cached[0].response_body["json"]["n"]) is type(value)


def test_a_folder_that_cannot_be_made_leaves_the_read_as_without_a_cache(tmp_path, folder):
    def refused() -> Path:
        raise PermissionError(13, "Permission denied", str(folder))

    readcache.use_folder(refused)
    path = _write(tmp_path / "c.yaml", _interaction())

    assert _fresh_read(path) == store.parse_cassette(path.read_text(), path)


def test_an_entry_that_cannot_be_written_leaves_no_temporary_file(tmp_path, folder):
    path = _write(tmp_path / "c.yaml", _interaction())
    readcache.entry_path(folder, path).mkdir(parents=True)  # a folder where the entry goes

    read = _fresh_read(path)

    assert (read, _entries(folder)) == (
        store.parse_cassette(path.read_text(), path),
        [readcache.entry_path(folder, path).name],
    )


def _nested(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    """Lists and dicts of ``inner`` (a named function: hypothesis reads whether a lambda
    uses its argument from its source, and misreads it where two lambdas share a line)."""
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)  # as in JSON
    | st.text(max_size=20),
    _nested,
    max_leaves=10,
)
_BODIES = st.one_of(
    st.none(),
    st.dictionaries(st.text(max_size=8), _JSON, min_size=1, max_size=4).map(lambda v: {"json": v}),
    # a text that JSON reads as NaN or an infinity is never cached (NaN equals nothing, so the
    # entry cannot be checked against the cassette): its reading from the YAML is the law
    st.text(min_size=1, max_size=30)
    .filter(lambda v: v.strip().lstrip("+-") not in ("NaN", "Infinity"))
    .map(lambda v: {"text": v}),
    st.binary(min_size=1, max_size=30).map(lambda v: {"base64": base64.b64encode(v).decode()}),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    style=st.sampled_from(["vcr", "native"]),
    request_body=_BODIES,
    response_body=_BODIES,
    status=st.integers(min_value=100, max_value=599),
    header=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
    test_id=st.sampled_from(["", "tests/test_a.py::test_b[x-1]"]),
    partial=st.booleans(),
)
def test_a_cassette_read_from_its_entry_is_the_cassette_read_from_its_yaml(
    tmp_path, folder, style, request_body, response_body, status, header, test_id, partial
):
    path = _write(
        tmp_path / f"{style}.yaml",
        _interaction(
            request_body=request_body,
            response_body=response_body,
            status=status,
            response_headers={"content-type": "application/json", "x-trace": header},
            test_id=test_id,
            partial=partial,
        ),
        style=style,
    )
    from_yaml = store.parse_cassette(path.read_text(encoding="utf-8"), path)
    _fresh_read(path)

    cached = readcache.read_entry(path, path.read_bytes())

    assert (cached, repr(cached)) == (from_yaml, repr(from_yaml))


# -- bound to the cassette -------------------------------------------------------------


def _forged(data: bytes) -> bytes:
    """The entry as an attacker who can write the cache makes it: its payload changed and
    every digest of the payload in its header recomputed."""
    head, _, payload = data.partition(b"\n")
    forged = payload.replace(b"Sunny.", b"Rainy.")
    old, new = hashlib.sha256(payload).hexdigest(), hashlib.sha256(forged).hexdigest()
    header = {name: new if value == old else value for name, value in json.loads(head).items()}
    return json.dumps(header).encode() + b"\n" + forged


def test_an_entry_edited_with_its_digests_recomputed_is_not_believed(tmp_path, folder):
    path = _write(tmp_path / "c.yaml", _interaction("Sunny."))
    expected = _fresh_read(path)
    entry = readcache.entry_path(folder, path)
    entry.write_bytes(_forged(entry.read_bytes()))

    assert readcache.read_entry(path, path.read_bytes()) is None
    assert _fresh_read(path) == expected


def test_an_entry_made_under_another_key_is_not_believed(tmp_path, folder, monkeypatch):
    path = _write(tmp_path / "c.yaml", _interaction("Sunny."))
    _fresh_read(path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "another-machine"))

    assert readcache.read_entry(path, path.read_bytes()) is None


def test_machines_that_share_a_key_share_their_entries(tmp_path, folder, monkeypatch):
    monkeypatch.setenv(readcache.KEY_ENV, "a CI secret, not in any cache")
    path = _write(tmp_path / "c.yaml", _interaction("Sunny."))
    expected = _fresh_read(path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "another-machine"))

    assert readcache.read_entry(path, path.read_bytes()) == expected


def test_the_machine_s_key_is_made_once_readable_by_its_owner_only(tmp_path, folder):
    path = _write(tmp_path / "c.yaml", _interaction("Sunny."))
    _fresh_read(path)
    key = tmp_path / "config" / "pytest-agentctx" / "read-cache.key"

    assert (len(key.read_bytes()), key.stat().st_mode & 0o777) == (32, 0o600)
    assert [p.name for p in key.parent.iterdir()] == ["read-cache.key"]


def test_an_entry_that_is_a_fifo_is_ignored_and_replaced(tmp_path, folder, parsed):
    path = _write(tmp_path / "c.yaml", _interaction("Sunny."))
    expected = _fresh_read(path)
    entry = readcache.entry_path(folder, path)
    entry.unlink()
    os.mkfifo(entry)

    assert (_fresh_read(path), parsed) == (expected, ["c.yaml", "c.yaml"])
    assert entry.is_file()


def test_a_value_only_the_reading_test_calls_secret_keeps_the_cassette_out(tmp_path, folder):
    from pytest_agentctx.redaction.redactor import Redactor

    secret = "tenant-secret-5f1e2d3c4b"
    path = _write(tmp_path / "c.yaml", _interaction(f"Sunny. {secret}"))
    store._cache.clear()

    load_cassette(path, redactor=Redactor(extra_values=[secret]))

    assert _entries(folder) == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.lists(
        st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=120),
        min_size=1,
        max_size=3,
    ),
    name=st.sampled_from(["authorization", "set-cookie", "x-api-key"]),
)
def test_a_secret_header_read_from_an_entry_is_the_one_read_from_the_yaml(
    tmp_path, folder, value, name
):
    path = tmp_path / "vcr.yaml"
    _write(path, _interaction(request_headers={"content-type": "text/plain", name: "x"}))
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["interactions"][0]["request"]["headers"][name] = value  # a list: joined
    path.write_text(yaml.safe_dump(document, width=40), encoding="utf-8")
    from_yaml = store.parse_cassette(path.read_text(encoding="utf-8"), path)
    _fresh_read(path)

    cached = readcache.read_entry(path, path.read_bytes())

    assert cached in (None, from_yaml)


def test_a_long_cookie_folded_over_lines_and_repeated_is_cached(tmp_path, folder):
    cookie = "__cf_bm=KwJ1K47OHX4n2TZN8bMW37yKzKyK-1752842800; path=/; HttpOnly; Secure"
    path = tmp_path / "vcr.yaml"
    _write(path, _interaction(response_headers={"content-type": "text/plain"}))
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["interactions"][0]["response"]["headers"]["set-cookie"] = [cookie, "_cfuvid=abc"]
    path.write_text(yaml.safe_dump(document, width=40), encoding="utf-8")
    expected = _fresh_read(path)

    cached = readcache.read_entry(path, path.read_bytes())

    assert cached == expected
    assert b"KwJ1K47OHX4n2TZN8bMW37yKzKyK" not in readcache.entry_path(folder, path).read_bytes()


def test_a_vcrpy_cassette_written_in_json_is_not_cached(tmp_path, folder):
    from pytest_agentctx.traffic.cassettes.vcr import convert_vcr_yaml

    path = _write(tmp_path / "c.yaml", _interaction("Sunny."))
    convert_vcr_yaml(path)

    _fresh_read(path)

    assert _entries(folder) == []
