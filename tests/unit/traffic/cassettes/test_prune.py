"""Unit tests of pytest_agentctx.traffic.cassettes.prune: dead interactions dropped from a
cassette file in its own format, every other one kept as it was, in its order, and a file
changed since the report refused."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pytest_agentctx.exceptions import UsageError
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.prune import (
    apply_prune,
    plan_prune,
    read_cassette_file,
    request_digest,
)
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.cassettes.store import write_cassette
from pytest_agentctx.traffic.cassettes.vcr import vcr_interaction

#: (file name, format): every format the package reads and writes.
FORMATS = [
    ("c.json", "native"),
    ("c.yaml", "native"),
    ("c.yaml", "vcr"),
    ("c.json", "vcr"),
]


def _interaction(content: str, answer: str = "ok", *, test_id: str = "") -> Interaction:
    return Interaction(
        method="POST",
        url="https://api.example.com/v1/chat/completions",
        request_headers={"content-type": "application/json"},
        request_body={"json": {"model": "m", "messages": [{"content": content}]}},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": {"answer": answer}},
        test_id=test_id,
    )


def _write(path: Path, interactions: list[Interaction], style: str) -> None:
    if style == "vcr" and path.suffix == ".json":  # as vcrpy's JSON serializer writes one
        data = {"interactions": [vcr_interaction(i) for i in interactions], "version": 1}
        path.write_text(json.dumps(data, indent=4))
    else:
        write_cassette(path, interactions, style=style)


def _stored(interactions: list[Interaction]) -> list[object]:
    """What replay sees of each interaction (its place in the file aside)."""
    return [dataclasses.replace(i, origin="") for i in interactions]


def _prune(path: Path, dropped: set[int]) -> None:
    _, interactions = read_cassette_file(path)
    dead = {p: request_digest(interactions[p]) for p in dropped}
    apply_prune(plan_prune(path, dead, report="r.json"), Redactor(env=()), report="r.json")


texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=12)


@settings(max_examples=30, deadline=None)
@given(
    contents=st.lists(st.tuples(texts, texts), min_size=1, max_size=6),
    data=st.data(),
    fmt=st.sampled_from(FORMATS),
)
def test_pruning_keeps_every_other_interaction_as_it_was_in_its_order(contents, data, fmt):
    name, style = fmt
    interactions = [_interaction(q, a) for q, a in contents]
    dropped = data.draw(st.sets(st.integers(0, len(interactions) - 1)))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        _write(path, interactions, style)
        _, before = read_cassette_file(path)

        _prune(path, dropped)

        kept_style, after = read_cassette_file(path)
    assert kept_style == style
    assert _stored(after) == _stored([i for p, i in enumerate(before) if p not in dropped])


@pytest.mark.parametrize(("name", "style"), FORMATS)
def test_a_cassette_keeps_its_format(tmp_path, name, style):
    path = tmp_path / name
    _write(path, [_interaction("a"), _interaction("b")], style)

    _prune(path, {0})

    assert read_cassette_file(path)[0] == style
    assert [i.request_body for i in read_cassette_file(path)[1]] == [_interaction("b").request_body]


def test_a_shared_cassette_keeps_who_recorded_each_interaction(tmp_path):
    path = tmp_path / "shared.json"
    write_cassette(path, [_interaction("a", test_id="t::one"), _interaction("b", test_id="t::two")])

    _prune(path, {0})

    assert [i.test_id for i in read_cassette_file(path)[1]] == ["t::two"]


def test_what_is_kept_is_written_scrubbed_of_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_TOKEN", "tok-0123456789-secret")
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("a"), _interaction("b", "tok-0123456789-secret")])
    _, interactions = read_cassette_file(path)
    plan = plan_prune(path, {0: request_digest(interactions[0])}, report="r.json")

    apply_prune(plan, Redactor(env=("MY_TOKEN",)), report="r.json")

    assert "tok-0123456789-secret" not in path.read_text()


def test_the_digest_of_a_request_is_of_its_method_url_and_body_only():
    first = _interaction("a")
    other_headers = dataclasses.replace(first, request_headers={"authorization": "Bearer x"})

    assert request_digest(first) == request_digest(other_headers)
    assert request_digest(first) != request_digest(_interaction("b"))


def test_a_file_whose_interaction_changed_since_the_report_is_refused(tmp_path):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("a"), _interaction("b")])
    digest = request_digest(_interaction("a"))
    write_cassette(path, [_interaction("c"), _interaction("b")])  # re-recorded since

    with pytest.raises(UsageError) as caught:
        plan_prune(path, {0: digest}, report="r.json")

    assert str(caught.value) == (
        f"Cassette {path} changed since the report r.json (the report lists interaction #0 as "
        "unused, but interaction #0 is another request now): nothing was pruned. Run the suite "
        "again with --agent-report=r.json, then prune with that report."
    )


def test_a_file_shorter_than_the_report_says_is_refused(tmp_path):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("a")])

    with pytest.raises(UsageError, match="but it holds 1 interaction"):
        plan_prune(path, {3: request_digest(_interaction("a"))}, report="r.json")


def test_a_file_changed_between_the_plan_and_the_write_is_left_alone(tmp_path):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("a"), _interaction("b")])
    plan = plan_prune(path, {0: request_digest(_interaction("a"))}, report="r.json")
    write_cassette(path, [_interaction("a"), _interaction("b"), _interaction("c")])
    text = path.read_text()

    with pytest.raises(UsageError, match="changed while it was being pruned"):
        apply_prune(plan, Redactor(env=()), report="r.json")

    assert path.read_text() == text
