"""Snapshots of contexts and runs: ``assert result.context == agent_snapshot``.

- ``options``: :class:`SnapshotOptions`, volatile values and projections;
- ``writer``: how a value is written, one line per value led by its path;
- ``serialization``: the snapshot text (format header, projection, redaction) of a
  context or a run result;
- ``extension``: the syrupy extension, one ``.agentctx`` file per snapshot;
- ``assertion``: the ``agent_snapshot`` fixture's assertion.

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
