"""Patterns and the matching engine: ``matches(value, pattern)``, its pattern objects and
its failure reports.

- ``mismatch``: a mismatch, its path, and the short descriptions of values in its message;
- ``engine``: the walk of a value against a pattern, collecting every mismatch;
- ``exact``: the comparison inside ``Exact``, where nothing unnamed may be set;
- ``assignment``: pairing the items of an unordered collection with their patterns;
- ``base``: the ``Pattern`` class, the leaf patterns and their ``&``, ``|`` and ``~``;
- ``structure``: patterns over a value's structure (``Like``, ``Exact``, ``Unordered``,
  ``Contains``, ``Each``, ``Nowhere``);
- ``report``: ``matches()``, its failure text, and pytest's explanation of a failed ``==``.

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
