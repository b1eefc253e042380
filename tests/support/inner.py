"""What the suite's inner pytest runs (pytester's, in process or as child processes, and
the child processes some tests start themselves) are given.

Imported by file name (``from support.inner import INNER_ADDOPTS``), like the rest of
``tests/support``.
"""

from __future__ import annotations

#: DeepEval (the evals extra) registers a pytest plugin that every pytest run loads, and
#: importing it takes seconds: an in-process run drops and re-imports it each time, a child
#: process imports it again. It brings pytest-rerunfailures, whose hook for a crashed xdist
#: worker fails (``'LoadScheduling' object has no attribute 'config'``) and ends the run
#: with an internal error. The inner runs model a project without either.
INNER_ADDOPTS = "-p no:deepeval -p no:rerunfailures"
