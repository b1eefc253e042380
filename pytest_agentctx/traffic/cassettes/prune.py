"""Dropping dead interactions from a cassette file, without re-recording.

A report lists, for each test's cassette, the recordings the test left unused, by index
with a digest of each one's request (:func:`request_digest`: method, URL and body as
stored, no header). :func:`plan_prune` reads the file as it is now and checks that each
listed index still holds a request of that digest: a file changed since the report (re-
recorded, edited, pruned already) is refused with a
:class:`~pytest_agentctx.exceptions.UsageError` rather than pruned wrongly.
:func:`apply_prune` writes the file without them, atomically, under the cassette's lock,
in the file's own format (the package's JSON or YAML, vcrpy's YAML or JSON), every
interaction kept scrubbed by the redactor as a recording is, in its order.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_agentctx._files import atomic_write_text
from pytest_agentctx._untrusted import LimitExceeded, read_untrusted
from pytest_agentctx.exceptions import UsageError
from pytest_agentctx.traffic.cassettes.fileformat import FORMAT_NAME, Interaction
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.cassettes.store import forget, parse_cassette, write_cassette
from pytest_agentctx.traffic.errors import CassetteFormatError


def request_digest(interaction: Interaction) -> str:
    """A digest of an interaction's request as stored: its method, URL and body (no
    header: a report never holds a digest of a credential)."""
    data = {
        "method": interaction.method,
        "url": interaction.url,
        "body": interaction.request_body,
    }
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class PrunePlan:
    """What pruning one cassette file does: its interactions as read now, its format
    (``native`` or ``vcr``), and the positions of those dropped."""

    path: Path
    style: str
    interactions: list[Interaction]
    dropped: tuple[int, ...]

    @property
    def kept(self) -> list[Interaction]:
        gone = set(self.dropped)
        return [i for p, i in enumerate(self.interactions) if p not in gone]


def _style(text: str, path: Path) -> str:
    """``native`` for a document in the package's format, ``vcr`` for vcrpy's."""
    if path.suffix == ".json":
        data = json.loads(text)
    else:
        from pytest_agentctx.traffic.cassettes.yamlread import load

        data = load(text, str(path))
    native = isinstance(data, Mapping) and data.get("cassette") == FORMAT_NAME
    return "native" if native else "vcr"


def read_cassette_file(path: Path) -> tuple[str, list[Interaction]]:
    """The format (``native`` or ``vcr``) and the interactions of the cassette at ``path``,
    read now (never from a cache); :class:`CassetteFormatError` when it cannot be read."""
    forget(path)
    try:
        text = read_untrusted(path).decode("utf-8")
    except UnicodeDecodeError:
        raise CassetteFormatError(f"{path}: not UTF-8 text, so not a cassette.") from None
    except LimitExceeded as exc:
        raise CassetteFormatError(str(exc)) from None
    interactions = parse_cassette(text, path)  # the errors of a malformed file
    return _style(text, path), interactions


def plan_prune(path: Path, dead: Mapping[int, str], *, report: str) -> PrunePlan:
    """The plan of dropping the interactions ``dead`` (position: request digest, from the
    report ``report``) from the cassette at ``path``; a
    :class:`~pytest_agentctx.exceptions.UsageError` naming the first position that does not
    hold that request any more."""
    style, interactions = read_cassette_file(path)
    for position, digest in sorted(dead.items()):
        if position >= len(interactions):
            found = f"it holds {len(interactions)} interaction(s)"
        elif request_digest(interactions[position]) != digest:
            found = f"interaction #{position} is another request now"
        else:
            continue
        raise UsageError(
            f"Cassette {path} changed since the report {report} (the report lists "
            f"interaction #{position} as unused, but {found}): nothing was pruned. Run the "
            f"suite again with --agent-report={report}, then prune with that report."
        )
    return PrunePlan(path, style, interactions, tuple(sorted(dead)))


def apply_prune(plan: PrunePlan, redactor: Redactor, *, report: str) -> None:
    """Write the cassette of ``plan`` without its dropped interactions: checked again and
    written under the cassette's lock (a test writing it meanwhile wins, and the prune is
    refused), atomically, in its own format, scrubbed by ``redactor``."""
    from pytest_agentctx.traffic.cassettes.runs import locked
    from pytest_agentctx.traffic.cassettes.saving import _scrubbed

    with locked(plan.path):
        dead = {p: request_digest(plan.interactions[p]) for p in plan.dropped}
        again = plan_prune(plan.path, dead, report=report)
        if again.interactions != plan.interactions:
            raise UsageError(
                f"Cassette {plan.path} changed while it was being pruned: nothing was "
                f"pruned. Run the suite again with --agent-report={report}, then prune "
                "with that report."
            )
        kept = [_scrubbed(interaction, redactor) for interaction in again.kept]
        if plan.style == "vcr" and plan.path.suffix == ".json":
            atomic_write_text(plan.path, _vcr_json(kept, plan.path))
            forget(plan.path)
        else:
            write_cassette(plan.path, kept, style=plan.style)


def _vcr_json(interactions: list[Interaction], path: Path) -> str:
    """A cassette in vcrpy's format, as vcrpy's JSON serializer writes one."""
    from pytest_agentctx.traffic.cassettes.vcr import VCR_VERSION, vcr_interaction

    def text_only(value: object) -> object:
        if isinstance(value, bytes):
            raise CassetteFormatError(
                f"{path}: an interaction kept has a binary body, which vcrpy's JSON format "
                "cannot hold: nothing was pruned. Convert the cassette to YAML "
                "(agent_cassette_format = vcr) or re-record it."
            )
        raise TypeError(type(value).__name__)

    data = {
        "interactions": [vcr_interaction(interaction) for interaction in interactions],
        "version": VCR_VERSION,
    }
    return json.dumps(data, indent=4, sort_keys=True, ensure_ascii=False, default=text_only) + "\n"
