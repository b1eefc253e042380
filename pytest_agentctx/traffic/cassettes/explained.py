"""Misses a layer above explains better than the closest recording does.

A layer that makes model calls of its own role (the simulated users of ``evals``) may know
why a request of that role has no recording: a simulated user's next request carries the
agent's replies, so when the agent's reply changed, the miss is the agent's doing, and the
layer can name the turn. It registers an explainer for its role (:data:`EXPLAINERS`, on
import of its module); a cassette asks the explainers before it compares a missed request
with the closest recording (:func:`explain`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from pytest_agentctx.traffic.cassettes.fileformat import Interaction

#: An explainer: given the missed request's URL path and JSON body and the recorded requests
#: of its role as ``(URL path, JSON body)``, the message of the miss, or ``None`` when it
#: does not explain it.
Explainer = Callable[[str, object, list[tuple[str, object]]], "str | None"]

#: The explainers, by the role of the model calls they explain.
EXPLAINERS: dict[str, Explainer] = {}


def _json_of(interaction: Interaction) -> object:
    body = interaction.request_body
    return body.get("json") if isinstance(body, dict) else None


def explain(role: str, path: str, body: object, recorded: Iterable[Interaction]) -> str | None:
    """The message the explainer of ``role`` gives of a miss of that role (``path`` and JSON
    ``body`` of the missed request, ``recorded`` the cassette's interactions), or ``None``."""
    explainer = EXPLAINERS.get(role)
    if explainer is None:
        return None
    of_role = [(urlsplit(i.url).path, _json_of(i)) for i in recorded if i.role == role]
    return explainer(path, body, of_role) if of_role else None
