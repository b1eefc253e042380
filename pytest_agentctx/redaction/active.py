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

Printed lines and pytest's reports are scrubbed by :mod:`.output`; values (contexts,
models, mappings...) by :func:`pytest_agentctx.context.scrub.redact`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_agentctx.redaction.redactor import Redactor


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
        its secret values other than the test's ``own`` values and the environment's (the
        secret variables', those secret by their name included)."""
        known = {*own, *redactor.env_values, *(os.environ.get(name, "") for name in self.env)}
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
