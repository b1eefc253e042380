"""A griffe extension for the documentation site (mkdocs.yml loads it).

The package's docstrings name other objects with Sphinx roles (``:class:`AgentContext```,
``:func:`~pytest_agentctx.runtime.tools.tool```), which Markdown would show as the role's
text before a code span. This rewrites each role to the code span of the name it shows:
the whole name, or its last part when it starts with ``~`` (as Sphinx shows it).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):`(?P<target>[^`]+)`")


def _shown(match: re.Match[str]) -> str:
    target = match.group("target")
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target}`"


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring to Markdown code spans."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_shown, obj.docstring.value)
