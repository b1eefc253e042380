"""What a provider is told about a tool: :class:`ToolSpec`, its name, description and JSON
schema.

A plain description, shared by the runtime's tools (``Tool.spec``) and the codecs that
encode it for each wire format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    """What a provider needs to know about a tool: name, description, JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]
