"""Unit tests of pytest_agentctx.traffic.cassettes.store: reading every cassette format, writing
atomically, and clear errors for files that cannot be read."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from cassette_support import CORPUS

from pytest_agentctx.traffic.cassettes import store
from pytest_agentctx.traffic.cassettes.body import body_chunks
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.store import dump_cassette, load_cassette, write_cassette
from pytest_agentctx.traffic.errors import CassetteFormatError

try:
    import fcntl
except ModuleNotFoundError:  # Windows, where the locks are filelock's
    fcntl = None  # type: ignore[assignment]

#: The tests of the ``flock`` locks, which exist where ``fcntl`` does.
with_flock = pytest.mark.skipif(fcntl is None, reason="no fcntl on this system")

URL = "https://api.openai.com/v1/chat/completions"
CORPUS_FILES = sorted(p.name for p in CORPUS.glob("*.yaml")) if CORPUS.is_dir() else ["absent"]

NATIVE = {
    "cassette": "pytest-agentctx",
    "version": 1,
    "interactions": [
        {
            "request": {
                "method": "post",
                "url": URL,
                "headers": {"Content-Type": "application/json"},
                "body": {"json": {"model": "gpt-4o-mini"}},
            },
            "response": {
                "status": 200,
                "headers": {"content-type": "text/event-stream"},
                "body": {"sse": [{"data": {"id": "1"}}, {"data": "[DONE]"}]},
            },
        }
    ],
}

VCR = """
interactions:
- request:
    body: '{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}'
    headers:
      Content-Type:
      - application/json
      Content-Length:
      - '71'
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: '{"id": "chatcmpl-1", "choices": []}'
    headers:
      Content-Type:
      - application/json
      Content-Length:
      - '35'
      Set-Cookie:
      - a=1
      - b=2
    status:
      code: 201
      message: Created
version: 1
"""

PYDANTIC_AI = """
interactions:
- request:
    headers:
      content-type:
      - application/json
    method: POST
    parsed_body:
      max_tokens: 4096
      messages:
      - content: What is 2+2?
        role: user
      model: claude-opus-4-6
    uri: https://api.anthropic.com/v1/messages?beta=true
  response:
    headers:
      content-length:
      - '213'
      content-type:
      - application/json
    parsed_body:
      error:
        message: Overloaded
        type: overloaded_error
      type: error
    status:
      code: 529
      message: Overloaded
version: 1
"""

PRETTY_PRINTED = """
interactions:
- request:
    body: |-
      {
        "messages": [
          {
            "role": "user",
            "content": "Say this is a test"
          }
        ],
        "model": "gpt-4o-mini"
      }
    headers: {}
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: |-
        {
          "error": {
            "code": "model_not_found"
          }
        }
    headers: {}
    status:
      code: 404
      message: Not Found
version: 1
"""


def _vcr_with_binary_body(raw: bytes, encoding: str) -> str:
    """A vcrpy cassette whose response body is ``raw`` as YAML ``!!binary``, as vcrpy
    writes compressed bodies."""
    return yaml.safe_dump(
        {
            "interactions": [
                {
                    "request": {"body": None, "headers": {}, "method": "GET", "uri": URL},
                    "response": {
                        "body": {"string": raw},
                        "headers": {
                            "Content-Encoding": [encoding],
                            "Content-Type": ["application/json"],
                            "Content-Length": [str(len(raw))],
                        },
                        "status": {"code": 200, "message": "OK"},
                    },
                }
            ],
            "version": 1,
        }
    )


def _interaction(content: str = "Hi") -> Interaction:
    return Interaction(
        method="POST",
        url=URL,
        request_headers={"content-type": "application/json"},
        request_body={"json": {"messages": [{"role": "user", "content": content}]}},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": {"id": "chatcmpl-1"}},
    )


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _corpus(name: str) -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the cassette corpus is not beside the checkout ({CORPUS.resolve()})")
    return CORPUS / name


# -- native format -------------------------------------------------------------------


def test_native_json_cassette_loads(tmp_path):
    path = _write(tmp_path / "c.json", json.dumps(NATIVE))

    match load_cassette(path):
        case [
            Interaction(
                method="POST",
                url="https://api.openai.com/v1/chat/completions",
                request_headers={"content-type": "application/json"},
                request_body={"json": {"model": "gpt-4o-mini"}},
                status=200,
                response_body={"sse": [{"data": {"id": "1"}}, {"data": "[DONE]"}]},
            )
        ]:
            pass
        case other:
            raise AssertionError(other)


def test_native_yaml_cassette_loads(tmp_path):
    path = _write(tmp_path / "c.yaml", yaml.safe_dump(NATIVE))

    match load_cassette(path):
        case [Interaction(status=200, request_body={"json": {"model": "gpt-4o-mini"}})]:
            pass
        case other:
            raise AssertionError(other)


def test_loaded_interaction_names_where_it_came_from(tmp_path):
    path = _write(tmp_path / "c.json", json.dumps(NATIVE))

    assert load_cassette(path)[0].origin == f"{path}#0"


def test_missing_cassette_loads_as_no_interactions(tmp_path):
    assert load_cassette(tmp_path / "absent.json") == []


def test_empty_yaml_file_loads_as_no_interactions(tmp_path):
    assert load_cassette(_write(tmp_path / "c.yaml", "")) == []


# -- vcrpy format --------------------------------------------------------------------


def test_vcrpy_cassette_loads_with_lower_case_headers_and_parsed_bodies(tmp_path):
    path = _write(tmp_path / "c.yaml", VCR)

    match load_cassette(path):
        case [
            Interaction(
                method="POST",
                url="https://api.openai.com/v1/chat/completions",
                request_headers={"content-type": "application/json"},
                request_body={"json": {"model": "gpt-4o-mini", "messages": [_]}},
                status=201,
                response_headers={"content-type": "application/json", "set-cookie": "a=1, b=2"},
                response_body={"json": {"id": "chatcmpl-1", "choices": []}},
            )
        ]:
            pass
        case other:
            raise AssertionError(other)


def test_vcrpy_cassette_drops_the_wire_length_of_bodies_it_stores_decoded(tmp_path):
    interaction = load_cassette(_write(tmp_path / "c.yaml", VCR))[0]

    assert "content-length" not in interaction.request_headers
    assert "content-length" not in interaction.response_headers


def test_pydantic_ai_parsed_body_loads_as_json(tmp_path):
    path = _write(tmp_path / "c.yaml", PYDANTIC_AI)

    match load_cassette(path):
        case [
            Interaction(
                url="https://api.anthropic.com/v1/messages?beta=true",
                request_body={"json": {"model": "claude-opus-4-6", "max_tokens": 4096}},
                status=529,
                response_body={"json": {"error": {"type": "overloaded_error"}}},
            )
        ]:
            pass
        case other:
            raise AssertionError(other)


def test_gzip_binary_body_is_stored_decoded_without_its_encoding(tmp_path):
    raw = gzip.compress(b'{"id": "chatcmpl-1"}')
    path = _write(tmp_path / "c.yaml", _vcr_with_binary_body(raw, "gzip"))

    match load_cassette(path):
        case [Interaction(response_body={"json": {"id": "chatcmpl-1"}}, response_headers=h)]:
            assert "content-encoding" not in h
        case other:
            raise AssertionError(other)


def test_body_that_cannot_be_decoded_keeps_its_bytes_and_its_encoding(tmp_path):
    raw = b"\x1b\x00\xf8brotli-ish bytes"
    path = _write(tmp_path / "c.yaml", _vcr_with_binary_body(raw, "br"))

    interaction = load_cassette(path)[0]

    assert interaction.response_headers["content-encoding"] == "br"
    assert body_chunks(interaction.response_body) == [raw]


def test_pretty_printed_json_bodies_load_as_json(tmp_path):
    path = _write(tmp_path / "c.yaml", PRETTY_PRINTED)

    match load_cassette(path):
        case [
            Interaction(
                request_body={"json": {"model": "gpt-4o-mini", "messages": [{"role": "user"}]}},
                status=404,
                response_body={"json": {"error": {"code": "model_not_found"}}},
            )
        ]:
            pass
        case other:
            raise AssertionError(other)


# -- the corpus of other tools' cassettes --------------------------------------------


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_every_corpus_cassette_loads_with_servable_bodies(name):
    interactions = load_cassette(_corpus(name))

    assert interactions
    for interaction in interactions:
        body_chunks(interaction.request_body)
        body_chunks(interaction.response_body)


def test_corpus_pydantic_ai_parsed_body_loads():
    match load_cassette(_corpus("pydantic-ai__anthropic_error_400.yaml")):
        case [
            Interaction(
                request_body={"json": {"model": "claude-opus-4-6", "output_config": _}},
                status=400,
                response_body={"json": {"error": {"type": "invalid_request_error"}}},
            )
        ]:
            pass
        case other:
            raise AssertionError(other)


def test_corpus_gzip_binary_body_loads_decoded():
    match load_cassette(_corpus("openllmetry__anthropic_tools_history_gzip.yaml")):
        case [Interaction(response_body={"json": {"type": "message"}}, response_headers=h)]:
            assert "content-encoding" not in h
        case other:
            raise AssertionError(other)


def test_corpus_gzip_event_stream_loads_as_events():
    interaction = load_cassette(_corpus("llm-anthropic__anthropic_tools_stream_gzip.yaml"))[0]

    match interaction.response_body:
        case {"sse": [{"event": "message_start", "data": {"type": "message_start"}}, *_]}:
            pass
        case other:
            raise AssertionError(other)


def test_corpus_otel_pretty_printed_bodies_load_as_json():
    match load_cassette(_corpus("otel-contrib__openai_chat_error_404.yaml")):
        case [
            Interaction(
                request_body={"json": {"model": "this-model-does-not-exist"}},
                status=404,
                response_body={"json": {"error": {"code": "model_not_found"}}},
            )
        ]:
            pass
        case other:
            raise AssertionError(other)


# -- writing -------------------------------------------------------------------------


def test_written_cassette_loads_back_the_same_interactions(tmp_path):
    path = tmp_path / "deep" / "folder" / "c.json"

    write_cassette(path, [_interaction("one"), _interaction("two")])

    assert [i.request_body for i in load_cassette(path)] == [
        {"json": {"messages": [{"role": "user", "content": "one"}]}},
        {"json": {"messages": [{"role": "user", "content": "two"}]}},
    ]


def test_written_yaml_cassette_loads_back_the_same_interactions(tmp_path):
    path = tmp_path / "c.yaml"

    write_cassette(path, [_interaction("ümlaut")])

    assert load_cassette(path)[0].to_dict() == _interaction("ümlaut").to_dict()


def test_the_test_that_recorded_an_interaction_is_written_and_read_back(tmp_path):
    path = tmp_path / "shared.json"
    recorded = replace(_interaction(), test_id="tests/test_a.py::test_one")

    write_cassette(path, [recorded])

    assert json.loads(path.read_text())["interactions"][0]["test_id"] == (
        "tests/test_a.py::test_one"
    )
    assert [i.test_id for i in load_cassette(path)] == ["tests/test_a.py::test_one"]


def test_an_interaction_of_no_known_test_is_written_without_a_test_id(tmp_path):
    path = tmp_path / "c.json"

    write_cassette(path, [_interaction()])

    assert sorted(json.loads(path.read_text())["interactions"][0]) == ["request", "response"]


def test_a_cassette_written_before_test_ids_loads_with_no_test_id(tmp_path):
    path = _write(tmp_path / "c.json", json.dumps(NATIVE))

    assert [i.test_id for i in load_cassette(path)] == [""]


def test_write_leaves_no_temporary_file(tmp_path):
    write_cassette(tmp_path / "c.json", [_interaction()])
    write_cassette(tmp_path / "c.json", [_interaction("again")])

    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


def test_failing_write_keeps_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("old")])
    before = path.read_bytes()

    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_cassette(path, [_interaction("new")])

    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


def test_write_that_cannot_serialise_keeps_the_old_file(tmp_path):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("old")])
    broken = _interaction()
    broken.response_body = {"json": {"not json": {1, 2}}}

    with pytest.raises(TypeError):
        write_cassette(path, [broken])

    assert load_cassette(path)[0].request_body == _interaction("old").request_body


def test_load_sees_a_rewritten_cassette(tmp_path):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("first")])
    load_cassette(path)

    write_cassette(path, [_interaction("second"), _interaction("third")])

    assert len(load_cassette(path)) == 2


def _cassettes(folder: Path, count: int) -> list[Path]:
    paths = [folder / f"c{index}.json" for index in range(count)]
    for path in paths:
        write_cassette(path, [_interaction(path.stem)])
    return paths


def test_a_cassette_loaded_again_is_parsed_once(tmp_path, parsed):
    path = _cassettes(tmp_path, 1)[0]

    loads = [load_cassette(path), load_cassette(path)]

    assert (parsed, loads[0] == loads[1]) == (["c0.json"], True)


def test_the_cache_forgets_the_least_recently_used_cassette(tmp_path, parsed):
    first, *others = _cassettes(tmp_path, store.CACHE_SIZE + 1)
    for path in [first, *others]:
        load_cassette(path)

    load_cassette(first)

    assert parsed.count("c0.json") == 2


def test_a_cassette_used_again_stays_in_the_cache(tmp_path, parsed):
    first, *others = _cassettes(tmp_path, store.CACHE_SIZE + 1)
    for path in [first, *others[:-1], first, others[-1]]:
        load_cassette(path)

    load_cassette(first)

    assert parsed.count("c0.json") == 1


def test_dump_sorts_keys_and_ends_with_a_newline(tmp_path):
    text = dump_cassette([_interaction()], tmp_path / "c.json")

    assert text.endswith("}\n")
    assert list(json.loads(text)) == ["cassette", "interactions", "version"]
    assert text == dump_cassette([_interaction()], tmp_path / "c.json")


# -- errors --------------------------------------------------------------------------


def test_invalid_json_names_the_file_and_what_to_do(tmp_path):
    path = _write(tmp_path / "c.json", '{"cassette": ')

    with pytest.raises(CassetteFormatError, match=r"c\.json: not valid JSON .*re-record"):
        load_cassette(path)


def test_invalid_yaml_names_the_file(tmp_path):
    path = _write(tmp_path / "c.yaml", "interactions: [\n  - {")

    with pytest.raises(CassetteFormatError, match=r"c\.yaml: not valid YAML"):
        load_cassette(path)


def test_a_yaml_value_out_of_range_names_the_file(tmp_path):
    path = _write(tmp_path / "c.yaml", "interactions: []\nrecorded: 2025-13-45\n")

    with pytest.raises(CassetteFormatError, match=r"c\.yaml: not valid YAML \(month must be"):
        load_cassette(path)


def test_unknown_format_version_says_how_to_fix_it(tmp_path):
    path = _write(tmp_path / "c.json", json.dumps({**NATIVE, "version": 2}))

    with pytest.raises(CassetteFormatError, match=r"format version 2; .*reads version 1"):
        load_cassette(path)


def test_document_that_is_not_a_cassette_is_refused(tmp_path):
    path = _write(tmp_path / "c.yaml", "- just\n- a list\n")

    with pytest.raises(CassetteFormatError, match=r"expected a mapping with an 'interactions'"):
        load_cassette(path)


def test_native_interaction_without_a_url_is_refused(tmp_path):
    broken = json.loads(json.dumps(NATIVE))
    del broken["interactions"][0]["request"]["url"]
    path = _write(tmp_path / "c.json", json.dumps(broken))

    with pytest.raises(CassetteFormatError, match=r"interaction #0 is malformed \(KeyError: 'url'"):
        load_cassette(path)


def test_native_body_of_an_unknown_kind_is_refused_on_load(tmp_path):
    broken = json.loads(json.dumps(NATIVE))
    broken["interactions"][0]["response"]["body"] = {"xml": "<a/>"}
    path = _write(tmp_path / "c.json", json.dumps(broken))

    with pytest.raises(CassetteFormatError, match=r"#0 is malformed .*\['xml'\]; expected null"):
        load_cassette(path)


def test_native_test_id_that_is_not_a_node_id_is_refused_on_load(tmp_path):
    broken = json.loads(json.dumps(NATIVE))
    broken["interactions"][0]["test_id"] = 7
    path = _write(tmp_path / "c.json", json.dumps(broken))

    with pytest.raises(CassetteFormatError, match=r"#0 is malformed .*test_id is int; expected"):
        load_cassette(path)


def test_vcrpy_interaction_without_a_status_is_refused(tmp_path):
    path = _write(
        tmp_path / "c.yaml",
        VCR.replace("    status:\n      code: 201\n      message: Created\n", ""),
    )

    with pytest.raises(CassetteFormatError, match=r"vcrpy interaction #0 is malformed.*'status'"):
        load_cassette(path)


def test_compressed_cassette_file_says_to_unpack_it(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_bytes(gzip.compress(VCR.encode()))

    with pytest.raises(CassetteFormatError, match=r"not UTF-8 text.*unpacked first"):
        load_cassette(path)


def test_a_cassette_under_a_file_loads_as_no_interactions(tmp_path):
    (tmp_path / "cassettes").write_text("not a folder")

    assert load_cassette(tmp_path / "cassettes" / "c.json") == []


def test_a_cassette_that_cannot_be_read_says_so_and_what_to_do(tmp_path, monkeypatch):
    path = _write(tmp_path / "c.json", json.dumps(NATIVE))

    def denied(where: Path, *args: object, **kwargs: object) -> bytes:
        raise PermissionError(13, "Permission denied", str(where))

    monkeypatch.setattr("pytest_agentctx.traffic.cassettes.store.read_untrusted", denied)
    with pytest.raises(CassetteFormatError) as caught:
        load_cassette(path)

    assert str(caught.value) == (
        f"{path}: cannot be read (Permission denied). Make it readable by the user running "
        "pytest (or restore it from version control), then run pytest again."
    )


# -- partial recordings --------------------------------------------------------------


def test_a_partial_recording_is_written_and_read_back_as_partial(tmp_path):
    path = tmp_path / "c.json"

    write_cassette(path, [replace(_interaction("cut"), partial=True), _interaction("whole")])

    written = json.loads(path.read_text())["interactions"]
    assert [item.get("partial") for item in written] == [True, None]
    assert [i.partial for i in load_cassette(path)] == [True, False]


def test_a_partial_flag_that_is_not_true_or_false_is_refused_on_load(tmp_path):
    broken = json.loads(json.dumps(NATIVE))
    broken["interactions"][0]["partial"] = "yes"
    path = _write(tmp_path / "c.json", json.dumps(broken))

    with pytest.raises(CassetteFormatError, match=r"#0 is malformed .*partial is str; expected"):
        load_cassette(path)


# -- no debris: temporary files of killed writes -----------------------------------


@pytest.fixture(scope="module")
def dead_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(child.stdout)


def test_writing_a_cassette_removes_what_a_killed_write_of_it_left(tmp_path, dead_pid):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("old")])
    (tmp_path / f".c.json.{dead_pid}.0123abcd.tmp").write_text('{"cassette": "pytest-agen')

    write_cassette(path, [_interaction("new")])

    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]
