"""Names of a package imported on first use (PEP 562), so that importing the package, or
the pytest plugin, does not import every module (start-up time)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``table`` maps each name to the submodule
    defining it, imported on first use.

    The name is looked up in its module every time, not kept in the package: a module
    imported again (pytester's in-process runs drop the modules a run imported, and the
    next run imports them anew) then gives its new objects, the same ones the rest of the
    package uses, instead of the classes of the first run.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f".{module}", package), name)

    return __getattr__
