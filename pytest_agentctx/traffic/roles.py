"""The role of the model calls made now: the agent's own (the default), a judge's or a
simulated user's.

A cassette keeps each interaction's role (``role``, absent for ``"agent"``), a live request
is matched only against recordings of its own role, and capture keeps the runs of each role
apart: a judge's calls are never replayed for the agent's, nor counted in its budgets.

The role is a :class:`contextvars.ContextVar`: the calls made inside :func:`model_role`
carry it, from any client, sync or async (tasks created inside copy it), while a thread
started inside starts with a context of its own and makes the agent's calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: The roles a model call may have; ``"agent"`` is the default and is never stored.
ROLES = ("agent", "judge", "user_sim")

DEFAULT_ROLE = "agent"

_ROLE: ContextVar[str] = ContextVar("pytest_agentctx_model_role", default=DEFAULT_ROLE)


def current_role() -> str:
    """The role of the model calls made now (``"agent"`` outside any :func:`model_role`)."""
    return _ROLE.get()


def check_role(role: object, where: str = "model_role") -> str:
    """``role`` when it is one of :data:`ROLES`, else :class:`ValueError` naming them."""
    if not isinstance(role, str) or role not in ROLES:
        raise ValueError(
            f"{where}: the role {role!r} is not known; expected one of {', '.join(ROLES)} "
            '(e.g. with model_role("judge"): ...)'
        )
    return role


@contextmanager
def model_role(role: str) -> Iterator[None]:
    """The model calls made inside (from any client, sync or async, but not from threads
    started inside) have ``role``: recorded with it, replayed only from recordings of it,
    and captured apart from the agent's runs. Unknown roles raise :class:`ValueError`."""
    token = _ROLE.set(check_role(role))
    try:
        yield
    finally:
        _ROLE.reset(token)


#: Where a judge's request holds its rubric (between the two), so that a replayed judge
#: whose rubric changed is told so, with the diff (:func:`rubric_in`). Found in any case:
#: pydantic-evals' ``LLMJudge`` writes ``<Rubric>``.
RUBRIC_OPEN = "<rubric>\n"
RUBRIC_CLOSE = "\n</rubric>"


def rubric_in(value: object) -> str | None:
    """The rubric a judge's request body (JSON) holds between :data:`RUBRIC_OPEN` and
    :data:`RUBRIC_CLOSE` (in any case), or ``None`` when it holds none."""
    if isinstance(value, str):
        folded = value.lower()
        start = folded.find(RUBRIC_OPEN)
        end = folded.find(RUBRIC_CLOSE, start + len(RUBRIC_OPEN))
        return value[start + len(RUBRIC_OPEN) : end] if start >= 0 and end >= 0 else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        found = rubric_in(item)
        if found is not None:
            return found
    return None
