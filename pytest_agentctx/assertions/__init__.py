"""Assertions on contexts: patterns and the matching engine, trajectories, snapshots,
and their errors.

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
