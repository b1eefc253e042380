"""pytest-agentctx: test LLM agents like ordinary code.

Every agent run is an :class:`AgentContext`: one :class:`Iteration` per pass of the agent
loop. The runtime produces it deterministically; tests assert on it.
"""

from __future__ import annotations

import sys


def _off_assertion_rewriting() -> None:
    """Takes the package off pytest's assertion rewriting, before any other of its modules
    loads (see :mod:`pytest_agentctx.plugin`): pytest rewrites every module of a plugin's
    distribution, parsing each one's source again on every run, its ``.pyc`` unused; the
    package's asserts are internal checks. Without pytest's rewriting hook (no pytest
    session, ``--assert=plain``) nothing changes.

    It works on two private attributes of pytest's ``AssertionRewritingHook``: the set of
    names marked for rewriting (``_must_rewrite``) and the cache of its answers
    (``_marked_for_rewrite_cache``); tests/e2e/test_startup.py pins them. A pytest whose
    hook keeps other names is left alone: the supported ``PYTEST_DONT_REWRITE`` of the
    plugin's module docstrings then keeps those modules as they are.
    """
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        known = getattr(finder, "_marked_for_rewrite_cache", None)
        if type(finder).__name__ != "AssertionRewritingHook" or not isinstance(marked, set):
            continue
        for name in [n for n in marked if n == __name__ or n.startswith(__name__ + ".")]:
            marked.discard(name)
        if isinstance(known, dict):
            known.clear()


_off_assertion_rewriting()

# The package's other modules, once it is off pytest's rewriting. Type checkers read the
# public names from the package's stub, __init__.pyi (the same names as _PUBLIC).
from . import exceptions  # noqa: E402
from ._lazy import lazy_getattr  # noqa: E402
from ._public import PUBLIC as _PUBLIC  # noqa: E402

__version__ = "0.1.0.dev0"

__all__ = [*_PUBLIC, "__version__"]

# The exceptions are bound now: their module is small, and every other module imports it.
globals().update(
    {name: getattr(exceptions, name) for name, module in _PUBLIC.items() if module == "exceptions"}
)

__getattr__ = lazy_getattr(__name__, _PUBLIC)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
