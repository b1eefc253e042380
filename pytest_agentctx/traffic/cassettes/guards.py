"""The network guards active in this process, oldest first, and what a refusal refuses.

:mod:`.network` starts and stops the guards (:class:`~.network.NetworkGuard`) and patches
the sockets while one is active; :mod:`._children` gives them to the child processes
started meanwhile, and notes there what those refused. Both read the active guards here.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes.network import NetworkGuard

#: What a refusal says was tried, before the target: "blocked a connection to 10.0.0.1:443".
CONNECTION = "a connection to"
DATAGRAM = "a datagram to"
LOOKUP = "a DNS lookup of"

_lock = threading.RLock()
_guards: list[NetworkGuard] = []


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.RLock()  # another thread may have held it when the process forked


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


def lock() -> threading.RLock:
    """The lock held while the active guards change (or are read)."""
    return _lock


def active_guards() -> list[NetworkGuard]:
    """The guards active now, oldest first."""
    with _lock:
        return list(_guards)


def add(guard: NetworkGuard) -> bool:
    """Make ``guard`` active (the caller holds :func:`lock`); whether it is the only one."""
    _guards.append(guard)
    return len(_guards) == 1


def remove(guard: NetworkGuard) -> bool:
    """Make ``guard`` inactive (the caller holds :func:`lock`); whether none is left."""
    _guards.remove(guard)
    return not _guards
