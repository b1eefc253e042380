"""The network guards of a child process: installed from what the test process gave it.

A Python child of a test that runs offline runs the ``sitecustomize`` of
:data:`~._children.SITE_DIR` at start-up, which calls :func:`install` with
:data:`~._children.GUARD_VAR`: the same guards as the test's, whose refusals are also
reported to the test process (:class:`_ChildGuard`). A child of multiprocessing's
forkserver gets the guards active when it starts through :func:`adopt` (see
:mod:`._children`).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping

from pytest_agentctx.traffic.cassettes._children import (
    GUARD_VAR,
    SITE_DIR,
    disinherit,
    inherit,
    report_refusal,
    with_site_dir,
)
from pytest_agentctx.traffic.cassettes.network import NetworkGuard

#: The guards :func:`install` started, and the text they came from.
_installed: list[NetworkGuard] = []
_installed_spec = ""


class _ChildGuard(NetworkGuard):
    """A guard of a child process: also tells the test process what it refused."""

    def __init__(self, spec: Mapping[str, object], port: int) -> None:
        allowed = spec.get("allowed", ())
        super().__init__(
            [str(host) for host in allowed] if isinstance(allowed, list | tuple) else (),
            reason=str(spec.get("reason", "")),
            summary=str(spec.get("summary", "agent tests replay offline")),
            advice=str(spec.get("advice", "")),
            children=False,
        )
        self.report = functools.partial(report_refusal, port)


def install(spec_text: str) -> None:
    """Install, in this (child) process, the guards of the test that started it, and give
    its own children what it was given (the ``sitecustomize`` of ``SITE_DIR`` calls this)."""
    global _installed_spec
    spec = json.loads(spec_text)
    for guard_spec in spec["guards"]:
        guard = _ChildGuard(guard_spec, int(spec["port"]))
        guard.start()
        _installed.append(guard)
    _installed_spec = spec_text
    inherit()


def adopt(environment: Mapping[str, str]) -> None:
    """Make this (child) process's guards those of ``environment`` (what children of the
    test process get now; without :data:`GUARD_VAR`: none), in place of those it has. A
    child of multiprocessing's forkserver calls this, through :class:`._children._Adopt`."""
    global _installed_spec
    spec_text = environment.get(GUARD_VAR, "")
    if spec_text == _installed_spec:
        return  # a spawned child, which installed them at start-up
    for guard in _installed:
        guard.stop()
    _installed.clear()
    if os.environ.get(GUARD_VAR) == _installed_spec:
        del os.environ[GUARD_VAR]
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if SITE_DIR in entries:
        pythonpath = os.pathsep.join(entry for entry in entries if entry != SITE_DIR)
        if pythonpath:
            os.environ["PYTHONPATH"] = pythonpath
        else:
            del os.environ["PYTHONPATH"]
    _installed_spec = ""
    disinherit()
    if spec_text:  # in os.environ, as for a spawned child: no proxy variables
        os.environ[GUARD_VAR] = spec_text
        os.environ["PYTHONPATH"] = with_site_dir(os.environ.get("PYTHONPATH"))
        install(spec_text)
        inherit(environment)
