"""TLS set-up deferred to first real use, for the clients a replaying test builds.

Building an ``httpx2`` transport (and so ``openai.OpenAI()``, ``anthropic.Anthropic()``,
``httpx2.Client()``) loads the certificate bundle into a new :class:`ssl.SSLContext`: tens
of milliseconds, more than the replayed calls of a typical test cost. A test that only
replays (a cassette in mode ``none``, or ``fake_llm``) is answered at the transport
(:mod:`.transport`) and never opens a TLS connection with it.

While :func:`installed` is active, the transports built then (``httpx2``'s, and ``httpx``'s
when it is installed: the same code path) get a :class:`LazySSLContext` in place of the
context ``create_ssl_context`` would build, when that context is built from the default
settings (``verify=True`` or ``verify=False``, no ``cert=``). The lazy context keeps the
arguments and the ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` of the moment, and builds the real
context with them, through the library's own ``create_ssl_context``, when a request first
goes to the network (:func:`materialize`, called by the transport's interceptor), or when
anything reads it. Clients that share a configuration share one lazy context, so one real
context. A context the user passes (``verify=<ssl.SSLContext>``), a CA bundle path
(``verify=<str>``) and a client certificate (``cert=``) are built as before, at once.

Nothing is patched outside :func:`installed`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import ssl
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

#: The environment variables the default context reads (with ``trust_env``).
_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR")

_lock = threading.RLock()
_depth = 0
#: (transport module, its original ``create_ssl_context``) of each patched library.
_patched: list[tuple[ModuleType, Callable[..., ssl.SSLContext]]] = []
#: One lazy context per distinct configuration, while installed.
_shared: dict[tuple[object, ...], LazySSLContext] = {}


class LazySSLContext:
    """Stands for the :class:`ssl.SSLContext` that ``build(verify=, cert=None,
    trust_env=)`` returns, and builds it on first use: :meth:`resolve`, or any attribute
    read or set (``wrap_socket``, ``set_alpn_protocols``, ``verify_mode``...), which goes to
    the real context."""

    __slots__ = ("_build", "_context", "_env", "_trust_env", "_verify")

    def __init__(
        self,
        build: Callable[..., ssl.SSLContext],
        *,
        verify: bool,
        trust_env: bool,
        env: dict[str, str | None],
    ) -> None:
        object.__setattr__(self, "_build", build)
        object.__setattr__(self, "_verify", verify)
        object.__setattr__(self, "_trust_env", trust_env)
        object.__setattr__(self, "_env", env)
        object.__setattr__(self, "_context", None)

    @property
    def built(self) -> bool:
        """Whether the real context has been built."""
        return self._context is not None

    def resolve(self) -> ssl.SSLContext:
        """The real context, built once, with the arguments and environment it was made with."""
        context: ssl.SSLContext | None = self._context
        if context is None:
            with _lock:
                context = self._context
                if context is None:
                    with _environment(self._env):
                        context = self._build(
                            verify=self._verify, cert=None, trust_env=self._trust_env
                        )
                    object.__setattr__(self, "_context", context)
        return context

    def __getattr__(self, name: str) -> Any:
        return getattr(self.resolve(), name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(self.resolve(), name, value)

    def __repr__(self) -> str:
        state = "built" if self.built else "not built yet"
        return f"<LazySSLContext verify={self._verify} trust_env={self._trust_env} ({state})>"


@contextlib.contextmanager
def _environment(env: dict[str, str | None]) -> Iterator[None]:
    """``os.environ`` with ``env``'s values for the duration (a no-op when it has them)."""
    changed = {
        name: os.environ.get(name) for name, value in env.items() if os.environ.get(name) != value
    }
    for name in changed:
        _set_env(name, env[name])
    try:
        yield
    finally:
        for name, value in changed.items():
            _set_env(name, value)


def _set_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def _lazy_factory(
    original: Callable[..., ssl.SSLContext],
) -> Callable[..., ssl.SSLContext | LazySSLContext]:
    def create_ssl_context(
        verify: object = True, cert: object = None, trust_env: bool = True
    ) -> ssl.SSLContext | LazySSLContext:
        if cert or not isinstance(verify, bool):  # the user's own settings: as before
            return original(verify=verify, cert=cert, trust_env=trust_env)
        env = {name: os.environ.get(name) for name in _ENV}
        key = (id(original), verify, bool(trust_env), *env.values())
        with _lock:
            lazy = _shared.get(key)
            if lazy is None:
                lazy = LazySSLContext(original, verify=verify, trust_env=trust_env, env=env)
                _shared[key] = lazy
        return lazy

    return create_ssl_context


def _install() -> None:
    names = ["httpx2._transports.default"]
    with contextlib.suppress(ImportError):
        importlib.import_module("httpx")
        names.append("httpx._transports.default")
    for name in names:
        module = importlib.import_module(name)
        original = module.create_ssl_context
        _patched.append((module, original))
        module.create_ssl_context = _lazy_factory(original)  # type: ignore[attr-defined]


def _uninstall() -> None:
    while _patched:
        module, original = _patched.pop()
        module.create_ssl_context = original  # type: ignore[attr-defined]
    _shared.clear()


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """Transports built inside get a :class:`LazySSLContext` (nested uses share one patch)."""
    global _depth
    with _lock:
        if _depth == 0:
            _install()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _uninstall()


def materialize(transport: object) -> None:
    """Give ``transport``'s connection pool its real context, before a request of it goes
    to the network: the pool's connections then use exactly the context the library would
    have built. A transport with no lazy context is left alone."""
    pool = getattr(transport, "_pool", None)
    context = getattr(pool, "_ssl_context", None)
    if isinstance(context, LazySSLContext):
        pool._ssl_context = context.resolve()  # type: ignore[union-attr]
