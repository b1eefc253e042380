"""Cassettes written in vcrpy's format (``agent_cassette_format = vcr``).

A team that replays some tests with vcrpy or pytest-recording, or moves between the two
tools, keeps one kind of file: vcrpy's YAML (version 1), which this package reads as well
(:func:`~pytest_agentctx.traffic.cassettes.store.parse_cassette`). Each interaction is
written as vcrpy writes one:

- ``request``: ``method``, ``uri``, ``body`` (the bytes sent, as text; ``null`` when
  empty) and ``headers`` (each a list of values);
- ``response``: ``status`` (``code`` and ``message``), ``headers`` and ``body.string``,
  the body as the client read it.

The bodies are those this package stores: secrets redacted, the ``content-encoding``
undone (so the ``content-encoding``, ``content-length`` and ``transfer-encoding`` headers
are left out, as for the package's own format), a stream as its events' bytes. Binary bodies
are written as YAML ``!!binary``, which vcrpy reads as bytes. What vcrpy has no place for
goes in keys of the interaction it does not read: ``test_id`` (who recorded it, in a shared
cassette) and ``partial`` (a stream recorded in part).
"""

from __future__ import annotations

import base64
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from pytest_agentctx.traffic.cassettes.body import Body, body_bytes

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes.store import Interaction

__all__ = ["VCR_VERSION", "dump_vcr", "vcr_interaction"]

#: The version of vcrpy's cassette format written.
VCR_VERSION = 1


def _vcr_body(body: Body) -> str | bytes | None:
    """A stored body as vcrpy keeps it: text, bytes for a binary body, None when empty."""
    if body is None:
        return None
    if "base64" in body:
        return base64.b64decode(body["base64"])
    raw = body_bytes(body)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:  # pragma: no cover - only base64 bodies hold non-UTF-8
        return raw


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def vcr_interaction(interaction: Interaction) -> dict[str, Any]:
    """One :class:`~pytest_agentctx.traffic.cassettes.store.Interaction` as vcrpy writes it."""
    data: dict[str, Any] = {
        "request": {
            "body": _vcr_body(interaction.request_body),
            "headers": {name: [value] for name, value in interaction.request_headers.items()},
            "method": interaction.method,
            "uri": interaction.url,
        },
        "response": {
            "body": {"string": _vcr_body(interaction.response_body) or ""},
            "headers": {name: [value] for name, value in interaction.response_headers.items()},
            "status": {"code": interaction.status, "message": _reason(interaction.status)},
        },
    }
    if interaction.test_id:
        data["test_id"] = interaction.test_id
    if interaction.partial:
        data["partial"] = True
    return data


def dump_vcr(interactions: list[Interaction]) -> str:
    """The text of a cassette in vcrpy's YAML format."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    data = {
        "interactions": [vcr_interaction(interaction) for interaction in interactions],
        "version": VCR_VERSION,
    }
    text: str = yaml.dump(
        data, Dumper=dumper, sort_keys=True, allow_unicode=True, default_flow_style=False
    )
    return text
