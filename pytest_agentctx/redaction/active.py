"""One redactor for every artifact: what a cassette hides, snapshots, reports and failure
messages hide too, with the same placeholder (``REDACTED``).

The secrets of a session (:class:`SessionSecrets`) are the values of the secret
environment variables (:data:`~pytest_agentctx.redaction.redactor.DEFAULT_SECRET_ENV` and
the ``agent_secret_env`` ini option) and the values the tests' cassettes learned from the
traffic (keys in ``Authorization`` headers, key-like query parameters). Each test gets
one :class:`~pytest_agentctx.redaction.redactor.Redactor`: its cassette's own (the same
object), or, for a test without a cassette, one made from the session's secrets; either
also knows the test's ``redact_values``. That redactor is the active one while the test
runs (:func:`active`): it is applied to the snapshot text, the test's report record, the
failure text of its reports and the assertion explanations printed while it runs.

The functions here use the redactor's public methods only (``text`` and
``secret_values``): :func:`redact_lines` scrubs printed lines; :func:`redact_report` scrubs
a pytest report's failure text and captured output. Values (contexts, models, mappings...)
are scrubbed by :func:`pytest_agentctx.context.scrub.redact`. Imports nothing of the
package but the redactor (when one is made).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from pytest_agentctx.redaction.redactor import Redactor

__all__ = [
    "SessionSecrets",
    "active",
    "redact_lines",
    "redact_report",
    "redacted_note",
    "set_active",
    "shows_secret",
]


class SessionSecrets:
    """The secrets of a test session, and the redactor of each test made from them.

    ``redactor`` knows the values of the secret environment variables (the default ones
    and ``secret_env``) and every value learned from traffic so far (:meth:`absorb`);
    :meth:`for_test` makes a test's redactor that also knows the test's own
    ``redact_values``. Nothing is read or built before a redactor is asked for, so a
    session that never needs one pays nothing at start-up.
    """

    def __init__(self, secret_env: Iterable[str] = ()) -> None:
        self.secret_env = tuple(secret_env)
        self._learned: set[str] = set()
        self._redactor: Redactor | None = None
        #: What was active before this session (an outer session's redactor or secrets,
        #: when pytest runs inside pytest): active again when this session ends.
        self.outer: Redactor | SessionSecrets | None = None

    @property
    def env(self) -> tuple[str, ...]:
        """The names of the secret environment variables."""
        from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV

        return (*DEFAULT_SECRET_ENV, *self.secret_env)

    @property
    def redactor(self) -> Redactor:
        """The session's redactor: the secret environment values and the learned ones."""
        if self._redactor is None:
            self._redactor = self.for_test()
        return self._redactor

    @property
    def learned(self) -> tuple[str, ...]:
        """The values the session's cassettes learned from traffic, sorted."""
        return tuple(sorted(self._learned))

    def for_test(self, extra_values: Iterable[str] = ()) -> Redactor:
        """A redactor of the session's secrets and ``extra_values`` (a test's own)."""
        from pytest_agentctx.redaction.redactor import Redactor

        return Redactor(env=self.env, extra_values=(*extra_values, *self.learned))

    def absorb(self, redactor: Redactor, own: Iterable[str] = ()) -> None:
        """Make what ``redactor`` (a test's) learned from traffic a secret of the session:
        its secret values other than the test's ``own`` values and the environment's."""
        known = {*own, *(os.environ.get(name, "") for name in self.env)}
        new = {value for value in redactor.secret_values if value not in known} - self._learned
        if new:
            self._learned |= new
            self._redactor = None  # made again, with the new values, when next asked for


#: What redacts now: the running test's redactor, or the session's secrets between tests.
_active: Redactor | SessionSecrets | None = None


def active() -> Redactor | None:
    """The redactor of the test running now, or the session's between tests (``None``
    outside a pytest session)."""
    if isinstance(_active, SessionSecrets):
        return _active.redactor
    return _active


def set_active(source: Redactor | SessionSecrets | None) -> Redactor | SessionSecrets | None:
    """Make ``source`` (a test's redactor, or the session's secrets) the active one;
    returns the one it replaces."""
    global _active
    previous, _active = _active, source
    return previous


def redacted_note() -> str:
    """The line added to an explanation in which a secret was replaced."""
    from pytest_agentctx.redaction.redactor import REDACTED

    return (
        f"(secrets are shown as {REDACTED}: two values that differ only inside a secret "
        "look the same here)"
    )


def shows_secret(text: str, redactor: Redactor) -> bool:
    """Whether ``text`` holds a secret the redactor replaces (in any form it knows)."""
    return redactor.text(text) != text


def redact_lines(lines: list[str], redactor: Redactor) -> list[str]:
    """Printed lines scrubbed of secrets; when one changed, a last line says that secrets
    are shown as ``REDACTED`` (two values that differ only in a secret then look alike)."""
    scrubbed = [redactor.text(line) for line in lines]
    if scrubbed != lines:
        scrubbed.append(redacted_note())
    return scrubbed


def redact_report(report: pytest.TestReport, redactor: Redactor) -> None:
    """Scrub a test report in place: its failure text (``longrepr``: the traceback, the
    assertion explanation, the exception's message, the crash line) and its captured
    output sections. Outcomes and locations are left alone."""
    if not redactor.secret_values:
        return
    if report.sections:
        report.sections = [(title, redactor.text(content)) for title, content in report.sections]
    longrepr = report.longrepr
    if longrepr is None:
        return
    if isinstance(longrepr, str | tuple):
        report.longrepr = _scrub_repr(longrepr, redactor)
        return
    _scrub_repr(longrepr, redactor)
    # A failure representation this walk does not know (another plugin's) keeps its text:
    # replace it by its scrubbed text.
    rendered = str(longrepr)
    if shows_secret(rendered, redactor):
        report.longrepr = redactor.text(rendered)


def _scrub_repr(value: Any, redactor: Redactor) -> Any:
    """``value`` (a piece of pytest's failure representation) scrubbed: strings replaced,
    lists and tuples rebuilt, dataclasses (pytest's ``Repr*`` classes) changed in place."""
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, list):
        return [_scrub_repr(item, redactor) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrub_repr(item, redactor) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            current = getattr(value, item.name, None)
            scrubbed = _scrub_repr(current, redactor)
            if scrubbed is not current:
                object.__setattr__(value, item.name, scrubbed)
        return value
    longrepr = getattr(value, "longrepr", None)  # pytest's CollectErrorRepr
    if isinstance(longrepr, str):
        value.longrepr = redactor.text(longrepr)
    return value
