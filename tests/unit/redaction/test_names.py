"""Names made from test ids (pytest_agentctx.redaction.names): one per id, stable, readable,
without secrets; the snapshot extension's names and their relation to their test."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from hypothesis import given, strategies as st

from pytest_agentctx.assertions.snapshots.extension import AgentSnapshotExtension
from pytest_agentctx.redaction.names import digest, file_stem, shown_id
from pytest_agentctx.traffic.cassettes.per_test import _slug

#: Test names as pytest makes them: a function name, maybe with a parametrize id.
_names = st.builds(
    lambda name, params: name if params is None else f"{name}[{params}]",
    st.from_regex(r"test_[a-z0-9_]{0,12}", fullmatch=True),
    st.none() | st.text(min_size=0, max_size=40),
)


def _redact(secret: str) -> Any:
    return lambda text: text.replace(secret, "REDACTED")


# -- file_stem -------------------------------------------------------------------------


def test_a_name_that_loses_nothing_is_kept():
    assert file_stem("test_city[Paris-1]", _slug) == "test_city[Paris-1]"


def test_a_name_that_loses_characters_ends_with_the_digest_of_the_raw_name():
    stem = file_stem("test_ask[is it safe?]", _slug)

    assert stem == f"test_ask[is_it_safe_]~{digest('test_ask[is it safe?]')}"


def test_a_long_name_is_cut_to_its_length_with_its_digest():
    raw = "test_long[" + "a" * 300 + "]"

    stem = file_stem(raw, _slug, max_length=120)

    assert len(stem) == 120
    assert stem.endswith(f"~{digest(raw)}")


def test_a_secret_in_a_name_is_redacted_and_the_name_keeps_its_digest():
    stem = file_stem("test_key[sk-abc12345]", _slug, redact=_redact("sk-abc12345"))

    assert stem == f"test_key[REDACTED]~{digest('test_key[sk-abc12345]')}"


@given(_names, _names)
def test_two_names_give_two_stems(first, second):
    # a stem that kept its name holds no "~" (a character the slug replaces), one that
    # lost characters ends with the digest of its raw name
    if first != second and digest(first) != digest(second):
        assert file_stem(first, _slug) != file_stem(second, _slug)


@given(_names)
def test_a_stem_is_the_same_every_time_and_holds_only_safe_characters(name):
    stem = file_stem(name, _slug)

    assert stem == file_stem(name, _slug)
    assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]=,+~]*", stem)


@given(_names, st.text(min_size=8, max_size=20).filter(lambda s: "REDACTED" not in s))
def test_no_stem_holds_a_secret_and_two_secrets_give_two_stems(name, secret):
    raw, other = f"{name}-{secret}", f"{name}-{secret}x"
    redact = _redact(secret)

    assert secret not in file_stem(raw, _slug, redact=redact)
    assert file_stem(raw, _slug, redact=redact) != file_stem(other, _slug, redact=redact)


# -- shown_id --------------------------------------------------------------------------


def test_an_id_without_a_secret_is_shown_as_it_is():
    assert shown_id("tests/test_a.py::test_x[a:b]", _redact("sk-abc12345")) == (
        "tests/test_a.py::test_x[a:b]"
    )


def test_an_id_with_a_secret_is_shown_redacted_with_its_digest():
    raw = "tests/test_a.py::test_x[sk-abc12345]"

    assert shown_id(raw, _redact("sk-abc12345")) == (
        f"tests/test_a.py::test_x[REDACTED~{digest(raw)}]"
    )


def test_an_id_with_a_secret_outside_parameters_ends_with_its_digest():
    raw = "tests/test_a.py::TestSk_abc12345::test_x"

    assert shown_id(raw, _redact("Sk_abc12345")) == (
        f"tests/test_a.py::TestREDACTED::test_x~{digest(raw)}"
    )


# -- snapshot names --------------------------------------------------------------------


def _location(tmp_path: Any, name: str) -> Any:
    """What the extension reads of syrupy's PyTestLocation."""
    return SimpleNamespace(
        snapshot_name=name,
        basename="test_it",
        is_item_parametrized=name.endswith("]"),
        snapshot_name_parametrized=name,
        matches_snapshot_location=lambda location: False,
        matches_snapshot_site=lambda location: True,
    )


def test_a_snapshot_name_with_a_colon_keeps_it_readable_with_a_digest(tmp_path):
    location = _location(tmp_path, "test_model[openai:gpt-4o-mini]")

    name = AgentSnapshotExtension.get_snapshot_name(test_location=location)

    assert name == f"test_model[openai_gpt-4o-mini]~{digest('test_model[openai:gpt-4o-mini]')}"


def test_a_snapshot_name_syrupy_keeps_whole_is_syrupys(tmp_path):
    location = _location(tmp_path, "test_model[openai gpt-4.1]")

    assert AgentSnapshotExtension.get_snapshot_name(test_location=location) == (
        "test_model[openai gpt-4.1]"
    )


def test_a_snapshot_with_a_digest_is_related_to_its_test_only(tmp_path):
    location = _location(tmp_path, "test_model[openai:gpt-4o-mini]")
    other = _location(tmp_path, "test_model[openai|gpt-4o-mini]")
    name = AgentSnapshotExtension.get_snapshot_name(test_location=location, index=1)
    path = str(tmp_path / "__snapshots__" / "test_it" / f"{name}.agentctx")

    related = AgentSnapshotExtension.matches_test_location(
        test_location=location, snapshot_location=path
    )
    unrelated = AgentSnapshotExtension.matches_test_location(
        test_location=other, snapshot_location=path
    )

    assert (related, unrelated) == (True, False)
