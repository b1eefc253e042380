"""The context model: AgentContext and its iterations, messages and tool calls, the immutable
sequences they are built of, their paths, the flat view of a conversation (History), the
description of a tool sent to a model (ToolSpec), the step clock that times iterations, the
sub-agent runs nested in a context and its located tool calls, the runs a test made
(RunRecord), values scrubbed of secrets, and the errors about contexts and patterns.

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
