"""The context model: AgentContext and its iterations, messages and tool calls, the immutable
sequences they are built of, their paths, the flat view of a conversation (History), the
description of a tool sent to a model (ToolSpec), and the step clock that times iterations.

Imports nothing of the package but ``exceptions`` and the private helpers.

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
