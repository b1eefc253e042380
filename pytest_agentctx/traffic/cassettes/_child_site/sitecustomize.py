"""Blocks the network in a process started by a test that runs offline (pytest-agentctx).

pytest-agentctx puts this folder first on ``PYTHONPATH`` of the processes a test starts
while its network guard is active, with the guard's settings in
``PYTEST_AGENTCTX_NETWORK_GUARD``. Python runs this module at start-up: it installs the
same guard here, then runs the ``sitecustomize`` this one hides, if there is one. Without
that variable it does nothing but the latter. It runs in interpreters of any version, so
it uses nothing newer than Python 3.6 and lets no error escape.
"""

import importlib.machinery
import json
import os
import sys

_VARIABLE = "PYTEST_AGENTCTX_NETWORK_GUARD"


def _install_guard() -> None:
    spec = os.environ.get(_VARIABLE)
    if not spec:
        return
    try:
        # The package of the test process, even when this interpreter has another
        # environment: only the guard's modules are imported from it.
        root = json.loads(spec).get("root")
        added = bool(root) and root not in sys.path
        if added:
            sys.path.insert(0, root)
        try:
            from pytest_agentctx.traffic.cassettes._child_guard import install
        finally:
            if added:
                sys.path.remove(root)
        install(spec)
    except Exception as error:  # no silent pass: say that this process is not guarded
        sys.stderr.write(
            "pytest-agentctx: this process runs WITHOUT the network guard of the test "
            f"that started it ({type(error).__name__}: {error}); only its HTTP requests "
            "through proxy variables are refused. Run it with the Python (3.11+) of the "
            "test environment.\n"
        )


def _run_the_hidden_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    from importlib.util import module_from_spec

    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_install_guard()
_run_the_hidden_sitecustomize()
